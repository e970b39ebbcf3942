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

class Tensor : public Memory
{
  public:
    /** Kompute 0.9.0's name of Memory::MemoryTypes (deprecated). */
    using TensorTypes [[deprecated("Kompute 0.9.0 name: use kp::Memory::MemoryTypes")]] = MemoryTypes;
    /** Kompute 0.9.0's name of Memory::DataTypes (deprecated). */
    using TensorDataTypes [[deprecated("Kompute 0.9.0 name: use kp::Memory::DataTypes")]] = DataTypes;

    /** Standalone tensor on a device the caller owns (upstream's
     * constructor). Prefer Manager::tensor, which sub-allocates memory. */
    Tensor(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           void* data,
           uint32_t elementTotalCount,
           uint32_t elementMemorySize,
           const DataTypes& dataType,
           const MemoryTypes& memoryType = MemoryTypes::eDevice);
    Tensor(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
           std::shared_ptr<vk::Device> device,
           uint32_t elementTotalCount,
           uint32_t elementMemorySize,
           const DataTypes& dataType,
           const MemoryTypes& memoryType = MemoryTypes::eDevice);
    /** Used by the Manager. `data` may be null (contents undefined). */
    Tensor(std::shared_ptr<internal::Device> device,
           const void* data,
           uint32_t elementTotalCount,
           uint32_t elementMemorySize,
           const DataTypes& dataType,
           const MemoryTypes& memoryType);
    ~Tensor() override;

    void destroy() override;
    bool isInit() const override;
    Type type() override { return Type::eTensor; }
    /** Kompute 0.9.0's name of memoryType() (deprecated). */
    [[deprecated("Kompute 0.9.0 name: use memoryType()")]] MemoryTypes tensorType() const
    {
        return memoryType();
    }

    void recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd) override;
    void recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd) override;
    /** Range forms (ours): elements [offset, offset + count). */
    void recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd,
                                       uint32_t offset,
                                       uint32_t count);
    void recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd,
                                       uint32_t offset,
                                       uint32_t count);
    void recordPrimaryMemoryBarrier(const vk::CommandBuffer& cmd,
                                    vk::AccessFlags srcAccessMask,
                                    vk::AccessFlags dstAccessMask,
                                    vk::PipelineStageFlags srcStageMask,
                                    vk::PipelineStageFlags dstStageMask) override;
    void recordStagingMemoryBarrier(const vk::CommandBuffer& cmd,
                                    vk::AccessFlags srcAccessMask,
                                    vk::AccessFlags dstAccessMask,
                                    vk::PipelineStageFlags srcStageMask,
                                    vk::PipelineStageFlags dstStageMask) override;

    /**
     * setData() followed by an evaluated OpSyncDevice, in one call (ours):
     * `bytes` (the tensor's size) from `data` reach the host view and the
     * device memory, and the call returns once the device holds them. For
     * a tensor with a staging buffer the copy into it and the transfer to
     * the device run side by side, in chunks of 64 MiB, so that large
     * uploads cost the slower of the two rather than their sum. Without a
     * staging buffer it is setData(). Submits on the Manager's queue 0;
     * work already submitted that uses the tensor must have completed.
     */
    void upload(const void* data, size_t bytes);
    /** An evaluated OpSyncLocal followed by a copy of the host view into
     * `data`, overlapped the same way (ours). */
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
    vk::DescriptorType getDescriptorType() override
    {
        return vk::DescriptorType::eStorageBuffer;
    }

    /** The buffer shaders see. */
    std::shared_ptr<vk::Buffer> getPrimaryBuffer();
    /** The staging buffer behind the host view, or null when there is none
     * (ours). */
    std::shared_ptr<vk::Buffer> getStagingBuffer();

  protected:
    void recordCopyFromSameSize(const vk::CommandBuffer& cmd,
                                Memory& source) override;
    const char* kindName() const override { return "Tensor"; }

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

/** A Tensor whose element type is the C++ type T. */
template<typename T>
class TensorT : public Tensor
{
  public:
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

    /** Pointer into the host view. */
    T* data() { return Memory::data<T>(); }
    /** Copy of the host view. */
    std::vector<T> vector() { return Memory::vector<T>(); }
    T& operator[](size_t index) { return data()[index]; }
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
