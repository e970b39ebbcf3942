// SPDX-License-Identifier: Apache-2.0
#include "kompute/operations/OpBase.hpp"

#include "internal/Batches.hpp"
#include "internal/OpChecks.hpp"

namespace kp {

void
OpBase::recordNested(OpBase& inner, const vk::CommandBuffer& commandBuffer)
{
    vk::Device device = internal::SequenceRecordingScope::device();
    if (device) {
        std::vector<MemoryAccess> accesses;
        if (inner.declareAccesses(accesses)) {
            internal::checkRecordedDevice(device, accesses, "OpBase::recordNested");
        }
    }
    inner.record(commandBuffer);
}

namespace {

MemoryAccess
accessOf(const Memory& memory,
         MemoryAccess::Part part,
         vk::PipelineStageFlags stages,
         vk::AccessFlags access)
{
    MemoryAccess result;
    result.memory = &memory;
    result.part = part;
    result.stages = stages;
    result.access = access;
    return result;
}

} // namespace

bool
MemoryAccess::writes() const
{
    const vk::AccessFlags anyWrite =
      vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite |
      vk::AccessFlagBits::eHostWrite | vk::AccessFlagBits::eMemoryWrite |
      vk::AccessFlagBits::eColorAttachmentWrite | vk::AccessFlagBits::eDepthStencilAttachmentWrite;
    return static_cast<bool>(access & anyWrite);
}

MemoryAccess
MemoryAccess::shaderRead(const Memory& memory)
{
    return accessOf(memory, Part::ePrimary, vk::PipelineStageFlagBits::eComputeShader,
                    vk::AccessFlagBits::eShaderRead);
}

MemoryAccess
MemoryAccess::shaderWrite(const Memory& memory)
{
    return accessOf(memory, Part::ePrimary, vk::PipelineStageFlagBits::eComputeShader,
                    vk::AccessFlagBits::eShaderWrite);
}

MemoryAccess
MemoryAccess::shaderReadWrite(const Memory& memory)
{
    return accessOf(memory, Part::ePrimary, vk::PipelineStageFlagBits::eComputeShader,
                    vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
}

MemoryAccess
MemoryAccess::transferRead(const Memory& memory, Part part)
{
    return accessOf(memory, part, vk::PipelineStageFlagBits::eTransfer, vk::AccessFlagBits::eTransferRead);
}

MemoryAccess
MemoryAccess::transferWrite(const Memory& memory, Part part)
{
    return accessOf(memory, part, vk::PipelineStageFlagBits::eTransfer, vk::AccessFlagBits::eTransferWrite);
}

MemoryAccess
MemoryAccess::reference(const Memory& memory)
{
    return accessOf(memory, Part::ePrimary, {}, {});
}

} // namespace kp
