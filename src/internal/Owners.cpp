// SPDX-License-Identifier: Apache-2.0
#include "internal/Owners.hpp"

#include "internal/Device.hpp"

namespace kp {
namespace internal {

BufferOwner&
BufferOwner::operator=(BufferOwner&& other) noexcept
{
    if (this != &other) {
        reset();
        mContext = other.mContext;
        mBuffer = std::exchange(other.mBuffer, vk::Buffer());
        mAllocation = std::exchange(other.mAllocation, Allocation{});
    }
    return *this;
}

void
BufferOwner::reset() noexcept
{
    if (!mBuffer && !mAllocation.memory) {
        return;
    }
    if (vk::Device device = liveDevice(mContext)) {
        if (mBuffer) {
            device.destroyBuffer(mBuffer);
        }
        mContext->allocator().free(mAllocation);
    }
    mBuffer = vk::Buffer();
    mAllocation = Allocation{};
}

ImageOwner&
ImageOwner::operator=(ImageOwner&& other) noexcept
{
    if (this != &other) {
        reset();
        mContext = other.mContext;
        mImage = std::exchange(other.mImage, vk::Image());
        mView = std::exchange(other.mView, vk::ImageView());
        mAllocation = std::exchange(other.mAllocation, Allocation{});
    }
    return *this;
}

void
ImageOwner::adoptImage(Device* context, vk::Image image) noexcept
{
    reset();
    mContext = context;
    mImage = image;
}

void
ImageOwner::reset() noexcept
{
    if (!mImage && !mAllocation.memory) {
        return;
    }
    if (vk::Device device = liveDevice(mContext)) {
        if (mView) {
            device.destroyImageView(mView);
        }
        if (mImage) {
            device.destroyImage(mImage);
        }
        mContext->allocator().free(mAllocation);
    }
    mView = vk::ImageView();
    mImage = vk::Image();
    mAllocation = Allocation{};
}

DescriptorSetOwner&
DescriptorSetOwner::operator=(DescriptorSetOwner&& other) noexcept
{
    if (this != &other) {
        reset();
        mContext = other.mContext;
        mAllocation = std::exchange(other.mAllocation, DescriptorSetAllocation{});
    }
    return *this;
}

void
DescriptorSetOwner::reset() noexcept
{
    if (!mAllocation.set) {
        return;
    }
    if (liveDevice(mContext)) {
        mContext->descriptorPools().free(mAllocation);
    }
    mAllocation = DescriptorSetAllocation{};
}

} // namespace internal
} // namespace kp
