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

/**
 * A two-dimensional storage image of getWidth() x getHeight() pixels of 1,
 * 2 or 4 channels (one mip level, one layer), bound to shaders as a
 * storage image, with a host view (see @ref readme_images, and kp::Memory
 * for memory types, ownership and thread safety). Made by Manager::image()
 * or Manager::imageT() (a kp::ImageT, typed), and handed out as
 * std::shared_ptr.
 *
 * Unlike a tensor's, an image's host view is always a tightly packed
 * host-visible staging buffer of width x height x channels elements, row
 * after row, whatever its memory type and tiling: images always need
 * OpSyncDevice / OpSyncLocal, eHost and eDeviceAndHost ones too, and the
 * copies handle the driver's row pitch and tiling. Data given at creation
 * is uploaded at once. The image is moved to VK_IMAGE_LAYOUT_GENERAL when
 * it is created and stays there, so its copies, barriers and descriptors
 * are right in any sequence, in any order, evaluated any number of times.
 *
 * The format follows from the data type and channel count (formatFor());
 * creation throws kp::Error for a combination no storage image can hold
 * (3 channels, bool, double, 64-bit integers), for a format the device
 * cannot store as a storage image of that size and tiling, and for optimal
 * tiling in host-visible memory (eHost, eDeviceAndHost).
 */
class Image : public Memory
{
  public:
    /** Standalone image on a device the caller owns (upstream's
     * constructors): `x` x `y` pixels of `numChannels` channels of
     * `dataType`, with `data` (null: undefined contents) uploaded at once.
     * `dataSize` counts elements (width x height x channels), as upstream
     * checks it: fewer throw kp::Error, more are ignored with a warning.
     * The device must belong to a Manager (or otherwise have a queue
     * Kompute knows): the creation-time layout change is submitted, else
     * kp::Error. Prefer Manager::image, which sub-allocates memory. */
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
    /** The same with the default tiling: linear for eHost and
     * eDeviceAndHost (optimal where the device cannot store the format
     * linearly), optimal for the others. */
    Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
          std::shared_ptr<vk::Device> device,
          void* data,
          size_t dataSize,
          uint32_t x,
          uint32_t y,
          uint32_t numChannels,
          const DataTypes& dataType,
          const MemoryTypes& memoryType = MemoryTypes::eDevice);
    /** A standalone image with undefined contents and the given tiling. */
    Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
          std::shared_ptr<vk::Device> device,
          uint32_t x,
          uint32_t y,
          uint32_t numChannels,
          const DataTypes& dataType,
          vk::ImageTiling tiling,
          const MemoryTypes& memoryType = MemoryTypes::eDevice);
    /** A standalone image with undefined contents and the default tiling. */
    Image(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
          std::shared_ptr<vk::Device> device,
          uint32_t x,
          uint32_t y,
          uint32_t numChannels,
          const DataTypes& dataType,
          const MemoryTypes& memoryType = MemoryTypes::eDevice);
    /// \cond INTERNAL
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
    /// \endcond
    /** As destroy(); errors are logged, never thrown. */
    ~Image() override;

    void destroy() override;
    bool isInit() const override;
    /** Type::eImage. */
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
     * image elsewhere must move it back to GENERAL before it ends. Throws
     * kp::Error for UNDEFINED or PREINITIALIZED.
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
    /** Device copy of the whole of tensor `source` (same data type and
     * element count), read as tightly packed rows. */
    void recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Tensor> source);
    using Memory::recordCopyFrom;

    vk::WriteDescriptorSet constructDescriptorSet(vk::DescriptorSet descriptorSet,
                                                  uint32_t binding) override;
    /** vk::DescriptorType::eStorageImage. */
    vk::DescriptorType getDescriptorType() override
    {
        return vk::DescriptorType::eStorageImage;
    }

    /** The image shaders see (a handle owned by the image: valid until
     * destroy(); a custom operation that records commands on it calls
     * noteRecorded()). Throws kp::DestroyedError after destroy(). */
    std::shared_ptr<vk::Image> getPrimaryImage();
    /** The layout tracked at record time: GENERAL unless a custom operation
     * moved it with recordPrimaryImageBarrier. */
    vk::ImageLayout getPrimaryImageLayout() const { return mPrimaryImageLayout; }
    /** Channels per pixel: 1, 2 or 4. */
    uint32_t getNumChannels() const { return mNumChannels; }
    /** Width in pixels (the same as getX()). */
    uint32_t getWidth() const { return mX; }
    /** Height in pixels (the same as getY()). */
    uint32_t getHeight() const { return mY; }
    /** The image's format (formatFor(dataType(), getNumChannels())). */
    vk::Format getFormat() const { return mFormat; }
    /** The tiling the image was created with (given, or the default). */
    vk::ImageTiling getTiling() const { return mTiling; }
    /** The staging buffer behind the host view (null for eStorage). */
    std::shared_ptr<vk::Buffer> getStagingBuffer();

    /** The format of `channels` channels of `dataType`: the R, RG or RGBA
     * format of the element type (R8/R16/R32 SINT or UINT for the signed
     * and unsigned 8-, 16- and 32-bit integers, R32 SFLOAT for eFloat, R16
     * SFLOAT for eHalf), or eUndefined for a combination no storage image
     * can hold (other channel counts and data types). */
    static vk::Format formatFor(DataTypes dataType, uint32_t channels);

    /// \cond INTERNAL
  protected:
    void recordCopyFromSameSize(const vk::CommandBuffer& cmd, Memory& source) override;
    const char* kindName() const override { return "Image"; }
    /// \endcond

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

/** An Image whose element type is the C++ type T (one of those
 * Memory::dataType<T>() maps and formatFor() accepts), with typed access to
 * its host view. Made by Manager::imageT<T>() and Manager::image() (float). */
template<typename T>
class ImageT : public Image
{
  public:
    /** Upstream's standalone constructors, typed: the image holds `data`
     * (see Image's constructors for what throws). */
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
    /** The same with the default tiling. */
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
    /** A standalone image with undefined contents and the given tiling. */
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
    /** A standalone image with undefined contents and the default tiling. */
    ImageT(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           uint32_t x,
           uint32_t y,
           uint32_t numChannels,
           const MemoryTypes& memoryType = MemoryTypes::eDevice)
      : Image(physicalDevice, device, x, y, numChannels, Memory::dataType<T>(), memoryType)
    {
    }
    /// \cond INTERNAL
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
    /// \endcond

    /** Pointer into the host view (tightly packed rows; null for
     * eStorage). */
    T* data() { return Memory::data<T>(); }
    /** Copy of the host view (throws for eStorage). */
    std::vector<T> vector() { return Memory::vector<T>(); }
    /** Element `index` of the host view, unchecked (0 <= index < size();
     * not for eStorage). */
    T& operator[](int index) { return data()[index]; }
    /** Copies `data` (exactly size() elements, else kp::Error) into the
     * host view; record OpSyncDevice to send it to the image. */
    void setData(const std::vector<T>& data) { Memory::setData(data); }
    using Memory::setData;
    /** Memory::dataType<T>(). */
    DataTypes dataType() const { return Memory::dataType<T>(); }
};

} // namespace kp
