// SPDX-License-Identifier: Apache-2.0
// kp::Image: a two-dimensional storage image (1 mip level, 1 layer) of 1, 2
// or 4 channels, bound to shaders as a storage image.
//
// How images differ from tensors:
//   * The host view (data(), vector(), setData()) is always a tightly packed
//     host-visible staging buffer of width x height x channels elements, row
//     after row, whatever the image's memory type and tiling. So images
//     always need OpSyncDevice / OpSyncLocal to move host data to and from
//     the device, also for eHost and eDeviceAndHost images (whose image
//     memory is host-visible, but laid out by the driver with its own row
//     pitch). The copies (vkCmdCopyBufferToImage / ImageToBuffer) handle the
//     pitch and tiling. Data given at creation is also uploaded to the
//     device, so a new image needs no OpSyncDevice for it.
//   * An image is moved to VK_IMAGE_LAYOUT_GENERAL once, at creation, and
//     stays there: every copy, barrier and descriptor uses GENERAL, so the
//     layout is right whichever sequences record the image, in any order,
//     evaluated any number of times.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kompute/Memory.hpp"
#include "kompute/Tensor.hpp"

namespace kp {

namespace internal {
class BufferOwner;
class ImageOwner;
}

class Image : public Memory
{
  public:
    /** Standalone image on a device the caller owns (upstream's
     * constructors). Prefer Manager::image, which sub-allocates memory.
     * `dataSize` counts elements (width x height x channels), as upstream
     * checks it. The device must belong to a Manager (or otherwise have a
     * queue Kompute knows): the creation-time layout change is submitted. */
    Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
          std::shared_ptr<vk::Device> device,
          void* data,
          size_t dataSize,
          uint32_t x,
          uint32_t y,
          uint32_t numChannels,
          const DataTypes& dataType,
          vk::ImageTiling tiling,
          const MemoryTypes& memoryType = MemoryTypes::eDevice);
    Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
          std::shared_ptr<vk::Device> device,
          void* data,
          size_t dataSize,
          uint32_t x,
          uint32_t y,
          uint32_t numChannels,
          const DataTypes& dataType,
          const MemoryTypes& memoryType = MemoryTypes::eDevice);
    Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
          std::shared_ptr<vk::Device> device,
          uint32_t x,
          uint32_t y,
          uint32_t numChannels,
          const DataTypes& dataType,
          vk::ImageTiling tiling,
          const MemoryTypes& memoryType = MemoryTypes::eDevice);
    Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
          std::shared_ptr<vk::Device> device,
          uint32_t x,
          uint32_t y,
          uint32_t numChannels,
          const DataTypes& dataType,
          const MemoryTypes& memoryType = MemoryTypes::eDevice);
    /** Used by the Manager. `data` may be null (contents undefined); when
     * not, it holds `dataSize` elements. Without a tiling, host-visible
     * memory types get linear tiling and the others optimal tiling. */
    Image(std::shared_ptr<internal::Device> device,
          const void* data,
          size_t dataSize,
          uint32_t x,
          uint32_t y,
          uint32_t numChannels,
          const DataTypes& dataType,
          std::optional<vk::ImageTiling> tiling,
          const MemoryTypes& memoryType);
    ~Image() override;

    void destroy() override;
    bool isInit() const override;
    Type type() override { return Type::eImage; }

    /** Copies the host view (staging buffer) into the image. */
    void recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd) override;
    /** Copies the image into the host view (staging buffer). */
    void recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd) override;
    /** An image barrier on the image, which stays in GENERAL layout. */
    void recordPrimaryMemoryBarrier(const vk::CommandBuffer& cmd,
                                    vk::AccessFlags srcAccessMask,
                                    vk::AccessFlags dstAccessMask,
                                    vk::PipelineStageFlags srcStageMask,
                                    vk::PipelineStageFlags dstStageMask) override;
    /** A buffer barrier on the staging buffer (nothing for eStorage). */
    void recordStagingMemoryBarrier(const vk::CommandBuffer& cmd,
                                    vk::AccessFlags srcAccessMask,
                                    vk::AccessFlags dstAccessMask,
                                    vk::PipelineStageFlags srcStageMask,
                                    vk::PipelineStageFlags dstStageMask) override;
    /**
     * Records a layout change from the layout tracked at record time to
     * `newLayout` (upstream's API, for custom operations). Kompute's own
     * operations and descriptors expect GENERAL: an operation that moves the
     * image elsewhere must move it back to GENERAL before it ends.
     */
    void recordPrimaryImageBarrier(const vk::CommandBuffer& cmd,
                                   vk::AccessFlags srcAccessMask,
                                   vk::AccessFlags dstAccessMask,
                                   vk::PipelineStageFlags srcStageMask,
                                   vk::PipelineStageFlags dstStageMask,
                                   vk::ImageLayout newLayout);

    /** Device copy of the whole of `source` (same data type and element
     * count; images must also have the same width, height and channels). */
    void recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Image> source);
    void recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Tensor> source);
    using Memory::recordCopyFrom;

    vk::WriteDescriptorSet constructDescriptorSet(vk::DescriptorSet descriptorSet,
                                                  uint32_t binding) override;
    vk::DescriptorType getDescriptorType() override
    {
        return vk::DescriptorType::eStorageImage;
    }

    std::shared_ptr<vk::Image> getPrimaryImage();
    /** The layout tracked at record time: GENERAL unless a custom operation
     * moved it with recordPrimaryImageBarrier. */
    vk::ImageLayout getPrimaryImageLayout() const { return mPrimaryImageLayout; }
    uint32_t getNumChannels() const { return mNumChannels; }
    /** Width and height (the same as getX() and getY()). */
    uint32_t getWidth() const { return mX; }
    uint32_t getHeight() const { return mY; }
    // --- ours ---
    vk::Format getFormat() const { return mFormat; }
    vk::ImageTiling getTiling() const { return mTiling; }
    /** The staging buffer behind the host view (null for eStorage). */
    std::shared_ptr<vk::Buffer> getStagingBuffer();

    /** The format of `channels` channels of `dataType` (API.md 2.4), or
     * eUndefined for a combination no storage image can hold. */
    static vk::Format formatFor(DataTypes dataType, uint32_t channels);

  protected:
    void recordCopyFromSameSize(const vk::CommandBuffer& cmd, Memory& source) override;
    const char* kindName() const override { return "Image"; }

  private:
    static uint32_t checkedElementCount(uint32_t x,
                                        uint32_t y,
                                        uint32_t numChannels,
                                        DataTypes dataType);
    void create(const void* data, size_t dataSize, std::optional<vk::ImageTiling> tiling);
    vk::BufferImageCopy wholeImageRegion() const;

    uint32_t mNumChannels;
    vk::Format mFormat = vk::Format::eUndefined;
    vk::ImageTiling mTiling = vk::ImageTiling::eOptimal;
    vk::ImageLayout mPrimaryImageLayout = vk::ImageLayout::eUndefined;
    // The image (with its memory and view) and the staging buffer behind the
    // host view (shared: a host view a binding keeps may outlive destroy()).
    std::unique_ptr<internal::ImageOwner> mImage;
    std::shared_ptr<internal::BufferOwner> mStaging; // null for eStorage
    // The handles as upstream's getters return them.
    std::shared_ptr<vk::Image> mPrimaryImage;
    std::shared_ptr<vk::Buffer> mStagingBuffer;
    vk::DescriptorImageInfo mDescriptorImageInfo;
};

/** An Image whose element type is the C++ type T. */
template<typename T>
class ImageT : public Image
{
  public:
    ImageT(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           const std::vector<T>& data,
           uint32_t x,
           uint32_t y,
           uint32_t numChannels,
           vk::ImageTiling tiling,
           const MemoryTypes& memoryType = MemoryTypes::eDevice)
      : Image(physicalDevice,
              device,
              const_cast<void*>(detail::elementBytes(data).pointer),
              data.size(),
              x,
              y,
              numChannels,
              Memory::dataType<T>(),
              tiling,
              memoryType)
    {
    }
    ImageT(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           const std::vector<T>& data,
           uint32_t x,
           uint32_t y,
           uint32_t numChannels,
           const MemoryTypes& memoryType = MemoryTypes::eDevice)
      : Image(physicalDevice,
              device,
              const_cast<void*>(detail::elementBytes(data).pointer),
              data.size(),
              x,
              y,
              numChannels,
              Memory::dataType<T>(),
              memoryType)
    {
    }
    ImageT(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           uint32_t x,
           uint32_t y,
           uint32_t numChannels,
           vk::ImageTiling tiling,
           const MemoryTypes& memoryType = MemoryTypes::eDevice)
      : Image(physicalDevice, device, x, y, numChannels, Memory::dataType<T>(), tiling, memoryType)
    {
    }
    ImageT(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           uint32_t x,
           uint32_t y,
           uint32_t numChannels,
           const MemoryTypes& memoryType = MemoryTypes::eDevice)
      : Image(physicalDevice, device, x, y, numChannels, Memory::dataType<T>(), memoryType)
    {
    }
    /** Used by the Manager; `data` may be null. */
    ImageT(std::shared_ptr<internal::Device> device,
           const std::vector<T>* data,
           uint32_t x,
           uint32_t y,
           uint32_t numChannels,
           std::optional<vk::ImageTiling> tiling,
           const MemoryTypes& memoryType)
      : Image(device,
              data != nullptr ? detail::elementBytes(*data).pointer : nullptr,
              data != nullptr ? data->size() : 0,
              x,
              y,
              numChannels,
              Memory::dataType<T>(),
              tiling,
              memoryType)
    {
    }

    /** Pointer into the host view (tightly packed rows). */
    T* data() { return Memory::data<T>(); }
    /** Copy of the host view. */
    std::vector<T> vector() { return Memory::vector<T>(); }
    T& operator[](int index) { return data()[index]; }
    void setData(const std::vector<T>& data) { Memory::setData(data); }
    using Memory::setData;
    DataTypes dataType() const { return Memory::dataType<T>(); }
};

} // namespace kp
