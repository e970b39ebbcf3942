// SPDX-License-Identifier: Apache-2.0
// kp::Tensor: a one-dimensional array of elements in a Vulkan buffer.
#pragma once

#include <memory>
#include <vector>

#include "kompute/Memory.hpp"

namespace kp {

class Image;

namespace internal {
class BufferOwner;
}

/**
 * A one-dimensional array of size() elements in a Vulkan storage buffer,
 * bound to shaders as a storage buffer, with a host view (see kp::Memory
 * for memory types, ownership and thread safety). Made by
 * Manager::tensor() or Manager::tensorT() (a kp::TensorT, typed), and
 * handed out as std::shared_ptr.
 *
 * An eDevice tensor has a device-local buffer and a host-visible staging
 * buffer behind its host view; OpSyncDevice and OpSyncLocal (or upload()
 * and download()) move data between them. eHost and eDeviceAndHost tensors
 * have one buffer, which is the host view; eStorage tensors have no host
 * view. Device memory is sub-allocated by the Manager.
 */
class Tensor : public Memory
{
  public:
    /** Kompute 0.9.0's name of Memory::MemoryTypes (deprecated). */
    using TensorTypes [[deprecated("Kompute 0.9.0 name: use kp::Memory::MemoryTypes")]] = MemoryTypes;
    /** Kompute 0.9.0's name of Memory::DataTypes (deprecated). */
    using TensorDataTypes [[deprecated("Kompute 0.9.0 name: use kp::Memory::DataTypes")]] = DataTypes;

    /** Standalone tensor on a device the caller owns (upstream's
     * constructor): `elementTotalCount` elements of `elementMemorySize`
     * bytes of `dataType`, copied from `data` (null: undefined contents).
     * On a Manager's device the tensor belongs to that Manager (its
     * allocator, its destroy()); on another device it gets dedicated
     * allocations and destroys nothing it was given. Prefer
     * Manager::tensor. Throws kp::Error for null handles, zero elements, an
     * element size that does not match `dataType`, or more than 4 GiB, and
     * kp::OutOfMemoryError when the memory is not there. */
    Tensor(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           void* data,
           uint32_t elementTotalCount,
           uint32_t elementMemorySize,
           const DataTypes& dataType,
           const MemoryTypes& memoryType = MemoryTypes::eDevice);
    /** The same without data: the contents are undefined. */
    Tensor(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           uint32_t elementTotalCount,
           uint32_t elementMemorySize,
           const DataTypes& dataType,
           const MemoryTypes& memoryType = MemoryTypes::eDevice);
    /// \cond INTERNAL
    /** Used by the Manager. `data` may be null (contents undefined). */
    Tensor(std::shared_ptr<internal::Device> device,
           const void* data,
           uint32_t elementTotalCount,
           uint32_t elementMemorySize,
           const DataTypes& dataType,
           const MemoryTypes& memoryType);
    /// \endcond
    /** As destroy(); errors are logged, never thrown. */
    ~Tensor() override;

    void destroy() override;
    bool isInit() const override;
    /** Type::eTensor. */
    Type type() override { return Type::eTensor; }
    /** Kompute 0.9.0's name of memoryType() (deprecated). */
    [[deprecated("Kompute 0.9.0 name: use memoryType()")]] MemoryTypes tensorType() const
    {
        return memoryType();
    }

    void recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd) override;
    void recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd) override;
    /** Range form of recordCopyFromStagingToDevice(): elements [offset,
     * offset + count) only. Throws kp::Error unless that is a non-empty
     * range inside the tensor. */
    void recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd,
                                       uint32_t offset,
                                       uint32_t count);
    /** Range form of recordCopyFromDeviceToStaging(): elements [offset,
     * offset + count) only; throws as the other range form. */
    void recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd,
                                       uint32_t offset,
                                       uint32_t count);
    /** A buffer memory barrier on the whole primary buffer. */
    void recordPrimaryMemoryBarrier(const vk::CommandBuffer& cmd,
                                    vk::AccessFlags srcAccessMask,
                                    vk::AccessFlags dstAccessMask,
                                    vk::PipelineStageFlags srcStageMask,
                                    vk::PipelineStageFlags dstStageMask) override;
    /** A buffer memory barrier on the whole staging buffer; nothing for
     * tensors without one (eHost, eDeviceAndHost, eStorage). */
    void recordStagingMemoryBarrier(const vk::CommandBuffer& cmd,
                                    vk::AccessFlags srcAccessMask,
                                    vk::AccessFlags dstAccessMask,
                                    vk::PipelineStageFlags srcStageMask,
                                    vk::PipelineStageFlags dstStageMask) override;

    /**
     * setData() followed by an evaluated OpSyncDevice, in one call:
     * `bytes` (the tensor's size) from `data` reach the host view and the
     * device memory, and the call returns once the device holds them. For
     * a tensor with a staging buffer the copy into it and the transfer to
     * the device run side by side, in chunks of 64 MiB, so that large
     * uploads cost the slower of the two rather than their sum. Without a
     * staging buffer it is setData(). Submits on the Manager's queue 0;
     * work already submitted that uses the tensor must have completed.
     * Throws as setData(), and kp::VulkanError if the submission fails.
     */
    void upload(const void* data, size_t bytes);
    /** An evaluated OpSyncLocal followed by a copy of the host view into
     * `data` (`bytes`: the tensor's size), overlapped the same way as
     * upload(); returns once `data` holds the device's values. Throws as
     * upload(). */
    void download(void* data, size_t bytes);

    /** Device copy of the whole of `source` (same type and size). */
    void recordCopyFrom(const vk::CommandBuffer& cmd,
                        std::shared_ptr<Tensor> source);
    /** Device copy of the whole of `source` (same type and element count);
     * the pixels land as tightly packed rows. */
    void recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Image> source);
    using Memory::recordCopyFrom;

    vk::WriteDescriptorSet constructDescriptorSet(vk::DescriptorSet descriptorSet,
                                                  uint32_t binding) override;
    /** vk::DescriptorType::eStorageBuffer. */
    vk::DescriptorType getDescriptorType() override
    {
        return vk::DescriptorType::eStorageBuffer;
    }

    /** The buffer shaders see (a handle owned by the tensor: valid until
     * destroy(); a custom operation that records commands on it calls
     * noteRecorded()). Throws kp::DestroyedError after destroy(). */
    std::shared_ptr<vk::Buffer> getPrimaryBuffer();
    /** The staging buffer behind the host view, or null when there is none
     * (every type but eDevice); owned by the tensor as getPrimaryBuffer(). */
    std::shared_ptr<vk::Buffer> getStagingBuffer();

    /// \cond INTERNAL
  protected:
    void recordCopyFromSameSize(const vk::CommandBuffer& cmd,
                                Memory& source) override;
    const char* kindName() const override { return "Tensor"; }
    /// \endcond

  private:
    void create(const void* data);
    void checkRange(uint32_t offset, uint32_t count, const char* action) const;

    // The buffers and their memory. Shared, because a host view that a
    // binding keeps (keepHostViewUntilDeleted) may outlive destroy().
    std::shared_ptr<internal::BufferOwner> mPrimary;
    std::shared_ptr<internal::BufferOwner> mStaging; // null without staging
    // The handles as upstream's getters return them.
    std::shared_ptr<vk::Buffer> mPrimaryBuffer;
    std::shared_ptr<vk::Buffer> mStagingBuffer;
    vk::DescriptorBufferInfo mDescriptorBufferInfo;
};

namespace detail {
/** Contiguous bytes of a vector's elements. vector<bool> is bit-packed, so
 * its elements are copied one by one into `storage`. A temporary of this
 * type lives until the end of the constructor call that uses it. */
struct ElementBytes
{
    std::vector<uint8_t> storage;
    const void* pointer = nullptr;
};

template<typename T>
ElementBytes
elementBytes(const std::vector<T>& values)
{
    ElementBytes bytes;
    if constexpr (std::is_same_v<T, bool>) {
        bytes.storage.assign(values.begin(), values.end());
        bytes.pointer = bytes.storage.data();
    } else {
        bytes.pointer = values.data();
    }
    return bytes;
}
}

/** A Tensor whose element type is the C++ type T (one of those
 * Memory::dataType<T>() maps), with typed access to its host view. Made by
 * Manager::tensorT<T>() and Manager::tensor() (float). */
template<typename T>
class TensorT : public Tensor
{
  public:
    /** Upstream's standalone form of the Tensor constructor, typed: the
     * tensor holds `data`'s elements (see Tensor's constructor for where
     * it belongs and what throws; more than 2^32-1 elements throw). */
    TensorT(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
            std::shared_ptr<vk::Device> device,
            const std::vector<T>& data,
            const MemoryTypes& memoryType = MemoryTypes::eDevice)
      : Tensor(physicalDevice,
               device,
               const_cast<void*>(detail::elementBytes(data).pointer),
               checkedCount(data.size()),
               sizeof(T),
               Memory::dataType<T>(),
               memoryType)
    {
    }
    /** The same with `size` elements of undefined contents. */
    TensorT(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
            std::shared_ptr<vk::Device> device,
            size_t size,
            const MemoryTypes& memoryType = MemoryTypes::eDevice)
      : Tensor(physicalDevice,
               device,
               checkedCount(size),
               sizeof(T),
               Memory::dataType<T>(),
               memoryType)
    {
    }
    /// \cond INTERNAL
    // Used by the Manager.
    TensorT(std::shared_ptr<internal::Device> device,
            const std::vector<T>& data,
            const MemoryTypes& memoryType)
      : Tensor(device,
               detail::elementBytes(data).pointer,
               checkedCount(data.size()),
               sizeof(T),
               Memory::dataType<T>(),
               memoryType)
    {
    }
    TensorT(std::shared_ptr<internal::Device> device,
            size_t size,
            const MemoryTypes& memoryType)
      : Tensor(device,
               nullptr,
               checkedCount(size),
               sizeof(T),
               Memory::dataType<T>(),
               memoryType)
    {
    }
    /// \endcond

    /** Pointer into the host view (null for eStorage). */
    T* data() { return Memory::data<T>(); }
    /** Copy of the host view (throws for eStorage). */
    std::vector<T> vector() { return Memory::vector<T>(); }
    /** Element `index` of the host view, unchecked (index < size(); not for
     * eStorage). */
    T& operator[](size_t index) { return data()[index]; }
    /** Copies `data` (exactly size() elements, else kp::Error) into the
     * host view; record OpSyncDevice to send it to the device. */
    void setData(const std::vector<T>& data) { Memory::setData(data); }
    using Memory::setData;
    /** upload() of a vector of size() elements. */
    void upload(const std::vector<T>& data)
    {
        if constexpr (std::is_same_v<T, bool>) { // one byte per element
            std::vector<uint8_t> bytes(data.begin(), data.end());
            Tensor::upload(bytes.data(), bytes.size());
        } else {
            Tensor::upload(data.data(), data.size() * sizeof(T));
        }
    }
    using Tensor::upload;
    /** download() into a new vector. */
    std::vector<T> download()
    {
        if constexpr (std::is_same_v<T, bool>) {
            std::vector<uint8_t> bytes(size());
            Tensor::download(bytes.data(), bytes.size());
            return std::vector<T>(bytes.begin(), bytes.end());
        } else {
            std::vector<T> values(size());
            Tensor::download(values.data(), values.size() * sizeof(T));
            return values;
        }
    }
    using Tensor::download;
    /** Memory::dataType<T>(). */
    DataTypes dataType() const { return Memory::dataType<T>(); }

  private:
    static uint32_t checkedCount(size_t count)
    {
        if (count > UINT32_MAX) {
            throw Error("Tensor of " + std::to_string(count) +
                        " elements: at most 2^32-1 elements are supported");
        }
        return static_cast<uint32_t>(count);
    }
};

} // namespace kp
