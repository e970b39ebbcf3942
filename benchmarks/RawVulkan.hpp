// SPDX-License-Identifier: Apache-2.0
// The raw-Vulkan baseline: the same work written directly against the C
// API, on the Manager's own device and queue, the way a careful hand-written
// program does it (dedicated allocations made once, persistent mapping,
// pre-recorded command buffers, one reused fence, one submit).
#pragma once

#include <cstdint>
#include <vector>

#include <vulkan/vulkan.h>

#include <kompute/Kompute.hpp>

namespace bench {

class RawVulkan
{
  public:
    struct Buffer
    {
        VkBuffer buffer = VK_NULL_HANDLE;
        VkDeviceMemory memory = VK_NULL_HANDLE;
        VkDeviceSize size = 0;
        void* mapped = nullptr;
    };

    struct Pipeline
    {
        VkShaderModule module = VK_NULL_HANDLE;
        VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
        VkPipelineLayout layout = VK_NULL_HANDLE;
        VkPipeline pipeline = VK_NULL_HANDLE;
        VkDescriptorPool pool = VK_NULL_HANDLE;
        VkDescriptorSet set = VK_NULL_HANDLE;
        VkDescriptorPool extraPool = VK_NULL_HANDLE; // createSets()
        uint32_t pushBytes = 0;
    };

    /** Objects made here are destroyed by destroy(), or at the latest by the
     * destructor (so a case that throws leaves nothing on the device).
     * Works on queue `queueIndex` of the manager (its first queue in a
     * family is index 0 of that family). */
    RawVulkan(kp::Manager& manager, uint32_t queueIndex = 0, uint32_t indexInFamily = 0);
    ~RawVulkan();
    RawVulkan(const RawVulkan&) = delete;
    RawVulkan& operator=(const RawVulkan&) = delete;

    VkDevice device() const { return mDevice; }
    VkQueue queue() const { return mQueue; }
    uint32_t family() const { return mFamily; }

    /** A buffer with its own VkDeviceMemory, mapped if host-visible. */
    Buffer createBuffer(VkDeviceSize size,
                        VkBufferUsageFlags usage,
                        VkMemoryPropertyFlags required,
                        VkMemoryPropertyFlags preferred = 0);
    void destroy(Buffer& buffer);

    Pipeline createPipeline(const std::vector<uint32_t>& spirv,
                            const std::vector<Buffer*>& buffers,
                            uint32_t pushBytes = 0);
    void destroy(Pipeline& pipeline);

    VkCommandBuffer allocateCommandBuffer();
    void begin(VkCommandBuffer cmd);
    void end(VkCommandBuffer cmd);
    /** Global barrier: compute/transfer writes before compute/transfer
     * reads and writes. */
    void barrier(VkCommandBuffer cmd);
    /** Global barrier making device writes visible to host reads. */
    void hostBarrier(VkCommandBuffer cmd);
    /** One global memory barrier. */
    void memoryBarrier(VkCommandBuffer cmd,
                       VkPipelineStageFlags srcStages,
                       VkAccessFlags srcAccess,
                       VkPipelineStageFlags dstStages,
                       VkAccessFlags dstAccess);
    void bindAndDispatch(VkCommandBuffer cmd,
                         const Pipeline& pipeline,
                         uint32_t x,
                         uint32_t y = 1,
                         uint32_t z = 1,
                         const void* push = nullptr);

    /** `count` descriptor sets for `pipeline`'s layout (one storage
     * buffer), set i on bytes [i * stride, i * stride + stride) of `buffer`.
     * They live until destroy(pipeline). */
    std::vector<VkDescriptorSet> createSets(Pipeline& pipeline,
                                            const Buffer& buffer,
                                            uint32_t count,
                                            VkDeviceSize stride);
    /** Binds `pipeline` and `set` and dispatches one workgroup. */
    void bindAndDispatch(VkCommandBuffer cmd, const Pipeline& pipeline, VkDescriptorSet set);
    /** The smallest offset alignment of storage-buffer descriptors. */
    VkDeviceSize storageOffsetAlignment() const;
    /** Compute-to-compute barrier: a global memory barrier, or (with
     * `buffer`) a buffer memory barrier on its whole range. */
    void computeBarrier(VkCommandBuffer cmd, const Buffer* buffer = nullptr);

    /** One submit and one wait on the reused fence. */
    void submitAndWait(VkCommandBuffer cmd);

    // --- The pieces of a round trip, for case (a)'s variants -------------

    /** Submits `cmd`, signalling the reused fence, or (with `timeline`)
     * only the timeline semaphore at `value`. Returns the seconds spent in
     * vkQueueSubmit itself. */
    double submit(VkCommandBuffer cmd, VkSemaphore timeline = VK_NULL_HANDLE, uint64_t value = 0);
    /** Blocks in vkWaitForFences on the reused fence. */
    void waitFence();
    /** Polls vkGetFenceStatus on the reused fence until it signals. */
    void spinFence();
    /** A timeline semaphore at 0 (destroy it with destroy()). */
    VkSemaphore createTimeline();
    void destroy(VkSemaphore semaphore);
    /** Polls vkGetSemaphoreCounterValue until `value`. */
    void spinTimeline(VkSemaphore timeline, uint64_t value);
    /** Records an execution and memory dependency from compute and
     * transfer writes to the transfer stage (before a fill). */
    void barrierToTransfer(VkCommandBuffer cmd);

  private:
    /** Removes the first element of `list` that `is` matches. */
    template<typename T, typename Match>
    static void forget(std::vector<T>& list, Match is)
    {
        for (auto it = list.begin(); it != list.end(); ++it) {
            if (is(*it)) {
                list.erase(it);
                return;
            }
        }
    }

    uint32_t memoryType(uint32_t allowed, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;

    VkDevice mDevice = VK_NULL_HANDLE;
    VkPhysicalDevice mPhysicalDevice = VK_NULL_HANDLE;
    VkQueue mQueue = VK_NULL_HANDLE;
    uint32_t mFamily = 0;
    VkCommandPool mPool = VK_NULL_HANDLE;
    VkFence mFence = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties mMemory{};
    // What was created and not yet destroyed: the destructor destroys it.
    std::vector<Buffer> mBuffers;
    std::vector<Pipeline> mPipelines;
    std::vector<VkSemaphore> mSemaphores;
};

/** Throws when a raw Vulkan call fails. */
void vkCheck(VkResult result, const char* what);

} // namespace bench
