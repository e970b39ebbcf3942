// SPDX-License-Identifier: Apache-2.0
#include "internal/Batches.hpp"

#include <algorithm>

namespace kp {
namespace internal {

namespace {
thread_local const std::shared_ptr<SubmissionTrack>* recordingTrack = nullptr;
thread_local const OpBase* orderedOperation = nullptr;
thread_local VkDevice recordingDevice = VK_NULL_HANDLE;
}

SequenceRecordingScope::SequenceRecordingScope(const std::shared_ptr<SubmissionTrack>& track,
                                               vk::Device device,
                                               const OpBase* ordered)
  : mPrevious(recordingTrack)
  , mPreviousOrdered(orderedOperation)
  , mPreviousDevice(recordingDevice)
{
    recordingTrack = &track;
    orderedOperation = ordered;
    recordingDevice = device;
}

SequenceRecordingScope::~SequenceRecordingScope()
{
    recordingTrack = mPrevious;
    orderedOperation = mPreviousOrdered;
    recordingDevice = mPreviousDevice;
}

vk::Device
SequenceRecordingScope::device()
{
    return recordingDevice;
}

bool
SequenceRecordingScope::orders(const OpBase* op)
{
    return op != nullptr && orderedOperation == op;
}

bool
SequenceRecordingScope::active()
{
    return recordingTrack != nullptr;
}

const std::shared_ptr<SubmissionTrack>*
SequenceRecordingScope::track()
{
    return recordingTrack;
}

void
BatchReferences::noteRecorded()
{
    const std::shared_ptr<SubmissionTrack>* track = SequenceRecordingScope::track();
    if (track == nullptr) {
        return;
    }
    uint64_t batch = (*track)->batch.load(std::memory_order_acquire);
    std::lock_guard<std::mutex> lock(mMutex);
    for (auto& entry : mBatches) {
        if (entry.first == *track) {
            entry.second = batch;
            return;
        }
    }
    // Batches that are gone are forgotten here, so the list stays as long as
    // the number of sequences that hold the object.
    mBatches.erase(std::remove_if(mBatches.begin(),
                                  mBatches.end(),
                                  [](const BatchStamp& entry) {
                                      return entry.first->batch.load() != entry.second;
                                  }),
                   mBatches.end());
    mBatches.emplace_back(*track, batch);
}

std::vector<BatchStamp>
BatchReferences::current() const
{
    std::lock_guard<std::mutex> lock(mMutex);
    std::vector<BatchStamp> batches;
    for (const auto& entry : mBatches) {
        if (entry.first->batch.load(std::memory_order_acquire) == entry.second) {
            batches.push_back(entry);
        }
    }
    return batches;
}

} // namespace internal
} // namespace kp
