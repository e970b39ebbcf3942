// SPDX-License-Identifier: Apache-2.0
// What the retire list needs to know about sequences: their submissions, and
// the batches (recorded command buffers) that refer to an object.
//
// A command buffer that refers to a destroyed Vulkan object is invalid:
// nothing more may be recorded into it, and it must not be submitted. So
// when a user destroys a tensor, image or algorithm that a sequence's batch
// has recorded, its Vulkan objects stay until that batch is gone (recorded
// anew, cleared or destroyed) and its submissions have completed; the
// object itself is inert at once, and evaluating the batch throws
// kp::DestroyedError.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "kompute/Vulkan.hpp"

namespace kp {

class OpBase;

namespace internal {

/** What the retire list knows of one sequence's resources: each submission
 * signals the next value of the sequence's timeline semaphore (or, without
 * timeline semaphores, its fence), and each batch recorded into its command
 * buffer has a number. Shared by the resources (recycled between sequences)
 * and every retire-list entry stamped with it, so it outlives both. */
struct SubmissionTrack
{
    vk::Semaphore semaphore; // null without timeline semaphores
    /** Value of the latest submission (the number of submissions). */
    std::atomic<uint64_t> submitted{ 0 };
    /** Highest value known to have completed: read from the semaphore
     * itself, never inferred from the fence (see Device::retire). */
    std::atomic<uint64_t> completed{ 0 };
    /** Highest value whose fence was seen signalled: its commands have run,
     * so what they used may go, but the driver may not have signalled the
     * semaphore yet (lavapipe signals the fence first), so sync objects
     * still wait for `completed`. */
    std::atomic<uint64_t> executed{ 0 };
    /** Number of the batch the command buffer holds; it changes when the
     * batch is dropped (recorded anew, cleared, or the sequence destroyed). */
    std::atomic<uint64_t> batch{ 0 };

    bool idle() const
    {
        return completed.load(std::memory_order_acquire) >=
               submitted.load(std::memory_order_acquire);
    }

    /** Whether the commands of submission `value` have run (its fence or
     * its semaphore seen signalled). */
    bool ran(uint64_t value) const
    {
        return completed.load(std::memory_order_acquire) >= value ||
               executed.load(std::memory_order_acquire) >= value;
    }

    /** The fence of submission `value` was seen signalled. */
    void fenceSignalled(uint64_t value)
    {
        uint64_t seen = executed.load(std::memory_order_relaxed);
        while (seen < value &&
               !executed.compare_exchange_weak(seen, value, std::memory_order_acq_rel)) {
        }
    }
};

/** A batch: (track, batch number). */
using BatchStamp = std::pair<std::shared_ptr<SubmissionTrack>, uint64_t>;

/**
 * Marks, for the calling thread, that operations are being recorded into a
 * kp::Sequence's batch, and which operation's barriers the sequence has
 * recorded (from its declared accesses, see internal/BarrierTracker.hpp).
 * Operations recorded elsewhere (a command buffer of the program's own, on a
 * queue of unknown capabilities) use no compute pipeline of their own,
 * record their own conservative barriers, and are not tracked: the program
 * keeps what it records alive itself. So do operations recorded inside
 * another operation's record().
 */
class SequenceRecordingScope
{
  public:
    /** `device`: the sequence's Vulkan device, whose objects alone may be
     * recorded (OpBase::recordNested checks against it). */
    SequenceRecordingScope(const std::shared_ptr<SubmissionTrack>& track,
                           vk::Device device,
                           const OpBase* ordered = nullptr);
    ~SequenceRecordingScope();
    SequenceRecordingScope(const SequenceRecordingScope&) = delete;
    SequenceRecordingScope& operator=(const SequenceRecordingScope&) = delete;

    static bool active();
    /** The track of the sequence being recorded, or null. */
    static const std::shared_ptr<SubmissionTrack>* track();
    /** The sequence has recorded the barriers `op` needs before it. */
    static bool orders(const OpBase* op);
    /** The Vulkan device of the sequence being recorded, or null. */
    static vk::Device device();

  private:
    const std::shared_ptr<SubmissionTrack>* mPrevious;
    const OpBase* mPreviousOrdered;
    vk::Device mPreviousDevice;
};

/** The batches that recorded an object (a tensor, image or algorithm). */
class BatchReferences
{
  public:
    /** Notes the batch being recorded on this thread, if any. */
    void noteRecorded();
    /** The batches that may still refer to the object. */
    std::vector<BatchStamp> current() const;

  private:
    mutable std::mutex mMutex;
    std::vector<BatchStamp> mBatches; // one entry per track, its latest batch
};

} // namespace internal
} // namespace kp
