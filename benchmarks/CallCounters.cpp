// SPDX-License-Identifier: Apache-2.0
// Counts the heap allocations (operator new) of the calling thread and the
// Vulkan calls of the whole process that create objects or write descriptor
// sets, so that cases
// (a) and (b) can show that an evaluation does none of them (see
// CallCounters.hpp). The Vulkan functions are interposed: this executable
// defines them, so the baselines' calls of the C API reach these first,
// which count and forward to the loader's; Kompute's calls, which go through
// the library's table of commands, reach them once countKomputeVulkanCalls()
// has put them into it.
#include "CallCounters.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

#include <dlfcn.h>
#include <kompute/Errors.hpp>
#include <kompute/Vulkan.hpp>

#include "internal/VulkanCommands.hpp"

// The library's table of commands, which is no public name.
namespace kp {
namespace internal {
extern VulkanCommands vulkanCommands;
}
}

namespace {

// Per thread: what the measured thread does, not the driver's own threads.
thread_local uint64_t allocations = 0;
std::atomic<uint64_t> vulkanCreations{ 0 };
std::atomic<uint64_t> descriptorWrites{ 0 };

void*
allocate(std::size_t bytes)
{
    ++allocations;
    void* memory = std::malloc(bytes == 0 ? 1 : bytes);
    if (memory == nullptr) {
        throw std::bad_alloc();
    }
    return memory;
}

void*
allocateAligned(std::size_t bytes, std::align_val_t alignment)
{
    ++allocations;
    auto align = static_cast<std::size_t>(alignment);
    std::size_t rounded = (bytes + align - 1) / align * align;
    void* memory = std::aligned_alloc(align, rounded == 0 ? align : rounded);
    if (memory == nullptr) {
        throw std::bad_alloc();
    }
    return memory;
}

// The loader's entry point of `name`, the next definition after ours.
template<typename Function>
Function
next(const char* name)
{
    void* symbol = dlsym(RTLD_NEXT, name);
    if (symbol == nullptr) {
        std::abort(); // the loader lacks a core function: nothing can work
    }
    return reinterpret_cast<Function>(symbol);
}

} // namespace

namespace bench {

CallCounts
callCounts()
{
    return CallCounts{ allocations, vulkanCreations.load(), descriptorWrites.load() };
}

CallCounts
CallCounts::operator-(const CallCounts& earlier) const
{
    return CallCounts{ allocations - earlier.allocations,
                       vulkanObjects - earlier.vulkanObjects,
                       descriptorWrites - earlier.descriptorWrites };
}

} // namespace bench

void* operator new(std::size_t bytes) { return allocate(bytes); }
void* operator new[](std::size_t bytes) { return allocate(bytes); }
void* operator new(std::size_t bytes, std::align_val_t alignment) { return allocateAligned(bytes, alignment); }
void* operator new[](std::size_t bytes, std::align_val_t alignment) { return allocateAligned(bytes, alignment); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept
{
    try {
        return allocate(bytes);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept
{
    try {
        return allocate(bytes);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }

// Each counted Vulkan function: counts, then calls the loader's.
#define BENCH_COUNTED_VULKAN(counter, name, parameters, arguments)                                 \
    extern "C" VKAPI_ATTR VkResult VKAPI_CALL name parameters                                      \
    {                                                                                              \
        static auto forward = next<PFN_##name>(#name);                                             \
        counter.fetch_add(1, std::memory_order_relaxed);                                           \
        return forward arguments;                                                                  \
    }

BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateBuffer,
                     (VkDevice d, const VkBufferCreateInfo* i, const VkAllocationCallbacks* a, VkBuffer* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkAllocateMemory,
                     (VkDevice d, const VkMemoryAllocateInfo* i, const VkAllocationCallbacks* a, VkDeviceMemory* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateImage,
                     (VkDevice d, const VkImageCreateInfo* i, const VkAllocationCallbacks* a, VkImage* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateImageView,
                     (VkDevice d, const VkImageViewCreateInfo* i, const VkAllocationCallbacks* a, VkImageView* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateShaderModule,
                     (VkDevice d, const VkShaderModuleCreateInfo* i, const VkAllocationCallbacks* a, VkShaderModule* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreatePipelineLayout,
                     (VkDevice d, const VkPipelineLayoutCreateInfo* i, const VkAllocationCallbacks* a, VkPipelineLayout* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateComputePipelines,
                     (VkDevice d, VkPipelineCache c, uint32_t n, const VkComputePipelineCreateInfo* i,
                      const VkAllocationCallbacks* a, VkPipeline* o),
                     (d, c, n, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateDescriptorSetLayout,
                     (VkDevice d, const VkDescriptorSetLayoutCreateInfo* i, const VkAllocationCallbacks* a,
                      VkDescriptorSetLayout* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateDescriptorPool,
                     (VkDevice d, const VkDescriptorPoolCreateInfo* i, const VkAllocationCallbacks* a, VkDescriptorPool* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkAllocateDescriptorSets,
                     (VkDevice d, const VkDescriptorSetAllocateInfo* i, VkDescriptorSet* o),
                     (d, i, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateCommandPool,
                     (VkDevice d, const VkCommandPoolCreateInfo* i, const VkAllocationCallbacks* a, VkCommandPool* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkAllocateCommandBuffers,
                     (VkDevice d, const VkCommandBufferAllocateInfo* i, VkCommandBuffer* o),
                     (d, i, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateFence,
                     (VkDevice d, const VkFenceCreateInfo* i, const VkAllocationCallbacks* a, VkFence* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateSemaphore,
                     (VkDevice d, const VkSemaphoreCreateInfo* i, const VkAllocationCallbacks* a, VkSemaphore* o),
                     (d, i, a, o))
BENCH_COUNTED_VULKAN(vulkanCreations, vkCreateQueryPool,
                     (VkDevice d, const VkQueryPoolCreateInfo* i, const VkAllocationCallbacks* a, VkQueryPool* o),
                     (d, i, a, o))

extern "C" VKAPI_ATTR void VKAPI_CALL
vkUpdateDescriptorSets(VkDevice device,
                       uint32_t writeCount,
                       const VkWriteDescriptorSet* writes,
                       uint32_t copyCount,
                       const VkCopyDescriptorSet* copies)
{
    static auto forward = next<PFN_vkUpdateDescriptorSets>("vkUpdateDescriptorSets");
    descriptorWrites.fetch_add(1, std::memory_order_relaxed);
    forward(device, writeCount, writes, copyCount, copies);
}

void
bench::countKomputeVulkanCalls()
{
    // Opened and filled first: the library fills its table only once.
    // (Without a loader nothing is counted, and the first case reports it.)
    try {
        kp::vulkanGetInstanceProcAddr();
    } catch (const kp::VulkanLoaderError&) {
        return;
    }
    // Every function counted above, by the names the table gives them.
    auto& dispatcher = kp::internal::vulkanCommands;
    dispatcher.vkCreateBuffer = &::vkCreateBuffer;
    dispatcher.vkAllocateMemory = &::vkAllocateMemory;
    dispatcher.vkCreateImage = &::vkCreateImage;
    dispatcher.vkCreateImageView = &::vkCreateImageView;
    dispatcher.vkCreateShaderModule = &::vkCreateShaderModule;
    dispatcher.vkCreatePipelineLayout = &::vkCreatePipelineLayout;
    dispatcher.vkCreateComputePipelines = &::vkCreateComputePipelines;
    dispatcher.vkCreateDescriptorSetLayout = &::vkCreateDescriptorSetLayout;
    dispatcher.vkCreateDescriptorPool = &::vkCreateDescriptorPool;
    dispatcher.vkAllocateDescriptorSets = &::vkAllocateDescriptorSets;
    dispatcher.vkCreateCommandPool = &::vkCreateCommandPool;
    dispatcher.vkAllocateCommandBuffers = &::vkAllocateCommandBuffers;
    dispatcher.vkCreateFence = &::vkCreateFence;
    dispatcher.vkCreateSemaphore = &::vkCreateSemaphore;
    dispatcher.vkCreateQueryPool = &::vkCreateQueryPool;
    dispatcher.vkUpdateDescriptorSets = &::vkUpdateDescriptorSets;
}
