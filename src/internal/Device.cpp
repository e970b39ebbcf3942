// SPDX-License-Identifier: Apache-2.0
#include "internal/Device.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <chrono>
#include <iterator>

#include "internal/Check.hpp"
#include "internal/Environment.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

Device::Device(const Handles& handles,
               const std::vector<uint32_t>& queueFamilies,
               Capabilities capabilities,
               bool dedicatedAllocationsOnly)
  : mHandles(handles)
  , mProperties(handles.physicalDevice.getProperties())
  , mCapabilities(std::move(capabilities))
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
    mDescriptorPools = std::make_unique<DescriptorPools>(this, handles.device);
    mPipelines = std::make_unique<SharedPipelines>(*this);
    mShaderCopies = environmentFlag("KOMPUTE_ENV_SHADER_COPY", shaderCopiesByDefault(mProperties));
}

const ShaderCopyPipeline&
Device::shaderCopyPipeline()
{
    checkAlive("Creating the copy shader");
    vk::PipelineCache cache = pipelineCache();
    std::lock_guard<std::mutex> lock(mShaderCopyMutex);
    if (!mShaderCopyPipeline) {
        mShaderCopyPipeline = std::make_unique<ShaderCopyPipeline>(this, mHandles.device, cache);
    }
    return *mShaderCopyPipeline;
}

Device::~Device()
{
    destroy();
    // Deferred by destroy() while bindings' host views still mapped memory
    // of the device; every one of them has gone now.
    if (!mDeviceGone.exchange(true) && mHandles.ownsDevice && mHandles.device) {
        mAllocator->releaseAll();
        mHandles.device.destroy();
    }
}

vk::Device
liveDevice(const Device* context) noexcept
{
    if (context == nullptr || context->mDeviceGone.load(std::memory_order_acquire)) {
        return vk::Device();
    }
    return context->mHandles.device;
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

std::shared_lock<std::shared_mutex>
Device::lockAlive(const char* what)
{
    std::shared_lock<std::shared_mutex> lock(mLifeMutex);
    checkAlive(what);
    return lock;
}

void
Device::waitIdle()
{
    // vkDeviceWaitIdle needs every queue externally synchronised.
    std::vector<std::unique_lock<std::mutex>> locks;
    for (auto& queue : mQueues) {
        locks.emplace_back(queue->mutex);
    }
    VkResult result = VULKAN_HPP_DEFAULT_DISPATCHER.vkDeviceWaitIdle(mHandles.device);
    if (result != VK_SUCCESS) {
        KP_LOG_ERROR("Waiting for the device before destroying it failed: {}",
                     vk::to_string(static_cast<vk::Result>(result)));
    }
}

// --- The retire list ---------------------------------------------------------
//
// A fence or semaphore is never destroyed (or a sequence's resources
// recycled) on the word of another sync object of the same submission:
// Mesa's lavapipe 22.3 signals a submission's fence, and returns from
// vkDeviceWaitIdle, while its queue thread has yet to signal the
// submission's semaphores, so destroying a semaphore then races with the
// driver. Each sync object is seen signalled itself first (the timeline
// value polled from the semaphore, the fence's own status).

/** A destroyed sequence's resources: they go back to the cache (or are
 * destroyed) once its last submission has completed. */
class Device::RetiredSequence : public Device::Retired
{
  public:
    RetiredSequence(Device& device, SequenceResources&& resources)
      : mDevice(device)
      , mResources(std::move(resources))
    {
    }
    ~RetiredSequence() override { mDevice.recycleSequenceResources(std::move(mResources)); }

    bool ready(Device&, uint64_t timeoutNs) override
    {
        if (!mResources.fencePending) {
            return true;
        }
        vk::Device device = liveDevice(&mDevice);
        VkFence fence = mResources.fence.get();
        VkResult result = timeoutNs == 0 ? VULKAN_HPP_DEFAULT_DISPATCHER.vkGetFenceStatus(device, fence)
                                         : VULKAN_HPP_DEFAULT_DISPATCHER.vkWaitForFences(device, 1, &fence, VK_TRUE, timeoutNs);
        if (result == VK_NOT_READY || result == VK_TIMEOUT) {
            return false;
        }
        if (result != VK_SUCCESS) {
            KP_LOG_ERROR("A destroyed sequence's last submission failed: {}",
                         vk::to_string(static_cast<vk::Result>(result)));
        }
        mResources.fencePending = false;
        mResources.track->fenceSignalled(mResources.track->submitted.load(std::memory_order_acquire));
        if (!mResources.timeline) {
            // Without a semaphore the fence is the submission's only sync
            // object: it tells the track.
            auto& track = *mResources.track;
            track.completed.store(track.submitted.load(std::memory_order_acquire),
                                  std::memory_order_release);
        }
        return true;
    }

    bool holdsSyncObjects() const override { return true; }

  private:
    Device& mDevice;
    SequenceResources mResources;
};

void
Device::pollTracks()
{
    vk::Device device = liveDevice(this);
    if (!device) {
        return;
    }
    for (const auto& track : mTracks) {
        if (!track->semaphore || track->idle()) {
            continue;
        }
        uint64_t value = 0;
        if (VULKAN_HPP_DEFAULT_DISPATCHER.vkGetSemaphoreCounterValue(device, track->semaphore, &value) == VK_SUCCESS &&
            value > track->completed.load(std::memory_order_relaxed)) {
            track->completed.store(value, std::memory_order_release);
        }
    }
}

bool
Device::stampComplete(const RetireEntry& entry) const
{
    bool sync = entry.object->holdsSyncObjects();
    auto done = [sync](const SubmissionTrack& track, uint64_t value) {
        return sync ? track.completed.load(std::memory_order_acquire) >= value : track.ran(value);
    };
    for (const auto& [track, value] : entry.stamp) {
        if (!done(*track, value)) {
            return false;
        }
    }
    for (const auto& [track, batch] : entry.batches) {
        if (track->batch.load(std::memory_order_acquire) == batch ||
            !done(*track, track->submitted.load(std::memory_order_acquire))) {
            return false;
        }
    }
    return true;
}

void
Device::retireEntry(std::unique_ptr<Retired> object, std::vector<BatchStamp> batches)
{
    if (!liveDevice(this)) {
        return; // the device took the objects with it: destroy nothing
    }
    {
        std::lock_guard<std::mutex> lock(mRetireMutex);
        pollTracks();
        RetireEntry entry;
        bool sync = object->holdsSyncObjects();
        for (const auto& track : mTracks) {
            uint64_t submitted = track->submitted.load(std::memory_order_acquire);
            if (sync ? !track->idle() : !track->ran(submitted)) {
                entry.stamp.emplace_back(track, submitted);
            }
        }
        entry.batches = std::move(batches);
        if (!entry.stamp.empty() || !entry.batches.empty() || !object->ready(*this, 0)) {
            entry.object = std::move(object);
            mRetired.push_back(std::move(entry));
            mRetiredCount.store(mRetired.size(), std::memory_order_relaxed);
            return;
        }
    }
    // Nothing in flight: the objects go now, outside the lock (destroying
    // them may retire more).
    object.reset();
}

void
Device::collectRetiredNow()
{
    std::vector<std::unique_ptr<Retired>> done;
    {
        std::lock_guard<std::mutex> lock(mRetireMutex);
        pollTracks();
        auto keep = mRetired.begin();
        for (auto it = mRetired.begin(); it != mRetired.end(); ++it) {
            if (it->object->ready(*this, 0) && stampComplete(*it)) {
                done.push_back(std::move(it->object));
            } else {
                if (keep != it) {
                    *keep = std::move(*it);
                }
                ++keep;
            }
        }
        mRetired.erase(keep, mRetired.end());
        mRetiredCount.store(mRetired.size(), std::memory_order_relaxed);
    }
    done.clear();
}

void
Device::drainRetired()
{
    // Everything the device ran has finished (or the device is lost): a
    // bounded wait per sync object, in case a driver is slow to say so.
    constexpr uint64_t kStepNs = 10'000'000;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        collectRetiredNow();
        std::vector<RetireEntry> pending;
        {
            std::lock_guard<std::mutex> lock(mRetireMutex);
            pending.swap(mRetired);
            mRetiredCount.store(0, std::memory_order_relaxed);
        }
        if (pending.empty()) {
            return;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            KP_LOG_ERROR("Destroying {} group(s) of objects whose submissions did not complete "
                         "within 10 s (is the device lost?)",
                         pending.size());
            return; // `pending` goes, ready or not
        }
        vk::Device device = liveDevice(this);
        for (auto& entry : pending) {
            entry.object->ready(*this, kStepNs);
            for (const auto& [track, value] : entry.stamp) {
                if (!track->semaphore || track->completed.load() >= value) {
                    continue; // fence-only tracks are told by their RetiredSequence
                }
                vk::Semaphore semaphore = track->semaphore;
                vk::SemaphoreWaitInfo info({}, 1, &semaphore, &value);
                if (device.waitSemaphores(&info, kStepNs) == vk::Result::eSuccess &&
                    track->completed.load() < value) {
                    track->completed.store(value);
                }
            }
        }
        std::lock_guard<std::mutex> lock(mRetireMutex);
        for (auto& entry : pending) {
            mRetired.push_back(std::move(entry));
        }
        mRetiredCount.store(mRetired.size(), std::memory_order_relaxed);
    }
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
        vk::CommandPool pool;
        check(device.createCommandPool(&poolInfo, nullptr, &pool),
              "Creating the command pool for one-time uploads");
        mOneTimePool = Owned<vk::CommandPool>(this, pool);
    }
    for (FenceOwner& owner : mOneTimeFences) {
        if (!owner) {
            vk::FenceCreateInfo fenceInfo;
            vk::Fence fence;
            check(device.createFence(&fenceInfo, nullptr, &fence),
                  "Creating a fence for one-time uploads");
            owner = FenceOwner(this, fence);
        }
    }
    std::vector<vk::CommandBuffer> buffers(steps);
    vk::CommandBufferAllocateInfo allocateInfo(
      mOneTimePool.get(), vk::CommandBufferLevel::ePrimary, steps);
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
                VULKAN_HPP_DEFAULT_DISPATCHER.vkQueueWaitIdle(queue.handle);
                for (int64_t step : inFlight) {
                    if (step >= 0) {
                        queue.unobservedSubmissions.fetch_sub(1);
                    }
                }
            }
            device.freeCommandBuffers(pool, static_cast<uint32_t>(buffers.size()), buffers.data());
        }
    } cleanup{ device, mOneTimePool.get(), buffers, target, inFlight };

    // Waits for the step in `slot`, if any, and runs its host work.
    auto complete = [&](size_t slot) {
        if (inFlight[slot] < 0) {
            return;
        }
        check(device.waitForFences(1, mOneTimeFences[slot].address(), VK_TRUE, UINT64_MAX),
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
        check(VULKAN_HPP_DEFAULT_DISPATCHER.vkEndCommandBuffer(cmd), "Ending a one-time command buffer");
        check(device.resetFences(1, mOneTimeFences[slot].address()), "Resetting a one-time fence");
        vk::SubmitInfo submitInfo(0, nullptr, nullptr, 1, &cmd);
        {
            std::lock_guard<std::mutex> queueLock(target.mutex);
            check(target.handle.submit(1, &submitInfo, mOneTimeFences[slot].get()),
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

// --- Sequences ---------------------------------------------------------------

namespace {
// Enough for the short-lived sequences of a few threads.
constexpr size_t kSequenceCacheSize = 16;
} // namespace

SequenceResources
Device::acquireSequenceResources(uint32_t family)
{
    collectRetired();
    {
        std::lock_guard<std::mutex> lock(mSequenceCacheMutex);
        for (auto it = mSequenceCache.rbegin(); it != mSequenceCache.rend(); ++it) {
            if (it->family == family) {
                SequenceResources resources = std::move(*it);
                mSequenceCache.erase(std::next(it).base());
                return resources;
            }
        }
    }
    vk::Device device = mHandles.device;
    SequenceResources resources;
    resources.family = family;
    vk::CommandPoolCreateInfo poolInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, family);
    vk::CommandPool pool;
    check(device.createCommandPool(&poolInfo, nullptr, &pool),
          "Creating a sequence's command pool");
    resources.commandPool.pool = Owned<vk::CommandPool>(this, pool);
    vk::CommandBufferAllocateInfo allocateInfo(pool, vk::CommandBufferLevel::ePrimary, 1);
    check(device.allocateCommandBuffers(&allocateInfo, &resources.commandPool.commandBuffer),
          "Allocating a sequence's command buffer");
    vk::FenceCreateInfo fenceInfo;
    vk::Fence fence;
    check(device.createFence(&fenceInfo, nullptr, &fence), "Creating a sequence's fence");
    resources.fence = FenceOwner(this, fence);
    resources.track = std::make_shared<SubmissionTrack>();
    if (mCapabilities.view().timelineSemaphore) {
        vk::SemaphoreTypeCreateInfo typeInfo(vk::SemaphoreType::eTimeline, 0);
        vk::SemaphoreCreateInfo semaphoreInfo;
        semaphoreInfo.pNext = &typeInfo;
        vk::Semaphore semaphore;
        check(device.createSemaphore(&semaphoreInfo, nullptr, &semaphore),
              "Creating a sequence's timeline semaphore");
        resources.timeline = SemaphoreOwner(this, semaphore);
        resources.track->semaphore = semaphore;
    }
    std::lock_guard<std::mutex> lock(mRetireMutex);
    mTracks.push_back(resources.track);
    return resources;
}

void
Device::releaseSequenceResources(SequenceResources&& resources)
{
    if (!resources.commandPool.pool) {
        return;
    }
    retireEntry(std::make_unique<RetiredSequence>(*this, std::move(resources)), {});
}

void
Device::recycleSequenceResources(SequenceResources&& resources)
{
    if (isAlive() && liveDevice(this)) {
        // The work is complete, so the pool can be reset for the next user.
        VkResult reset = VULKAN_HPP_DEFAULT_DISPATCHER.vkResetCommandPool(mHandles.device, resources.commandPool.pool.get(), 0);
        std::lock_guard<std::mutex> lock(mSequenceCacheMutex);
        if (reset == VK_SUCCESS && mSequenceCache.size() < kSequenceCacheSize) {
            mSequenceCache.push_back(std::move(resources));
            return;
        }
    }
    {
        std::lock_guard<std::mutex> lock(mRetireMutex);
        mTracks.erase(std::remove(mTracks.begin(), mTracks.end(), resources.track), mTracks.end());
    }
    // The owners destroy the pool (and its command buffer), the fence and
    // the semaphore, all seen signalled.
}

// --- Destruction ---------------------------------------------------------------

void
Device::destroy()
{
    {
        std::unique_lock<std::shared_mutex> life(mLifeMutex);
        if (!mAlive.exchange(false)) {
            return;
        }
    }
    // A device someone else owns may be busy with their work, and its
    // queues are theirs to synchronise: the retire list waits for our own
    // submissions, one by one.
    if (mHandles.ownsDevice && mHandles.device) {
        waitIdle();
    }
    // No lock is held here: destroying objects re-enters the registry (a
    // sequence's operations may hold the last reference of a tensor).
    mRegistry.destroyAll();
    drainRetired();
    releaseDeviceObjects();
}

void
Device::releaseDeviceObjects()
{
    if (!liveDevice(this)) {
        return;
    }
    {
        std::vector<SequenceResources> cached;
        {
            std::lock_guard<std::mutex> lock(mSequenceCacheMutex);
            cached.swap(mSequenceCache);
        }
        std::lock_guard<std::mutex> lock(mRetireMutex);
        mTracks.clear();
    }
    mEntryBarriers.clear();
    for (FenceOwner& fence : mOneTimeFences) {
        fence.reset();
    }
    mOneTimePool.reset();
    {
        std::lock_guard<std::mutex> lock(mShaderCopyMutex);
        mShaderCopyPipeline.reset();
    }
    mPipelines->clear();
    mDescriptorPools->releaseAll();
    {
        std::lock_guard<std::mutex> lock(mPipelineCacheMutex);
        mPipelineCache.reset();
    }
    mAllocator->releaseAll();
    if (!mHandles.ownsDevice) {
        mDeviceGone.store(true, std::memory_order_release);
    } else if (!mAllocator->hasLiveAllocations()) {
        mDeviceGone.store(true, std::memory_order_release);
        mHandles.device.destroy();
    }
    // Otherwise host views that bindings keep (Memory::keepHostViewUntilDeleted)
    // still map memory of the device: it goes in ~Device, after them.
}

vk::PipelineCache
Device::pipelineCache()
{
    std::lock_guard<std::mutex> lock(mPipelineCacheMutex);
    if (!mPipelineCache) {
        vk::PipelineCacheCreateInfo info;
        vk::PipelineCache cache;
        check(mHandles.device.createPipelineCache(&info, nullptr, &cache),
              "Creating the pipeline cache");
        mPipelineCache = PipelineCacheOwner(this, cache);
    }
    return mPipelineCache.get();
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
    vk::PipelineCache created;
    check(mHandles.device.createPipelineCache(&info, nullptr, &created),
          "Creating a pipeline cache from '" + path + "'");
    PipelineCacheOwner loaded(this, created);
    vk::PipelineCache target = pipelineCache();
    VkPipelineCache source = loaded.get();
    check(VULKAN_HPP_DEFAULT_DISPATCHER.vkMergePipelineCaches(mHandles.device, target, 1, &source),
          "Merging the pipeline cache from '" + path + "'");
    return true;
}

void
Device::savePipelineCache(const std::string& path)
{
    checkAlive("Saving the pipeline cache");
    vk::PipelineCache cache = pipelineCache();
    size_t size = 0;
    check(VULKAN_HPP_DEFAULT_DISPATCHER.vkGetPipelineCacheData(mHandles.device, cache, &size, nullptr),
          "Reading the pipeline cache size");
    std::vector<char> data(size);
    check(VULKAN_HPP_DEFAULT_DISPATCHER.vkGetPipelineCacheData(mHandles.device, cache, &size, data.data()),
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
    // What the device's creator enabled is unknown: only what every device
    // has (the capability table's core), and KOMPUTE_ENV_DISABLE applies.
    uint32_t apiVersion = std::min<uint32_t>(physicalDevice->getProperties().apiVersion,
                                             VK_API_VERSION_1_3);
    Capabilities capabilities(vk::Instance(), *physicalDevice, apiVersion);
    capabilities.adopt({}, nullptr);
    capabilities.applyDisableList(std::getenv("KOMPUTE_ENV_DISABLE"));
    return std::make_shared<Device>(
      handles, std::vector<uint32_t>{}, std::move(capabilities), true);
}

} // namespace internal
} // namespace kp
