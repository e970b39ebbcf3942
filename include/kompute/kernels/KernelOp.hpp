// SPDX-License-Identifier: Apache-2.0
// kp::KernelOp: the base of the kernel library's operations (OpUnary,
// OpRMSNorm, OpAttention, ...). Each is one or more dispatches of built-in
// shaders over the operation's tensors, checked and built when the operation
// is constructed; recording it records those dispatches.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kompute/Algorithm.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

/** How a quantized weight tensor stores its values (GGUF block formats).
 * eNone: the tensor's own data type (f32, f16, bf16). */
enum class WeightFormat
{
    eNone = 0,
    eQ8_0 = 1, ///< 32 weights per 34-byte block: f16 scale d, int8 q[32]; w = q * d
    eQ4_0 = 2, ///< 32 weights per 18-byte block: f16 scale d, uint8 q[16]; w = (nibble - 8) * d
    eQ4_1 = 3, ///< 32 weights per 20-byte block: f16 d, f16 m, uint8 q[16]; w = nibble * d + m
    eQ5_0 = 4, ///< 32 weights per 22-byte block: f16 d, uint32 qh, uint8 q[16]; w = (q5 - 16) * d
    eQ5_1 = 5, ///< 32 weights per 24-byte block: f16 d, f16 m, uint32 qh, uint8 q[16]; w = q5 * d + m
    eQ2_K = 6, ///< 256 weights per 84-byte super-block: 16 sub-blocks of 16, 2-bit q, 4-bit scales and mins
    eQ3_K = 7, ///< 256 weights per 110-byte super-block: 16 sub-blocks of 16, 3-bit q, 6-bit scales
    eQ4_K = 8, ///< 256 weights per 144-byte super-block: 8 sub-blocks of 32, 4-bit q, 6-bit scales and mins
    eQ5_K = 9, ///< 256 weights per 176-byte super-block: 8 sub-blocks of 32, 5-bit q, 6-bit scales and mins
    eQ6_K = 10, ///< 256 weights per 210-byte super-block: 16 sub-blocks of 16, 6-bit q, int8 scales
    eIQ4_NL = 11, ///< 32 weights per 18-byte block: f16 d, uint8 q[16]; w = d * kvalues[nibble] (non-linear)
    eIQ4_XS = 12, ///< 256 weights per 136-byte super-block: 8 sub-blocks of 32, 6-bit scales, IQ4_NL values
    /** Ours, not GGUF's: 8 Q8_0 blocks (256 weights) in 272 bytes, their 8
     * f16 scales first, then their quants, each block's 16-byte aligned
     * (kp::groupBlocks makes them from Q8_0 blocks; same values). */
    eQ8_0X8 = 13,
    /** Ours: 8 Q4_0 blocks in 144 bytes, the 8 scales first (as eQ8_0X8). */
    eQ4_0X8 = 14,
};

/**
 * The base of the kernel library's operations (see @ref readme_kernel_library).
 * A subclass's constructor checks its tensors and parameters (kp::Error
 * naming the operation and the operand on a mismatch, before anything is
 * built) and builds its algorithms on the tensors' Manager; recording the
 * operation records their dispatches, and a recorded sequence runs them on
 * whatever the tensors hold at each evaluation.
 *
 * Ownership: the operation holds its algorithms, and they its tensors, for
 * as long as the operation lives (a sequence holds the operations it
 * recorded). Thread safety: as for any operation, a sequence that records it
 * is used by one thread at a time; an operation may be recorded into
 * several sequences unless its class says otherwise (OpAttention).
 */
class KernelOp : public OpBase
{
  public:
    ~KernelOp() override;

    /** Records the operation's dispatches, each after a barrier that orders
     * it behind the previous pass; in a Sequence, the first is ordered
     * behind earlier operations by the sequence, as far as they conflict
     * (as OpAlgoDispatch), elsewhere by a barrier too. */
    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer& commandBuffer) override;
    void postEval(const vk::CommandBuffer& commandBuffer) override;
    bool needsRerecord() const override;
    /** The tensors of all its passes, read and written as their shaders'
     * bindings say. */
    bool declareAccesses(std::vector<MemoryAccess>& accesses) const override;

    /** The operation's name, for example "OpRMSNorm". */
    const std::string& name() const { return mName; }
    /** The implementation chosen for this device and these parameters, e.g.
     * "subgroup" or "shared-memory" (see the README's kernel table). */
    const std::string& path() const { return mPath; }
    /** The algorithms it dispatches, in order. */
    std::vector<std::shared_ptr<Algorithm>> algorithms() const;

    /** In a dispatch chain (MatMulParams::chained): the slot its first
     * dispatch waits for, and the last slot it signals. */
    ChainLink chainWait() const override { return mChainWait; }
    ChainLink chainSignal() const override { return mChainSignal; }
    /** Dispatch-chain slots the operation takes (one per dispatch), 0 where
     * it takes no part in one. */
    uint32_t chainSlots() const { return mChainSignal.chain ? static_cast<uint32_t>(mDispatches.size()) : 0u; }

  protected:
    /** An operation called `name` (what name() returns and error messages
     * say), with no dispatches yet. */
    explicit KernelOp(std::string name);
    /** Appends a dispatch of `algorithm` (built with its workgroup count). */
    void addDispatch(std::shared_ptr<Algorithm> algorithm);
    /** Sets what path() returns. */
    void setPath(std::string path) { mPath = std::move(path); }
    /** Once every dispatch is added: they take slots firstSlot on of
     * `chain` and each signals its own; each after the first waits for the
     * one before it in its shader (no barrier between them), and the first
     * for slot firstSlot - 1 where `waits`. */
    void setChain(const Memory* chain, uint32_t firstSlot, bool waits);

  private:
    struct Dispatch
    {
        std::shared_ptr<Algorithm> algorithm;
        uint64_t recordedGeneration = 0;
    };
    std::string mName;
    std::string mRecordAction; // messages of checkUsable, made once
    std::string mEvalAction;
    std::string mPath;
    std::vector<Dispatch> mDispatches;
    ChainLink mChainWait, mChainSignal;
};

} // namespace kp
