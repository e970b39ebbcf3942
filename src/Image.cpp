// SPDX-License-Identifier: Apache-2.0
#include "kompute/Image.hpp"

#include <cstring>

#include "internal/Buffers.hpp"
#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "internal/HostCopy.hpp"
#include "internal/Owners.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using internal::check;
using logger::format;

namespace {

using Flags = vk::MemoryPropertyFlagBits;

const vk::MemoryPropertyFlags kHostCoherent = Flags::eHostVisible | Flags::eHostCoherent;

const vk::ImageUsageFlags kImageUsage = vk::ImageUsageFlagBits::eStorage |
                                        vk::ImageUsageFlagBits::eTransferSrc |
                                        vk::ImageUsageFlagBits::eTransferDst;
const vk::FormatFeatureFlags kNeededFeatures = vk::FormatFeatureFlagBits::eStorageImage |
                                               vk::FormatFeatureFlagBits::eTransferSrc |
                                               vk::FormatFeatureFlagBits::eTransferDst;
const vk::BufferUsageFlags kStagingUsage = vk::BufferUsageFlagBits::eTransferSrc |
                                           vk::BufferUsageFlagBits::eTransferDst;

const vk::ImageSubresourceRange kWholeImage(vk::ImageAspectFlagBits::eColor, 0, 1, 0, 1);

// The image's memory, as for tensors (the README's "Memory types"). The host
// never maps it (the host view is a staging buffer), but the memory type
// keeps its meaning for the device: eHost and eDeviceAndHost images live in
// host-visible memory.
struct MemoryPlan
{
    vk::MemoryPropertyFlags required;
    vk::MemoryPropertyFlags preferred;
};

MemoryPlan
planPrimary(Memory::MemoryTypes memoryType)
{
    switch (memoryType) {
        case Memory::MemoryTypes::eDevice: return { Flags::eDeviceLocal, {} };
        case Memory::MemoryTypes::eHost: return { kHostCoherent, Flags::eHostCached };
        case Memory::MemoryTypes::eStorage: return { Flags::eDeviceLocal, {} };
        case Memory::MemoryTypes::eDeviceAndHost:
            return { Flags::eDeviceLocal | kHostCoherent, {} };
    }
    return {};
}

bool
isHostVisibleType(Memory::MemoryTypes memoryType)
{
    return memoryType == Memory::MemoryTypes::eHost ||
           memoryType == Memory::MemoryTypes::eDeviceAndHost;
}

// A tightly packed host-visible buffer (the host view, or a one-time upload
// buffer). Cached memory is preferred because the host reads it back.
internal::BufferOwner
createHostBuffer(internal::Device& device, vk::DeviceSize size, const char* what)
{
    return internal::createBuffer(device, size, kStagingUsage, kHostCoherent, Flags::eHostCached, what);
}

void
recordImageBarrier(const vk::CommandBuffer& cmd,
                   vk::Image image,
                   vk::ImageLayout oldLayout,
                   vk::ImageLayout newLayout,
                   vk::AccessFlags srcAccessMask,
                   vk::AccessFlags dstAccessMask,
                   vk::PipelineStageFlags srcStageMask,
                   vk::PipelineStageFlags dstStageMask)
{
    vk::ImageMemoryBarrier barrier(srcAccessMask,
                                   dstAccessMask,
                                   oldLayout,
                                   newLayout,
                                   VK_QUEUE_FAMILY_IGNORED,
                                   VK_QUEUE_FAMILY_IGNORED,
                                   image,
                                   kWholeImage);
    cmd.pipelineBarrier(srcStageMask, dstStageMask, {}, 0, nullptr, 0, nullptr, 1, &barrier);
}

} // namespace

vk::Format
Image::formatFor(DataTypes dataType, uint32_t channels)
{
    if (channels != 1 && channels != 2 && channels != 4) {
        return vk::Format::eUndefined;
    }
    int index = channels == 1 ? 0 : channels == 2 ? 1 : 2;
    auto pick = [index](vk::Format one, vk::Format two, vk::Format four) {
        return index == 0 ? one : index == 1 ? two : four;
    };
    using F = vk::Format;
    switch (dataType) {
        case DataTypes::eChar: return pick(F::eR8Sint, F::eR8G8Sint, F::eR8G8B8A8Sint);
        case DataTypes::eUnsignedChar: return pick(F::eR8Uint, F::eR8G8Uint, F::eR8G8B8A8Uint);
        case DataTypes::eShort: return pick(F::eR16Sint, F::eR16G16Sint, F::eR16G16B16A16Sint);
        case DataTypes::eUnsignedShort:
            return pick(F::eR16Uint, F::eR16G16Uint, F::eR16G16B16A16Uint);
        case DataTypes::eInt: return pick(F::eR32Sint, F::eR32G32Sint, F::eR32G32B32A32Sint);
        case DataTypes::eUnsignedInt:
            return pick(F::eR32Uint, F::eR32G32Uint, F::eR32G32B32A32Uint);
        case DataTypes::eFloat:
            return pick(F::eR32Sfloat, F::eR32G32Sfloat, F::eR32G32B32A32Sfloat);
        case DataTypes::eHalf:
            return pick(F::eR16Sfloat, F::eR16G16Sfloat, F::eR16G16B16A16Sfloat);
        default: return F::eUndefined;
    }
}

uint32_t
Image::checkedElementCount(uint32_t x, uint32_t y, uint32_t numChannels, DataTypes dataType)
{
    if (x == 0 || y == 0) {
        throw Error(format("Cannot create an image of {} x {} pixels: width and height must be "
                           "at least 1",
                           x,
                           y));
    }
    if (numChannels != 1 && numChannels != 2 && numChannels != 4) {
        throw Error(format("Images have 1, 2 or 4 channels, not {} (3-channel formats cannot be "
                           "storage images on most devices: use 4 channels and ignore the last)",
                           numChannels));
    }
    if (formatFor(dataType, numChannels) == vk::Format::eUndefined) {
        throw Error(format("Images cannot hold {} elements: storage image formats exist for "
                           "eChar, eUnsignedChar, eShort, eUnsignedShort, eInt, eUnsignedInt, "
                           "eFloat and eHalf",
                           toString(dataType)));
    }
    uint64_t count = static_cast<uint64_t>(x) * y * numChannels;
    if (count * dataTypeMemorySize(dataType) > UINT32_MAX) {
        throw Error(format("An image of {} x {} x {} elements exceeds the 4 GiB limit of one "
                           "memory object",
                           x,
                           y,
                           numChannels));
    }
    return static_cast<uint32_t>(count);
}

Image::Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
             std::shared_ptr<vk::Device> device,
             void* data,
             size_t dataSize,
             uint32_t x,
             uint32_t y,
             uint32_t numChannels,
             const DataTypes& dataType,
             vk::ImageTiling tiling,
             const MemoryTypes& memoryType)
  : Image(internal::standaloneDevice(physicalDevice, device),
          data,
          dataSize,
          x,
          y,
          numChannels,
          dataType,
          tiling,
          memoryType)
{
}

Image::Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
             std::shared_ptr<vk::Device> device,
             void* data,
             size_t dataSize,
             uint32_t x,
             uint32_t y,
             uint32_t numChannels,
             const DataTypes& dataType,
             const MemoryTypes& memoryType)
  : Image(internal::standaloneDevice(physicalDevice, device),
          data,
          dataSize,
          x,
          y,
          numChannels,
          dataType,
          std::nullopt,
          memoryType)
{
}

Image::Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
             std::shared_ptr<vk::Device> device,
             uint32_t x,
             uint32_t y,
             uint32_t numChannels,
             const DataTypes& dataType,
             vk::ImageTiling tiling,
             const MemoryTypes& memoryType)
  : Image(internal::standaloneDevice(physicalDevice, device),
          nullptr,
          0,
          x,
          y,
          numChannels,
          dataType,
          tiling,
          memoryType)
{
}

Image::Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
             std::shared_ptr<vk::Device> device,
             uint32_t x,
             uint32_t y,
             uint32_t numChannels,
             const DataTypes& dataType,
             const MemoryTypes& memoryType)
  : Image(internal::standaloneDevice(physicalDevice, device),
          nullptr,
          0,
          x,
          y,
          numChannels,
          dataType,
          std::nullopt,
          memoryType)
{
}

Image::Image(std::shared_ptr<internal::Device> device,
             const void* data,
             size_t dataSize,
             uint32_t x,
             uint32_t y,
             uint32_t numChannels,
             const DataTypes& dataType,
             std::optional<vk::ImageTiling> tiling,
             const MemoryTypes& memoryType)
  : Memory(std::move(device),
           dataType,
           checkedElementCount(x, y, numChannels, dataType),
           dataTypeMemorySize(dataType),
           memoryType,
           x,
           y)
  , mNumChannels(numChannels)
{
    auto alive = mDevice->lockAlive("Creating an image");
    mDevice->collectRetired();
    create(data, dataSize, tiling);
    mDevice->registry().add(this, [](Memory& memory) { static_cast<Image&>(memory).Image::destroy(); });
}

Image::~Image()
{
    internal::Registry::Removal removal(mDevice->registry(), static_cast<Memory*>(this));
    try {
        destroy();
    } catch (const std::exception& error) {
        KP_LOG_ERROR("Destroying an image failed: {}", error.what());
    }
}

void
Image::create(const void* data, size_t dataSize, std::optional<vk::ImageTiling> tiling)
{
    if (data != nullptr && dataSize < size()) {
        throw Error(format("An image of {} x {} pixels with {} channel(s) holds {} elements, but "
                           "{} were given",
                           mX,
                           mY,
                           mNumChannels,
                           size(),
                           dataSize));
    }
    if (data != nullptr && dataSize > size()) {
        // As upstream: the first width x height x channels values are used.
        KP_LOG_WARN("An image of {} x {} pixels with {} channel(s) holds {} elements, but {} were "
                    "given: the first {} are used and the rest is ignored",
                    mX,
                    mY,
                    mNumChannels,
                    size(),
                    dataSize,
                    size());
    }
    if (mDevice->queueCount() == 0) {
        throw Error("An image is moved to GENERAL layout when it is created, which needs a "
                    "queue: create images through a kp::Manager (or on a Manager's device), "
                    "not on a bare vk::Device");
    }
    bool hostVisible = isHostVisibleType(mMemoryType);
    if (tiling && *tiling == vk::ImageTiling::eOptimal && hostVisible) {
        throw Error(format("Image with optimal tiling is only supported for eDevice and eStorage "
                           "images: an {} image lives in host-visible memory, which Kompute "
                           "gives linear images only; give linear tiling or none, or use "
                           "eDevice memory",
                           toString(mMemoryType)));
    }
    if (tiling && *tiling != vk::ImageTiling::eOptimal && *tiling != vk::ImageTiling::eLinear) {
        throw Error("Images support optimal and linear tiling only");
    }
    mFormat = formatFor(mDataType, mNumChannels);
    vk::PhysicalDevice physicalDevice = mDevice->physicalDevice();
    vk::FormatProperties properties = physicalDevice.getFormatProperties(mFormat);
    auto supports = [&](vk::ImageTiling candidate) {
        vk::FormatFeatureFlags features = candidate == vk::ImageTiling::eLinear
                                            ? properties.linearTilingFeatures
                                            : properties.optimalTilingFeatures;
        if ((features & kNeededFeatures) != kNeededFeatures) {
            return false;
        }
        vk::ImageFormatProperties limits;
        return physicalDevice.getImageFormatProperties(
                 mFormat, vk::ImageType::e2D, candidate, kImageUsage, {}, &limits) ==
                 vk::Result::eSuccess &&
               limits.maxExtent.width >= mX && limits.maxExtent.height >= mY;
    };
    if (tiling) {
        mTiling = *tiling;
    } else {
        mTiling = hostVisible ? vk::ImageTiling::eLinear : vk::ImageTiling::eOptimal;
        // The host view never maps the image, so where the device cannot
        // store a linear image of this format optimal tiling works as well.
        if (mTiling == vk::ImageTiling::eLinear && !supports(mTiling) &&
            supports(vk::ImageTiling::eOptimal)) {
            KP_LOG_DEBUG("{} linear storage images are not supported; using optimal tiling",
                         vk::to_string(mFormat));
            mTiling = vk::ImageTiling::eOptimal;
        }
    }
    if (!supports(mTiling)) {
        throw Error(format("'{}' cannot use {} images of {} x {} pixels with {} tiling as storage "
                           "images with transfers (format features or limits); try another "
                           "tiling, channel count or data type",
                           mDevice->properties().deviceName.data(),
                           vk::to_string(mFormat),
                           mX,
                           mY,
                           vk::to_string(mTiling)));
    }

    vk::Device device = mDevice->device();
    vk::ImageCreateInfo info({},
                             vk::ImageType::e2D,
                             mFormat,
                             vk::Extent3D(mX, mY, 1),
                             1,
                             1,
                             vk::SampleCountFlagBits::e1,
                             mTiling,
                             kImageUsage,
                             vk::SharingMode::eExclusive,
                             0,
                             nullptr,
                             vk::ImageLayout::eUndefined);
    const auto& families = mDevice->queueFamilies();
    if (families.size() > 1) {
        info.sharingMode = vk::SharingMode::eConcurrent;
        info.queueFamilyIndexCount = static_cast<uint32_t>(families.size());
        info.pQueueFamilyIndices = families.data();
    }
    vk::Image image;
    check(device.createImage(&info, nullptr, &image),
          format("Creating a {} x {} {} image", mX, mY, vk::to_string(mFormat)));
    mImage = std::make_unique<internal::ImageOwner>();
    mImage->adoptImage(mDevice.get(), image);
    mPrimaryImage = std::make_shared<vk::Image>(image);

    try {
        MemoryPlan plan = planPrimary(mMemoryType);
        vk::MemoryRequirements requirements = device.getImageMemoryRequirements(image);
        auto kind = mTiling == vk::ImageTiling::eOptimal ? internal::ResourceKind::eOptimal
                                                         : internal::ResourceKind::eLinear;
        mImage->adoptMemory(mDevice->allocator().allocate(
          requirements, plan.required, plan.preferred, kind, "image"));
        const internal::Allocation& memory = mImage->allocation();
        check(VULKAN_HPP_DEFAULT_DISPATCHER.vkBindImageMemory(device, image, memory.memory, memory.offset),
              "Binding memory to an image");

        vk::ImageViewCreateInfo viewInfo(
          {}, image, vk::ImageViewType::e2D, mFormat, vk::ComponentMapping(), kWholeImage);
        vk::ImageView view;
        check(device.createImageView(&viewInfo, nullptr, &view), "Creating an image view");
        mImage->adoptView(view);

        if (mMemoryType != MemoryTypes::eStorage) {
            mStaging = std::make_shared<internal::BufferOwner>(
              createHostBuffer(*mDevice, memorySize(), "image staging buffer"));
            mStagingBuffer = std::make_shared<vk::Buffer>(mStaging->buffer());
            mHostView = mStaging->mapped();
        }
        initialiseHostView(data);

        // The one layout change of the image's life (see Image.hpp), with
        // the initial data uploaded in the same submission (the upload
        // buffer goes once it has completed).
        internal::BufferOwner upload;
        vk::Buffer source = mStaging ? mStaging->buffer() : vk::Buffer();
        if (data != nullptr && !source) {
            upload = createHostBuffer(*mDevice, memorySize(), "image upload buffer");
            internal::copyHostBytes(upload.mapped(), data, memorySize());
            source = upload.buffer();
        }
        vk::BufferImageCopy region = wholeImageRegion();
        mDevice->submitAndWait([&](vk::CommandBuffer cmd) {
            recordImageBarrier(cmd,
                               image,
                               vk::ImageLayout::eUndefined,
                               vk::ImageLayout::eGeneral,
                               {},
                               vk::AccessFlagBits::eTransferWrite,
                               vk::PipelineStageFlagBits::eTopOfPipe,
                               vk::PipelineStageFlagBits::eTransfer);
            if (data != nullptr) {
                cmd.copyBufferToImage(source, image, vk::ImageLayout::eGeneral, 1, &region);
            }
        });
        mPrimaryImageLayout = vk::ImageLayout::eGeneral;
    } catch (...) {
        destroy();
        throw;
    }
}

vk::BufferImageCopy
Image::wholeImageRegion() const
{
    // Row length and image height 0: the buffer is tightly packed.
    return vk::BufferImageCopy(0,
                               0,
                               0,
                               vk::ImageSubresourceLayers(vk::ImageAspectFlagBits::eColor, 0, 0, 1),
                               vk::Offset3D(0, 0, 0),
                               vk::Extent3D(mX, mY, 1));
}

bool
Image::isInit() const
{
    return mImage && mDevice && mDevice->isAlive();
}

void
Image::destroy()
{
    if (!mImage) {
        return;
    }
    keepHostViewOwner(mStaging);
    mHostView = nullptr;
    mPrimaryImage.reset();
    mStagingBuffer.reset();
    // Submitted work may still use them: the device frees them when it is
    // done.
    mDevice->retireRecorded(*mRecordedIn, std::move(mImage), std::move(mStaging));
}

void
Image::recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd)
{
    checkInit("Recording a copy to the device");
    if (!mStaging) {
        return;
    }
    noteRecorded();
    vk::BufferImageCopy region = wholeImageRegion();
    cmd.copyBufferToImage(mStaging->buffer(), mImage->image(), vk::ImageLayout::eGeneral, 1, &region);
}

void
Image::recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd)
{
    checkInit("Recording a copy from the device");
    if (!mStaging) {
        return;
    }
    noteRecorded();
    vk::BufferImageCopy region = wholeImageRegion();
    cmd.copyImageToBuffer(mImage->image(), vk::ImageLayout::eGeneral, mStaging->buffer(), 1, &region);
}

void
Image::recordPrimaryMemoryBarrier(const vk::CommandBuffer& cmd,
                                  vk::AccessFlags srcAccessMask,
                                  vk::AccessFlags dstAccessMask,
                                  vk::PipelineStageFlags srcStageMask,
                                  vk::PipelineStageFlags dstStageMask)
{
    checkInit("Recording a barrier");
    noteRecorded();
    recordImageBarrier(cmd,
                       mImage->image(),
                       mPrimaryImageLayout,
                       mPrimaryImageLayout,
                       srcAccessMask,
                       dstAccessMask,
                       srcStageMask,
                       dstStageMask);
}

void
Image::recordStagingMemoryBarrier(const vk::CommandBuffer& cmd,
                                  vk::AccessFlags srcAccessMask,
                                  vk::AccessFlags dstAccessMask,
                                  vk::PipelineStageFlags srcStageMask,
                                  vk::PipelineStageFlags dstStageMask)
{
    checkInit("Recording a barrier");
    if (!mStaging) {
        return;
    }
    noteRecorded();
    vk::BufferMemoryBarrier barrier(srcAccessMask,
                                    dstAccessMask,
                                    VK_QUEUE_FAMILY_IGNORED,
                                    VK_QUEUE_FAMILY_IGNORED,
                                    mStaging->buffer(),
                                    0,
                                    VK_WHOLE_SIZE);
    cmd.pipelineBarrier(srcStageMask, dstStageMask, {}, 0, nullptr, 1, &barrier, 0, nullptr);
}

void
Image::recordPrimaryImageBarrier(const vk::CommandBuffer& cmd,
                                 vk::AccessFlags srcAccessMask,
                                 vk::AccessFlags dstAccessMask,
                                 vk::PipelineStageFlags srcStageMask,
                                 vk::PipelineStageFlags dstStageMask,
                                 vk::ImageLayout newLayout)
{
    checkInit("Recording an image barrier");
    noteRecorded();
    if (newLayout == vk::ImageLayout::eUndefined || newLayout == vk::ImageLayout::ePreinitialized) {
        throw Error("recordPrimaryImageBarrier: an image cannot be moved to the UNDEFINED or "
                    "PREINITIALIZED layout");
    }
    recordImageBarrier(cmd,
                       mImage->image(),
                       mPrimaryImageLayout,
                       newLayout,
                       srcAccessMask,
                       dstAccessMask,
                       srcStageMask,
                       dstStageMask);
    mPrimaryImageLayout = newLayout;
}

void
Image::recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Image> source)
{
    Memory::recordCopyFrom(cmd, std::static_pointer_cast<Memory>(source));
}

void
Image::recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Tensor> source)
{
    Memory::recordCopyFrom(cmd, std::static_pointer_cast<Memory>(source));
}

void
Image::recordCopyFromSameSize(const vk::CommandBuffer& cmd, Memory& source)
{
    noteRecorded();
    source.noteRecorded();
    if (auto* sourceImage = dynamic_cast<Image*>(&source)) {
        if (sourceImage->mX != mX || sourceImage->mY != mY ||
            sourceImage->mNumChannels != mNumChannels) {
            throw Error(format("Cannot copy an image of {} x {} x {} into an image of {} x {} x "
                               "{}: width, height and channels must match",
                               sourceImage->mX,
                               sourceImage->mY,
                               sourceImage->mNumChannels,
                               mX,
                               mY,
                               mNumChannels));
        }
        vk::ImageSubresourceLayers layers(vk::ImageAspectFlagBits::eColor, 0, 0, 1);
        vk::ImageCopy region(layers, { 0, 0, 0 }, layers, { 0, 0, 0 }, { mX, mY, 1 });
        cmd.copyImage(sourceImage->mImage->image(),
                      vk::ImageLayout::eGeneral,
                      mImage->image(),
                      vk::ImageLayout::eGeneral,
                      1,
                      &region);
        return;
    }
    auto* sourceTensor = dynamic_cast<Tensor*>(&source);
    if (sourceTensor == nullptr) {
        throw Error("Images can be copied from images and tensors only");
    }
    // The tensor's elements are read as tightly packed rows of pixels.
    vk::BufferImageCopy region = wholeImageRegion();
    cmd.copyBufferToImage(
      *sourceTensor->getPrimaryBuffer(), mImage->image(), vk::ImageLayout::eGeneral, 1, &region);
}

vk::WriteDescriptorSet
Image::constructDescriptorSet(vk::DescriptorSet descriptorSet, uint32_t binding)
{
    checkInit("Binding an image to an algorithm");
    // GENERAL is the layout the image is in whenever a dispatch runs.
    mDescriptorImageInfo =
      vk::DescriptorImageInfo(vk::Sampler(), mImage->view(), vk::ImageLayout::eGeneral);
    return vk::WriteDescriptorSet(descriptorSet,
                                  binding,
                                  0,
                                  1,
                                  vk::DescriptorType::eStorageImage,
                                  &mDescriptorImageInfo,
                                  nullptr,
                                  nullptr);
}

std::shared_ptr<vk::Image>
Image::getPrimaryImage()
{
    checkInit("getPrimaryImage()");
    return mPrimaryImage;
}

std::shared_ptr<vk::Buffer>
Image::getStagingBuffer()
{
    checkInit("getStagingBuffer()");
    return mStagingBuffer;
}

} // namespace kp
