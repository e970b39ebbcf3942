// SPDX-License-Identifier: Apache-2.0
// The device context shared by a Manager and every object it creates.
//
// Objects keep a shared_ptr to it, so it outlives the Manager object; the
// Vulkan device inside is destroyed by Manager::destroy() (when the Manager
// created it), after which the context is "dead" and every object refuses to
// work with kp::DestroyedError instead of touching freed handles.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <vulkan/vulkan.hpp>

#include "internal/Allocator.hpp"
#include "internal/BarrierTracker.hpp"
#include "internal/DescriptorPools.hpp"
#include "internal/Registry.hpp"
#include "internal/ShaderCopy.hpp"
#include "internal/Wait.hpp"

namespace kp {
namespace internal {

/** Optional device features, enabled at device creation when supported. */
struct DeviceFeatures
{
    bool shaderFloat64 = false;
    bool shaderInt64 = false;
    bool shaderInt16 = false;
    bool shaderFloat16 = false;
    bool shaderInt8 = false;
    bool storageBuffer16BitAccess = false;
    bool uniformAndStorageBuffer16BitAccess = false;
    bool storagePushConstant16 = false;
    bool storageBuffer8BitAccess = false;
    bool uniformAndStorageBuffer8BitAccess = false;
    bool storagePushConstant8 = false;
    bool timelineSemaphore = false;
    bool vulkanMemoryModel = false;
    bool vulkanMemoryModelDeviceScope = false;
    bool variablePointers = false;
    bool variablePointersStorageBuffer = false;
};

/** A queue the context submits to. Submissions lock its mutex, since
 * Vulkan requires queue access to be externally synchronised. */
struct Queue
{
    vk::Queue handle;
    uint32_t familyIndex = 0;
    vk::QueueFlags flags;
    uint32_t timestampValidBits = 0;
    std::mutex mutex;
    /** Submissions on this queue (sequences' and one-time ones) whose
     * completion no host wait has observed yet: a sequence submitted
     * meanwhile is put behind them (see EntryBarriers). */
    std::atomic<int64_t> unobservedSubmissions{ 0 };
};

/** The Vulkan objects a Sequence runs with. */
struct SequenceResources
{
    uint32_t family = 0;
    vk::CommandPool commandPool;
    vk::CommandBuffer commandBuffer;
    vk::Fence fence;
    vk::Semaphore timeline;    // null without timeline semaphores
    uint64_t timelineValue = 0; // the value the semaphore has reached
};

class Device
{
  public:
    struct Handles
    {
        vk::Instance instance;
        vk::PhysicalDevice physicalDevice;
        vk::Device device;
        bool ownsDevice = false;
    };

    /** `queueFamilies` has one entry per queue to use (repeats allowed).
     * The handles must stay valid until destroy(). */
    Device(const Handles& handles,
           const std::vector<uint32_t>& queueFamilies,
           const DeviceFeatures& enabledFeatures,
           bool dedicatedAllocationsOnly);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    vk::Instance instance() const { return mHandles.instance; }
    vk::PhysicalDevice physicalDevice() const { return mHandles.physicalDevice; }
    vk::Device device() const { return mHandles.device; }
    const vk::PhysicalDeviceProperties& properties() const { return mProperties; }
    const DeviceFeatures& features() const { return mFeatures; }
    Allocator& allocator() { return *mAllocator; }
    DescriptorPools& descriptorPools() { return *mDescriptorPools; }
    /** The pipeline cache every algorithm of this device shares. */
    vk::PipelineCache pipelineCache();
    /** Merges a cache file written by savePipelineCache into the cache.
     * Returns false (with a warning) when the file is missing or was made
     * by another device or driver. */
    bool loadPipelineCache(const std::string& path);
    void savePipelineCache(const std::string& path);
    Registry& registry() { return mRegistry; }
    bool ownsDevice() const { return mHandles.ownsDevice; }

    uint32_t queueCount() const { return static_cast<uint32_t>(mQueues.size()); }
    /** The distinct families of the queues. Resources are shared
     * concurrently between them when there are several, so that sequences
     * on different families can use them without ownership transfers. */
    const std::vector<uint32_t>& queueFamilies() const { return mQueueFamilies; }
    /** Throws kp::Error naming the valid range when out of range. */
    Queue& queue(uint32_t index);
    /** Adds a queue handle obtained by the caller (standalone contexts). */
    void adoptQueue(vk::Queue handle, uint32_t familyIndex);

    /** Whether eDevice memory gets a separate staging buffer. False on
     * unified-memory devices, where device-local memory is host-visible. */
    bool stagingForDeviceMemory() const { return mStagingForDeviceMemory; }

    /** Whether OpCopy copies large device-local tensors by shader (see
     * internal/ShaderCopy.hpp). */
    bool shaderCopies() const { return mShaderCopies; }
    /** The copy shader's pipeline, created on first use. */
    const ShaderCopyPipeline& shaderCopyPipeline();

    /** The barriers that order a sequence's submission after earlier
     * ones on its queue. */
    EntryBarriers& entryBarriers() { return mEntryBarriers; }
    /** How sequences wait for their submissions (Manager::setWaitStrategy). */
    WaitSettings& waitSettings() { return mWaitSettings; }

    bool isAlive() const { return mAlive.load(std::memory_order_acquire); }
    /** Throws kp::DestroyedError saying `what` needs a live device. */
    void checkAlive(const char* what) const;

    /** Submissions in flight (counted so that destroying memory can wait
     * for the GPU only when something may still be using it). */
    void noteSubmitted() { mPendingSubmissions.fetch_add(1); }
    void noteCompleted() { mPendingSubmissions.fetch_sub(1); }
    /** Waits until the device is idle if any submission may be in flight. */
    void waitForPendingWork();

    /** Records with `record` into a one-time command buffer, submits it on
     * queue 0 and waits. For rare work such as initial uploads. */
    void submitAndWait(const std::function<void(vk::CommandBuffer)>& record);
    /** Work in `steps` submissions on queue 0, host and device overlapped:
     * for each step, `before(step)` runs on the host, then the commands
     * `record` records are submitted; `after(step)` runs on the host once
     * that submission has completed. Two steps are on the device at most,
     * so the host works on one step while the device runs the previous.
     * Returns when every step has completed. */
    void submitInSteps(uint32_t steps,
                       const std::function<void(uint32_t)>& before,
                       const std::function<void(uint32_t, vk::CommandBuffer)>& record,
                       const std::function<void(uint32_t)>& after);

    /** The resources of a sequence on a queue of `family`: recycled from a
     * destroyed sequence when possible (creating a command pool, a fence
     * and a semaphore costs kernel calls, over a millisecond on some
     * drivers), created otherwise. */
    SequenceResources acquireSequenceResources(uint32_t family);
    /** Takes back the resources of a destroyed sequence whose work has
     * completed; keeps a few for reuse and destroys the rest. */
    void releaseSequenceResources(SequenceResources& resources);

    /** Waits for the device, frees the context's own Vulkan objects and
     * destroys the device if it owns it. Idempotent. (The instance is
     * never the context's: see the instance cache in Manager.cpp.) */
    void destroy();

  private:
    Handles mHandles;
    vk::PhysicalDeviceProperties mProperties;
    DeviceFeatures mFeatures;
    WaitSettings mWaitSettings;
    EntryBarriers mEntryBarriers;
    std::vector<std::unique_ptr<Queue>> mQueues;
    std::vector<uint32_t> mQueueFamilies;
    std::unique_ptr<Allocator> mAllocator;
    std::unique_ptr<DescriptorPools> mDescriptorPools;
    std::mutex mPipelineCacheMutex;
    vk::PipelineCache mPipelineCache;
    Registry mRegistry;
    bool mStagingForDeviceMemory = true;
    bool mShaderCopies = false;
    std::mutex mShaderCopyMutex;
    std::unique_ptr<ShaderCopyPipeline> mShaderCopyPipeline;
    std::atomic<bool> mAlive{ true };
    std::atomic<int64_t> mPendingSubmissions{ 0 };

    std::mutex mSequenceCacheMutex;
    std::vector<SequenceResources> mSequenceCache;

    static constexpr size_t kOneTimeSlots = 2;
    std::mutex mOneTimeMutex;
    vk::CommandPool mOneTimePool;
    std::array<vk::Fence, kOneTimeSlots> mOneTimeFences;
};

/** Makes a Manager's context findable by its VkDevice (for objects built
 * by hand on that device). */
void
registerManagerDevice(const std::shared_ptr<Device>& device);
/** The live Manager context of `device`, or null. */
std::shared_ptr<Device>
managerDevice(vk::Device device);

/** A context for an object built by hand on a caller's device (upstream's
 * public Tensor/Sequence/Algorithm constructors). On a Manager's device it
 * is that Manager's context; otherwise a context of its own with no queues
 * and dedicated allocations, which destroys nothing it was given. */
std::shared_ptr<Device>
standaloneDevice(const std::shared_ptr<vk::PhysicalDevice>& physicalDevice,
                 const std::shared_ptr<vk::Device>& device);

} // namespace internal
} // namespace kp
