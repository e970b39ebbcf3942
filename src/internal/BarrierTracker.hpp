// SPDX-License-Identifier: Apache-2.0
// The barriers of a Sequence: only where a hazard is.
//
// Each operation declares what its commands read and write
// (OpBase::declareAccesses). The tracker remembers, per memory object and
// part (primary or staging), the last write and the reads since, with their
// stages and accesses, and what earlier barriers already made visible or
// ordered. Before an operation that reads after a write, writes after a read
// or writes after a write of the batch, it records one global memory barrier
// over the compute and transfer stages (and any other stage of the hazard);
// before one without hazards, nothing: independent dispatches run back to
// back. On the H200 that barrier costs less than one limited to the compute
// stage or a buffer memory barrier (kompute-bench c_dispatch_dependent), on
// lavapipe the same; its effect on every other tracked object is accounted
// for, which spares later barriers.
//
// Operations that declare nothing may touch anything: a full barrier goes
// before and after them. Hazards with earlier submissions are the
// sequence's business at submission (Sequence::submit), not the tracker's.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kompute/Vulkan.hpp"

#include "internal/Owners.hpp"
#include "kompute/Sequence.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {
namespace internal {

class Device;

class BarrierTracker
{
  public:
    /** Forgets the batch: the next operation has nothing to wait for. */
    void reset();

    /**
     * Records into `cmd` the barrier that orders the next operation after
     * the earlier ones of the batch, if one is needed, and notes the
     * operation's accesses. `declared` false: the operation declared
     * nothing (`accesses` is ignored).
     */
    void beforeOperation(const vk::CommandBuffer& cmd,
                         bool declared,
                         const std::vector<MemoryAccess>& accesses);
    /**
     * The same for an operation of a dispatch chain (OpBase::chainWait):
     * where `waits` is the link the operation recorded just before it
     * signalled, and everything before that one was ordered before it (a
     * barrier, or the chain itself), no barrier is recorded and the
     * operation counts as ordered after all of it. `signals` is what the
     * operation signals (OpBase::chainSignal), for the next one. Returns
     * whether `waits` names a link and it is not the one signalled just
     * before (the caller refuses the operation).
     */
    bool chainMismatch(const OpBase::ChainLink& waits) const;
    void beforeChainedOperation(const vk::CommandBuffer& cmd,
                                bool declared,
                                const std::vector<MemoryAccess>& accesses,
                                const OpBase::ChainLink& waits,
                                const OpBase::ChainLink& signals);

    /** Records the barrier that makes the batch's writes visible to host
     * reads after the submission completes, if the host can read any of
     * them (staging memory, or memory that is its object's host view). */
    void endBatch(const vk::CommandBuffer& cmd);

    /** Barriers recorded between operations since reset(). */
    uint32_t barrierCount() const { return mBarrierCount; }
    /** A list for an operation's declarations, kept with its capacity. */
    std::vector<MemoryAccess>& declarations() { return mDeclared; }
    /** Whether endBatch() recorded a barrier for the host. */
    bool hostBarrierRecorded() const { return mHostBarrier; }

  private:
    struct Tracked
    {
        const Memory* memory = nullptr;
        MemoryAccess::Part part = MemoryAccess::Part::ePrimary;
        // The latest write, and where and for which accesses barriers
        // have made it visible since.
        vk::PipelineStageFlags writeStages;
        vk::AccessFlags writeAccess;
        vk::PipelineStageFlags visibleStages;
        vk::AccessFlags visibleAccess;
        // Reads since that write, and the stages barriers have ordered all
        // of them before.
        vk::PipelineStageFlags readStages;
        vk::PipelineStageFlags readsOrderedBefore;
    };

    Tracked& find(const MemoryAccess& access);
    void recordBarrier(const vk::CommandBuffer& cmd,
                       vk::PipelineStageFlags srcStages,
                       vk::AccessFlags srcAccess,
                       vk::PipelineStageFlags dstStages,
                       vk::AccessFlags dstAccess);
    /** What a barrier with these scopes orders, noted without one. */
    void noteOrdered(vk::PipelineStageFlags srcStages,
                     vk::AccessFlags srcAccess,
                     vk::PipelineStageFlags dstStages,
                     vk::AccessFlags dstAccess);

    std::vector<Tracked> mTracked;
    std::vector<MemoryAccess> mMerged; // one operation's accesses, one per object and part
    std::vector<MemoryAccess> mDeclared;
    bool mAnyOperation = false;
    // An operation that declared nothing ran since the last full barrier.
    bool mUndeclaredPending = false;
    uint32_t mBarrierCount = 0;
    bool mHostBarrier = false;
    // The dispatch chain: the link the last operation signalled (none if it
    // signalled nothing), and whether everything before that operation was
    // ordered before it (a barrier in front of it, or the chain).
    OpBase::ChainLink mSignalled;
    bool mSignalledAfterAll = false;
};

using PooledBarrierTracker = std::unique_ptr<BarrierTracker, BarrierTrackerRelease>;

/** A tracker from a process-wide pool, reset, with the capacity its lists
 * had when it was released: short-lived sequences (the one-liner) allocate
 * nothing for their barriers once warm. */
PooledBarrierTracker
acquireBarrierTracker();

/**
 * Per queue family, a command buffer holding one global barrier that orders
 * whatever follows it after every earlier submission on the queue. A
 * sequence submits it in front of its own command buffer when an earlier
 * submission on the queue may still be running: one whose completion no
 * host wait has observed (a wait on the host orders everything after it
 * already). Recorded once, for simultaneous use; owned by the device
 * context.
 */
class EntryBarriers
{
  public:
    /** The command buffer for queues of `family` of `context`'s device. */
    vk::CommandBuffer get(const Device* context, uint32_t family);
    /** Destroys the command buffers (the device is idle). */
    void clear();

  private:
    struct Family
    {
        uint32_t family = 0;
        CommandPoolOwner commandPool;
    };
    std::mutex mMutex;
    std::vector<Family> mFamilies;
};

} // namespace internal
} // namespace kp
