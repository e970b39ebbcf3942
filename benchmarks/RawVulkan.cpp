// SPDX-License-Identifier: Apache-2.0
#include "RawVulkan.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

namespace bench {

void
vkCheck(VkResult result, const char* what)
{
    if (result != VK_SUCCESS) {
        throw std::runtime_error(std::string("raw Vulkan: ") + what + " failed with VkResult " +
                                 std::to_string(result));
    }
}

RawVulkan::RawVulkan(kp::Manager& manager, uint32_t queueIndex, uint32_t indexInFamily)
  : mDevice(*manager.getVkDevice())
  , mPhysicalDevice(*manager.getVkPhysicalDevice())
  , mFamily(manager.queueFamilyIndex(queueIndex))
{
    vkGetDeviceQueue(mDevice, mFamily, indexInFamily, &mQueue);
    vkGetPhysicalDeviceMemoryProperties(mPhysicalDevice, &mMemory);
    VkCommandPoolCreateInfo poolInfo{ VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO };
    poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    poolInfo.queueFamilyIndex = mFamily;
    vkCheck(vkCreateCommandPool(mDevice, &poolInfo, nullptr, &mPool), "vkCreateCommandPool");
    VkFenceCreateInfo fenceInfo{ VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    vkCheck(vkCreateFence(mDevice, &fenceInfo, nullptr, &mFence), "vkCreateFence");
}

RawVulkan::~RawVulkan()
{
    vkDeviceWaitIdle(mDevice);
    // What a case did not destroy itself, because it threw half-way: the
    // Manager's device must not outlive children of ours.
    while (!mPipelines.empty()) {
        Pipeline left = mPipelines.back();
        destroy(left);
    }
    while (!mBuffers.empty()) {
        Buffer left = mBuffers.back();
        destroy(left);
    }
    while (!mSemaphores.empty()) {
        destroy(mSemaphores.back());
    }
    vkDestroyFence(mDevice, mFence, nullptr);
    vkDestroyCommandPool(mDevice, mPool, nullptr);
}

uint32_t
RawVulkan::memoryType(uint32_t allowed,
                      VkMemoryPropertyFlags required,
                      VkMemoryPropertyFlags preferred) const
{
    int fallback = -1;
    for (uint32_t i = 0; i < mMemory.memoryTypeCount; ++i) {
        VkMemoryPropertyFlags flags = mMemory.memoryTypes[i].propertyFlags;
        if (!(allowed & (1u << i)) || (flags & required) != required) {
            continue;
        }
        if ((flags & preferred) == preferred) {
            return i;
        }
        if (fallback < 0) {
            fallback = static_cast<int>(i);
        }
    }
    if (fallback < 0) {
        throw std::runtime_error("raw Vulkan: no suitable memory type");
    }
    return static_cast<uint32_t>(fallback);
}

RawVulkan::Buffer
RawVulkan::createBuffer(VkDeviceSize size,
                        VkBufferUsageFlags usage,
                        VkMemoryPropertyFlags required,
                        VkMemoryPropertyFlags preferred)
{
    Buffer buffer;
    buffer.size = size;
    VkBufferCreateInfo info{ VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO };
    info.size = size;
    info.usage = usage;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    vkCheck(vkCreateBuffer(mDevice, &info, nullptr, &buffer.buffer), "vkCreateBuffer");
    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(mDevice, buffer.buffer, &requirements);
    VkMemoryAllocateInfo allocateInfo{ VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO };
    allocateInfo.allocationSize = requirements.size;
    allocateInfo.memoryTypeIndex = memoryType(requirements.memoryTypeBits, required, preferred);
    vkCheck(vkAllocateMemory(mDevice, &allocateInfo, nullptr, &buffer.memory), "vkAllocateMemory");
    vkCheck(vkBindBufferMemory(mDevice, buffer.buffer, buffer.memory, 0), "vkBindBufferMemory");
    if (mMemory.memoryTypes[allocateInfo.memoryTypeIndex].propertyFlags &
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        vkCheck(vkMapMemory(mDevice, buffer.memory, 0, VK_WHOLE_SIZE, 0, &buffer.mapped), "vkMapMemory");
    }
    mBuffers.push_back(buffer);
    return buffer;
}

void
RawVulkan::destroy(Buffer& buffer)
{
    Buffer doomed = buffer;
    buffer = Buffer{};
    forget(mBuffers, [&](const Buffer& b) { return b.buffer == doomed.buffer; });
    if (doomed.mapped) {
        vkUnmapMemory(mDevice, doomed.memory);
    }
    vkDestroyBuffer(mDevice, doomed.buffer, nullptr);
    vkFreeMemory(mDevice, doomed.memory, nullptr);
}

RawVulkan::Pipeline
RawVulkan::createPipeline(const std::vector<uint32_t>& spirv,
                          const std::vector<Buffer*>& buffers,
                          uint32_t pushBytes)
{
    Pipeline p;
    p.pushBytes = pushBytes;
    VkShaderModuleCreateInfo moduleInfo{ VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO };
    moduleInfo.codeSize = spirv.size() * 4;
    moduleInfo.pCode = spirv.data();
    vkCheck(vkCreateShaderModule(mDevice, &moduleInfo, nullptr, &p.module), "vkCreateShaderModule");

    std::vector<VkDescriptorSetLayoutBinding> bindings(buffers.size());
    for (uint32_t i = 0; i < buffers.size(); ++i) {
        bindings[i] = { i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr };
    }
    VkDescriptorSetLayoutCreateInfo setInfo{ VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO };
    setInfo.bindingCount = static_cast<uint32_t>(bindings.size());
    setInfo.pBindings = bindings.data();
    vkCheck(vkCreateDescriptorSetLayout(mDevice, &setInfo, nullptr, &p.setLayout),
            "vkCreateDescriptorSetLayout");

    VkPushConstantRange range{ VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes };
    VkPipelineLayoutCreateInfo layoutInfo{ VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO };
    layoutInfo.setLayoutCount = 1;
    layoutInfo.pSetLayouts = &p.setLayout;
    layoutInfo.pushConstantRangeCount = pushBytes ? 1 : 0;
    layoutInfo.pPushConstantRanges = &range;
    vkCheck(vkCreatePipelineLayout(mDevice, &layoutInfo, nullptr, &p.layout), "vkCreatePipelineLayout");

    VkComputePipelineCreateInfo pipelineInfo{ VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO };
    pipelineInfo.stage = { VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO };
    pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipelineInfo.stage.module = p.module;
    pipelineInfo.stage.pName = "main";
    pipelineInfo.layout = p.layout;
    vkCheck(vkCreateComputePipelines(mDevice, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &p.pipeline),
            "vkCreateComputePipelines");

    VkDescriptorPoolSize size{ VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, static_cast<uint32_t>(buffers.size()) };
    VkDescriptorPoolCreateInfo poolInfo{ VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO };
    poolInfo.maxSets = 1;
    poolInfo.poolSizeCount = 1;
    poolInfo.pPoolSizes = &size;
    vkCheck(vkCreateDescriptorPool(mDevice, &poolInfo, nullptr, &p.pool), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo allocateInfo{ VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO };
    allocateInfo.descriptorPool = p.pool;
    allocateInfo.descriptorSetCount = 1;
    allocateInfo.pSetLayouts = &p.setLayout;
    vkCheck(vkAllocateDescriptorSets(mDevice, &allocateInfo, &p.set), "vkAllocateDescriptorSets");

    std::vector<VkDescriptorBufferInfo> infos(buffers.size());
    std::vector<VkWriteDescriptorSet> writes(buffers.size());
    for (uint32_t i = 0; i < buffers.size(); ++i) {
        infos[i] = { buffers[i]->buffer, 0, VK_WHOLE_SIZE };
        writes[i] = { VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET };
        writes[i].dstSet = p.set;
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(mDevice, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    mPipelines.push_back(p);
    return p;
}

std::vector<VkDescriptorSet>
RawVulkan::createSets(Pipeline& p, const Buffer& buffer, uint32_t count, VkDeviceSize stride)
{
    if (p.extraPool != VK_NULL_HANDLE) {
        throw std::runtime_error("raw Vulkan: createSets was called twice for one pipeline");
    }
    VkDescriptorPoolSize size{ VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, count };
    VkDescriptorPoolCreateInfo poolInfo{ VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO };
    poolInfo.maxSets = count;
    poolInfo.poolSizeCount = 1;
    poolInfo.pPoolSizes = &size;
    vkCheck(vkCreateDescriptorPool(mDevice, &poolInfo, nullptr, &p.extraPool), "vkCreateDescriptorPool");
    for (Pipeline& tracked : mPipelines) {
        if (tracked.pipeline == p.pipeline) {
            tracked.extraPool = p.extraPool;
        }
    }
    std::vector<VkDescriptorSetLayout> layouts(count, p.setLayout);
    std::vector<VkDescriptorSet> sets(count);
    VkDescriptorSetAllocateInfo allocateInfo{ VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO };
    allocateInfo.descriptorPool = p.extraPool;
    allocateInfo.descriptorSetCount = count;
    allocateInfo.pSetLayouts = layouts.data();
    vkCheck(vkAllocateDescriptorSets(mDevice, &allocateInfo, sets.data()), "vkAllocateDescriptorSets");
    std::vector<VkDescriptorBufferInfo> infos(count);
    std::vector<VkWriteDescriptorSet> writes(count);
    for (uint32_t i = 0; i < count; ++i) {
        infos[i] = { buffer.buffer, i * stride, stride };
        writes[i] = { VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET };
        writes[i].dstSet = sets[i];
        writes[i].dstBinding = 0;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(mDevice, count, writes.data(), 0, nullptr);
    return sets;
}

void
RawVulkan::bindAndDispatch(VkCommandBuffer cmd, const Pipeline& p, VkDescriptorSet set)
{
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    vkCmdDispatch(cmd, 1, 1, 1);
}

VkDeviceSize
RawVulkan::storageOffsetAlignment() const
{
    VkPhysicalDeviceProperties properties;
    vkGetPhysicalDeviceProperties(mPhysicalDevice, &properties);
    return properties.limits.minStorageBufferOffsetAlignment;
}

void
RawVulkan::computeBarrier(VkCommandBuffer cmd, const Buffer* buffer)
{
    VkAccessFlags src = VK_ACCESS_SHADER_WRITE_BIT;
    VkAccessFlags dst = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    if (buffer == nullptr) {
        memoryBarrier(cmd, stage, src, stage, dst);
        return;
    }
    VkBufferMemoryBarrier barrier{ VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER };
    barrier.srcAccessMask = src;
    barrier.dstAccessMask = dst;
    barrier.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    barrier.buffer = buffer->buffer;
    barrier.offset = 0;
    barrier.size = VK_WHOLE_SIZE;
    vkCmdPipelineBarrier(cmd, stage, stage, 0, 0, nullptr, 1, &barrier, 0, nullptr);
}

void
RawVulkan::destroy(Pipeline& pipeline)
{
    // The tracked copy, not the caller's: it has the pool createSets() made.
    Pipeline p;
    for (const Pipeline& tracked : mPipelines) {
        if (tracked.pipeline == pipeline.pipeline) {
            p = tracked;
        }
    }
    pipeline = Pipeline{};
    forget(mPipelines, [&](const Pipeline& t) { return t.pipeline == p.pipeline; });
    if (p.extraPool != VK_NULL_HANDLE) {
        vkDestroyDescriptorPool(mDevice, p.extraPool, nullptr);
    }
    vkDestroyDescriptorPool(mDevice, p.pool, nullptr);
    vkDestroyPipeline(mDevice, p.pipeline, nullptr);
    vkDestroyPipelineLayout(mDevice, p.layout, nullptr);
    vkDestroyDescriptorSetLayout(mDevice, p.setLayout, nullptr);
    vkDestroyShaderModule(mDevice, p.module, nullptr);
}

VkCommandBuffer
RawVulkan::allocateCommandBuffer()
{
    VkCommandBufferAllocateInfo info{ VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO };
    info.commandPool = mPool;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    VkCommandBuffer cmd;
    vkCheck(vkAllocateCommandBuffers(mDevice, &info, &cmd), "vkAllocateCommandBuffers");
    return cmd;
}

void
RawVulkan::begin(VkCommandBuffer cmd)
{
    VkCommandBufferBeginInfo info{ VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    vkCheck(vkBeginCommandBuffer(cmd, &info), "vkBeginCommandBuffer");
}

void
RawVulkan::end(VkCommandBuffer cmd)
{
    vkCheck(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

void
RawVulkan::barrier(VkCommandBuffer cmd)
{
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    memoryBarrier(cmd,
                  stages,
                  VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                  stages,
                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
}

void
RawVulkan::memoryBarrier(VkCommandBuffer cmd,
                         VkPipelineStageFlags srcStages,
                         VkAccessFlags srcAccess,
                         VkPipelineStageFlags dstStages,
                         VkAccessFlags dstAccess)
{
    VkMemoryBarrier barrier{ VK_STRUCTURE_TYPE_MEMORY_BARRIER };
    barrier.srcAccessMask = srcAccess;
    barrier.dstAccessMask = dstAccess;
    vkCmdPipelineBarrier(cmd, srcStages, dstStages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

void
RawVulkan::hostBarrier(VkCommandBuffer cmd)
{
    memoryBarrier(cmd,
                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                  VK_PIPELINE_STAGE_HOST_BIT,
                  VK_ACCESS_HOST_READ_BIT);
}

void
RawVulkan::bindAndDispatch(VkCommandBuffer cmd,
                           const Pipeline& p,
                           uint32_t x,
                           uint32_t y,
                           uint32_t z,
                           const void* push)
{
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &p.set, 0, nullptr);
    if (push != nullptr && p.pushBytes > 0) {
        vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.pushBytes, push);
    }
    vkCmdDispatch(cmd, x, y, z);
}

void
RawVulkan::submitAndWait(VkCommandBuffer cmd)
{
    vkCheck(vkResetFences(mDevice, 1, &mFence), "vkResetFences");
    VkSubmitInfo submit{ VK_STRUCTURE_TYPE_SUBMIT_INFO };
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    vkCheck(vkQueueSubmit(mQueue, 1, &submit, mFence), "vkQueueSubmit");
    vkCheck(vkWaitForFences(mDevice, 1, &mFence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

double
RawVulkan::submit(VkCommandBuffer cmd, VkSemaphore timeline, uint64_t value)
{
    VkFence fence = VK_NULL_HANDLE;
    if (timeline == VK_NULL_HANDLE) {
        vkCheck(vkResetFences(mDevice, 1, &mFence), "vkResetFences");
        fence = mFence;
    }
    VkTimelineSemaphoreSubmitInfo timelineInfo{ VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO };
    timelineInfo.signalSemaphoreValueCount = 1;
    timelineInfo.pSignalSemaphoreValues = &value;
    VkSubmitInfo submitInfo{ VK_STRUCTURE_TYPE_SUBMIT_INFO };
    submitInfo.commandBufferCount = 1;
    submitInfo.pCommandBuffers = &cmd;
    if (timeline != VK_NULL_HANDLE) {
        submitInfo.pNext = &timelineInfo;
        submitInfo.signalSemaphoreCount = 1;
        submitInfo.pSignalSemaphores = &timeline;
    }
    auto start = std::chrono::steady_clock::now();
    vkCheck(vkQueueSubmit(mQueue, 1, &submitInfo, fence), "vkQueueSubmit");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void
RawVulkan::waitFence()
{
    vkCheck(vkWaitForFences(mDevice, 1, &mFence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void
RawVulkan::spinFence()
{
    VkResult status;
    while ((status = vkGetFenceStatus(mDevice, mFence)) == VK_NOT_READY) {
    }
    vkCheck(status, "vkGetFenceStatus");
}

VkSemaphore
RawVulkan::createTimeline()
{
    VkSemaphoreTypeCreateInfo typeInfo{ VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO };
    typeInfo.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo info{ VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO };
    info.pNext = &typeInfo;
    VkSemaphore semaphore;
    vkCheck(vkCreateSemaphore(mDevice, &info, nullptr, &semaphore), "vkCreateSemaphore");
    mSemaphores.push_back(semaphore);
    return semaphore;
}

void
RawVulkan::destroy(VkSemaphore semaphore)
{
    forget(mSemaphores, [&](VkSemaphore s) { return s == semaphore; });
    vkDestroySemaphore(mDevice, semaphore, nullptr);
}

void
RawVulkan::spinTimeline(VkSemaphore timeline, uint64_t value)
{
    uint64_t reached = 0;
    do {
        vkCheck(vkGetSemaphoreCounterValue(mDevice, timeline, &reached), "vkGetSemaphoreCounterValue");
    } while (reached < value);
}

void
RawVulkan::barrierToTransfer(VkCommandBuffer cmd)
{
    memoryBarrier(cmd,
                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                  VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT);
}

} // namespace bench
