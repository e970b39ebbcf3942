// SPDX-License-Identifier: Apache-2.0
// The device context shared by a Manager and every object it creates.
//
// Objects keep a shared_ptr to it, so it outlives the Manager object. It owns
// the retire list: Vulkan objects that users dropped while the GPU may still
// use them wait there until the submissions that might use them have
// completed, so destroying one object never waits for the device.
//
// Manager::destroy() calls destroy(): the context is then "dead" and every
// object refuses to work with kp::DestroyedError instead of touching freed
// handles. The Vulkan device (when the Manager created it) goes at once,
// unless host views handed to bindings still map memory of it (see
// Memory::keepHostViewUntilDeleted): then it goes with the last of those.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kompute/Vulkan.hpp"

#include "internal/Allocator.hpp"
#include "internal/BarrierTracker.hpp"
#include "internal/Batches.hpp"
#include "internal/Capabilities.hpp"
#include "internal/DescriptorPools.hpp"
#include "internal/Owners.hpp"
#include "internal/Pipelines.hpp"
#include "internal/Registry.hpp"
#include "internal/ShaderCopy.hpp"
#include "internal/Wait.hpp"

namespace kp {
namespace internal {

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

    /** Counts the unobserved submission `value` of a sequence destroyed
     * before it awaited it, until `track` reports it complete. Locks. */
    void orphanUnobserved(std::shared_ptr<SubmissionTrack> track, uint64_t value)
    {
        std::lock_guard<std::mutex> lock(mutex);
        orphans.emplace_back(std::move(track), value);
    }
    /** Stops counting the orphans that have completed. Call with `mutex`
     * held. */
    void forgetCompletedOrphans()
    {
        for (size_t i = orphans.size(); i-- > 0;) {
            if (orphans[i].first->completed.load(std::memory_order_acquire) >= orphans[i].second) {
                orphans.erase(orphans.begin() + static_cast<std::ptrdiff_t>(i));
                unobservedSubmissions.fetch_sub(1);
            }
        }
    }

  private:
    std::vector<BatchStamp> orphans; // (track, submission value)
};

/** The Vulkan objects a Sequence runs with, recycled between sequences. */
struct SequenceResources
{
    uint32_t family = 0;
    CommandPoolOwner commandPool;
    FenceOwner fence;
    SemaphoreOwner timeline; // empty without timeline semaphores
    std::shared_ptr<SubmissionTrack> track;
    /** The fence was submitted and not yet seen signalled. */
    bool fencePending = false;
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
           Capabilities capabilities,
           bool dedicatedAllocationsOnly);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    vk::Instance instance() const { return mHandles.instance; }
    vk::PhysicalDevice physicalDevice() const { return mHandles.physicalDevice; }
    vk::Device device() const { return mHandles.device; }
    const vk::PhysicalDeviceProperties& properties() const { return mProperties; }
    /** What the device supports and what is enabled on it: the capability
     * table (internal/Capabilities.hpp). Kernels choose their paths from
     * capabilities().view(). */
    const Capabilities& capabilities() const { return mCapabilities; }
    Allocator& allocator() { return *mAllocator; }
    DescriptorPools& descriptorPools() { return *mDescriptorPools; }
    /** Shader modules, layouts and pipelines shared between algorithms. */
    SharedPipelines& pipelines() { return *mPipelines; }
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
    /** Checks that the device is alive and keeps destroy() from starting
     * until the returned lock is released: objects hold it while they
     * create their Vulkan objects and join the registry, so that destroy()
     * finds every object that was made. */
    std::shared_lock<std::shared_mutex> lockAlive(const char* what);

    // --- The retire list --------------------------------------------------

    /**
     * Destroys `owners` (owner types of internal/Owners.hpp, or shared_ptrs
     * to them) once every submission of this device that was in flight
     * when retire() was called has completed: at once when none is.
     *
     * The stamp is the latest submitted value of each sequence with work
     * in flight, taken now (an upper bound of what may use the objects:
     * tracking each object's last use would cost on every evaluation).
     * Completion is read from each sequence's timeline semaphore, or its
     * fence where there are none. Never blocks; safe from any thread.
     */
    template<typename... Owners>
    void retire(Owners&&... owners)
    {
        auto entry = std::make_unique<RetiredOwners<std::decay_t<Owners>...>>(
          std::forward<Owners>(owners)...);
        retireEntry(std::move(entry), {});
    }

    /** retire() for the objects of a tensor, image or algorithm: they also
     * wait for the batches that recorded them to be gone (see
     * internal/Batches.hpp). */
    template<typename... Owners>
    void retireRecorded(const BatchReferences& references, Owners&&... owners)
    {
        auto entry = std::make_unique<RetiredOwners<std::decay_t<Owners>...>>(
          std::forward<Owners>(owners)...);
        retireEntry(std::move(entry), references.current());
    }

    /** Frees what the GPU has finished with. Cheap when the list is empty:
     * called on submit, await, create and destroy. */
    void collectRetired()
    {
        if (mRetiredCount.load(std::memory_order_relaxed) != 0) {
            collectRetiredNow();
        }
    }

    /** Entries waiting in the retire list (for tests). */
    size_t retiredCount() const { return mRetiredCount.load(std::memory_order_relaxed); }

    // --- One-time submissions ---------------------------------------------

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

    // --- Sequences ------------------------------------------------------

    /** The resources of a sequence on a queue of `family`: recycled from a
     * destroyed sequence when possible (creating a command pool, a fence
     * and a semaphore costs kernel calls, over a millisecond on some
     * drivers), created otherwise. */
    SequenceResources acquireSequenceResources(uint32_t family);
    /** Takes back the resources of a destroyed sequence, work in flight or
     * not: they are reused or destroyed once that work has completed. */
    void releaseSequenceResources(SequenceResources&& resources);

    /**
     * Destroys every object still registered (they stay inert), then the
     * context's own Vulkan objects, and the device if the context owns it.
     * Waits for the device once, first. Idempotent. (The instance is never
     * the context's: see the instance cache in Manager.cpp.)
     */
    void destroy();

  private:
    friend vk::Device liveDevice(const Device* context) noexcept;

    class Retired
    {
      public:
        virtual ~Retired() = default;
        /** Whether the objects may go now, apart from the stamp; may block
         * up to `timeoutNs` to find out. */
        virtual bool ready(Device&, uint64_t /*timeoutNs*/) { return true; }
        /** Fences and semaphores go only once seen signalled themselves;
         * other objects once the commands that used them have run. */
        virtual bool holdsSyncObjects() const { return false; }
    };

    template<typename... Owners>
    class RetiredOwners : public Retired
    {
      public:
        template<typename... Args>
        explicit RetiredOwners(Args&&... args)
          : mOwners(std::forward<Args>(args)...)
        {
        }

      private:
        std::tuple<Owners...> mOwners;
    };

    class RetiredSequence;

    struct RetireEntry
    {
        /** Submissions that must complete first: (track, value) pairs. */
        std::vector<std::pair<std::shared_ptr<SubmissionTrack>, uint64_t>> stamp;
        /** Batches that must be gone first (and their sequences idle). */
        std::vector<BatchStamp> batches;
        std::unique_ptr<Retired> object;
    };

    void retireEntry(std::unique_ptr<Retired> object, std::vector<BatchStamp> batches);
    void collectRetiredNow();
    /** Reads the timeline semaphores of tracks with work in flight. Needs
     * mRetireMutex. */
    void pollTracks();
    bool stampComplete(const RetireEntry& entry) const;
    /** Waits (bounded) until every entry can go, and frees them all. */
    void drainRetired();
    /** Into the cache, or destroyed when the cache is full. */
    void recycleSequenceResources(SequenceResources&& resources);
    void waitIdle();
    void releaseDeviceObjects();

    Handles mHandles;
    vk::PhysicalDeviceProperties mProperties;
    Capabilities mCapabilities;
    WaitSettings mWaitSettings;
    EntryBarriers mEntryBarriers;
    std::vector<std::unique_ptr<Queue>> mQueues;
    std::vector<uint32_t> mQueueFamilies;
    std::unique_ptr<Allocator> mAllocator;
    std::unique_ptr<DescriptorPools> mDescriptorPools;
    std::unique_ptr<SharedPipelines> mPipelines;
    std::mutex mPipelineCacheMutex;
    PipelineCacheOwner mPipelineCache;
    Registry mRegistry;
    bool mShaderCopies = false;
    std::mutex mShaderCopyMutex;
    std::unique_ptr<ShaderCopyPipeline> mShaderCopyPipeline;
    std::atomic<bool> mAlive{ true };
    std::shared_mutex mLifeMutex;
    /** The Vulkan device was destroyed (or let go, if not ours). */
    std::atomic<bool> mDeviceGone{ false };

    std::mutex mRetireMutex;
    std::vector<RetireEntry> mRetired;
    std::atomic<size_t> mRetiredCount{ 0 };
    /** The tracks of every sequence's resources, live or cached. */
    std::vector<std::shared_ptr<SubmissionTrack>> mTracks;

    std::mutex mSequenceCacheMutex;
    std::vector<SequenceResources> mSequenceCache;

    static constexpr size_t kOneTimeSlots = 2;
    std::mutex mOneTimeMutex;
    Owned<vk::CommandPool> mOneTimePool;
    std::array<FenceOwner, kOneTimeSlots> mOneTimeFences;
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
