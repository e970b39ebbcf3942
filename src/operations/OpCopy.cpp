// SPDX-License-Identifier: Apache-2.0
#include "kompute/operations/OpCopy.hpp"

#include "internal/Barriers.hpp"
#include "internal/OpChecks.hpp"

namespace kp {

OpCopy::OpCopy(const std::vector<std::shared_ptr<Memory>>& memObjects)
  : mMemObjects(memObjects)
{
    internal::checkMemObjects(mMemObjects, 2, "OpCopy");
    for (size_t i = 1; i < mMemObjects.size(); ++i) {
        if (mMemObjects[i] == mMemObjects[0]) {
            throw Error(logger::format(
              "OpCopy: destination {} is the source itself; an object cannot be copied onto "
              "itself",
              i));
        }
    }
    mMemObjects = internal::withoutRepeats(mMemObjects);
}

OpCopy::~OpCopy() = default;

void
OpCopy::record(const vk::CommandBuffer& commandBuffer)
{
    internal::checkMemObjects(mMemObjects, 2, "OpCopy");
    internal::recordBarrierBefore(commandBuffer,
                                  vk::PipelineStageFlagBits::eTransfer,
                                  vk::AccessFlagBits::eTransferRead |
                                    vk::AccessFlagBits::eTransferWrite);
    const auto& source = mMemObjects[0];
    for (size_t i = 1; i < mMemObjects.size(); ++i) {
        mMemObjects[i]->recordCopyFrom(commandBuffer, source);
    }
    // Upstream copied the source's host view into the destinations' host
    // views after the run, which showed stale data whenever the source's
    // device data had changed. Here the destinations' staging memory gets
    // the device copy too, so their host views hold what was copied.
    bool anyStaged = false;
    for (size_t i = 1; i < mMemObjects.size(); ++i) {
        anyStaged = anyStaged || (!mMemObjects[i]->isHostViewDirect() &&
                                  mMemObjects[i]->memoryType() != Memory::MemoryTypes::eStorage);
    }
    if (anyStaged) {
        internal::recordBarrierBefore(commandBuffer,
                                      vk::PipelineStageFlagBits::eTransfer,
                                      vk::AccessFlagBits::eTransferRead |
                                        vk::AccessFlagBits::eTransferWrite);
        for (size_t i = 1; i < mMemObjects.size(); ++i) {
            mMemObjects[i]->recordCopyFromDeviceToStaging(commandBuffer);
        }
    }
}

void
OpCopy::preEval(const vk::CommandBuffer&)
{
    // The recorded commands use these objects' buffers: submitting them
    // after one was destroyed would make the device touch freed memory.
    internal::checkMemObjects(mMemObjects, 2, "OpCopy");
}

void
OpCopy::postEval(const vk::CommandBuffer&)
{
}

} // namespace kp
