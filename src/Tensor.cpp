// SPDX-License-Identifier: Apache-2.0
#include "kompute/Tensor.hpp"

#include <algorithm>
#include <cstring>

#include "internal/Barriers.hpp"
#include "internal/Buffers.hpp"
#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "internal/HostCopy.hpp"
#include "internal/Owners.hpp"
#include "kompute/Image.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using internal::BufferOwner;
using internal::check;
using internal::createBuffer;
using logger::format;

namespace {

using Flags = vk::MemoryPropertyFlagBits;

const vk::MemoryPropertyFlags kHostCoherent = Flags::eHostVisible | Flags::eHostCoherent;

struct BufferPlan
{
    vk::MemoryPropertyFlags required;
    vk::MemoryPropertyFlags preferred;
    bool staging = false;
};

// Which memory the primary buffer lives in, and whether a staging twin is
// needed for the host view (the README's "Memory types"). An eDevice tensor
// has one on every device, unified-memory ones included: its host view is
// distinct from its device memory everywhere, as upstream, so programs
// compute the same on every device. eHost and eDeviceAndHost are the
// zero-copy types.
BufferPlan
planPrimary(Memory::MemoryTypes memoryType)
{
    switch (memoryType) {
        case Memory::MemoryTypes::eDevice:
            return { Flags::eDeviceLocal, {}, true };
        case Memory::MemoryTypes::eHost:
            return { kHostCoherent, Flags::eHostCached, false };
        case Memory::MemoryTypes::eStorage:
            return { Flags::eDeviceLocal, {}, false };
        case Memory::MemoryTypes::eDeviceAndHost:
            return { Flags::eDeviceLocal | kHostCoherent, {}, false };
    }
    return {};
}

const vk::BufferUsageFlags kPrimaryUsage = vk::BufferUsageFlagBits::eStorageBuffer |
                                           vk::BufferUsageFlagBits::eTransferSrc |
                                           vk::BufferUsageFlagBits::eTransferDst;
const vk::BufferUsageFlags kStagingUsage = vk::BufferUsageFlagBits::eTransferSrc |
                                           vk::BufferUsageFlagBits::eTransferDst;

} // namespace

Tensor::Tensor(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
               std::shared_ptr<vk::Device> device,
               void* data,
               uint32_t elementTotalCount,
               uint32_t elementMemorySize,
               const DataTypes& dataType,
               const MemoryTypes& memoryType)
  : Tensor(internal::standaloneDevice(physicalDevice, device),
           data,
           elementTotalCount,
           elementMemorySize,
           dataType,
           memoryType)
{
}

Tensor::Tensor(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
               std::shared_ptr<vk::Device> device,
               uint32_t elementTotalCount,
               uint32_t elementMemorySize,
               const DataTypes& dataType,
               const MemoryTypes& memoryType)
  : Tensor(internal::standaloneDevice(physicalDevice, device),
           nullptr,
           elementTotalCount,
           elementMemorySize,
           dataType,
           memoryType)
{
}

Tensor::Tensor(std::shared_ptr<internal::Device> device,
               const void* data,
               uint32_t elementTotalCount,
               uint32_t elementMemorySize,
               const DataTypes& dataType,
               const MemoryTypes& memoryType)
  : Memory(std::move(device),
           dataType,
           elementTotalCount,
           elementMemorySize,
           memoryType,
           elementTotalCount,
           1)
{
    auto alive = mDevice->lockAlive("Creating a tensor");
    mDevice->collectRetired();
    create(data);
    mDevice->registry().add(this, [](Memory& memory) { static_cast<Tensor&>(memory).Tensor::destroy(); });
}

Tensor::~Tensor()
{
    internal::Registry::Removal removal(mDevice->registry(), static_cast<Memory*>(this));
    try {
        destroy();
    } catch (const std::exception& error) {
        KP_LOG_ERROR("Destroying a tensor failed: {}", error.what());
    }
}

void
Tensor::create(const void* data)
{
    BufferPlan plan = planPrimary(mMemoryType);
    vk::DeviceSize bytes = memorySize();
    mPrimary = std::make_shared<BufferOwner>(createBuffer(
      *mDevice, bytes, kPrimaryUsage, plan.required, plan.preferred, "tensor buffer"));
    mPrimaryBuffer = std::make_shared<vk::Buffer>(mPrimary->buffer());

    try {
        if (plan.staging) {
            mStaging = std::make_shared<BufferOwner>(createBuffer(*mDevice,
                                                                  bytes,
                                                                  kStagingUsage,
                                                                  kHostCoherent,
                                                                  Flags::eHostCached,
                                                                  "tensor staging buffer"));
            mStagingBuffer = std::make_shared<vk::Buffer>(mStaging->buffer());
            mHostView = mStaging->mapped();
        } else if (mMemoryType != MemoryTypes::eStorage) {
            mHostView = mPrimary->mapped();
            mHostViewIsPrimary = true;
        }
        initialiseHostView(data);

        if (mMemoryType == MemoryTypes::eStorage && data != nullptr) {
            // Upstream dropped this data silently; we upload it once (the
            // upload buffer goes when the submission has completed).
            BufferOwner upload = createBuffer(
              *mDevice, bytes, kStagingUsage, kHostCoherent, {}, "tensor upload buffer");
            internal::copyHostBytes(upload.mapped(), data, bytes);
            vk::Buffer source = upload.buffer();
            vk::Buffer target = mPrimary->buffer();
            mDevice->submitAndWait([&](vk::CommandBuffer cmd) {
                vk::BufferCopy region(0, 0, bytes);
                cmd.copyBuffer(source, target, 1, &region);
            });
        }
    } catch (...) {
        destroy();
        throw;
    }
}

bool
Tensor::isInit() const
{
    return mPrimary && mDevice && mDevice->isAlive();
}

void
Tensor::destroy()
{
    if (!mPrimary) {
        return;
    }
    keepHostViewOwner(mHostViewIsPrimary ? mPrimary : mStaging);
    mHostView = nullptr;
    mPrimaryBuffer.reset();
    mStagingBuffer.reset();
    // Submitted work may still use the buffers: the device frees them when
    // it is done.
    mDevice->retireRecorded(*mRecordedIn, std::move(mPrimary), std::move(mStaging));
}

void
Tensor::checkRange(uint32_t offset, uint32_t count, const char* action) const
{
    if (count == 0 || static_cast<uint64_t>(offset) + count > size()) {
        throw Error(format("{}: elements [{}, {}) are not a non-empty range inside this "
                           "tensor of {} elements",
                           action,
                           offset,
                           static_cast<uint64_t>(offset) + count,
                           size()));
    }
}

namespace {

// Big enough that a submission's fixed cost (tens of microseconds) is
// noise, small enough that the first chunk's copy, which nothing overlaps,
// is short.
constexpr size_t kTransferChunkBytes = size_t(64) << 20;

uint32_t
chunkCount(size_t bytes)
{
    return static_cast<uint32_t>((bytes + kTransferChunkBytes - 1) / kTransferChunkBytes);
}

vk::BufferCopy
chunkRegion(uint32_t chunk, size_t bytes)
{
    size_t offset = size_t(chunk) * kTransferChunkBytes;
    return vk::BufferCopy(offset, offset, std::min(kTransferChunkBytes, bytes - offset));
}

} // namespace

void
Tensor::upload(const void* data, size_t bytes)
{
    auto* view = static_cast<unsigned char*>(hostViewForCopy(data, bytes, "upload()"));
    if (!mStaging) {
        internal::copyHostBytes(view, data, bytes);
        return;
    }
    const auto* from = static_cast<const unsigned char*>(data);
    vk::Buffer staging = mStaging->buffer();
    vk::Buffer primary = mPrimary->buffer();
    mDevice->submitInSteps(
      chunkCount(bytes),
      [&](uint32_t chunk) {
          vk::BufferCopy region = chunkRegion(chunk, bytes);
          internal::copyHostBytes(view + region.srcOffset, from + region.srcOffset, region.size);
      },
      [&](uint32_t chunk, vk::CommandBuffer cmd) {
          if (chunk == 0) {
              // After earlier work on the queue that used the tensor; the
              // chunks write disjoint ranges and need nothing between them.
              internal::recordBarrierBefore(cmd,
                                            vk::PipelineStageFlagBits::eTransfer,
                                            vk::AccessFlagBits::eTransferWrite);
          }
          vk::BufferCopy region = chunkRegion(chunk, bytes);
          cmd.copyBuffer(staging, primary, 1, &region);
      },
      [](uint32_t) {});
}

void
Tensor::download(void* data, size_t bytes)
{
    auto* view = static_cast<const unsigned char*>(hostViewForCopy(data, bytes, "download()"));
    auto* to = static_cast<unsigned char*>(data);
    if (!mStaging) {
        // The host view is the memory itself; a barrier makes the device's
        // writes visible, as OpSyncLocal's does.
        mDevice->submitAndWait([&](vk::CommandBuffer cmd) {
            internal::recordHostReadBarrier(cmd, vk::QueueFlagBits::eCompute);
        });
        internal::copyHostBytes(to, view, bytes);
        return;
    }
    vk::Buffer staging = mStaging->buffer();
    vk::Buffer primary = mPrimary->buffer();
    mDevice->submitInSteps(
      chunkCount(bytes),
      [](uint32_t) {},
      [&](uint32_t chunk, vk::CommandBuffer cmd) {
          internal::recordBarrierBefore(cmd,
                                        vk::PipelineStageFlagBits::eTransfer,
                                        vk::AccessFlagBits::eTransferRead);
          vk::BufferCopy region = chunkRegion(chunk, bytes);
          cmd.copyBuffer(primary, staging, 1, &region);
          internal::recordHostReadBarrier(cmd, vk::QueueFlagBits::eCompute);
      },
      [&](uint32_t chunk) {
          vk::BufferCopy region = chunkRegion(chunk, bytes);
          internal::copyHostBytes(to + region.dstOffset, view + region.dstOffset, region.size);
      });
}

void
Tensor::recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd)
{
    recordCopyFromStagingToDevice(cmd, 0, size());
}

void
Tensor::recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd)
{
    recordCopyFromDeviceToStaging(cmd, 0, size());
}

void
Tensor::recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd,
                                      uint32_t offset,
                                      uint32_t count)
{
    checkInit("Recording a copy to the device");
    checkRange(offset, count, "Recording a copy to the device");
    if (!mStaging) {
        return;
    }
    noteRecorded();
    vk::DeviceSize start = static_cast<vk::DeviceSize>(offset) * mDataTypeMemorySize;
    vk::BufferCopy region(start, start, static_cast<vk::DeviceSize>(count) * mDataTypeMemorySize);
    cmd.copyBuffer(mStaging->buffer(), mPrimary->buffer(), 1, &region);
}

void
Tensor::recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd,
                                      uint32_t offset,
                                      uint32_t count)
{
    checkInit("Recording a copy from the device");
    checkRange(offset, count, "Recording a copy from the device");
    if (!mStaging) {
        return;
    }
    noteRecorded();
    vk::DeviceSize start = static_cast<vk::DeviceSize>(offset) * mDataTypeMemorySize;
    vk::BufferCopy region(start, start, static_cast<vk::DeviceSize>(count) * mDataTypeMemorySize);
    cmd.copyBuffer(mPrimary->buffer(), mStaging->buffer(), 1, &region);
}

namespace {

void
recordBufferBarrier(const vk::CommandBuffer& cmd,
                    vk::Buffer buffer,
                    vk::AccessFlags srcAccessMask,
                    vk::AccessFlags dstAccessMask,
                    vk::PipelineStageFlags srcStageMask,
                    vk::PipelineStageFlags dstStageMask)
{
    vk::BufferMemoryBarrier barrier(srcAccessMask,
                                    dstAccessMask,
                                    VK_QUEUE_FAMILY_IGNORED,
                                    VK_QUEUE_FAMILY_IGNORED,
                                    buffer,
                                    0,
                                    VK_WHOLE_SIZE);
    cmd.pipelineBarrier(srcStageMask, dstStageMask, {}, 0, nullptr, 1, &barrier, 0, nullptr);
}

} // namespace

void
Tensor::recordPrimaryMemoryBarrier(const vk::CommandBuffer& cmd,
                                   vk::AccessFlags srcAccessMask,
                                   vk::AccessFlags dstAccessMask,
                                   vk::PipelineStageFlags srcStageMask,
                                   vk::PipelineStageFlags dstStageMask)
{
    checkInit("Recording a barrier");
    noteRecorded();
    recordBufferBarrier(
      cmd, mPrimary->buffer(), srcAccessMask, dstAccessMask, srcStageMask, dstStageMask);
}

void
Tensor::recordStagingMemoryBarrier(const vk::CommandBuffer& cmd,
                                   vk::AccessFlags srcAccessMask,
                                   vk::AccessFlags dstAccessMask,
                                   vk::PipelineStageFlags srcStageMask,
                                   vk::PipelineStageFlags dstStageMask)
{
    checkInit("Recording a barrier");
    if (mStaging) {
        noteRecorded();
        recordBufferBarrier(
          cmd, mStaging->buffer(), srcAccessMask, dstAccessMask, srcStageMask, dstStageMask);
    }
}

void
Tensor::recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Tensor> source)
{
    Memory::recordCopyFrom(cmd, std::static_pointer_cast<Memory>(source));
}

void
Tensor::recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Image> source)
{
    Memory::recordCopyFrom(cmd, std::static_pointer_cast<Memory>(source));
}

void
Tensor::recordCopyFromSameSize(const vk::CommandBuffer& cmd, Memory& source)
{
    noteRecorded();
    source.noteRecorded();
    if (auto* sourceImage = dynamic_cast<Image*>(&source)) {
        // The pixels land as tightly packed rows (row length 0).
        vk::BufferImageCopy region(
          0,
          0,
          0,
          vk::ImageSubresourceLayers(vk::ImageAspectFlagBits::eColor, 0, 0, 1),
          vk::Offset3D(0, 0, 0),
          vk::Extent3D(sourceImage->getX(), sourceImage->getY(), 1));
        cmd.copyImageToBuffer(*sourceImage->getPrimaryImage(),
                              vk::ImageLayout::eGeneral,
                              mPrimary->buffer(),
                              1,
                              &region);
        return;
    }
    auto* sourceTensor = dynamic_cast<Tensor*>(&source);
    if (sourceTensor == nullptr) {
        throw Error("Tensors can be copied from tensors and images only");
    }
    vk::BufferCopy region(0, 0, memorySize());
    cmd.copyBuffer(sourceTensor->mPrimary->buffer(), mPrimary->buffer(), 1, &region);
}

vk::WriteDescriptorSet
Tensor::constructDescriptorSet(vk::DescriptorSet descriptorSet, uint32_t binding)
{
    checkInit("Binding a tensor to an algorithm");
    mDescriptorBufferInfo = vk::DescriptorBufferInfo(mPrimary->buffer(), 0, memorySize());
    return vk::WriteDescriptorSet(descriptorSet,
                                  binding,
                                  0,
                                  1,
                                  vk::DescriptorType::eStorageBuffer,
                                  nullptr,
                                  &mDescriptorBufferInfo);
}

std::shared_ptr<vk::Buffer>
Tensor::getPrimaryBuffer()
{
    checkInit("getPrimaryBuffer()");
    return mPrimaryBuffer;
}

std::shared_ptr<vk::Buffer>
Tensor::getStagingBuffer()
{
    checkInit("getStagingBuffer()");
    return mStagingBuffer;
}

} // namespace kp
