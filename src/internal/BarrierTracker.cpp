// SPDX-License-Identifier: Apache-2.0
#include "internal/BarrierTracker.hpp"

#include "internal/Check.hpp"
#include "kompute/Memory.hpp"

namespace kp {
namespace internal {

namespace {

bool
covers(vk::PipelineStageFlags have, vk::PipelineStageFlags need)
{
    return (need & ~have) == vk::PipelineStageFlags();
}

bool
covers(vk::AccessFlags have, vk::AccessFlags need)
{
    return (need & ~have) == vk::AccessFlags();
}

const vk::AccessFlags kReadAccess =
  vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eTransferRead | vk::AccessFlagBits::eHostRead |
  vk::AccessFlagBits::eMemoryRead | vk::AccessFlagBits::eUniformRead |
  vk::AccessFlagBits::eIndirectCommandRead;

const vk::PipelineStageFlags kComputeAndTransfer =
  vk::PipelineStageFlagBits::eComputeShader | vk::PipelineStageFlagBits::eTransfer;
const vk::AccessFlags kComputeAndTransferWrites =
  vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite;
const vk::AccessFlags kComputeAndTransferAccess =
  vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite |
  vk::AccessFlagBits::eTransferRead | vk::AccessFlagBits::eTransferWrite;

// What a full barrier (around operations that declared nothing) orders.
const vk::PipelineStageFlags kAllStages = vk::PipelineStageFlagBits::eAllCommands;
const vk::AccessFlags kAllWrites = vk::AccessFlagBits::eMemoryWrite;
const vk::AccessFlags kAllAccess = vk::AccessFlagBits::eMemoryRead | vk::AccessFlagBits::eMemoryWrite;


} // namespace

void
BarrierTracker::reset()
{
    mTracked.clear();
    mAnyOperation = false;
    mUndeclaredPending = false;
    mBarrierCount = 0;
    mHostBarrier = false;
    mSignalled = {};
    mSignalledAfterAll = false;
}

BarrierTracker::Tracked&
BarrierTracker::find(const MemoryAccess& access)
{
    for (auto& tracked : mTracked) {
        if (tracked.memory == access.memory && tracked.part == access.part) {
            return tracked;
        }
    }
    Tracked tracked;
    tracked.memory = access.memory;
    tracked.part = access.part;
    mTracked.push_back(tracked);
    return mTracked.back();
}

void
BarrierTracker::recordBarrier(const vk::CommandBuffer& cmd,
                              vk::PipelineStageFlags srcStages,
                              vk::AccessFlags srcAccess,
                              vk::PipelineStageFlags dstStages,
                              vk::AccessFlags dstAccess)
{
    vk::MemoryBarrier barrier(srcAccess, dstAccess);
    cmd.pipelineBarrier(srcStages, dstStages, {}, 1, &barrier, 0, nullptr, 0, nullptr);
    ++mBarrierCount;
    noteOrdered(srcStages, srcAccess, dstStages, dstAccess);
}

void
BarrierTracker::noteOrdered(vk::PipelineStageFlags srcStages,
                            vk::AccessFlags srcAccess,
                            vk::PipelineStageFlags dstStages,
                            vk::AccessFlags dstAccess)
{
    // A global barrier orders every tracked access in its first scope, not
    // only the one it was recorded for.
    for (auto& tracked : mTracked) {
        if (tracked.writeStages && covers(srcStages, tracked.writeStages) &&
            covers(srcAccess, tracked.writeAccess)) {
            tracked.visibleStages |= dstStages;
            tracked.visibleAccess |= dstAccess;
        }
        if (tracked.readStages && covers(srcStages, tracked.readStages)) {
            tracked.readsOrderedBefore |= dstStages;
        }
    }
}

void
BarrierTracker::beforeOperation(const vk::CommandBuffer& cmd,
                                bool declared,
                                const std::vector<MemoryAccess>& accesses)
{
    if (!declared || mUndeclaredPending) {
        // Everything before is ordered before everything after.
        if (mAnyOperation) {
            recordBarrier(cmd, kAllStages, kAllWrites, kAllStages, kAllAccess);
        }
        mTracked.clear();
        mUndeclaredPending = !declared;
        mAnyOperation = true;
        if (!declared) {
            return;
        }
    }
    mAnyOperation = true;

    // One entry per object and part, with the union of what the operation
    // does to it.
    mMerged.clear();
    for (const auto& access : accesses) {
        if (access.memory == nullptr || !access.access) {
            continue;
        }
        bool merged = false;
        for (auto& existing : mMerged) {
            if (existing.memory == access.memory && existing.part == access.part) {
                existing.stages |= access.stages;
                existing.access |= access.access;
                merged = true;
            }
        }
        if (!merged) {
            mMerged.push_back(access);
        }
    }

    vk::PipelineStageFlags srcStages;
    vk::AccessFlags srcAccess;
    vk::PipelineStageFlags dstStages;
    vk::AccessFlags dstAccess;
    for (const auto& access : mMerged) {
        Tracked& tracked = find(access);
        bool writes = access.writes();
        if (tracked.writeStages) {
            // Read after write, write after write: the earlier write must
            // be finished and visible to these accesses.
            if (!covers(tracked.visibleStages, access.stages) ||
                !covers(tracked.visibleAccess, access.access)) {
                srcStages |= tracked.writeStages;
                srcAccess |= tracked.writeAccess;
                dstStages |= access.stages;
                dstAccess |= access.access;
            }
        }
        if (writes && tracked.readStages && !covers(tracked.readsOrderedBefore, access.stages)) {
            // Write after read: the reads must be finished (an execution
            // dependency; there is nothing to make visible).
            srcStages |= tracked.readStages;
            dstStages |= access.stages;
        }
    }
    if (srcStages) {
        // Every barrier covers all compute and transfer work: measured on
        // the H200, such a barrier costs less than one limited to the
        // compute stage or to the buffers concerned (1.77 against 1.85 us
        // per dependent dispatch, kompute-bench c_dispatch_dependent), and
        // the same on lavapipe. It also orders everything else in those
        // stages, which spares later barriers.
        recordBarrier(cmd,
                      srcStages | kComputeAndTransfer,
                      srcAccess | kComputeAndTransferWrites,
                      dstStages | kComputeAndTransfer,
                      dstAccess | kComputeAndTransferAccess);
    }

    for (const auto& access : mMerged) {
        Tracked& tracked = find(access);
        if (access.writes()) {
            // Reads of the same operation come before its writes or are
            // ordered with them by the operation itself; later accesses are
            // ordered after the operation as a whole.
            tracked.writeStages = access.stages;
            tracked.writeAccess = access.access & ~kReadAccess;
            tracked.visibleStages = vk::PipelineStageFlags();
            tracked.visibleAccess = vk::AccessFlags();
            tracked.readStages = vk::PipelineStageFlags();
            tracked.readsOrderedBefore = vk::PipelineStageFlags();
        } else {
            tracked.readStages |= access.stages;
            tracked.readsOrderedBefore = vk::PipelineStageFlags();
        }
    }
}

bool
BarrierTracker::chainMismatch(const OpBase::ChainLink& waits) const
{
    return waits.chain != nullptr && (waits.chain != mSignalled.chain || waits.slot != mSignalled.slot);
}

void
BarrierTracker::beforeChainedOperation(const vk::CommandBuffer& cmd,
                                       bool declared,
                                       const std::vector<MemoryAccess>& accesses,
                                       const OpBase::ChainLink& waits,
                                       const OpBase::ChainLink& signals)
{
    bool chained = declared && waits.chain != nullptr && !chainMismatch(waits) && mSignalledAfterAll &&
                   !mUndeclaredPending;
    uint32_t barriersBefore = mBarrierCount;
    bool first = !mAnyOperation;
    if (chained) {
        // The shader waits for the operation before it, which waited for
        // (or came after a barrier behind) everything before it: as a
        // barrier over the compute and transfer work would.
        noteOrdered(kComputeAndTransfer, kComputeAndTransferWrites, kComputeAndTransfer, kComputeAndTransferAccess);
    }
    beforeOperation(cmd, declared, accesses);
    // Everything before it is ordered before it: the chain, a barrier
    // recorded in front of it (each covers all compute and transfer work),
    // or nothing before it in the batch.
    bool afterAll = chained || mBarrierCount != barriersBefore || first;
    mSignalled = signals;
    mSignalledAfterAll = signals.chain != nullptr && afterAll;
}

void
BarrierTracker::endBatch(const vk::CommandBuffer& cmd)
{
    vk::PipelineStageFlags srcStages;
    vk::AccessFlags srcAccess;
    if (mUndeclaredPending) {
        srcStages = kAllStages;
        srcAccess = kAllWrites;
    } else {
        for (const auto& tracked : mTracked) {
            bool hostReadable = tracked.part == MemoryAccess::Part::eStaging ||
                                tracked.memory->isHostViewDirect();
            if (tracked.writeStages && hostReadable) {
                srcStages |= tracked.writeStages;
                srcAccess |= tracked.writeAccess;
            }
        }
    }
    if (srcStages) {
        vk::MemoryBarrier barrier(srcAccess, vk::AccessFlagBits::eHostRead);
        cmd.pipelineBarrier(
          srcStages, vk::PipelineStageFlagBits::eHost, {}, 1, &barrier, 0, nullptr, 0, nullptr);
        mHostBarrier = true;
    }
}

namespace {

// Enough for the sequences a few threads keep alive at once.
constexpr size_t kPooledTrackers = 32;

// Never destroyed: sequences may be released while the process exits (the
// Python interpreter's teardown), after static destructors ran.
struct TrackerPool
{
    std::mutex mutex;
    std::vector<std::unique_ptr<BarrierTracker>> trackers;
};

TrackerPool&
trackerPool()
{
    static TrackerPool* pool = new TrackerPool();
    return *pool;
}

} // namespace

void
BarrierTrackerRelease::operator()(BarrierTracker* tracker) const
{
    std::unique_ptr<BarrierTracker> owned(tracker);
    TrackerPool& pool = trackerPool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.trackers.size() < kPooledTrackers) {
        if (pool.trackers.capacity() < kPooledTrackers) {
            pool.trackers.reserve(kPooledTrackers);
        }
        pool.trackers.push_back(std::move(owned));
    }
}

PooledBarrierTracker
acquireBarrierTracker()
{
    std::unique_ptr<BarrierTracker> tracker;
    {
        TrackerPool& pool = trackerPool();
        std::lock_guard<std::mutex> lock(pool.mutex);
        if (!pool.trackers.empty()) {
            tracker = std::move(pool.trackers.back());
            pool.trackers.pop_back();
        }
    }
    if (!tracker) {
        tracker = std::make_unique<BarrierTracker>();
    }
    tracker->reset();
    return PooledBarrierTracker(tracker.release());
}

vk::CommandBuffer
EntryBarriers::get(const Device* context, uint32_t family)
{
    std::lock_guard<std::mutex> lock(mMutex);
    for (const auto& existing : mFamilies) {
        if (existing.family == family) {
            return existing.commandPool.commandBuffer;
        }
    }
    vk::Device device = liveDevice(context);
    Family created;
    created.family = family;
    vk::CommandPoolCreateInfo poolInfo({}, family);
    vk::CommandPool pool;
    check(device.createCommandPool(&poolInfo, nullptr, &pool),
          "Creating the command pool of a queue's entry barrier");
    created.commandPool.pool = Owned<vk::CommandPool>(context, pool);
    vk::CommandBuffer& cmd = created.commandPool.commandBuffer;
    vk::CommandBufferAllocateInfo allocateInfo(pool, vk::CommandBufferLevel::ePrimary, 1);
    check(device.allocateCommandBuffers(&allocateInfo, &cmd), "Allocating a queue's entry barrier");
    vk::CommandBufferBeginInfo beginInfo(vk::CommandBufferUsageFlagBits::eSimultaneousUse);
    check(cmd.begin(&beginInfo), "Recording a queue's entry barrier");
    vk::MemoryBarrier barrier(kAllWrites, kAllAccess);
    cmd.pipelineBarrier(kAllStages, kAllStages, {}, 1, &barrier, 0, nullptr, 0, nullptr);
    check(VULKAN_HPP_DEFAULT_DISPATCHER.vkEndCommandBuffer(cmd), "Recording a queue's entry barrier");
    mFamilies.push_back(std::move(created));
    return mFamilies.back().commandPool.commandBuffer;
}

void
EntryBarriers::clear()
{
    std::lock_guard<std::mutex> lock(mMutex);
    mFamilies.clear(); // the owners free the pools, and their command buffers
}

} // namespace internal
} // namespace kp
