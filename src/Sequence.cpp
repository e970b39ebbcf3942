// SPDX-License-Identifier: Apache-2.0
#include "kompute/Sequence.hpp"

#include <thread>

#include "internal/BarrierTracker.hpp"
#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "internal/OpChecks.hpp"
#include "internal/Wait.hpp"
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
    mBarriers = internal::acquireBarrierTracker();
    mDevice->registry().add(this);
}

Sequence::~Sequence()
{
    // The operations go only after the sequence has left the registry:
    // dropping their last references runs code we do not control (in
    // Python, a tensor's deleter may release the last reference of the
    // Manager, whose destroy() waits for every object that is leaving the
    // registry, and would wait for this one on this very thread).
    std::vector<std::shared_ptr<OpBase>> ops;
    {
        internal::Registry::Removal removal(mDevice->registry(), this);
        try {
            ops = detachForDestroy();
        } catch (const std::exception& error) {
            KP_LOG_ERROR("Destroying a sequence failed: {}", error.what());
        }
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
    mBarriers->reset();
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
    // Makes the batch's device writes that the host can read visible to it
    // once the submission has completed.
    mBarriers->endBatch(mCommandBuffer);
    check(VULKAN_HPP_DEFAULT_DISPATCHER.vkEndCommandBuffer(mCommandBuffer), "Ending a sequence's command buffer");
    mRecording = false;
    mHasBatch = true;
}

void
Sequence::abandonBatch()
{
    // Reset rather than ended: ending a command buffer that refers to a
    // destroyed object is an error, and beginning one still recording too.
    if (mRecording) {
        VULKAN_HPP_DEFAULT_DISPATCHER.vkResetCommandBuffer(mCommandBuffer, 0);
        mRecording = false;
        internal::dropBatch(*mObjects);
    }
    mHasBatch = false;
}

void
Sequence::dropOps()
{
    mOps.clear();
}

bool
Sequence::declareOp(const std::shared_ptr<OpBase>& op)
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
    std::vector<MemoryAccess>& accesses = mBarriers->declarations();
    accesses.clear();
    bool declared = false;
    {
        // What an operation does may depend on recording into a sequence
        // (OpCopy copies by shader there).
        internal::SequenceRecordingScope scope(mObjects->resources.track, mDevice->device());
        declared = op->declareAccesses(accesses);
    }
    if (declared) {
        internal::checkRecordedDevice(mDevice->device(), accesses, "Sequence::record");
    }
    return declared;
}

void
Sequence::recordDeclaredOp(const std::shared_ptr<OpBase>& op, bool declared)
{
    if (!mRecording) {
        beginBatch();
    }
    OpBase::ChainLink waits = op->chainWait();
    if (mBarriers->chainMismatch(waits)) {
        // (Before anything of the operation is recorded.)
        throw Error(format("Sequence::record: the operation waits for slot {} of a dispatch chain, which the "
                           "operation recorded just before it does not signal (see MatMulParams::chained)",
                           waits.slot));
    }
    mBarriers->beforeChainedOperation(mCommandBuffer, declared, mBarriers->declarations(), waits, op->chainSignal());
    {
        // Operations may bind compute pipelines of their own here: this
        // command buffer belongs to a compute-capable queue. Those that
        // declared their accesses leave their barriers to the sequence.
        internal::SequenceRecordingScope scope(
          mObjects->resources.track, mDevice->device(), declared ? op.get() : nullptr);
        try {
            op->record(mCommandBuffer);
        } catch (...) {
            // The command buffer may hold part of its commands: it is never
            // submitted. The sequence is left as before the call, its earlier
            // operations recorded anew (or, should that fail too, recorded
            // again by the next evaluation).
            abandonBatch();
            try {
                recordAgain();
            } catch (...) {
            }
            throw;
        }
    }
    mOps.push_back(op);
    if (mTimestampPool) {
        mCommandBuffer.writeTimestamp(vk::PipelineStageFlagBits::eAllCommands,
                                      mTimestampPool,
                                      static_cast<uint32_t>(mOps.size()));
    }
}

void
Sequence::recordOp(const std::shared_ptr<OpBase>& op)
{
    bool declared = declareOp(op);
    recordDeclaredOp(op, declared);
}

uint32_t
Sequence::recordedBarrierCount() const
{
    return mBarriers ? mBarriers->barrierCount() : 0;
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
    // The operations check their objects before the command buffer is
    // touched. A batch they refuse is dropped; its operations stay, and the
    // next evaluation records them anew (their checks repeat the error until
    // its cause is gone).
    try {
        for (auto& op : mOps) {
            op->preEval(mCommandBuffer);
        }
    } catch (...) {
        abandonBatch();
        mStale = true;
        throw;
    }
    bool stale = mStale;
    for (auto& op : mOps) {
        stale = stale || op->needsRerecord();
    }
    if (stale) {
        // An algorithm was rebuilt or rebound since recording (or an
        // earlier re-recording failed): the recorded commands reference
        // objects that are gone or changed.
        abandonBatch();
        recordAgain();
        endBatch();
    } else if (mRecording) {
        endBatch();
    } else if (!mHasBatch) {
        beginBatch();
        endBatch();
    }
    collectWaits();
    // With a timeline semaphore the submission's completion is its value:
    // no fence to reset and signal (see completesByFence()).
    bool byFence = completesByFence();
    if (byFence) {
        check(mDevice->device().resetFences(1, &mFence), "Resetting a sequence's fence");
    }
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
        // A submission no host wait has seen complete may still run: the
        // entry barrier orders this one after it. Otherwise nothing needs
        // ordering: a host wait orders all work after it after the work it
        // waited for. On a device the program brought (BYOV), its own work
        // may be on the queue too.
        mQueue->forgetCompletedOrphans();
        std::array<vk::CommandBuffer, 2> commandBuffers = { vk::CommandBuffer(), mCommandBuffer };
        bool behindOthers = mQueue->unobservedSubmissions.load() > 0 || !mDevice->ownsDevice();
        if (behindOthers) {
            commandBuffers[0] = mDevice->entryBarriers().get(mDevice.get(), mQueue->familyIndex);
        }
        submitInfo.commandBufferCount = behindOthers ? 2 : 1;
        submitInfo.pCommandBuffers = behindOthers ? &commandBuffers[0] : &commandBuffers[1];
        check(mQueue->handle.submit(1, &submitInfo, byFence ? mFence : vk::Fence()),
              "Submitting a sequence");
        mQueue->unobservedSubmissions.fetch_add(1);
        mSubmissionUnobserved = true;
    }
    internal::noteSubmitted(mWaitHistory);
    mSubmissions.store(signalValue);
    mRunning = true;
    mTimestampsReady = false;
    trackSubmission(signalValue, byFence);
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
            check(other->blockOnSubmission(value, UINT64_MAX),
                  "Waiting on the host for a sequence this one depends on");
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

bool
Sequence::completesByFence() const
{
    // Waiting for a timeline value is the cheaper: no fence to reset
    // before each submission, and on NVIDIA the host sees the value sooner
    // (kompute-bench a_eval_roundtrip: 14.6 against 15.7 us on the H200).
    return !mTimeline || mDevice->waitSettings().fences();
}

bool
Sequence::submissionDone(uint64_t value) const
{
    vk::Device device = mDevice->device();
    if (!completesByFence()) {
        uint64_t reached = 0;
        check(device.getSemaphoreCounterValue(mTimeline, &reached),
              "Reading a sequence's timeline semaphore");
        return reached >= value;
    }
    vk::Result status = device.getFenceStatus(mFence);
    if (status == vk::Result::eNotReady) {
        return false;
    }
    check(status, "Reading a sequence's fence");
    return true;
}

vk::Result
Sequence::blockOnSubmission(uint64_t value, uint64_t timeoutNs) const
{
    vk::Device device = mDevice->device();
    vk::Result result;
    if (!completesByFence()) {
        vk::SemaphoreWaitInfo waitInfo({}, 1, &mTimeline, &value);
        result = device.waitSemaphores(&waitInfo, timeoutNs);
    } else {
        result = device.waitForFences(1, &mFence, VK_TRUE, timeoutNs);
    }
    if (result != vk::Result::eTimeout) {
        check(result, "Waiting for a sequence");
    }
    return result;
}

void
Sequence::observedCompletion()
{
    if (mSubmissionUnobserved) {
        mQueue->unobservedSubmissions.fetch_sub(1);
        mSubmissionUnobserved = false;
    }
}

void
Sequence::await(uint64_t waitFor)
{
    if (!mRunning) {
        KP_LOG_DEBUG("evalAwait() with nothing pending returns at once");
        return;
    }
    uint64_t value = mSubmissions.load();
    vk::Result result = internal::waitForSubmission(
      mWaitHistory,
      mDevice->waitSettings(),
      waitFor,
      [&] { return submissionDone(value); },
      [&](uint64_t timeoutNs) { return blockOnSubmission(value, timeoutNs); });
    if (result == vk::Result::eTimeout) {
        KP_LOG_DEBUG("evalAwait() timed out after {} ns; the sequence is still running",
                     waitFor);
        return;
    }
    mRunning = false;
    trackCompletion();
    check(result, "Waiting for a sequence");
    observedCompletion();
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
    bool declared = declareOp(op); // checks before the batch is dropped
    abandonBatch();
    beginBatch();
    recordDeclaredOp(op, declared);
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
    bool declared = declareOp(op); // checks before the batch is dropped
    abandonBatch();
    beginBatch();
    recordDeclaredOp(op, declared);
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
    abandonBatch();
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
    abandonBatch();
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
        abandonBatch();
        mOps = ops;
        mStale = true;
        throw;
    }
}

void
Sequence::trackSubmission(uint64_t value, bool byFence)
{
    mObjects->resources.track->submitted.store(value, std::memory_order_release);
    mObjects->resources.fencePending = byFence;
}

void
Sequence::trackCompletion()
{
    auto& track = *mObjects->resources.track;
    uint64_t value = track.submitted.load();
    mObjects->resources.fencePending = false;
    track.fenceSignalled(value); // its commands have run
    if (!mTimeline || !completesByFence()) {
        // The wait saw the submission's only sync object signalled: the
        // fence where there is no timeline semaphore, else the semaphore.
        track.completed.store(value, std::memory_order_release);
    }
    mDevice->collectRetired();
}

void
Sequence::destroy()
{
    // The operations' memory objects and algorithms retire their own
    // objects as the last references go.
    detachForDestroy().clear();
}

std::vector<std::shared_ptr<OpBase>>
Sequence::detachForDestroy()
{
    UseGuard guard(*this, UseGuard::Busy::eWait);
    if (!mObjects) {
        return {};
    }
    if (mSubmissionUnobserved) {
        // Still running, maybe: the queue keeps counting it until the
        // device reports it complete.
        mQueue->orphanUnobserved(mObjects->resources.track, mSubmissions.load());
        mSubmissionUnobserved = false;
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
    return ops;
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
