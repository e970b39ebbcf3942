// SPDX-License-Identifier: Apache-2.0
// One small move-only owner per kind of Vulkan object.
//
// An owner destroys its object when it is reset or destructed, on the device
// of the context it was made for. Objects a user can drop (Tensor, Image,
// Algorithm, Sequence, operations) never destroy owners themselves while
// work may be in flight: they hand them to their device's retire list
// (Device::retire), which destroys them once the GPU is done with them.
//
// After the context's Vulkan device is gone (Manager::destroy), an owner
// that is still around destroys nothing: the device took its objects with it.
#pragma once

#include <utility>

#include "kompute/Vulkan.hpp"

#include "internal/Allocator.hpp"

namespace kp {
namespace internal {

class Device;

/** The Vulkan device of `context` while it exists, else null. */
vk::Device
liveDevice(const Device* context) noexcept;

// How each kind of handle is destroyed.
inline void destroyHandle(vk::Device d, vk::ShaderModule h) { d.destroyShaderModule(h); }
inline void destroyHandle(vk::Device d, vk::PipelineLayout h) { d.destroyPipelineLayout(h); }
inline void destroyHandle(vk::Device d, vk::Pipeline h) { d.destroyPipeline(h); }
inline void destroyHandle(vk::Device d, vk::DescriptorSetLayout h) { d.destroyDescriptorSetLayout(h); }
inline void destroyHandle(vk::Device d, vk::DescriptorPool h) { d.destroyDescriptorPool(h); }
inline void destroyHandle(vk::Device d, vk::CommandPool h) { d.destroyCommandPool(h); }
// A fence or semaphore is asked for its status once more right before it is
// destroyed: that call waits for every other thread of the driver and the
// layers to let go of the object. The Khronos validation layer 1.3.239 still
// unlocks a fence's state on its own queue thread after it has reported the
// fence signalled (ThreadSanitizer sees the fence destroyed under it).
// Semaphores owned here are timeline semaphores (vkGetSemaphoreCounterValue).
inline void
destroyHandle(vk::Device d, vk::Fence h)
{
    (void)VULKAN_HPP_DEFAULT_DISPATCHER.vkGetFenceStatus(d, h);
    d.destroyFence(h);
}
inline void
destroyHandle(vk::Device d, vk::Semaphore h)
{
    uint64_t value = 0;
    (void)VULKAN_HPP_DEFAULT_DISPATCHER.vkGetSemaphoreCounterValue(d, h, &value);
    d.destroySemaphore(h);
}
inline void destroyHandle(vk::Device d, vk::QueryPool h) { d.destroyQueryPool(h); }
inline void destroyHandle(vk::Device d, vk::ImageView h) { d.destroyImageView(h); }
inline void destroyHandle(vk::Device d, vk::PipelineCache h) { d.destroyPipelineCache(h); }

/** Owns one handle that needs nothing but the device to be destroyed. */
template<typename Handle>
class Owned
{
  public:
    Owned() = default;
    Owned(const Device* context, Handle handle) noexcept
      : mContext(context)
      , mHandle(handle)
    {
    }
    Owned(Owned&& other) noexcept
      : mContext(other.mContext)
      , mHandle(std::exchange(other.mHandle, Handle()))
    {
    }
    Owned& operator=(Owned&& other) noexcept
    {
        if (this != &other) {
            reset();
            mContext = other.mContext;
            mHandle = std::exchange(other.mHandle, Handle());
        }
        return *this;
    }
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;
    ~Owned() { reset(); }

    Handle get() const noexcept { return mHandle; }
    /** For Vulkan calls that take an array of handles. */
    const Handle* address() const noexcept { return &mHandle; }
    explicit operator bool() const noexcept { return static_cast<bool>(mHandle); }

    void reset() noexcept
    {
        if (mHandle) {
            if (vk::Device device = liveDevice(mContext)) {
                destroyHandle(device, mHandle);
            }
            mHandle = Handle();
        }
    }

  private:
    const Device* mContext = nullptr;
    Handle mHandle;
};

/** A descriptor set and the shared pool it came from. */
struct DescriptorSetAllocation
{
    vk::DescriptorSet set;
    vk::DescriptorPool pool;
};

using ShaderModuleOwner = Owned<vk::ShaderModule>;
using PipelineLayoutOwner = Owned<vk::PipelineLayout>;
using PipelineOwner = Owned<vk::Pipeline>;
using DescriptorSetLayoutOwner = Owned<vk::DescriptorSetLayout>;
using DescriptorPoolOwner = Owned<vk::DescriptorPool>;
using FenceOwner = Owned<vk::Fence>;
using SemaphoreOwner = Owned<vk::Semaphore>;
using QueryPoolOwner = Owned<vk::QueryPool>;
using ImageViewOwner = Owned<vk::ImageView>;
using PipelineCacheOwner = Owned<vk::PipelineCache>;

/** A command pool and the primary command buffer allocated from it (freed
 * with the pool). */
struct CommandPoolOwner
{
    Owned<vk::CommandPool> pool;
    vk::CommandBuffer commandBuffer;
};

/** A buffer and the memory bound to it. */
class BufferOwner
{
  public:
    BufferOwner() = default;
    BufferOwner(Device* context, vk::Buffer buffer, const Allocation& allocation) noexcept
      : mContext(context)
      , mBuffer(buffer)
      , mAllocation(allocation)
    {
    }
    BufferOwner(BufferOwner&& other) noexcept { *this = std::move(other); }
    BufferOwner& operator=(BufferOwner&& other) noexcept;
    BufferOwner(const BufferOwner&) = delete;
    BufferOwner& operator=(const BufferOwner&) = delete;
    ~BufferOwner() { reset(); }

    /** Takes the memory bound to the buffer. */
    void adoptMemory(const Allocation& allocation) noexcept { mAllocation = allocation; }

    vk::Buffer buffer() const noexcept { return mBuffer; }
    const Allocation& allocation() const noexcept { return mAllocation; }
    /** Host address of the buffer's memory, or null when not host-visible. */
    void* mapped() const noexcept { return mAllocation.mapped; }
    explicit operator bool() const noexcept { return static_cast<bool>(mBuffer); }
    void reset() noexcept;

  private:
    Device* mContext = nullptr;
    vk::Buffer mBuffer;
    Allocation mAllocation;
};

/** An image, its memory and its view. */
class ImageOwner
{
  public:
    ImageOwner() = default;
    ImageOwner(ImageOwner&& other) noexcept { *this = std::move(other); }
    ImageOwner& operator=(ImageOwner&& other) noexcept;
    ImageOwner(const ImageOwner&) = delete;
    ImageOwner& operator=(const ImageOwner&) = delete;
    ~ImageOwner() { reset(); }

    /** Takes the image (before its memory is bound). */
    void adoptImage(Device* context, vk::Image image) noexcept;
    void adoptMemory(const Allocation& allocation) noexcept { mAllocation = allocation; }
    void adoptView(vk::ImageView view) noexcept { mView = view; }

    vk::Image image() const noexcept { return mImage; }
    vk::ImageView view() const noexcept { return mView; }
    const Allocation& allocation() const noexcept { return mAllocation; }
    explicit operator bool() const noexcept { return static_cast<bool>(mImage); }
    void reset() noexcept;

  private:
    Device* mContext = nullptr;
    vk::Image mImage;
    vk::ImageView mView;
    Allocation mAllocation;
};

/** A descriptor set from the context's shared pools. */
class DescriptorSetOwner
{
  public:
    DescriptorSetOwner() = default;
    DescriptorSetOwner(Device* context, const DescriptorSetAllocation& allocation) noexcept
      : mContext(context)
      , mAllocation(allocation)
    {
    }
    DescriptorSetOwner(DescriptorSetOwner&& other) noexcept { *this = std::move(other); }
    DescriptorSetOwner& operator=(DescriptorSetOwner&& other) noexcept;
    DescriptorSetOwner(const DescriptorSetOwner&) = delete;
    DescriptorSetOwner& operator=(const DescriptorSetOwner&) = delete;
    ~DescriptorSetOwner() { reset(); }

    vk::DescriptorSet get() const noexcept { return mAllocation.set; }
    const vk::DescriptorSet* address() const noexcept { return &mAllocation.set; }
    explicit operator bool() const noexcept { return static_cast<bool>(mAllocation.set); }
    void reset() noexcept;

  private:
    Device* mContext = nullptr;
    DescriptorSetAllocation mAllocation;
};

} // namespace internal
} // namespace kp
