// SPDX-License-Identifier: Apache-2.0
// kp::Sequence: records operations into one command buffer and submits
// them as one batch on one queue.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "kompute/Core.hpp"
#include "kompute/LegacyTensorList.hpp"
#include "kompute/Memory.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

class Algorithm;

namespace internal {
class Device;
class Registry;
struct Queue;
struct SequenceObjects;
class BarrierTracker;

/** Returns a tracker to its pool (internal/BarrierTracker.hpp). */
struct BarrierTrackerRelease
{
    void operator()(BarrierTracker* tracker) const;
};

/** What a sequence remembers of its recent waits, for WaitStrategy::eAuto
 * (used by internal/Wait.hpp). */
struct WaitHistory
{
    static constexpr size_t kSize = 8;
    std::chrono::steady_clock::time_point submittedAt{};
    /** Submission-to-completion times of the latest waits that waited, ns. */
    std::array<uint64_t, kSize> recentNs{};
    size_t count = 0;
    size_t next = 0;
};
}

/**
 * A batch of operations on one queue.
 *
 * Recording after an evaluation starts a new batch: the command buffer and
 * the list of operations restart, so eval() then runs only what was recorded
 * since. eval() with nothing new re-submits the recorded batch as it is,
 * without re-recording, allocating or creating anything.
 *
 * Made by Manager::sequence() and handed out as std::shared_ptr. A
 * sequence owns its command pool, command buffer, fence, timeline semaphore
 * and timestamp query pool, and holds the operations recorded into its
 * current batch (and, through them, their tensors and algorithms) until the
 * batch is replaced, cleared or the sequence destroyed. See
 * @ref readme_queues_asynchronous_work_and_dependencies and
 * @ref readme_barriers.
 *
 * One sequence is used by one thread at a time; using it from two threads at
 * once throws kp::Error. isRunning() and isRecording() may be asked from any
 * thread, and destroy() waits for a call in progress on another thread.
 */
class Sequence : public std::enable_shared_from_this<Sequence>
{
  public:
    /** Standalone sequence on a caller's device and queue (upstream's
     * constructor). On a Manager's device the queue must be one of that
     * Manager's (kp::Error otherwise); on another device `queueIndex` is
     * the queue's family index. Prefer Manager::sequence. */
    Sequence(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
             std::shared_ptr<vk::Device> device,
             std::shared_ptr<vk::Queue> computeQueue,
             uint32_t queueIndex,
             uint32_t totalTimestamps = 0);
    /// \cond INTERNAL
    /** Used by the Manager: queue `queueIndex` of the device context. */
    Sequence(std::shared_ptr<internal::Device> device,
             uint32_t queueIndex,
             uint32_t totalTimestamps);
    /// \endcond
    Sequence(const Sequence&) = delete;
    Sequence(Sequence&&) = delete;
    Sequence& operator=(const Sequence&) = delete;
    Sequence& operator=(Sequence&&) = delete;
    /** As destroy(). */
    ~Sequence();

    /** Records `op` into the batch (starting a new batch after an
     * evaluation) and returns this sequence, so calls chain. Throws
     * kp::Error while the sequence is running, for a null operation, and
     * when the operation's objects belong to another Manager (nothing is
     * recorded then); kp::DestroyedError for destroyed objects. */
    std::shared_ptr<Sequence> record(std::shared_ptr<OpBase> op);

    /** record(std::make_shared<T>(memObjects, params...)): an operation
     * over memory objects, for example record<kp::OpSyncDevice>({ a, b }). */
    template<typename T, typename... TArgs>
    std::shared_ptr<Sequence> record(std::vector<std::shared_ptr<Memory>> memObjects,
                                     TArgs&&... params)
    {
        return record(std::make_shared<T>(memObjects, std::forward<TArgs>(params)...));
    }

    /** record(std::make_shared<T>(algorithm, params...)), e.g.
     * record<kp::OpAlgoDispatch>(algorithm, pushConstants). */
    template<typename T, typename... TArgs>
    std::shared_ptr<Sequence> record(std::shared_ptr<Algorithm> algorithm, TArgs&&... params)
    {
        return record(std::make_shared<T>(algorithm, std::forward<TArgs>(params)...));
    }

    /** Kompute 0.9.0's form of record<Op>, over a list of kp::Tensor
     * (deprecated: pass a std::vector<std::shared_ptr<kp::Memory>>). */
    template<typename T, typename Tensors, typename... TArgs>
    [[deprecated("Kompute 0.9.0 form: pass the tensors as std::vector<std::shared_ptr<kp::Memory>>")]]
    std::enable_if_t<detail::isTensorList<Tensors>, std::shared_ptr<Sequence>> record(
      const Tensors& tensors,
      TArgs&&... params)
    {
        return record<T>(detail::memoryList(tensors), std::forward<TArgs>(params)...);
    }

    /** Submits the batch and waits for it (as the Manager's WaitStrategy
     * says), running the operations' preEval before and postEval after.
     * Re-submitting an unchanged batch records, allocates and creates
     * nothing. Throws kp::Error while a submission is pending (evalAsync
     * without evalAwait), kp::DestroyedError when an object of the batch was
     * destroyed, kp::VulkanError (kp::DeviceLostError, ...) when the device
     * fails. */
    std::shared_ptr<Sequence> eval();
    /** Clears the batch, records `op` alone, submits and waits. */
    std::shared_ptr<Sequence> eval(std::shared_ptr<OpBase> op);

    /** eval(std::make_shared<T>(memObjects, params...)). */
    template<typename T, typename... TArgs>
    std::shared_ptr<Sequence> eval(std::vector<std::shared_ptr<Memory>> memObjects,
                                   TArgs&&... params)
    {
        return eval(std::make_shared<T>(memObjects, std::forward<TArgs>(params)...));
    }

    /** eval(std::make_shared<T>(algorithm, params...)). */
    template<typename T, typename... TArgs>
    std::shared_ptr<Sequence> eval(std::shared_ptr<Algorithm> algorithm, TArgs&&... params)
    {
        return eval(std::make_shared<T>(algorithm, std::forward<TArgs>(params)...));
    }

    /** Kompute 0.9.0's form of eval<Op>, over a list of kp::Tensor
     * (deprecated: pass a std::vector<std::shared_ptr<kp::Memory>>). */
    template<typename T, typename Tensors, typename... TArgs>
    [[deprecated("Kompute 0.9.0 form: pass the tensors as std::vector<std::shared_ptr<kp::Memory>>")]]
    std::enable_if_t<detail::isTensorList<Tensors>, std::shared_ptr<Sequence>> eval(
      const Tensors& tensors,
      TArgs&&... params)
    {
        return eval<T>(detail::memoryList(tensors), std::forward<TArgs>(params)...);
    }

    /** Submits the batch and returns at once; evalAwait() completes it.
     * Throws if the previous submission has not been awaited. */
    std::shared_ptr<Sequence> evalAsync();
    /** Clears the batch, records `op` alone and submits it, returning at
     * once. */
    std::shared_ptr<Sequence> evalAsync(std::shared_ptr<OpBase> op);

    /** evalAsync(std::make_shared<T>(memObjects, params...)). */
    template<typename T, typename... TArgs>
    std::shared_ptr<Sequence> evalAsync(std::vector<std::shared_ptr<Memory>> memObjects,
                                        TArgs&&... params)
    {
        return evalAsync(std::make_shared<T>(memObjects, std::forward<TArgs>(params)...));
    }

    /** evalAsync(std::make_shared<T>(algorithm, params...)). */
    template<typename T, typename... TArgs>
    std::shared_ptr<Sequence> evalAsync(std::shared_ptr<Algorithm> algorithm, TArgs&&... params)
    {
        return evalAsync(std::make_shared<T>(algorithm, std::forward<TArgs>(params)...));
    }

    /** Kompute 0.9.0's form of evalAsync<Op>, over a list of kp::Tensor
     * (deprecated: pass a std::vector<std::shared_ptr<kp::Memory>>). */
    template<typename T, typename Tensors, typename... TArgs>
    [[deprecated("Kompute 0.9.0 form: pass the tensors as std::vector<std::shared_ptr<kp::Memory>>")]]
    std::enable_if_t<detail::isTensorList<Tensors>, std::shared_ptr<Sequence>> evalAsync(
      const Tensors& tensors,
      TArgs&&... params)
    {
        return evalAsync<T>(detail::memoryList(tensors), std::forward<TArgs>(params)...);
    }

    /**
     * Waits up to `waitFor` nanoseconds for the submission, then runs the
     * operations' postEval. On timeout the sequence stays running (call it
     * again later). Returns at once when nothing is pending. Throws
     * kp::VulkanError on device loss.
     */
    std::shared_ptr<Sequence> evalAwait(uint64_t waitFor = UINT64_MAX);

    /** Drops the recorded operations and ends recording. */
    void clear();
    /** Starts a new batch (dropping the previous one). Throws while
     * running; does nothing if already recording. */
    void begin();
    /** Ends recording; the batch can then be evaluated. */
    void end();
    /** Whether a batch is being recorded (operations can be added to it);
     * may be asked from any thread. */
    bool isRecording() const;
    /** Whether a submission is pending: evalAsync() was called and
     * evalAwait() has not yet seen it complete; may be asked from any
     * thread. */
    bool isRunning() const;
    /** False once the sequence or its Manager was destroyed. */
    bool isInit() const;
    /** Records the batch's operations again into a fresh command buffer
     * (after an algorithm was rebuilt, say). */
    void rerecord();
    /** Drops the recorded operations and hands the Vulkan objects to the
     * device, which frees them once work in flight has completed: it does
     * not wait (a submission never awaited completes on its own, without
     * postEval). A call in progress on another thread is finished first.
     * Idempotent; afterwards every use throws kp::DestroyedError. */
    void destroy();

    /** Raw timestamp ticks of the last completed evaluation: one at the
     * start and one after each operation. Throws if timestamps were not
     * requested or no evaluation has completed since the last record. */
    std::vector<std::uint64_t> getTimestamps();
    /** The same, as nanoseconds since the first timestamp, scaled by the
     * device's timestamp period. */
    std::vector<double> getTimestampsNs();

    /**
     * Makes every later submission of this sequence wait, on the GPU, for
     * the latest submission of `other`. The dependency stays until
     * clearWaits(). Where the device has timeline semaphores no host wait is
     * involved, even across queues; elsewhere the submission waits on the
     * host for `other` to finish. A sequence that was never submitted is not
     * waited for.
     */
    std::shared_ptr<Sequence> waitFor(const std::shared_ptr<Sequence>& other);
    /** Drops the dependencies added by waitFor. */
    void clearWaits();
    /** Number of submissions so far; the value this sequence's timeline
     * semaphore reaches when the latest one completes. */
    uint64_t submissionCount() const { return mSubmissions.load(); }
    /** The timeline semaphore signalled by each submission, or null where
     * the device has no timeline semaphores (for host Vulkan code; owned by
     * the sequence). */
    vk::Semaphore getTimelineSemaphore() const { return mTimeline; }

    /** The command buffer (to interoperate with host Vulkan code): owned by
     * the sequence, re-begun for each new batch, null after destroy(). */
    vk::CommandBuffer getCommandBuffer() const { return mCommandBuffer; }

    /**
     * Pipeline barriers the sequence recorded between the operations of
     * the current batch: one before each operation that reads what
     * an earlier one wrote, or writes what an earlier one read or wrote, and
     * around operations that declare no accesses (see
     * OpBase::declareAccesses). Independent operations need none. Not
     * counted: the barrier at the end of a batch that makes device writes
     * visible to the host, and barriers operations record themselves
     * (OpMemoryBarrier).
     */
    uint32_t recordedBarrierCount() const;

  private:
    // Manager::destroy() drops a sequence's operations only once it is done
    // with the sequence itself (see Registry::destroyNode).
    friend class internal::Registry;

    /** destroy() without dropping the operations: they are returned, for
     * the caller to drop (see ~Sequence). */
    std::vector<std::shared_ptr<OpBase>> detachForDestroy();
    class UseGuard;

    void create();
    void checkUsable(const char* action) const;
    void beginBatch();
    void endBatch();
    /** Forgets the batch in the command buffer without ending it (the
     * buffer is invalid: one of its objects is gone). */
    void abandonBatch();
    void recordOp(const std::shared_ptr<OpBase>& op);
    /** The checks before recording `op`, and its declared accesses (kept
     * in the barrier tracker); returns whether it declared them. */
    bool declareOp(const std::shared_ptr<OpBase>& op);
    /** Records `op`, declared by declareOp just before. */
    void recordDeclaredOp(const std::shared_ptr<OpBase>& op, bool declared);
    /** Starts a new batch holding the current operations again. */
    void recordAgain();
    void submit();
    /** Fills the wait arrays of the next submission from mWaits. */
    void collectWaits();
    void await(uint64_t waitFor);
    /** Notes that a host wait saw the latest submission complete. */
    void observedCompletion();
    /** Whether submissions signal the fence (else only the timeline
     * semaphore), and waits wait for it. */
    bool completesByFence() const;
    /** Whether submission number `value` has completed (one poll). */
    bool submissionDone(uint64_t value) const;
    /** Waits in the driver up to `timeoutNs` for submission `value`:
     * eSuccess or eTimeout; throws on other results. */
    vk::Result blockOnSubmission(uint64_t value, uint64_t timeoutNs) const;
    void dropOps();
    /** Tells the device's retire list about a submission and its end. */
    void trackSubmission(uint64_t value, bool byFence);
    void trackCompletion();

    std::shared_ptr<internal::Device> mDevice;
    internal::Queue* mQueue = nullptr;
    internal::WaitHistory mWaitHistory;
    uint32_t mQueueIndex = 0;
    uint32_t mTotalTimestamps = 0;

    // The Vulkan objects (owners); the handles below are copies of theirs,
    // null once destroyed.
    std::unique_ptr<internal::SequenceObjects> mObjects;
    vk::CommandBuffer mCommandBuffer;
    vk::Fence mFence;
    vk::QueryPool mTimestampPool;

    std::vector<std::shared_ptr<OpBase>> mOps;
    // Where the batch's operations read and write, for its barriers.
    std::unique_ptr<internal::BarrierTracker, internal::BarrierTrackerRelease> mBarriers;
    // This sequence's latest submission counts in its queue's
    // unobservedSubmissions.
    bool mSubmissionUnobserved = false;

    // GPU-side dependencies (waitFor) and the timeline semaphore others
    // wait on. The vectors keep their capacity so a submission does not
    // allocate.
    vk::Semaphore mTimeline;
    std::atomic<uint64_t> mSubmissions{ 0 };
    std::vector<std::weak_ptr<Sequence>> mWaits;
    std::vector<vk::Semaphore> mWaitSemaphores;
    std::vector<uint64_t> mWaitValues;
    std::vector<vk::PipelineStageFlags> mWaitStages;
    // Atomic so that isRunning() and isRecording() may be asked from any
    // thread (the sequence itself belongs to one thread at a time).
    std::atomic<bool> mRecording{ false };
    bool mHasBatch = false;
    std::atomic<bool> mRunning{ false };
    bool mTimestampsReady = false;
    bool mStale = false; // the operations must be recorded again

    std::atomic<bool> mInUse{ false };
};

} // namespace kp
