// SPDX-License-Identifier: Apache-2.0
// OpSyncDevice and OpSyncLocal: the two directions of host <-> device sync.
#include "kompute/operations/OpSyncDevice.hpp"
#include "kompute/operations/OpSyncLocal.hpp"

#include "internal/Batches.hpp"
#include "internal/Barriers.hpp"
#include "internal/OpChecks.hpp"
#include "kompute/Tensor.hpp"

namespace kp {

namespace {

using internal::checkMemObjects;

void
checkRangeTargets(const std::vector<std::shared_ptr<Memory>>& objects,
                  uint32_t offset,
                  uint32_t count,
                  const char* opName)
{
    for (const auto& object : objects) {
        if (object->type() != Memory::Type::eTensor) {
            throw Error(logger::format("{}: an element range applies to tensors only", opName));
        }
        if (count == 0 || static_cast<uint64_t>(offset) + count > object->size()) {
            throw Error(logger::format("{}: elements [{}, {}) are not a non-empty range inside "
                                       "a tensor of {} elements",
                                       opName,
                                       offset,
                                       static_cast<uint64_t>(offset) + count,
                                       object->size()));
        }
    }
}

bool
isStaged(const Memory& object)
{
    return !object.isHostViewDirect() && object.memoryType() != Memory::MemoryTypes::eStorage;
}

bool
anyStaged(const std::vector<std::shared_ptr<Memory>>& objects)
{
    for (const auto& object : objects) {
        if (isStaged(*object)) {
            return true;
        }
    }
    return false;
}

// The copies between staging and primary memory of the staged objects:
// `from` read, the other part written, by transfers.
void
declareSyncCopies(const std::vector<std::shared_ptr<Memory>>& objects,
                  MemoryAccess::Part from,
                  std::vector<MemoryAccess>& accesses)
{
    MemoryAccess::Part to =
      from == MemoryAccess::Part::eStaging ? MemoryAccess::Part::ePrimary : MemoryAccess::Part::eStaging;
    for (const auto& object : objects) {
        if (!object) {
            continue;
        }
        if (isStaged(*object)) {
            accesses.push_back(MemoryAccess::transferRead(*object, from));
            accesses.push_back(MemoryAccess::transferWrite(*object, to));
        } else {
            accesses.push_back(MemoryAccess::reference(*object)); // nothing to copy
        }
    }
}

// Records the copies of one direction, for the whole objects or a range.
template<typename WholeCopy, typename RangeCopy>
void
recordSync(const vk::CommandBuffer& cmd,
           const OpBase* op,
           const std::vector<std::shared_ptr<Memory>>& objects,
           bool ranged,
           uint32_t offset,
           uint32_t count,
           const char* opName,
           WholeCopy wholeCopy,
           RangeCopy rangeCopy)
{
    checkMemObjects(objects, 1, opName);
    if (!anyStaged(objects)) {
        return; // host views are the device memory: nothing to copy
    }
    if (!internal::SequenceRecordingScope::orders(op)) {
        internal::recordBarrierBefore(cmd,
                                      vk::PipelineStageFlagBits::eTransfer,
                                      vk::AccessFlagBits::eTransferRead |
                                        vk::AccessFlagBits::eTransferWrite);
    }
    for (const auto& object : objects) {
        if (ranged) {
            rangeCopy(static_cast<Tensor&>(*object), cmd, offset, count);
        } else {
            wholeCopy(*object, cmd);
        }
    }
}

} // namespace

OpSyncDevice::OpSyncDevice(const std::vector<std::shared_ptr<Memory>>& memObjects)
  : mMemObjects(memObjects)
{
    checkMemObjects(mMemObjects, 1, "OpSyncDevice");
    mMemObjects = internal::withoutRepeats(mMemObjects);
}

OpSyncDevice::OpSyncDevice(const std::vector<std::shared_ptr<Memory>>& memObjects,
                           uint32_t offset,
                           uint32_t count)
  : mMemObjects(memObjects)
  , mRanged(true)
  , mOffset(offset)
  , mCount(count)
{
    checkMemObjects(mMemObjects, 1, "OpSyncDevice");
    checkRangeTargets(mMemObjects, offset, count, "OpSyncDevice");
    mMemObjects = internal::withoutRepeats(mMemObjects);
}

OpSyncDevice::~OpSyncDevice() = default;

void
OpSyncDevice::record(const vk::CommandBuffer& commandBuffer)
{
    recordSync(
      commandBuffer,
      this,
      mMemObjects,
      mRanged,
      mOffset,
      mCount,
      "OpSyncDevice",
      [](Memory& m, const vk::CommandBuffer& cmd) { m.recordCopyFromStagingToDevice(cmd); },
      [](Tensor& t, const vk::CommandBuffer& cmd, uint32_t offset, uint32_t count) {
          t.recordCopyFromStagingToDevice(cmd, offset, count);
      });
}

bool
OpSyncDevice::declareAccesses(std::vector<MemoryAccess>& accesses) const
{
    declareSyncCopies(mMemObjects, MemoryAccess::Part::eStaging, accesses);
    return true;
}

void
OpSyncDevice::preEval(const vk::CommandBuffer&)
{
    // The recorded copies use these objects' buffers (see OpCopy).
    checkMemObjects(mMemObjects, 1, "OpSyncDevice");
}

void
OpSyncDevice::postEval(const vk::CommandBuffer&)
{
}

OpSyncLocal::OpSyncLocal(const std::vector<std::shared_ptr<Memory>>& memObjects)
  : mMemObjects(memObjects)
{
    checkMemObjects(mMemObjects, 1, "OpSyncLocal");
    mMemObjects = internal::withoutRepeats(mMemObjects);
}

OpSyncLocal::OpSyncLocal(const std::vector<std::shared_ptr<Memory>>& memObjects,
                         uint32_t offset,
                         uint32_t count)
  : mMemObjects(memObjects)
  , mRanged(true)
  , mOffset(offset)
  , mCount(count)
{
    checkMemObjects(mMemObjects, 1, "OpSyncLocal");
    checkRangeTargets(mMemObjects, offset, count, "OpSyncLocal");
    mMemObjects = internal::withoutRepeats(mMemObjects);
}

OpSyncLocal::~OpSyncLocal() = default;

void
OpSyncLocal::record(const vk::CommandBuffer& commandBuffer)
{
    // The host-read barrier at the end of the batch covers the staging
    // writes recorded here.
    recordSync(
      commandBuffer,
      this,
      mMemObjects,
      mRanged,
      mOffset,
      mCount,
      "OpSyncLocal",
      [](Memory& m, const vk::CommandBuffer& cmd) { m.recordCopyFromDeviceToStaging(cmd); },
      [](Tensor& t, const vk::CommandBuffer& cmd, uint32_t offset, uint32_t count) {
          t.recordCopyFromDeviceToStaging(cmd, offset, count);
      });
}

bool
OpSyncLocal::declareAccesses(std::vector<MemoryAccess>& accesses) const
{
    declareSyncCopies(mMemObjects, MemoryAccess::Part::ePrimary, accesses);
    return true;
}

void
OpSyncLocal::preEval(const vk::CommandBuffer&)
{
    // The recorded copies use these objects' buffers (see OpCopy).
    checkMemObjects(mMemObjects, 1, "OpSyncLocal");
}

void
OpSyncLocal::postEval(const vk::CommandBuffer&)
{
}

} // namespace kp
