// SPDX-License-Identifier: Apache-2.0
// kp::OpBase: one recordable step of a Sequence. Subclass it to write your
// own operations.
#pragma once

#include <vector>

#include "kompute/Core.hpp"

namespace kp {

class Memory;

/**
 * One way in which the commands of an operation touch a memory object
 * (see OpBase::declareAccesses).
 */
struct MemoryAccess
{
    /** Which memory of the object. */
    enum class Part
    {
        ePrimary, ///< the memory shaders and copies use (getPrimaryBuffer())
        eStaging, ///< the staging memory behind the host view (getStagingBuffer())
    };

    /** The object (not owned: it must outlive the declaration). */
    const Memory* memory = nullptr;
    /** Which of its memories is touched. */
    Part part = Part::ePrimary;
    /** The pipeline stages of the commands, for example eComputeShader or
     * eTransfer. */
    vk::PipelineStageFlags stages;
    /** What they do there: reads and/or writes, for example eShaderRead |
     * eShaderWrite, eTransferRead, eTransferWrite. */
    vk::AccessFlags access;

    /** Whether `access` holds a write. */
    bool writes() const;

    /** A compute shader reads the primary memory (eComputeShader,
     * eShaderRead). */
    static MemoryAccess shaderRead(const Memory& memory);
    /** A compute shader writes the primary memory (eComputeShader,
     * eShaderWrite). */
    static MemoryAccess shaderWrite(const Memory& memory);
    /** A compute shader reads and writes the primary memory. */
    static MemoryAccess shaderReadWrite(const Memory& memory);
    /** A transfer command (copy) reads `part` (eTransfer, eTransferRead). */
    static MemoryAccess transferRead(const Memory& memory, Part part = Part::ePrimary);
    /** A transfer command (copy, fill) writes `part` (eTransfer,
     * eTransferWrite). */
    static MemoryAccess transferWrite(const Memory& memory, Part part = Part::ePrimary);
    /** The object is used, its memory not touched (no stages, no access). */
    static MemoryAccess reference(const Memory& memory);
};

/**
 * One step recorded into a kp::Sequence: the base of every operation.
 * Subclass it to write your own (see @ref operations): record() records
 * Vulkan commands, preEval() and postEval() run on the host around each
 * submission, and declareAccesses() tells the sequence what the commands
 * touch so that it records only the barriers needed.
 *
 * Operations are held through std::shared_ptr: a sequence keeps the
 * operations of its current batch, and an operation typically holds the
 * memory objects and algorithms it records, so they live as long as it
 * does. The hooks are called on the thread that uses the sequence.
 */
class OpBase
{
  public:
    /** An operation with no state of its own. */
    OpBase() = default;
    OpBase(const OpBase&) = delete;
    OpBase(OpBase&&) = delete;
    OpBase& operator=(const OpBase&) = delete;
    OpBase& operator=(OpBase&&) = delete;
    virtual ~OpBase() = default;

    /** Records the operation's commands. Called by Sequence::record, and
     * again by Sequence::rerecord. */
    virtual void record(const vk::CommandBuffer& commandBuffer) = 0;
    /** Called on the host before each submission of the sequence. */
    virtual void preEval(const vk::CommandBuffer& commandBuffer) = 0;
    /** Called on the host after each submission has completed. */
    virtual void postEval(const vk::CommandBuffer& commandBuffer) = 0;

    /** True when the commands recorded earlier are no longer valid (an
     * algorithm was rebuilt or rebound, say): the sequence then records its
     * operations again before submitting. */
    virtual bool needsRerecord() const { return false; }

    /**
     * What the commands record() records read and write. A Sequence
     * puts a barrier before an operation only where it conflicts with an
     * earlier operation of the batch (a read after a write, a write after a
     * read, a write after a write of the same memory), with exactly the
     * stages and accesses of the conflict: independent operations run
     * without barriers between them.
     *
     * Append one entry per memory touched (per part and kind of access) to
     * `accesses` and return true; an operation that touches no memory
     * returns true and appends nothing. An entry with no access flags names
     * an object the operation uses without touching its memory: the
     * sequence only checks that it belongs to its Manager, as it does for
     * every declared object. The default returns false: the
     * operation may touch anything, and the sequence orders it after
     * everything before it and everything after it after it (full
     * barriers). Called by the sequence just before each record(); the
     * objects must stay alive while the operation does.
     */
    virtual bool declareAccesses(std::vector<MemoryAccess>& accesses) const
    {
        (void)accesses;
        return false;
    }

    /** Ours: a link of a dispatch chain (MatMulParams::chained): the
     * chain's buffer and one of its slots; no buffer: no link. */
    struct ChainLink
    {
        const Memory* chain = nullptr; ///< the chain's buffer; null: no link
        uint32_t slot = 0;             ///< the slot in it (words 2 + 2 slot and 3 + 2 slot)
    };
    /** The slot the operation's first dispatch waits for in its shader,
     * instead of behind a barrier. It must be the last slot that the
     * operation recorded just before it in the sequence signals
     * (chainSignal()); Sequence::record refuses it otherwise. The sequence
     * records no barrier before the operation, and counts everything
     * recorded before it as finished and visible to it. Default: none. */
    virtual ChainLink chainWait() const { return {}; }
    /** The last slot the operation signals, once all its dispatches have
     * finished. Default: none. */
    virtual ChainLink chainSignal() const { return {}; }

    /**
     * Records `inner` into `commandBuffer` from within another operation's
     * record(), for operations made of other operations. During a
     * Sequence's recording it first checks, as Sequence::record does, that
     * the objects `inner` declares belong to the sequence's Manager, and
     * throws kp::Error before recording anything otherwise. Built-in
     * operations recorded this way order themselves after the commands
     * before them with a barrier of their own; custom ones record the
     * barriers they need themselves.
     */
    static void recordNested(OpBase& inner, const vk::CommandBuffer& commandBuffer);
};

} // namespace kp
