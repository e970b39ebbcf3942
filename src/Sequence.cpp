// SPDX-License-Identifier: Apache-2.0
#include "kompute/Sequence.hpp"

#include <thread>

#include "internal/Barriers.hpp"
#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "internal/ShaderCopy.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

namespace internal {

/** What a Sequence owns on the device. */
struct SequenceObjects
{
    SequenceResources resources;
    QueryPoolOwner timestamps;
};

/** The recorded batch is dropped: what only it referred to may go. */
void
dropBatch(SequenceObjects& objects)
{
    objects.resources.track->batch.fetch_add(1, std::memory_order_acq_rel);
}

} // namespace internal

using internal::check;
using logger::format;

// Marks the sequence as in use for the duration of a public call, so that a
// second thread using it at the same time gets an exception instead of a
// corrupted command buffer (or, for destroy(), waits for that call).
class Sequence::UseGuard
{
  public:
    enum class Busy
    {
        eThrow,
        eWait,
    };

    explicit UseGuard(const Sequence& sequence, Busy busy = Busy::eThrow)
      : mFlag(const_cast<std::atomic<bool>&>(sequence.mInUse))
    {
        while (mFlag.exchange(true, std::memory_order_acquire)) {
            if (busy == Busy::eThrow) {
                throw Error("A kp::Sequence was used from two threads at once: a sequence "
                            "belongs to one thread at a time (create one per thread)");
            }
            std::this_thread::yield();
        }
    }
    ~UseGuard() { mFlag.store(false, std::memory_order_release); }
    UseGuard(const UseGuard&) = delete;
    UseGuard& operator=(const UseGuard&) = delete;

  private:
    std::atomic<bool>& mFlag;
};

Sequence::Sequence(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
                   std::shared_ptr<vk::Device> device,
                   std::shared_ptr<vk::Queue> computeQueue,
                   uint32_t queueIndex,
                   uint32_t totalTimestamps)
  : mTotalTimestamps(totalTimestamps)
{
    if (!computeQueue || !*computeQueue) {
        throw Error("Sequence: a null queue was given");
    }
    mDevice = internal::standaloneDevice(physicalDevice, device);
    // On a Manager's device, use its record of the queue (and its lock).
    bool found = false;
    for (uint32_t i = 0; i < mDevice->queueCount() && !found; ++i) {
        if (mDevice->queue(i).handle == *computeQueue) {
            mQueueIndex = i;
            found = true;
        }
    }
    if (!found) {
        if (mDevice->ownsDevice()) {
            throw Error("Sequence: the queue is not one of the Manager's queues; use "
                        "Manager::sequence(queueIndex)");
        }
        // Upstream's parameter is the queue's family index.
        mDevice->adoptQueue(*computeQueue, queueIndex);
        mQueueIndex = mDevice->queueCount() - 1;
    }
    create();
}

Sequence::Sequence(std::shared_ptr<internal::Device> device,
                   uint32_t queueIndex,
                   uint32_t totalTimestamps)
  : mDevice(std::move(device))
  , mQueueIndex(queueIndex)
  , mTotalTimestamps(totalTimestamps)
{
    create();
}

void
Sequence::create()
{
    auto alive = mDevice->lockAlive("Creating a sequence");
    mQueue = &mDevice->queue(mQueueIndex);
    vk::Device device = mDevice->device();

    if (mTotalTimestamps > 0 && mQueue->timestampValidBits == 0) {
        throw Error(format("Queue family {} does not support timestamps: create the sequence "
                           "with totalTimestamps = 0",
                           mQueue->familyIndex));
    }

    auto objects = std::make_unique<internal::SequenceObjects>();
    objects->resources = mDevice->acquireSequenceResources(mQueue->familyIndex);
    try {
        if (mTotalTimestamps > 0) {
            vk::QueryPoolCreateInfo queryInfo(
              {}, vk::QueryType::eTimestamp, mTotalTimestamps + 1);
            vk::QueryPool pool;
            check(device.createQueryPool(&queryInfo, nullptr, &pool),
                  "Creating a sequence's timestamp query pool");
            objects->timestamps = internal::QueryPoolOwner(mDevice.get(), pool);
        }
    } catch (...) {
        mDevice->releaseSequenceResources(std::move(objects->resources));
        throw;
    }
    mCommandBuffer = objects->resources.commandPool.commandBuffer;
    mFence = objects->resources.fence.get();
    mTimeline = objects->resources.timeline.get();
    mTimestampPool = objects->timestamps.get();
    mSubmissions.store(objects->resources.track->submitted.load());
    mObjects = std::move(objects);
    mDevice->registry().add(this);
}

Sequence::~Sequence()
{
    internal::Registry::Removal removal(mDevice->registry(), this);
    try {
        destroy();
    } catch (const std::exception& error) {
        KP_LOG_ERROR("Destroying a sequence failed: {}", error.what());
    }
}

void
Sequence::checkUsable(const char* action) const
{
    if (!mFence) {
        throw DestroyedError(format("{}: this Sequence was destroyed (directly or by its "
                                    "Manager's destroy())",
                                    action));
    }
    mDevice->checkAlive(action);
}

void
Sequence::beginBatch()
{
    if (mRunning) {
        throw Error("Cannot start recording while the sequence is running: call evalAwait() "
                    "first");
    }
    dropOps();
    mStale = false;
    vk::CommandBufferBeginInfo beginInfo;
    check(mCommandBuffer.begin(&beginInfo), "Beginning a sequence's command buffer");
    internal::dropBatch(*mObjects);
    mRecording = true;
    mHasBatch = false;
    mTimestampsReady = false;
    if (mTimestampPool) {
        mCommandBuffer.resetQueryPool(mTimestampPool, 0, mTotalTimestamps + 1);
        mCommandBuffer.writeTimestamp(
          vk::PipelineStageFlagBits::eAllCommands, mTimestampPool, 0);
    }
}

void
Sequence::endBatch()
{
    if (!mRecording) {
        return;
    }
    // Makes every device write of the batch visible to the host once the
    // fence has signalled (host-visible tensors need nothing else).
    internal::recordHostReadBarrier(mCommandBuffer, mQueue->flags);
    check(vkEndCommandBuffer(mCommandBuffer), "Ending a sequence's command buffer");
    mRecording = false;
    mHasBatch = true;
}

void
Sequence::dropOps()
{
    mOps.clear();
}

void
Sequence::recordOp(const std::shared_ptr<OpBase>& op)
{
    if (!op) {
        throw Error("Sequence::record was given a null operation");
    }
    if (mRunning) {
        throw Error("Cannot record while the sequence is running: call evalAwait() first");
    }
    if (mTimestampPool && mOps.size() + 1 > mTotalTimestamps) {
        throw Error(format("This sequence was created for {} timestamped operation(s); "
                           "recording one more needs a larger totalTimestamps",
                           mTotalTimestamps));
    }
    if (!mRecording) {
        beginBatch();
    }
    {
        // Operations may bind compute pipelines of their own here: this
        // command buffer belongs to a compute-capable queue.
        internal::SequenceRecordingScope scope(mObjects->resources.track);
        op->record(mCommandBuffer);
    }
    mOps.push_back(op);
    if (mTimestampPool) {
        mCommandBuffer.writeTimestamp(vk::PipelineStageFlagBits::eAllCommands,
                                      mTimestampPool,
                                      static_cast<uint32_t>(mOps.size()));
    }
}

std::shared_ptr<Sequence>
Sequence::record(std::shared_ptr<OpBase> op)
{
    UseGuard guard(*this);
    checkUsable("Sequence::record");
    recordOp(op);
    return shared_from_this();
}

void
Sequence::submit()
{
    mDevice->collectRetired();
    if (mRunning) {
        throw Error("The sequence is already running: call evalAwait() before evaluating it "
                    "again");
    }
    if (mRecording) {
        endBatch();
    }
    bool stale = mStale;
    for (auto& op : mOps) {
        stale = stale || op->needsRerecord();
    }
    if (stale) {
        // An algorithm was rebuilt or rebound since recording (or an
        // earlier re-recording failed): the recorded commands reference
        // objects that are gone or changed.
        recordAgain();
        endBatch();
    } else if (!mHasBatch) {
        beginBatch();
        endBatch();
    }
    for (auto& op : mOps) {
        op->preEval(mCommandBuffer);
    }
    collectWaits();
    check(mDevice->device().resetFences(1, &mFence), "Resetting a sequence's fence");
    vk::SubmitInfo submitInfo(static_cast<uint32_t>(mWaitSemaphores.size()),
                              mWaitSemaphores.data(),
                              mWaitStages.data(),
                              1,
                              &mCommandBuffer);
    uint64_t signalValue = mSubmissions.load() + 1;
    vk::TimelineSemaphoreSubmitInfo timelineInfo(static_cast<uint32_t>(mWaitValues.size()),
                                                 mWaitValues.data(),
                                                 1,
                                                 &signalValue);
    if (mTimeline) {
        submitInfo.signalSemaphoreCount = 1;
        submitInfo.pSignalSemaphores = &mTimeline;
        submitInfo.pNext = &timelineInfo;
    }
    {
        std::lock_guard<std::mutex> lock(mQueue->mutex);
        check(mQueue->handle.submit(1, &submitInfo, mFence), "Submitting a sequence");
    }
    mSubmissions.store(signalValue);
    mRunning = true;
    mTimestampsReady = false;
    trackSubmission(signalValue);
}

void
Sequence::collectWaits()
{
    mWaitSemaphores.clear();
    mWaitValues.clear();
    mWaitStages.clear();
    for (auto& weak : mWaits) {
        std::shared_ptr<Sequence> other = weak.lock();
        if (!other || !other->mFence) {
            continue; // gone or destroyed: nothing left to wait for
        }
        uint64_t value = other->mSubmissions.load();
        if (value == 0) {
            continue;
        }
        if (mTimeline && other->mTimeline) {
            mWaitSemaphores.push_back(other->mTimeline);
            mWaitValues.push_back(value);
            mWaitStages.push_back(vk::PipelineStageFlagBits::eAllCommands);
        } else {
            // No timeline semaphores: wait on the host for its submission.
            vk::Result result =
              mDevice->device().waitForFences(1, &other->mFence, VK_TRUE, UINT64_MAX);
            check(result, "Waiting on the host for a sequence this one depends on");
        }
    }
}

std::shared_ptr<Sequence>
Sequence::waitFor(const std::shared_ptr<Sequence>& other)
{
    UseGuard guard(*this);
    checkUsable("Sequence::waitFor");
    if (!other) {
        throw Error("Sequence::waitFor was given a null sequence");
    }
    if (other.get() == this) {
        throw Error("A sequence cannot wait for itself");
    }
    if (!other->mDevice || other->mDevice->device() != mDevice->device()) {
        throw Error("Sequence::waitFor: the other sequence belongs to another Manager");
    }
    for (const auto& existing : mWaits) {
        if (existing.lock() == other) {
            return shared_from_this();
        }
    }
    mWaits.push_back(other);
    mWaitSemaphores.reserve(mWaits.size());
    mWaitValues.reserve(mWaits.size());
    mWaitStages.reserve(mWaits.size());
    return shared_from_this();
}

void
Sequence::clearWaits()
{
    UseGuard guard(*this);
    mWaits.clear();
}

void
Sequence::await(uint64_t waitFor)
{
    if (!mRunning) {
        KP_LOG_DEBUG("evalAwait() with nothing pending returns at once");
        return;
    }
    vk::Result result = mDevice->device().waitForFences(1, &mFence, VK_TRUE, waitFor);
    if (result == vk::Result::eTimeout) {
        KP_LOG_DEBUG("evalAwait() timed out after {} ns; the sequence is still running",
                     waitFor);
        return;
    }
    mRunning = false;
    trackCompletion();
    check(result, "Waiting for a sequence");
    mTimestampsReady = mTimestampPool ? true : false;
    for (auto& op : mOps) {
        op->postEval(mCommandBuffer);
    }
}

std::shared_ptr<Sequence>
Sequence::eval()
{
    UseGuard guard(*this);
    checkUsable("Sequence::eval");
    submit();
    await(UINT64_MAX);
    return shared_from_this();
}

std::shared_ptr<Sequence>
Sequence::eval(std::shared_ptr<OpBase> op)
{
    UseGuard guard(*this);
    checkUsable("Sequence::eval");
    if (mRunning) {
        throw Error("The sequence is already running: call evalAwait() first");
    }
    if (mRecording) {
        endBatch();
    }
    beginBatch();
    recordOp(op);
    submit();
    await(UINT64_MAX);
    return shared_from_this();
}

std::shared_ptr<Sequence>
Sequence::evalAsync()
{
    UseGuard guard(*this);
    checkUsable("Sequence::evalAsync");
    submit();
    return shared_from_this();
}

std::shared_ptr<Sequence>
Sequence::evalAsync(std::shared_ptr<OpBase> op)
{
    UseGuard guard(*this);
    checkUsable("Sequence::evalAsync");
    if (mRunning) {
        throw Error("The sequence is already running: call evalAwait() first");
    }
    if (mRecording) {
        endBatch();
    }
    beginBatch();
    recordOp(op);
    submit();
    return shared_from_this();
}

std::shared_ptr<Sequence>
Sequence::evalAwait(uint64_t waitFor)
{
    UseGuard guard(*this);
    checkUsable("Sequence::evalAwait");
    await(waitFor);
    return shared_from_this();
}

void
Sequence::clear()
{
    UseGuard guard(*this);
    if (mRunning) {
        throw Error("Cannot clear a running sequence: call evalAwait() first");
    }
    if (mRecording) {
        endBatch();
    }
    dropOps();
    if (mObjects) {
        internal::dropBatch(*mObjects);
    }
    mHasBatch = false;
    mStale = false;
    mTimestampsReady = false;
}

void
Sequence::begin()
{
    UseGuard guard(*this);
    checkUsable("Sequence::begin");
    if (mRecording) {
        KP_LOG_DEBUG("Sequence::begin: already recording");
        return;
    }
    beginBatch();
}

void
Sequence::end()
{
    UseGuard guard(*this);
    checkUsable("Sequence::end");
    if (mRunning) {
        throw Error("Cannot end recording of a running sequence: call evalAwait() first");
    }
    endBatch();
}

bool
Sequence::isRecording() const
{
    return mRecording;
}

bool
Sequence::isRunning() const
{
    return mRunning;
}

bool
Sequence::isInit() const
{
    return mObjects && mDevice && mDevice->isAlive();
}

void
Sequence::rerecord()
{
    UseGuard guard(*this);
    checkUsable("Sequence::rerecord");
    if (mRunning) {
        throw Error("Cannot re-record a running sequence: call evalAwait() first");
    }
    if (mRecording) {
        endBatch();
    }
    recordAgain();
}

void
Sequence::recordAgain()
{
    std::vector<std::shared_ptr<OpBase>> ops = mOps;
    try {
        beginBatch();
        for (auto& op : ops) {
            recordOp(op);
        }
    } catch (...) {
        // Keeps every operation, so that the next evaluation records them
        // again once the cause is fixed; the half-recorded command buffer is
        // never submitted.
        if (mRecording) {
            vkEndCommandBuffer(mCommandBuffer);
            mRecording = false;
        }
        mOps = ops;
        mHasBatch = false;
        mStale = true;
        throw;
    }
}

void
Sequence::trackSubmission(uint64_t value)
{
    mObjects->resources.track->submitted.store(value, std::memory_order_release);
    mObjects->resources.fencePending = true;
}

void
Sequence::trackCompletion()
{
    mObjects->resources.fencePending = false;
    mObjects->resources.track->fenceSignalled(mObjects->resources.track->submitted.load());
    if (!mTimeline) {
        // Without a timeline semaphore the fence, just seen signalled, is
        // the submission's only sync object.
        auto& track = *mObjects->resources.track;
        track.completed.store(track.submitted.load(), std::memory_order_release);
    }
    mDevice->collectRetired();
}

void
Sequence::destroy()
{
    UseGuard guard(*this, UseGuard::Busy::eWait);
    if (!mObjects) {
        return;
    }
    std::unique_ptr<internal::SequenceObjects> objects = std::move(mObjects);
    std::vector<std::shared_ptr<OpBase>> ops;
    ops.swap(mOps);
    mRunning = false;
    mRecording = false;
    mHasBatch = false;
    mTimestampPool = vk::QueryPool();
    mTimeline = vk::Semaphore();
    mWaits.clear();
    mFence = vk::Fence();
    mCommandBuffer = vk::CommandBuffer();
    // Work in flight may still use them: the device frees them when it is
    // done (and keeps the command pool, fence and semaphore for reuse).
    internal::dropBatch(*objects);
    if (objects->timestamps) {
        mDevice->retire(std::move(objects->timestamps));
    }
    mDevice->releaseSequenceResources(std::move(objects->resources));
    // The operations' memory objects and algorithms retire their own
    // objects as the last references go.
    ops.clear();
}

std::vector<std::uint64_t>
Sequence::getTimestamps()
{
    UseGuard guard(*this);
    checkUsable("Sequence::getTimestamps");
    if (!mTimestampPool) {
        throw Error("Timestamps were not enabled: create the sequence with "
                    "mgr.sequence(queueIndex, totalTimestamps) and totalTimestamps > 0");
    }
    if (mRunning) {
        throw Error("Timestamps are not ready: the sequence is running (call evalAwait())");
    }
    if (!mTimestampsReady) {
        throw Error("No evaluation has completed since the last record: evaluate the "
                    "sequence before reading its timestamps");
    }
    uint32_t count = static_cast<uint32_t>(mOps.size()) + 1;
    std::vector<std::uint64_t> ticks(count);
    check(mDevice->device().getQueryPoolResults(mTimestampPool,
                                                0,
                                                count,
                                                count * sizeof(uint64_t),
                                                ticks.data(),
                                                sizeof(uint64_t),
                                                vk::QueryResultFlagBits::e64 |
                                                  vk::QueryResultFlagBits::eWait),
          "Reading a sequence's timestamps");
    uint32_t validBits = mQueue->timestampValidBits;
    if (validBits < 64) {
        uint64_t mask = (uint64_t{ 1 } << validBits) - 1;
        for (auto& tick : ticks) {
            tick &= mask;
        }
    }
    return ticks;
}

std::vector<double>
Sequence::getTimestampsNs()
{
    std::vector<std::uint64_t> ticks = getTimestamps();
    double period = static_cast<double>(mDevice->properties().limits.timestampPeriod);
    std::vector<double> nanoseconds;
    nanoseconds.reserve(ticks.size());
    // Relative to the first timestamp: absolute counters (about 1e17 ns on
    // NVIDIA) would lose nanoseconds in a double.
    for (uint64_t tick : ticks) {
        nanoseconds.push_back(static_cast<double>(tick - ticks.front()) * period);
    }
    return nanoseconds;
}

} // namespace kp
