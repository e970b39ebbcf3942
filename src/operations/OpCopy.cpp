// SPDX-License-Identifier: Apache-2.0
#include "kompute/operations/OpCopy.hpp"

#include <mutex>

#include "internal/Batches.hpp"
#include "internal/Barriers.hpp"
#include "internal/Device.hpp"
#include "internal/OpChecks.hpp"
#include "internal/ShaderCopy.hpp"
#include "kompute/Tensor.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

namespace internal {

/** One descriptor set per destination copied by shader (binding 0 the
 * source, 1 that destination), written once: an operation's objects never
 * change. */
struct ShaderCopySets
{
    std::mutex mutex;
    std::shared_ptr<Device> device;
    std::vector<DescriptorSetOwner> sets; // by destination index, empty until used
};

} // namespace internal

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
    mShaderCopies = std::make_unique<internal::ShaderCopySets>();
}

OpCopy::~OpCopy()
{
    if (mShaderCopies->device) {
        // A submitted command buffer may still use the sets.
        mShaderCopies->device->retire(std::move(mShaderCopies->sets));
    }
}

bool
OpCopy::copiesByShader(size_t index) const
{
    const auto& source = mMemObjects[0];
    const auto& target = mMemObjects[index];
    const auto& device = source->mDevice;
    if (!internal::SequenceRecordingScope::active() || !device || !device->shaderCopies() ||
        target->mDevice != device || source->type() != Memory::Type::eTensor ||
        target->type() != Memory::Type::eTensor ||
        source->memoryType() == Memory::MemoryTypes::eHost ||
        target->memoryType() == Memory::MemoryTypes::eHost) {
        return false;
    }
    vk::DeviceSize bytes = target->memorySize();
    return bytes >= internal::kShaderCopyMinimumBytes &&
           internal::shaderCopiedBytes(bytes) <= device->properties().limits.maxStorageBufferRange;
}

void
OpCopy::recordShaderCopy(const vk::CommandBuffer& commandBuffer, size_t index)
{
    auto& source = static_cast<Tensor&>(*mMemObjects[0]);
    auto& target = static_cast<Tensor&>(*mMemObjects[index]);
    target.checkCopyableFrom(source);
    const std::shared_ptr<internal::Device>& device = source.mDevice;
    const internal::ShaderCopyPipeline& pipeline = device->shaderCopyPipeline();
    vk::DeviceSize bytes = target.memorySize();
    vk::DeviceSize vectorBytes = internal::shaderCopiedBytes(bytes);

    vk::DescriptorSet set;
    {
        std::lock_guard<std::mutex> lock(mShaderCopies->mutex);
        mShaderCopies->device = device;
        mShaderCopies->sets.resize(mMemObjects.size());
        internal::DescriptorSetOwner& allocation = mShaderCopies->sets[index];
        if (!allocation) {
            allocation = internal::DescriptorSetOwner(
              device.get(), device->descriptorPools().allocate(pipeline.setLayout.get(), 2, 0));
            // The sets cover the vectors only: the tail that the copy
            // command writes must not overlap what the shader writes.
            vk::DescriptorBufferInfo buffers[2] = {
                vk::DescriptorBufferInfo(*source.getPrimaryBuffer(), 0, vectorBytes),
                vk::DescriptorBufferInfo(*target.getPrimaryBuffer(), 0, vectorBytes)
            };
            vk::WriteDescriptorSet writes[2] = {
                vk::WriteDescriptorSet(allocation.get(), 0, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr, &buffers[0]),
                vk::WriteDescriptorSet(allocation.get(), 1, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr, &buffers[1])
            };
            device->device().updateDescriptorSets(2, writes, 0, nullptr);
        }
        set = allocation.get();
    }
    KP_LOG_DEBUG("OpCopy: {} bytes into destination {} by the copy shader", bytes, index);
    source.noteRecorded();
    target.noteRecorded();
    internal::recordShaderCopy(commandBuffer, pipeline, set, vectorBytes);
    if (vectorBytes < bytes) {
        vk::BufferCopy tail(vectorBytes, vectorBytes, bytes - vectorBytes);
        commandBuffer.copyBuffer(*source.getPrimaryBuffer(), *target.getPrimaryBuffer(), 1, &tail);
    }
}

void
OpCopy::record(const vk::CommandBuffer& commandBuffer)
{
    internal::checkMemObjects(mMemObjects, 2, "OpCopy");
    std::vector<bool> byShader(mMemObjects.size(), false);
    bool anyByShader = false;
    for (size_t i = 1; i < mMemObjects.size(); ++i) {
        byShader[i] = copiesByShader(i);
        anyByShader = anyByShader || byShader[i];
    }
    vk::PipelineStageFlags stages = vk::PipelineStageFlagBits::eTransfer;
    vk::AccessFlags access = vk::AccessFlagBits::eTransferRead | vk::AccessFlagBits::eTransferWrite;
    if (anyByShader) {
        stages |= vk::PipelineStageFlagBits::eComputeShader;
        access |= vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite;
    }
    bool ordered = internal::SequenceRecordingScope::orders(this);
    if (!ordered) {
        internal::recordBarrierBefore(commandBuffer, stages, access);
    }
    const auto& source = mMemObjects[0];
    for (size_t i = 1; i < mMemObjects.size(); ++i) {
        if (byShader[i]) {
            recordShaderCopy(commandBuffer, i);
        } else {
            mMemObjects[i]->recordCopyFrom(commandBuffer, source);
        }
    }
    if (anyByShader && !ordered) {
        // Operations written for upstream order themselves after OpCopy
        // with transfer-stage barriers: hand the shader's writes over to
        // the transfer stage (and to later shaders), so that OpCopy looks
        // like a transfer to them whichever way it copied. (A sequence that
        // ordered this copy knows the stages it declared.)
        vk::MemoryBarrier barrier(vk::AccessFlagBits::eShaderWrite,
                                  vk::AccessFlagBits::eTransferRead | vk::AccessFlagBits::eTransferWrite |
                                    vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
        commandBuffer.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                                      vk::PipelineStageFlagBits::eTransfer |
                                        vk::PipelineStageFlagBits::eComputeShader,
                                      {},
                                      1,
                                      &barrier,
                                      0,
                                      nullptr,
                                      0,
                                      nullptr);
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

bool
OpCopy::declareAccesses(std::vector<MemoryAccess>& accesses) const
{
    const Memory& source = *mMemObjects[0];
    for (size_t i = 1; i < mMemObjects.size(); ++i) {
        const Memory& target = *mMemObjects[i];
        if (copiesByShader(i)) {
            accesses.push_back(MemoryAccess::shaderRead(source));
            accesses.push_back(MemoryAccess::shaderWrite(target));
            if (internal::shaderCopiedBytes(target.memorySize()) < target.memorySize()) {
                // The tail the copy command copies.
                accesses.push_back(MemoryAccess::transferRead(source));
                accesses.push_back(MemoryAccess::transferWrite(target));
            }
        } else {
            accesses.push_back(MemoryAccess::transferRead(source));
            accesses.push_back(MemoryAccess::transferWrite(target));
        }
        if (!target.isHostViewDirect() && target.memoryType() != Memory::MemoryTypes::eStorage) {
            // Then into the staging memory behind its host view.
            accesses.push_back(MemoryAccess::transferRead(target));
            accesses.push_back(MemoryAccess::transferWrite(target, MemoryAccess::Part::eStaging));
        }
    }
    return true;
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
