// SPDX-License-Identifier: Apache-2.0
#include "internal/Device.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "internal/Check.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

namespace {

// A flag variable: unset or empty gives `fallback`, "0" false, else true.
bool
environmentFlag(const char* name, bool fallback = false)
{
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') {
        return fallback;
    }
    return std::strcmp(value, "0") != 0;
}

// Host-visible device-local memory only pays off where it is ordinary
// memory: CPU drivers and integrated GPUs. On discrete GPUs such memory is a
// PCIe window that the host reads very slowly, so a staging copy is faster.
bool
hasUnifiedMemory(const vk::PhysicalDeviceProperties& properties,
                 const Allocator& allocator)
{
    bool integrated = properties.deviceType == vk::PhysicalDeviceType::eIntegratedGpu ||
                      properties.deviceType == vk::PhysicalDeviceType::eCpu;
    auto unified = vk::MemoryPropertyFlagBits::eDeviceLocal |
                   vk::MemoryPropertyFlagBits::eHostVisible |
                   vk::MemoryPropertyFlagBits::eHostCoherent;
    return integrated && allocator.findMemoryType(~0u, unified, unified) >= 0;
}

} // namespace

Device::Device(const Handles& handles,
               const std::vector<uint32_t>& queueFamilies,
               const DeviceFeatures& enabledFeatures,
               bool dedicatedAllocationsOnly)
  : mHandles(handles)
  , mProperties(handles.physicalDevice.getProperties())
  , mFeatures(enabledFeatures)
  , mWaitSettings(mProperties.deviceType == vk::PhysicalDeviceType::eCpu,
                  environmentFlag("KOMPUTE_ENV_FENCES"))
{
    auto familyProperties = handles.physicalDevice.getQueueFamilyProperties();
    std::vector<uint32_t> usedPerFamily(familyProperties.size(), 0);
    for (uint32_t family : queueFamilies) {
        auto queue = std::make_unique<Queue>();
        queue->familyIndex = family;
        queue->flags = familyProperties[family].queueFlags;
        queue->timestampValidBits = familyProperties[family].timestampValidBits;
        queue->handle = handles.device.getQueue(family, usedPerFamily[family]++);
        mQueues.push_back(std::move(queue));
        if (std::find(mQueueFamilies.begin(), mQueueFamilies.end(), family) == mQueueFamilies.end()) {
            mQueueFamilies.push_back(family);
        }
    }
    mAllocator = std::make_unique<Allocator>(
      handles.physicalDevice, handles.device, dedicatedAllocationsOnly);
    mDescriptorPools = std::make_unique<DescriptorPools>(handles.device);
    mStagingForDeviceMemory = environmentFlag("KOMPUTE_ENV_FORCE_STAGING") ||
                              !hasUnifiedMemory(mProperties, *mAllocator);
    mShaderCopies = environmentFlag("KOMPUTE_ENV_SHADER_COPY", shaderCopiesByDefault(mProperties));
}

const ShaderCopyPipeline&
Device::shaderCopyPipeline()
{
    checkAlive("Creating the copy shader");
    vk::PipelineCache cache = pipelineCache();
    std::lock_guard<std::mutex> lock(mShaderCopyMutex);
    if (!mShaderCopyPipeline) {
        mShaderCopyPipeline = std::make_unique<ShaderCopyPipeline>(mHandles.device, cache);
    }
    return *mShaderCopyPipeline;
}

Device::~Device()
{
    destroy();
}

Queue&
Device::queue(uint32_t index)
{
    if (index >= mQueues.size()) {
        throw Error(logger::format(
          "Queue index {} is out of range: this Manager has {} queue(s) (one per entry of "
          "familyQueueIndices), so use 0..{}",
          index,
          mQueues.size(),
          mQueues.empty() ? 0 : mQueues.size() - 1));
    }
    return *mQueues[index];
}

void
Device::checkAlive(const char* what) const
{
    if (!isAlive()) {
        throw DestroyedError(std::string(what) +
                             ": its Manager was destroyed, so the Vulkan device is gone");
    }
}

void
Device::waitForPendingWork()
{
    if (mPendingSubmissions.load() <= 0 || !isAlive()) {
        return;
    }
    // vkDeviceWaitIdle needs every queue externally synchronised.
    std::vector<std::unique_lock<std::mutex>> locks;
    for (auto& queue : mQueues) {
        locks.emplace_back(queue->mutex);
    }
    check(vkDeviceWaitIdle(mHandles.device), "Waiting for the device to finish pending work");
}

void
Device::submitAndWait(const std::function<void(vk::CommandBuffer)>& record)
{
    submitInSteps(
      1, [](uint32_t) {}, [&](uint32_t, vk::CommandBuffer cmd) { record(cmd); }, [](uint32_t) {});
}

void
Device::submitInSteps(uint32_t steps,
                      const std::function<void(uint32_t)>& before,
                      const std::function<void(uint32_t, vk::CommandBuffer)>& record,
                      const std::function<void(uint32_t)>& after)
{
    checkAlive("Submitting a one-time command buffer");
    if (mQueues.empty()) {
        throw Error("Uploading initial data needs a queue: create the object through a "
                    "kp::Manager (objects built on a bare vk::Device have none)");
    }
    Queue& target = queue(0);
    std::lock_guard<std::mutex> lock(mOneTimeMutex);
    vk::Device device = mHandles.device;
    if (!mOneTimePool) {
        vk::CommandPoolCreateInfo poolInfo(vk::CommandPoolCreateFlagBits::eTransient,
                                           target.familyIndex);
        check(device.createCommandPool(&poolInfo, nullptr, &mOneTimePool),
              "Creating the command pool for one-time uploads");
    }
    for (vk::Fence& fence : mOneTimeFences) {
        if (!fence) {
            vk::FenceCreateInfo fenceInfo;
            check(device.createFence(&fenceInfo, nullptr, &fence),
                  "Creating a fence for one-time uploads");
        }
    }
    std::vector<vk::CommandBuffer> buffers(steps);
    vk::CommandBufferAllocateInfo allocateInfo(mOneTimePool, vk::CommandBufferLevel::ePrimary, steps);
    check(device.allocateCommandBuffers(&allocateInfo, buffers.data()),
          "Allocating one-time command buffers");
    // Which steps are on the device: a failure must wait for them before
    // their command buffers are freed.
    std::array<int64_t, kOneTimeSlots> inFlight;
    inFlight.fill(-1);
    struct Cleanup
    {
        vk::Device device;
        vk::CommandPool pool;
        std::vector<vk::CommandBuffer>& buffers;
        Queue& queue;
        std::array<int64_t, kOneTimeSlots>& inFlight;
        ~Cleanup()
        {
            bool busy = false;
            for (int64_t step : inFlight) {
                busy = busy || step >= 0;
            }
            if (busy) {
                std::lock_guard<std::mutex> queueLock(queue.mutex);
                vkQueueWaitIdle(queue.handle);
                for (int64_t step : inFlight) {
                    if (step >= 0) {
                        queue.unobservedSubmissions.fetch_sub(1);
                    }
                }
            }
            device.freeCommandBuffers(pool, static_cast<uint32_t>(buffers.size()), buffers.data());
        }
    } cleanup{ device, mOneTimePool, buffers, target, inFlight };

    // Waits for the step in `slot`, if any, and runs its host work.
    auto complete = [&](size_t slot) {
        if (inFlight[slot] < 0) {
            return;
        }
        check(device.waitForFences(1, &mOneTimeFences[slot], VK_TRUE, UINT64_MAX),
              "Waiting for a one-time command buffer");
        target.unobservedSubmissions.fetch_sub(1); // see Queue: sequences order after it
        auto step = static_cast<uint32_t>(inFlight[slot]);
        inFlight[slot] = -1;
        after(step);
    };
    for (uint32_t step = 0; step < steps; ++step) {
        size_t slot = step % kOneTimeSlots;
        complete(slot);
        before(step);
        vk::CommandBuffer cmd = buffers[step];
        vk::CommandBufferBeginInfo beginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit);
        check(cmd.begin(&beginInfo), "Beginning a one-time command buffer");
        record(step, cmd);
        check(vkEndCommandBuffer(cmd), "Ending a one-time command buffer");
        check(device.resetFences(1, &mOneTimeFences[slot]), "Resetting a one-time fence");
        vk::SubmitInfo submitInfo(0, nullptr, nullptr, 1, &cmd);
        {
            std::lock_guard<std::mutex> queueLock(target.mutex);
            check(target.handle.submit(1, &submitInfo, mOneTimeFences[slot]),
                  "Submitting a one-time command buffer");
            target.unobservedSubmissions.fetch_add(1);
        }
        inFlight[slot] = step;
    }
    // In submission order: the oldest step first.
    for (uint32_t i = 0; i < kOneTimeSlots; ++i) {
        complete((steps + i) % kOneTimeSlots);
    }
}

namespace {
// Enough for the short-lived sequences of a few threads.
constexpr size_t kSequenceCacheSize = 16;

void
destroySequenceResources(vk::Device device, SequenceResources& resources)
{
    if (resources.timeline) {
        device.destroySemaphore(resources.timeline);
    }
    if (resources.fence) {
        device.destroyFence(resources.fence);
    }
    if (resources.commandPool) {
        device.destroyCommandPool(resources.commandPool); // frees the command buffer
    }
    resources = SequenceResources{};
}
} // namespace

SequenceResources
Device::acquireSequenceResources(uint32_t family)
{
    {
        std::lock_guard<std::mutex> lock(mSequenceCacheMutex);
        for (auto it = mSequenceCache.rbegin(); it != mSequenceCache.rend(); ++it) {
            if (it->family == family) {
                SequenceResources resources = *it;
                mSequenceCache.erase(std::next(it).base());
                return resources;
            }
        }
    }
    vk::Device device = mHandles.device;
    SequenceResources resources;
    resources.family = family;
    try {
        vk::CommandPoolCreateInfo poolInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer,
                                           family);
        check(device.createCommandPool(&poolInfo, nullptr, &resources.commandPool),
              "Creating a sequence's command pool");
        vk::CommandBufferAllocateInfo allocateInfo(
          resources.commandPool, vk::CommandBufferLevel::ePrimary, 1);
        check(device.allocateCommandBuffers(&allocateInfo, &resources.commandBuffer),
              "Allocating a sequence's command buffer");
        vk::FenceCreateInfo fenceInfo;
        check(device.createFence(&fenceInfo, nullptr, &resources.fence),
              "Creating a sequence's fence");
        if (mFeatures.timelineSemaphore) {
            vk::SemaphoreTypeCreateInfo typeInfo(vk::SemaphoreType::eTimeline, 0);
            vk::SemaphoreCreateInfo semaphoreInfo;
            semaphoreInfo.pNext = &typeInfo;
            check(device.createSemaphore(&semaphoreInfo, nullptr, &resources.timeline),
                  "Creating a sequence's timeline semaphore");
        }
    } catch (...) {
        destroySequenceResources(device, resources);
        throw;
    }
    return resources;
}

void
Device::releaseSequenceResources(SequenceResources& resources)
{
    if (!resources.commandPool) {
        return;
    }
    vk::Device device = mHandles.device;
    if (isAlive()) {
        // The work is complete, so the pool can be reset for the next user.
        VkResult reset = vkResetCommandPool(device, resources.commandPool, 0);
        std::lock_guard<std::mutex> lock(mSequenceCacheMutex);
        if (reset == VK_SUCCESS && mSequenceCache.size() < kSequenceCacheSize) {
            mSequenceCache.push_back(resources);
            resources = SequenceResources{};
            return;
        }
    }
    if (isAlive() && mHandles.ownsDevice) {
        // Seen with Mesa's lavapipe: destroying a command pool just after
        // its fence signalled can race with the driver's queue thread, which
        // is still letting go of the submission. An idle device has none.
        std::vector<std::unique_lock<std::mutex>> locks;
        for (auto& queue : mQueues) {
            locks.emplace_back(queue->mutex);
        }
        vkDeviceWaitIdle(device);
    }
    destroySequenceResources(device, resources);
}

void
Device::destroy()
{
    if (!mAlive.exchange(false)) {
        return;
    }
    vk::Device device = mHandles.device;
    if (device) {
        // A device someone else owns may be busy with their work, and its
        // queues are theirs to synchronise: every Kompute object on it has
        // already waited for its own submissions.
        if (mHandles.ownsDevice) {
            std::vector<std::unique_lock<std::mutex>> locks;
            for (auto& queue : mQueues) {
                locks.emplace_back(queue->mutex);
            }
            VkResult result = vkDeviceWaitIdle(device);
            if (result != VK_SUCCESS) {
                KP_LOG_ERROR("Waiting for the device before destroying it failed: {}",
                             vk::to_string(static_cast<vk::Result>(result)));
            }
        }
        for (auto& resources : mSequenceCache) {
            destroySequenceResources(device, resources);
        }
        mSequenceCache.clear();
        mEntryBarriers.destroy(device);
        for (vk::Fence& fence : mOneTimeFences) {
            if (fence) {
                device.destroyFence(fence);
                fence = vk::Fence();
            }
        }
        if (mOneTimePool) {
            device.destroyCommandPool(mOneTimePool);
        }
        {
            std::lock_guard<std::mutex> lock(mShaderCopyMutex);
            if (mShaderCopyPipeline) {
                mShaderCopyPipeline->destroy(device);
                mShaderCopyPipeline.reset();
            }
        }
        mAllocator->releaseAll();
        mDescriptorPools->releaseAll();
        if (mPipelineCache) {
            device.destroyPipelineCache(mPipelineCache);
            mPipelineCache = vk::PipelineCache();
        }
    }
    if (mHandles.ownsDevice && device) {
        device.destroy();
    }
    mHandles = Handles{};
    mQueues.clear();
}

vk::PipelineCache
Device::pipelineCache()
{
    std::lock_guard<std::mutex> lock(mPipelineCacheMutex);
    if (!mPipelineCache) {
        vk::PipelineCacheCreateInfo info;
        check(mHandles.device.createPipelineCache(&info, nullptr, &mPipelineCache),
              "Creating the pipeline cache");
    }
    return mPipelineCache;
}

bool
Device::loadPipelineCache(const std::string& path)
{
    checkAlive("Loading a pipeline cache");
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        KP_LOG_WARN("Pipeline cache file '{}' cannot be read; starting with an empty cache", path);
        return false;
    }
    std::vector<char> data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    // The header (VkPipelineCacheHeaderVersionOne) says which device made it;
    // a cache from another device or driver version is ignored.
    struct Header
    {
        uint32_t length;
        uint32_t version;
        uint32_t vendorID;
        uint32_t deviceID;
        uint8_t uuid[VK_UUID_SIZE];
    } header{};
    if (data.size() < sizeof(header)) {
        KP_LOG_WARN("Pipeline cache file '{}' is too short to be a pipeline cache", path);
        return false;
    }
    std::memcpy(&header, data.data(), sizeof(header));
    if (header.version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
        header.vendorID != mProperties.vendorID || header.deviceID != mProperties.deviceID ||
        std::memcmp(header.uuid, mProperties.pipelineCacheUUID.data(), VK_UUID_SIZE) != 0) {
        KP_LOG_WARN("Pipeline cache file '{}' was made by another device or driver; ignoring it",
                    path);
        return false;
    }
    vk::PipelineCacheCreateInfo info({}, data.size(), data.data());
    vk::PipelineCache loaded;
    check(mHandles.device.createPipelineCache(&info, nullptr, &loaded),
          "Creating a pipeline cache from '" + path + "'");
    vk::PipelineCache target = pipelineCache();
    VkPipelineCache source = loaded;
    VkResult merged = vkMergePipelineCaches(mHandles.device, target, 1, &source);
    mHandles.device.destroyPipelineCache(loaded);
    check(merged, "Merging the pipeline cache from '" + path + "'");
    return true;
}

void
Device::savePipelineCache(const std::string& path)
{
    checkAlive("Saving the pipeline cache");
    vk::PipelineCache cache = pipelineCache();
    size_t size = 0;
    check(vkGetPipelineCacheData(mHandles.device, cache, &size, nullptr),
          "Reading the pipeline cache size");
    std::vector<char> data(size);
    check(vkGetPipelineCacheData(mHandles.device, cache, &size, data.data()),
          "Reading the pipeline cache");
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(data.data(), static_cast<std::streamsize>(size));
    if (!file) {
        throw Error("Writing the pipeline cache to '" + path + "' failed");
    }
}

void
Device::adoptQueue(vk::Queue handle, uint32_t familyIndex)
{
    auto familyProperties = mHandles.physicalDevice.getQueueFamilyProperties();
    if (familyIndex >= familyProperties.size()) {
        throw Error(logger::format("Queue family {} does not exist: the device has {} families",
                                   familyIndex,
                                   familyProperties.size()));
    }
    auto queue = std::make_unique<Queue>();
    queue->handle = handle;
    queue->familyIndex = familyIndex;
    queue->flags = familyProperties[familyIndex].queueFlags;
    queue->timestampValidBits = familyProperties[familyIndex].timestampValidBits;
    mQueues.push_back(std::move(queue));
    if (std::find(mQueueFamilies.begin(), mQueueFamilies.end(), familyIndex) == mQueueFamilies.end()) {
        mQueueFamilies.push_back(familyIndex);
    }
}

namespace {
std::mutex gManagerDevicesMutex;
std::vector<std::weak_ptr<Device>> gManagerDevices;
}

void
registerManagerDevice(const std::shared_ptr<Device>& device)
{
    std::lock_guard<std::mutex> lock(gManagerDevicesMutex);
    gManagerDevices.erase(std::remove_if(gManagerDevices.begin(),
                                         gManagerDevices.end(),
                                         [](const auto& weak) { return weak.expired(); }),
                          gManagerDevices.end());
    gManagerDevices.push_back(device);
}

std::shared_ptr<Device>
managerDevice(vk::Device device)
{
    std::lock_guard<std::mutex> lock(gManagerDevicesMutex);
    for (const auto& weak : gManagerDevices) {
        auto context = weak.lock();
        if (context && context->isAlive() && context->device() == device) {
            return context;
        }
    }
    return nullptr;
}

std::shared_ptr<Device>
standaloneDevice(const std::shared_ptr<vk::PhysicalDevice>& physicalDevice,
                 const std::shared_ptr<vk::Device>& device)
{
    if (!physicalDevice || !*physicalDevice || !device || !*device) {
        throw Error("A null physical device or device was given; create objects through a "
                    "kp::Manager or pass valid Vulkan handles");
    }
    // Objects built by hand on a Manager's device belong to that Manager:
    // they share its allocator and are destroyed with it.
    if (auto context = managerDevice(*device)) {
        return context;
    }
    Device::Handles handles;
    handles.physicalDevice = *physicalDevice;
    handles.device = *device;
    return std::make_shared<Device>(handles, std::vector<uint32_t>{}, DeviceFeatures{}, true);
}

} // namespace internal
} // namespace kp
