// SPDX-License-Identifier: Apache-2.0
// kompute-kernel-probe: what a device offers the matrix kernels, and how
// fast each variant of them runs there. A tuning tool for new devices (the
// H200 figures in docs/matmul-tuning.md come from it): it makes its own
// Vulkan device with every feature the kernels can use, prints the
// cooperative-matrix shapes (NV and KHR), bfloat16, integer dot product and
// subgroup properties and the memory limits, then times the kernels'
// variants (the library's own SPIR-V, specialization constants and KHR
// rewrite) on the GEMM and mat-vec shapes of the benchmark, each checked
// against a host reference on sampled entries.
//
//   kompute-kernel-probe [--quick] [--all-paths] [--validate] [--filter TEXT] [--device N]
//                        [--write-tuning FILE]
// (--write-tuning: only the tuning sweep (runTuning), and the table of its
// winners over the rules written to FILE for KOMPUTE_ENV_TUNING_FILE or
// src/kernels/tuning/; the README, "Tuning tables".)
// (--all-paths: also the integer dot-product mat-vec where the device
// supports but does not accelerate it, to check it on lavapipe. --filter:
// the rows whose label contains TEXT, or one of its '|'-separated parts;
// where every part starts with "matvec", "read bandwidth" or "attention",
// the GEMM sections are skipped before they make their data; "attention
// stats" prints the attention kernels' pipeline statistics.)
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

#include <kompute/DeviceInfo.hpp>
#include <kompute/Half.hpp>
#include <kompute/kernels/Quantization.hpp>

#include "internal/DeviceDescription.hpp"
#include "kernels/CoopmatRewrite.hpp"
#include "kernels/MatMulConfig.hpp"
#include "kernels/MatMulTuning.hpp"
#include "kernels/KernelSupport.hpp"

using namespace kp::kernels::matmul;

namespace {

// --- Structures newer than our Vulkan headers (1.3.239) --------------------
constexpr VkStructureType kCoopmatFeaturesKHR = static_cast<VkStructureType>(1000506000);
constexpr VkStructureType kCoopmatPropertiesKHR = static_cast<VkStructureType>(1000506001);
constexpr VkStructureType kBfloat16FeaturesKHR = static_cast<VkStructureType>(1000141000);
constexpr int32_t kComponentBf16 = 1000141000;
struct CoopmatFeaturesKHR
{
    VkStructureType sType;
    void* pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
};
struct CoopmatPropertiesKHR
{
    VkStructureType sType;
    void* pNext;
    uint32_t MSize, NSize, KSize;
    int32_t AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    int32_t scope;
};
struct Bfloat16FeaturesKHR
{
    VkStructureType sType;
    void* pNext;
    VkBool32 shaderBFloat16Type;
    VkBool32 shaderBFloat16DotProduct;
    VkBool32 shaderBFloat16CooperativeMatrix;
};
using PFN_coopmatPropertiesKHR = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CoopmatPropertiesKHR*);

void
check(VkResult result, const char* what)
{
    if (result != VK_SUCCESS) {
        throw std::runtime_error(std::string(what) + " failed: VkResult " + std::to_string(result));
    }
}

const char*
componentName(int32_t type)
{
    switch (type) {
        case 0: return "f16";
        case 1: return "f32";
        case 2: return "f64";
        case 3: return "s8";
        case 4: return "s16";
        case 5: return "s32";
        case 6: return "s64";
        case 7: return "u8";
        case 8: return "u16";
        case 9: return "u32";
        case 10: return "u64";
        case kComponentBf16: return "bf16";
        case 1000491002: return "e4m3";
        case 1000491003: return "e5m2";
    }
    return "other";
}

const char*
scopeName(int32_t scope)
{
    return scope == 3 ? "subgroup" : scope == 2 ? "workgroup" : scope == 1 ? "device" : "other";
}

int gValidationMessages = 0;

struct Options
{
    bool quick = false;
    bool allPaths = false; // also paths the device does not accelerate
    bool validate = false;
    std::string filter;
    uint32_t device = 0;
    std::string writeTuning; // --write-tuning FILE: the tuning sweep alone, its table into FILE
    // The filter's non-empty '|'-separated parts (one call can pick
    // several groups of rows).
    std::vector<std::string> filterParts() const
    {
        std::vector<std::string> parts;
        for (size_t begin = 0; begin <= filter.size();) {
            size_t end = std::min(filter.find('|', begin), filter.size());
            if (end > begin) {
                parts.push_back(filter.substr(begin, end - begin));
            }
            begin = end + 1;
        }
        return parts;
    }
    // Whether a row labelled `name` runs: no filter, or one of its parts in
    // the label.
    bool selects(const std::string& name) const
    {
        if (filter.empty()) {
            return true;
        }
        for (const auto& part : filterParts()) {
            if (name.find(part) != std::string::npos) {
                return true;
            }
        }
        return false;
    }
    // Whether a part of the filter names rows and then " part" (e.g.
    // "... interleave 4 part") and is in `name` (a configuration's label
    // with " part"): the sweep's configurations are timed in parts only
    // where the filter asks for them so, not wherever it selects their rows
    // ("part" alone asks for the library's choice of each shape).
    bool namesPart(const std::string& name) const
    {
        const std::string suffix = " part";
        for (const auto& part : filterParts()) {
            bool asks = part.size() > suffix.size() &&
                        part.compare(part.size() - suffix.size(), suffix.size(), suffix) == 0;
            if (asks && name.find(part) != std::string::npos) {
                return true;
            }
        }
        return false;
    }
    // Whether the filter names only rows whose labels start with one of
    // `prefixes` (every part starts so): then the sections of other rows
    // need not make their data.
    bool onlyRowsStartingWith(std::initializer_list<const char*> prefixes) const
    {
        if (filter.empty()) {
            return false;
        }
        for (const auto& part : filterParts()) {
            bool known = false;
            for (const char* prefix : prefixes) {
                known = known || part.rfind(prefix, 0) == 0;
            }
            if (!known) {
                return false;
            }
        }
        return true;
    }
};

// --- A minimal Vulkan context ----------------------------------------------

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
};

class Context
{
  public:
    DeviceView view;
    bool nv = false, khr = false, bf16Coopmat = false, intDot = false, intDotSupported = false, sizeControl = false;
    std::vector<CoopmatShape> nvF16, khrF16, khrBf16;

    /** With `validate`, the Khronos validation layer checks every call and
     * module (its SPIR-V validator knows the KHR cooperative matrix and
     * bfloat16, which ours does not); its messages are printed and counted. */
    Context(uint32_t index, bool validate)
    {
        VkApplicationInfo app{ VK_STRUCTURE_TYPE_APPLICATION_INFO };
        app.apiVersion = VK_API_VERSION_1_3;
        VkInstanceCreateInfo info{ VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO };
        info.pApplicationInfo = &app;
        const char* layer = "VK_LAYER_KHRONOS_validation";
        const char* debugUtils = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        VkDebugUtilsMessengerCreateInfoEXT messenger{ VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT };
        messenger.messageSeverity =
          VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
        messenger.pfnUserCallback = [](VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                       VkDebugUtilsMessageTypeFlagsEXT,
                                       const VkDebugUtilsMessengerCallbackDataEXT* data,
                                       void*) -> VkBool32 {
            bool error = severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
            gValidationMessages += error ? 1 : 0;
            std::printf("[validation %s] %s\n", error ? "error" : "warning", data->pMessage);
            return VK_FALSE;
        };
        if (validate) {
            info.enabledLayerCount = 1;
            info.ppEnabledLayerNames = &layer;
            info.enabledExtensionCount = 1;
            info.ppEnabledExtensionNames = &debugUtils;
            info.pNext = &messenger;
        }
        check(vkCreateInstance(&info, nullptr, &mInstance), "vkCreateInstance");
        uint32_t count = 0;
        vkEnumeratePhysicalDevices(mInstance, &count, nullptr);
        std::vector<VkPhysicalDevice> devices(count);
        vkEnumeratePhysicalDevices(mInstance, &count, devices.data());
        if (index >= count) {
            throw std::runtime_error("no such device");
        }
        mPhysical = devices[index];
        describeAndCreate();
    }

    ~Context()
    {
        vkDeviceWaitIdle(mDevice);
        vkDestroyQueryPool(mDevice, mQueries, nullptr);
        vkDestroyFence(mDevice, mFence, nullptr);
        vkDestroyCommandPool(mDevice, mPool, nullptr);
        vkDestroyDevice(mDevice, nullptr);
        vkDestroyInstance(mInstance, nullptr);
    }

    Buffer buffer(VkDeviceSize size, bool hostVisible)
    {
        Buffer b;
        b.size = size;
        VkBufferCreateInfo info{ VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO };
        info.size = size;
        info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        check(vkCreateBuffer(mDevice, &info, nullptr, &b.buffer), "vkCreateBuffer");
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(mDevice, b.buffer, &req);
        VkMemoryPropertyFlags want = hostVisible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                                 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        uint32_t type = UINT32_MAX;
        for (uint32_t i = 0; i < mMemory.memoryTypeCount; ++i) {
            if ((req.memoryTypeBits & (1u << i)) && (mMemory.memoryTypes[i].propertyFlags & want) == want) {
                type = i;
                break;
            }
        }
        VkMemoryAllocateInfo alloc{ VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO };
        alloc.allocationSize = req.size;
        alloc.memoryTypeIndex = type;
        check(vkAllocateMemory(mDevice, &alloc, nullptr, &b.memory), "vkAllocateMemory");
        check(vkBindBufferMemory(mDevice, b.buffer, b.memory, 0), "vkBindBufferMemory");
        if (hostVisible) {
            check(vkMapMemory(mDevice, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
        }
        return b;
    }

    void destroy(Buffer& b)
    {
        if (b.buffer) {
            vkDestroyBuffer(mDevice, b.buffer, nullptr);
            vkFreeMemory(mDevice, b.memory, nullptr);
        }
        b = Buffer{};
    }

    /** A device-local buffer holding `bytes`. */
    Buffer upload(const void* data, size_t bytes)
    {
        Buffer staging = buffer(bytes, true);
        std::memcpy(staging.mapped, data, bytes);
        Buffer target = buffer(bytes, false);
        submit([&](VkCommandBuffer cmd) {
            VkBufferCopy region{ 0, 0, bytes };
            vkCmdCopyBuffer(cmd, staging.buffer, target.buffer, 1, &region);
        });
        destroy(staging);
        return target;
    }

    std::vector<uint8_t> download(const Buffer& source)
    {
        Buffer staging = buffer(source.size, true);
        submit([&](VkCommandBuffer cmd) {
            VkBufferCopy region{ 0, 0, source.size };
            vkCmdCopyBuffer(cmd, source.buffer, staging.buffer, 1, &region);
        });
        std::vector<uint8_t> out(source.size);
        std::memcpy(out.data(), staging.mapped, source.size);
        destroy(staging);
        return out;
    }

    Pipeline pipeline(const std::vector<uint32_t>& spirv,
                      const std::vector<Buffer*>& buffers,
                      uint32_t pushBytes,
                      const std::vector<uint32_t>& specialization)
    {
        Pipeline p;
        VkShaderModuleCreateInfo moduleInfo{ VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO };
        moduleInfo.codeSize = spirv.size() * 4;
        moduleInfo.pCode = spirv.data();
        check(vkCreateShaderModule(mDevice, &moduleInfo, nullptr, &p.module), "vkCreateShaderModule");
        std::vector<VkDescriptorSetLayoutBinding> bindings;
        for (uint32_t i = 0; i < buffers.size(); ++i) {
            bindings.push_back({ i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr });
        }
        VkDescriptorSetLayoutCreateInfo setInfo{ VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO };
        setInfo.bindingCount = static_cast<uint32_t>(bindings.size());
        setInfo.pBindings = bindings.data();
        check(vkCreateDescriptorSetLayout(mDevice, &setInfo, nullptr, &p.setLayout), "set layout");
        VkPushConstantRange range{ VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes };
        VkPipelineLayoutCreateInfo layoutInfo{ VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO };
        layoutInfo.setLayoutCount = 1;
        layoutInfo.pSetLayouts = &p.setLayout;
        layoutInfo.pushConstantRangeCount = 1;
        layoutInfo.pPushConstantRanges = &range;
        check(vkCreatePipelineLayout(mDevice, &layoutInfo, nullptr, &p.layout), "pipeline layout");
        std::vector<VkSpecializationMapEntry> entries;
        for (uint32_t i = 0; i < specialization.size(); ++i) {
            entries.push_back({ i, i * 4, 4 });
        }
        VkSpecializationInfo spec{ static_cast<uint32_t>(entries.size()), entries.data(), specialization.size() * 4,
                                   specialization.data() };
        VkComputePipelineCreateInfo info{ VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO };
        info.stage = { VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO };
        info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        info.stage.module = p.module;
        info.stage.pName = "main";
        info.stage.pSpecializationInfo = &spec;
        info.layout = p.layout;
        if (mExecutableStats) {
            info.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
        }
        check(vkCreateComputePipelines(mDevice, VK_NULL_HANDLE, 1, &info, nullptr, &p.pipeline), "compute pipeline");
        printStatistics(p.pipeline);
        VkDescriptorPoolSize size{ VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, static_cast<uint32_t>(buffers.size()) };
        VkDescriptorPoolCreateInfo poolInfo{ VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO };
        poolInfo.maxSets = 1;
        poolInfo.poolSizeCount = 1;
        poolInfo.pPoolSizes = &size;
        check(vkCreateDescriptorPool(mDevice, &poolInfo, nullptr, &p.pool), "descriptor pool");
        VkDescriptorSetAllocateInfo alloc{ VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO };
        alloc.descriptorPool = p.pool;
        alloc.descriptorSetCount = 1;
        alloc.pSetLayouts = &p.setLayout;
        check(vkAllocateDescriptorSets(mDevice, &alloc, &p.set), "descriptor set");
        std::vector<VkDescriptorBufferInfo> infos;
        for (auto* b : buffers) {
            infos.push_back({ b->buffer, 0, b->size });
        }
        std::vector<VkWriteDescriptorSet> writes;
        for (uint32_t i = 0; i < buffers.size(); ++i) {
            VkWriteDescriptorSet w{ VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET };
            w.dstSet = p.set;
            w.dstBinding = i;
            w.descriptorCount = 1;
            w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            w.pBufferInfo = &infos[i];
            writes.push_back(w);
        }
        vkUpdateDescriptorSets(mDevice, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
        return p;
    }

    void destroy(Pipeline& p)
    {
        vkDestroyDescriptorPool(mDevice, p.pool, nullptr);
        vkDestroyPipeline(mDevice, p.pipeline, nullptr);
        vkDestroyPipelineLayout(mDevice, p.layout, nullptr);
        vkDestroyDescriptorSetLayout(mDevice, p.setLayout, nullptr);
        vkDestroyShaderModule(mDevice, p.module, nullptr);
        p = Pipeline{};
    }

    void submit(const std::function<void(VkCommandBuffer)>& record)
    {
        VkCommandBufferAllocateInfo alloc{ VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO };
        alloc.commandPool = mPool;
        alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        alloc.commandBufferCount = 1;
        VkCommandBuffer cmd;
        check(vkAllocateCommandBuffers(mDevice, &alloc, &cmd), "command buffer");
        VkCommandBufferBeginInfo begin{ VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
        begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        vkBeginCommandBuffer(cmd, &begin);
        record(cmd);
        vkEndCommandBuffer(cmd);
        VkSubmitInfo submitInfo{ VK_STRUCTURE_TYPE_SUBMIT_INFO };
        submitInfo.commandBufferCount = 1;
        submitInfo.pCommandBuffers = &cmd;
        check(vkQueueSubmit(mQueue, 1, &submitInfo, mFence), "vkQueueSubmit");
        check(vkWaitForFences(mDevice, 1, &mFence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
        vkResetFences(mDevice, 1, &mFence);
        vkFreeCommandBuffers(mDevice, mPool, 1, &cmd);
        mLastWork = std::chrono::steady_clock::now();
    }

    /** Seconds since the GPU last finished work of this context. */
    double idleSeconds() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - mLastWork).count();
    }

    /** Called at the start of every timeDispatches (not from inside
     * itself): the warm-up where the GPU has idled, so that the build of the
     * pipeline being timed, which comes after a row's warm-up, does not
     * leave it timed at a dropped clock (the ninth session's parts rows:
     * 14.3 and 24.6 us against the eighth's 7.3 and 14.7). */
    std::function<void()> beforeTiming;

    /** Median milliseconds of one dispatch: `perSample` dispatches between
     * two timestamps (pushes[i % pushes.size()] each, so inputs can rotate),
     * `samples` times, a barrier after each unless `barriers` is false (for
     * timings only: the dispatches then overlap, what a chain of dependent
     * dispatches would gain without the barriers between them). */
    double timeDispatches(const Pipeline& p,
                          const std::vector<std::vector<uint8_t>>& pushes,
                          const uint32_t groups[3],
                          int perSample,
                          int samples,
                          bool barriers = true)
    {
        if (beforeTiming && !mTiming) {
            mTiming = true;
            beforeTiming();
            mTiming = false;
        }
        std::vector<double> ms;
        for (int s = 0; s < samples; ++s) {
            submit([&](VkCommandBuffer cmd) {
                vkCmdResetQueryPool(cmd, mQueries, 0, 2);
                vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
                vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &p.set, 0, nullptr);
                vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, mQueries, 0);
                for (int i = 0; i < perSample; ++i) {
                    const auto& push = pushes[i % pushes.size()];
                    vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                       static_cast<uint32_t>(push.size()), push.data());
                    vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
                    if (!barriers) {
                        continue;
                    }
                    VkMemoryBarrier barrier{ VK_STRUCTURE_TYPE_MEMORY_BARRIER };
                    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
                    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
                    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                         0, 1, &barrier, 0, nullptr, 0, nullptr);
                }
                vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, mQueries, 1);
            });
            uint64_t stamps[2];
            check(vkGetQueryPoolResults(mDevice, mQueries, 0, 2, sizeof(stamps), stamps, 8,
                                        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                  "timestamps");
            ms.push_back(double(stamps[1] - stamps[0]) * mTimestampPeriod * 1e-6 / perSample);
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
    }

  private:
    std::chrono::steady_clock::time_point mLastWork = std::chrono::steady_clock::now();
    bool mTiming = false; // inside beforeTiming

    /** The driver's statistics of a pipeline (registers, spills, shared
     * memory on NVIDIA), on one line. */
    void printStatistics(VkPipeline pipeline)
    {
        if (!mExecutableStats) {
            return;
        }
        auto getStats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
          vkGetDeviceProcAddr(mDevice, "vkGetPipelineExecutableStatisticsKHR"));
        VkPipelineExecutableInfoKHR executable{ VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR };
        executable.pipeline = pipeline;
        uint32_t count = 0;
        if (getStats(mDevice, &executable, &count, nullptr) != VK_SUCCESS) {
            return;
        }
        std::vector<VkPipelineExecutableStatisticKHR> stats(count, { VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR });
        getStats(mDevice, &executable, &count, stats.data());
        std::printf("  stats:");
        for (const auto& st : stats) {
            long long value = st.format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR  ? st.value.i64
                              : st.format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR ? (long long)st.value.u64
                              : st.format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR ? st.value.b32
                                                                                               : (long long)st.value.f64;
            std::printf(" %s=%lld", st.name, value);
        }
        std::printf("\n");
    }

    void describeAndCreate()
    {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(mPhysical, &props);
        vkGetPhysicalDeviceMemoryProperties(mPhysical, &mMemory);
        mTimestampPeriod = props.limits.timestampPeriod;
        uint32_t count = 0;
        vkEnumerateDeviceExtensionProperties(mPhysical, nullptr, &count, nullptr);
        std::vector<VkExtensionProperties> extensions(count);
        vkEnumerateDeviceExtensionProperties(mPhysical, nullptr, &count, extensions.data());
        auto has = [&](const char* name) {
            return std::any_of(extensions.begin(), extensions.end(),
                               [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
        };
        bool hasNv = has("VK_NV_cooperative_matrix"), hasKhr = has("VK_KHR_cooperative_matrix"),
             hasBf16 = has("VK_KHR_shader_bfloat16"), hasSm = has("VK_NV_shader_sm_builtins"),
             hasNv2 = has("VK_NV_cooperative_matrix2");
        mExecutableStats = has(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

        // Properties.
        VkPhysicalDeviceProperties2 p2{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 };
        VkPhysicalDeviceVulkan11Properties p11{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES };
        VkPhysicalDeviceVulkan13Properties p13{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES };
        VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV };
        VkPhysicalDeviceDriverProperties driver{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES };
        p2.pNext = &p11;
        p11.pNext = &p13;
        p13.pNext = &driver;
        driver.pNext = hasSm ? &sm : nullptr;
        vkGetPhysicalDeviceProperties2(mPhysical, &p2);
        std::printf("device: %s (vendor 0x%04x, Vulkan %u.%u.%u, driver %s %s)\n", props.deviceName, props.vendorID,
                    VK_VERSION_MAJOR(props.apiVersion), VK_VERSION_MINOR(props.apiVersion),
                    VK_VERSION_PATCH(props.apiVersion), driver.driverName, driver.driverInfo);
        std::printf("subgroup: size %u (min %u max %u), ops 0x%x, stages 0x%x, full subgroups %u, max subgroups per "
                    "workgroup %u\n",
                    p11.subgroupSize, p13.minSubgroupSize, p13.maxSubgroupSize, p11.subgroupSupportedOperations,
                    p11.subgroupSupportedStages, 0u, p13.maxComputeWorkgroupSubgroups);
        std::printf("limits: shared %u B, invocations %u, group count %u x %u x %u, storage range %u, push %u, "
                    "timestamp period %.3f ns\n",
                    props.limits.maxComputeSharedMemorySize, props.limits.maxComputeWorkGroupInvocations,
                    props.limits.maxComputeWorkGroupCount[0], props.limits.maxComputeWorkGroupCount[1],
                    props.limits.maxComputeWorkGroupCount[2], props.limits.maxStorageBufferRange,
                    props.limits.maxPushConstantsSize, props.limits.timestampPeriod);
        if (hasSm) {
            std::printf("SMs: %u, warps per SM %u\n", sm.shaderSMCount, sm.shaderWarpsPerSM);
        }
        std::printf("integer dot 4x8 packed: signed %u unsigned %u mixed %u; 8-bit vectors signed %u mixed %u; "
                    "accumulating 4x8 packed signed %u\n",
                    p13.integerDotProduct4x8BitPackedSignedAccelerated, p13.integerDotProduct4x8BitPackedUnsignedAccelerated,
                    p13.integerDotProduct4x8BitPackedMixedSignednessAccelerated, p13.integerDotProduct8BitSignedAccelerated,
                    p13.integerDotProduct8BitMixedSignednessAccelerated,
                    p13.integerDotProductAccumulatingSaturating4x8BitPackedSignedAccelerated);
        std::printf("extensions: NV coopmat %d, KHR coopmat %d, NV coopmat2 %d, KHR bfloat16 %d, SM builtins %d\n", hasNv,
                    hasKhr, hasNv2, hasBf16, hasSm);
        for (uint32_t h = 0; h < mMemory.memoryHeapCount; ++h) {
            std::printf("heap %u: %.1f GiB flags 0x%x\n", h, mMemory.memoryHeaps[h].size / double(1 << 30),
                        mMemory.memoryHeaps[h].flags);
        }
        for (uint32_t t = 0; t < mMemory.memoryTypeCount; ++t) {
            std::printf("memory type %u: heap %u flags 0x%x\n", t, mMemory.memoryTypes[t].heapIndex,
                        mMemory.memoryTypes[t].propertyFlags);
        }

        view.name = props.deviceName;
        view.driver = kp::internal::driverVersionText(props.vendorID, props.driverVersion);
        view.vendorID = props.vendorID;
        view.type = static_cast<vk::PhysicalDeviceType>(props.deviceType);
        view.subgroupSize = p11.subgroupSize;
        view.subgroupArithmetic = (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
        view.maxSharedBytes = props.limits.maxComputeSharedMemorySize;
        view.maxInvocations = props.limits.maxComputeWorkGroupInvocations;
        for (int i = 0; i < 3; ++i) {
            view.maxGroupCount[i] = props.limits.maxComputeWorkGroupCount[i];
        }
        view.smCount = hasSm ? sm.shaderSMCount : 0;
        view.maxStorageRange = props.limits.maxStorageBufferRange;
        intDot = p13.integerDotProduct4x8BitPackedSignedAccelerated &&
                 p13.integerDotProduct4x8BitPackedMixedSignednessAccelerated;

        // Cooperative-matrix shapes.
        if (hasNv) {
            auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
              vkGetInstanceProcAddr(mInstance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
            uint32_t n = 0;
            get(mPhysical, &n, nullptr);
            std::vector<VkCooperativeMatrixPropertiesNV> shapes(n, { VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV });
            get(mPhysical, &n, shapes.data());
            for (const auto& s : shapes) {
                std::printf("NV coopmat: %ux%ux%u A %s B %s C %s D %s scope %s\n", s.MSize, s.NSize, s.KSize,
                            componentName(s.AType), componentName(s.BType), componentName(s.CType),
                            componentName(s.DType), scopeName(s.scope));
                if (s.AType == 0 && s.BType == 0 && s.CType == 1 && s.DType == 1 && s.scope == 3) {
                    nvF16.push_back({ s.MSize, s.NSize, s.KSize });
                }
            }
        }
        if (hasKhr) {
            auto get = reinterpret_cast<PFN_coopmatPropertiesKHR>(
              vkGetInstanceProcAddr(mInstance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
            uint32_t n = 0;
            get(mPhysical, &n, nullptr);
            std::vector<CoopmatPropertiesKHR> shapes(n, CoopmatPropertiesKHR{ kCoopmatPropertiesKHR });
            get(mPhysical, &n, shapes.data());
            for (const auto& s : shapes) {
                std::printf("KHR coopmat: %ux%ux%u A %s B %s C %s R %s saturating %u scope %s\n", s.MSize, s.NSize,
                            s.KSize, componentName(s.AType), componentName(s.BType), componentName(s.CType),
                            componentName(s.ResultType), s.saturatingAccumulation, scopeName(s.scope));
                bool f32Acc = s.CType == 1 && s.ResultType == 1 && s.scope == 3;
                if (f32Acc && s.AType == 0 && s.BType == 0) {
                    khrF16.push_back({ s.MSize, s.NSize, s.KSize });
                }
                if (f32Acc && s.AType == kComponentBf16 && s.BType == kComponentBf16) {
                    khrBf16.push_back({ s.MSize, s.NSize, s.KSize });
                }
            }
        }

        // Features: query, then enable what is there.
        VkPhysicalDeviceFeatures2 f2{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 };
        VkPhysicalDeviceVulkan11Features f11{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES };
        VkPhysicalDeviceVulkan12Features f12{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
        VkPhysicalDeviceVulkan13Features f13{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES };
        VkPhysicalDeviceCooperativeMatrixFeaturesNV fnv{ VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV };
        CoopmatFeaturesKHR fkhr{ kCoopmatFeaturesKHR };
        Bfloat16FeaturesKHR fbf{ kBfloat16FeaturesKHR };
        f2.pNext = &f11;
        f11.pNext = &f12;
        f12.pNext = &f13;
        void** tail = &f13.pNext;
        if (hasNv) {
            *tail = &fnv;
            tail = &fnv.pNext;
        }
        if (hasKhr) {
            *tail = &fkhr;
            tail = &fkhr.pNext;
        }
        if (hasBf16) {
            *tail = &fbf;
            tail = &fbf.pNext;
        }
        VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fexec{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR
        };
        if (mExecutableStats) {
            *tail = &fexec;
            tail = &fexec.pNext;
        }
        vkGetPhysicalDeviceFeatures2(mPhysical, &f2);
        mExecutableStats = mExecutableStats && fexec.pipelineExecutableInfo;
        std::printf("features: f16 %u int8 %u storage16 %u storage8 %u memory model %u size control %u full "
                    "subgroups %u int dot %u NV coopmat %u KHR coopmat %u bf16 type %u bf16 dot %u bf16 coopmat %u\n",
                    f12.shaderFloat16, f12.shaderInt8, f11.storageBuffer16BitAccess, f12.storageBuffer8BitAccess,
                    f12.vulkanMemoryModel, f13.subgroupSizeControl, f13.computeFullSubgroups,
                    f13.shaderIntegerDotProduct, hasNv ? fnv.cooperativeMatrix : 0, hasKhr ? fkhr.cooperativeMatrix : 0,
                    hasBf16 ? fbf.shaderBFloat16Type : 0, hasBf16 ? fbf.shaderBFloat16DotProduct : 0,
                    hasBf16 ? fbf.shaderBFloat16CooperativeMatrix : 0);
        view.storage16Bit = f11.storageBuffer16BitAccess;
        nv = hasNv && fnv.cooperativeMatrix && f12.vulkanMemoryModel;
        khr = hasKhr && fkhr.cooperativeMatrix && f12.vulkanMemoryModel;
        bf16Coopmat = khr && hasBf16 && fbf.shaderBFloat16CooperativeMatrix && !khrBf16.empty();
        intDotSupported = f13.shaderIntegerDotProduct;
        intDot = intDot && intDotSupported;
        sizeControl = f13.subgroupSizeControl;
        f2.features = VkPhysicalDeviceFeatures{};
        f2.features.shaderInt16 = VK_FALSE;

        std::vector<const char*> enabled;
        if (hasNv) {
            enabled.push_back("VK_NV_cooperative_matrix");
        }
        if (hasKhr) {
            enabled.push_back("VK_KHR_cooperative_matrix");
        }
        if (hasBf16) {
            enabled.push_back("VK_KHR_shader_bfloat16");
        }
        if (mExecutableStats) {
            enabled.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
        }
        uint32_t families = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(mPhysical, &families, nullptr);
        std::vector<VkQueueFamilyProperties> familyProps(families);
        vkGetPhysicalDeviceQueueFamilyProperties(mPhysical, &families, familyProps.data());
        for (uint32_t i = 0; i < families; ++i) {
            if (familyProps[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                mFamily = i;
                break;
            }
        }
        float priority = 1.0f;
        VkDeviceQueueCreateInfo queue{ VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO };
        queue.queueFamilyIndex = mFamily;
        queue.queueCount = 1;
        queue.pQueuePriorities = &priority;
        VkDeviceCreateInfo info{ VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO };
        info.pNext = &f2;
        info.queueCreateInfoCount = 1;
        info.pQueueCreateInfos = &queue;
        info.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
        info.ppEnabledExtensionNames = enabled.data();
        check(vkCreateDevice(mPhysical, &info, nullptr, &mDevice), "vkCreateDevice");
        vkGetDeviceQueue(mDevice, mFamily, 0, &mQueue);
        VkCommandPoolCreateInfo poolInfo{ VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO };
        poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        poolInfo.queueFamilyIndex = mFamily;
        check(vkCreateCommandPool(mDevice, &poolInfo, nullptr, &mPool), "command pool");
        VkFenceCreateInfo fenceInfo{ VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
        check(vkCreateFence(mDevice, &fenceInfo, nullptr, &mFence), "fence");
        VkQueryPoolCreateInfo queryInfo{ VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO };
        queryInfo.queryType = VK_QUERY_TYPE_TIMESTAMP;
        queryInfo.queryCount = 2;
        check(vkCreateQueryPool(mDevice, &queryInfo, nullptr, &mQueries), "query pool");
        view.coopmatNV = nv;
        view.coopmatKHR = khr;
        view.nvF16Shapes = nvF16;
        view.khrF16Shapes = khrF16;
        view.khrBf16Shapes = khrBf16;
        view.intDot = intDot;
        view.intDotSupported = intDotSupported;
    }

    VkInstance mInstance = VK_NULL_HANDLE;
    VkPhysicalDevice mPhysical = VK_NULL_HANDLE;
    VkDevice mDevice = VK_NULL_HANDLE;
    VkQueue mQueue = VK_NULL_HANDLE;
    uint32_t mFamily = 0;
    VkCommandPool mPool = VK_NULL_HANDLE;
    VkFence mFence = VK_NULL_HANDLE;
    VkQueryPool mQueries = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties mMemory{};
    double mTimestampPeriod = 1;
    bool mExecutableStats = false;
};

// --- Host data ----------------------------------------------------------------

std::vector<float>
randomFloats(size_t count, uint32_t seed)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(count);
    for (auto& x : v) {
        x = d(engine);
    }
    return v;
}

uint16_t
bf16Bits(float v)
{
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float
bf16Float(uint16_t b)
{
    uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

/** An operand on the device and its values as the device holds them. */
struct Operand
{
    Buffer buffer;
    std::vector<float> values; // per element (weights for quantized)
    uint32_t type = kF32;
};

/** `copies` back-to-back copies of one random operand of `count` elements:
 * the kernels read a different copy each dispatch, so that nothing stays in
 * the L2 cache between dispatches. */
Operand
makeOperand(Context& ctx, uint32_t type, size_t count, uint32_t seed, uint32_t copies = 1)
{
    Operand op;
    op.type = type;
    std::vector<float> v = randomFloats(count, seed);
    std::vector<uint8_t> bytes;
    if (type == kF32) {
        bytes.resize(count * 4);
        std::memcpy(bytes.data(), v.data(), bytes.size());
        op.values = std::move(v);
    } else if (type == kF16 || type == kBF16) {
        std::vector<uint16_t> bits(count);
        op.values.resize(count);
        for (size_t i = 0; i < count; ++i) {
            bits[i] = type == kF16 ? kp::float16_t::fromFloat(v[i]) : bf16Bits(v[i]);
            op.values[i] = type == kF16 ? kp::float16_t::toFloat(bits[i]) : bf16Float(bits[i]);
        }
        bytes.resize(count * 2);
        std::memcpy(bytes.data(), bits.data(), bytes.size());
    } else {
        auto format = static_cast<kp::WeightFormat>(type - kQ8_0 + 1); // quantElementType's inverse
        bytes = kp::quantize(format, v.data(), v.size());
        op.values = kp::dequantize(format, bytes.data(), v.size() / kp::blockWeights(format));
    }
    if (copies > 1) {
        size_t one = bytes.size();
        bytes.resize(one * copies);
        for (uint32_t c = 1; c < copies; ++c) {
            std::memcpy(bytes.data() + c * one, bytes.data(), one);
        }
    }
    op.buffer = ctx.upload(bytes.data(), bytes.size());
    return op;
}

size_t
operandBytes(uint32_t type, size_t count)
{
    switch (type) {
        case kF32: return count * 4;
        case kF16:
        case kBF16: return count * 2;
    }
    if (isQuantized(type)) {
        auto format = static_cast<kp::WeightFormat>(type - kQ8_0 + 1);
        return count / kp::blockWeights(format) * kp::blockBytes(format);
    }
    return 0;
}

float
roundF16(float v)
{
    return kp::float16_t::toFloat(kp::float16_t::fromFloat(v));
}

template<typename T>
std::vector<uint8_t>
bytesOf(const T& value)
{
    std::vector<uint8_t> b(sizeof(T));
    std::memcpy(b.data(), &value, sizeof(T));
    return b;
}

// Output of one measurement, printed at the end.
struct Row
{
    std::string name;
    double ms;
    double rate; // TFLOP/s or GB/s
    const char* unit;
    double error;
    bool ok;
};
std::vector<Row> gRows;

void
report(const std::string& name, double ms, double rate, const char* unit, double error, bool ok)
{
    std::printf("%-70s %9.4f ms %9.2f %s  err %.2e %s\n", name.c_str(), ms, rate, unit, error, ok ? "ok" : "BAD");
    std::fflush(stdout);
    gRows.push_back({ name, ms, rate, unit, error, ok });
}

// --- GEMM ---------------------------------------------------------------------

struct GemmProblem
{
    uint32_t m, n, k;
    bool transB;
    uint32_t a, b, c;
};

/** Checks sampled entries of C against the host reference; returns the
 * largest error relative to sum |a b| of its entry. */
double
checkGemm(Context& ctx, const GemmProblem& g, const Operand& a, const Operand& b, const Buffer& c, bool roundToF16)
{
    auto bytes = ctx.download(c);
    std::mt19937 engine(7);
    double worst = 0;
    for (int s = 0; s < 48; ++s) {
        uint32_t i = s < 2 ? s * (g.m - 1) : engine() % g.m;
        uint32_t j = s < 2 ? s * (g.n - 1) : engine() % g.n;
        double sum = 0, magnitude = 0;
        for (uint32_t kk = 0; kk < g.k; ++kk) {
            float x = a.values[size_t(i) * g.k + kk];
            float y = g.transB ? b.values[size_t(j) * g.k + kk] : b.values[size_t(kk) * g.n + j];
            if (roundToF16) {
                x = a.type == kF32 ? roundF16(x) : x;
                y = b.type == kF32 ? roundF16(y) : y;
            }
            sum += double(x) * y;
            magnitude += std::fabs(double(x) * y);
        }
        size_t index = size_t(i) * g.n + j;
        float got;
        if (g.c == kF32) {
            std::memcpy(&got, bytes.data() + index * 4, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, bytes.data() + index * 2, 2);
            got = kp::float16_t::toFloat(h);
        }
        double error = std::fabs(got - sum) / std::max(magnitude, 1e-30);
        if (!(error == error)) {
            error = 1e30;
        }
        worst = std::max(worst, error);
    }
    return worst;
}

/** The operands of one GEMM problem, made once for all its variants. */
struct GemmData
{
    Operand a, b;
    Buffer c;
    GemmData(Context& ctx, const GemmProblem& g)
      : a(makeOperand(ctx, g.a, size_t(g.m) * g.k, 1))
      , b(makeOperand(ctx, g.b, size_t(g.k) * g.n, 2))
      , c(ctx.buffer(size_t(g.m) * g.n * (g.c == kF32 ? 4 : 2), false))
    {
    }
    void release(Context& ctx)
    {
        ctx.destroy(a.buffer);
        ctx.destroy(b.buffer);
        ctx.destroy(c);
    }
};

void
runGemm(Context& ctx,
        const Options& options,
        const std::string& label,
        const GemmProblem& g,
        GemmData& data,
        const std::vector<uint32_t>& spirv,
        const std::vector<uint32_t>& specialization,
        const uint32_t tile[2],
        bool coopmat,
        bool timingOnly = false)
{
    std::string name = label;
    if (!options.selects(name)) {
        return;
    }
    Operand& a = data.a;
    Operand& b = data.b;
    Buffer& c = data.c;
    GemmPush push{ g.m, g.n, g.k, g.k, g.transB ? g.k : g.n, g.n, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f };
    try {
        Pipeline p = ctx.pipeline(spirv, { &a.buffer, &b.buffer, &c }, sizeof(GemmPush), specialization);
        uint32_t groups[3] = { (g.n + tile[1] - 1) / tile[1], (g.m + tile[0] - 1) / tile[0], 1 };
        int reps = options.quick ? 1 : 4;
        double ms = ctx.timeDispatches(p, { bytesOf(push) }, groups, reps, options.quick ? 1 : 5);
        // (A part of the kernel timed alone computes no product to check.)
        double error = timingOnly ? 0.0 : checkGemm(ctx, g, a, b, c, coopmat);
        double tolerance = coopmat ? 2e-3 : 1e-4;
        if (g.c == kF16) {
            tolerance += 2e-3;
        }
        report(name, ms, 2.0 * g.m * g.n * g.k / (ms * 1e-3) / 1e12, "TFLOP/s", error, error <= tolerance);
        ctx.destroy(p);
    } catch (const std::exception& e) {
        std::printf("%-70s failed: %s\n", name.c_str(), e.what());
    }
}

// --- Mat-vec --------------------------------------------------------------------

struct MatVecData
{
    uint32_t copies;
    Operand w, x;
    Buffer out;
    MatVecData(Context& ctx, uint32_t rows, uint32_t k, uint32_t wType)
      : copies(static_cast<uint32_t>(std::max<size_t>(1, std::min<size_t>(8, (240ull << 20) / operandBytes(wType, size_t(rows) * k) + 1))))
      , w(makeOperand(ctx, wType, size_t(rows) * k, 3, copies))
      , x(makeOperand(ctx, kF32, k, 4))
      , out(ctx.buffer(size_t(rows) * 4, false))
    {
    }
    void release(Context& ctx)
    {
        ctx.destroy(w.buffer);
        ctx.destroy(x.buffer);
        ctx.destroy(out);
    }
};

std::string
matVecName(const Context& ctx, uint32_t rows, uint32_t k, uint32_t wType, const MatVecConfig& config, bool intDot)
{
    return std::string("matvec ") + std::to_string(rows) + "x" + std::to_string(k) + " " + elementTypeName(wType) +
           (intDot ? " int-dot" : "") + " threads " + std::to_string(config.threads) + " rows " +
           std::to_string(config.rows) + (config.staged ? " staged " + std::to_string(config.tileBlocks) : "") +
           (config.qxBlocks ? " qx " + std::to_string(config.qxBlocks) : "") +
           (config.qxBlocks && config.maxGroups
              ? " grid " + std::to_string(config.maxGroups / std::max(ctx.view.smCount, 1u)) + "/sm"
              : "") +
           (config.qxBlocks && config.prefetch ? (config.prefetch == 2 ? " prefetch early" : " prefetch") : "") + (config.qxBlocks && config.stage ? " stage" : "") +
           (config.qxBlocks && config.interleave ? " interleave " + std::to_string(config.interleave) : "");
}

void
runMatVec(Context& ctx,
          const Options& options,
          uint32_t rows,
          uint32_t k,
          uint32_t wType,
          MatVecData& data,
          const MatVecConfig& config,
          bool intDot,
          uint32_t part = 0,
          bool partRow = false)
{
    // part: the quantized-x mode's TIMING_PART (1: x only, 2: weights only,
    // 3: the weights' loads only), or 4: the whole kernel with no barrier
    // between its dispatches (what the dependent products of a decode step
    // would take if nothing drained the GPU between them);
    // partRow: a row of the parts' table, the whole kernel labelled part 0.
    const bool noBarriers = part == 4;
    std::string name = matVecName(ctx, rows, k, wType, config, intDot) +
                       (noBarriers ? " part 4 (no barriers, timing only)"
                        : part     ? " part " + std::to_string(part) + " (timing only)"
                        : partRow  ? " part 0 (whole)"
                                   : "");
    if (!options.selects(name)) {
        return;
    }
    if (!matVecProblem(config, ctx.view, wType).empty()) {
        return;
    }
    size_t weights = size_t(rows) * k;
    size_t bytes = operandBytes(wType, weights);
    uint32_t copies = data.copies;
    Operand& w = data.w;
    Operand& x = data.x;
    Buffer& out = data.out;
    MatVecVariant variant{ kF32, wType, kF32, false, wType == kF16 || wType == kF32, true };
    if ((config.staged || config.qxBlocks) && !matVecStageable(wType, k, k, 0, 0, 1)) {
        return;
    }
    if (config.qxBlocks && !intDot) {
        return; // the quantized-x mode is the int-dot build's
    }
    auto spirvArray = kp::kernels::builtinSpirv(intDot ? "matvec_int_dot" : "matvec");
    try {
        // (Binding 3, the norm's weights of MatMulParams::normA, holds x: unread.)
        std::vector<uint32_t> spec = matVecSpecialization(config, variant);
        spec[17] = noBarriers ? 0u : part; // TIMING_PART
        Pipeline p = ctx.pipeline(spirvArray, { &x.buffer, &w.buffer, &out, &x.buffer }, sizeof(MatVecPush), spec);
        std::vector<std::vector<uint8_t>> pushes;
        for (uint32_t copy = 0; copy < copies; ++copy) {
            MatVecPush push{ rows, k, 1, k, 1, 0, 0, 0, 0, static_cast<uint32_t>(copy * weights), 0, 1.0f, 0.0f, 0, 0.0f, 0 };
            pushes.push_back(bytesOf(push));
        }
        uint32_t groups[3] = { matVecGroups(config, rows), 1, 1 };
        double ms = ctx.timeDispatches(p, pushes, groups, options.quick ? 1 : 32, options.quick ? 1 : 7, !noBarriers);
        // Check the first copy (the last dispatch used copy (reps - 1) % copies: rerun copy 0).
        ctx.timeDispatches(p, { pushes[0] }, groups, 1, 1);
        auto result = ctx.download(out);
        double worst = 0;
        std::mt19937 engine(9);
        for (int s = 0; s < 64; ++s) {
            uint32_t r = s == 0 ? rows - 1 : engine() % rows;
            double sum = 0, magnitude = 0;
            for (uint32_t kk = 0; kk < k; ++kk) {
                double v = double(w.values[size_t(r) * k + kk]) * x.values[kk];
                sum += v;
                magnitude += std::fabs(v);
            }
            float got;
            std::memcpy(&got, result.data() + size_t(r) * 4, 4);
            worst = std::max(worst, std::fabs(got - sum) / magnitude);
        }
        double tolerance = intDot ? 1.0 / 127 : 1e-4;
        if (part && !noBarriers) {
            worst = 0; // a part's result is not the product
        }
        report(name, ms, bytes / (ms * 1e-3) / 1e9, "GB/s", worst, worst <= tolerance);
        ctx.destroy(p);
    } catch (const std::exception& e) {
        std::printf("%-70s failed: %s\n", name.c_str(), e.what());
    }
}

// The int-dot quantized-x mode's sweep: x whole in shared memory (k / 32
// blocks, as chooseMatVec takes it up to 512), one workgroup per tile of
// rows or a grid of 1, 2 or 4 workgroups per multiprocessor looping over
// the tiles, plain, with the prefetch of the next group or staged
// (coalesced loads); and x in chunks of 128 blocks.
std::vector<MatVecConfig>
qxConfigs(uint32_t k, uint32_t sms)
{
    std::vector<MatVecConfig> configs;
    uint32_t whole = std::max(8u, (k / 32 + 7) / 8 * 8);
    for (uint32_t threads : { 128u, 256u }) {
        for (uint32_t r : { 8u, 16u, 32u }) {
            if (threads / r < 4) {
                continue;
            }
            for (uint32_t perSm : { 0u, 1u, 2u, 4u }) {
                for (int form = 0; form < 3; ++form) { // plain, prefetch, staged
                    configs.push_back({ threads, r, 8, false, 32, whole, perSm * sms, form == 1, form == 2 });
                }
            }
        }
    }
    for (uint32_t r : { 8u, 16u }) {
        configs.push_back({ 256, r, 8, false, 32, 128 });
    }
    return configs;
}

// The grouped forms' sweep (Q8_0X8, Q4_0X8): the interleaved loop (a row's
// threads on neighbouring chunks; x whole) over the grids and shapes of
// qxConfigs, beside the default's per-group loop and x in chunks.
std::vector<MatVecConfig>
groupedConfigs(uint32_t k, uint32_t sms)
{
    std::vector<MatVecConfig> configs;
    uint32_t whole = std::max(8u, (k / 32 + 7) / 8 * 8);
    for (uint32_t threads : { 128u, 256u }) {
        for (uint32_t r : { 8u, 16u, 32u }) {
            for (uint32_t perSm : { 2u, 3u, 4u }) {
                for (uint32_t batch : { 4u, 8u, 16u }) {
                    for (uint32_t prefetch : { 0u, 1u, 2u }) {
                        configs.push_back({ threads, r, 8, false, 32, whole, perSm * sms, prefetch, false, batch });
                    }
                }
            }
        }
    }
    configs.push_back({ 256, 16, 8, false, 32, whole, 2 * sms }); // a group a thread
    configs.push_back({ 256, 16, 8, false, 32, 128 });             // x in chunks
    return configs;
}

// --- Read and copy bandwidth of the device in Vulkan ---------------------------------


} // namespace

// The read shader is compiled at build time (probe/ReadBandwidth.comp).
#include "probe/ReadBandwidth.hpp"

namespace {

void
runReadBandwidth(Context& ctx, const Options& options)
{
    size_t bytes = options.quick ? (16u << 20) : std::min<size_t>(2048ull << 20, ctx.view.maxStorageRange);
    Buffer source = ctx.buffer(bytes, false);
    Buffer sink = ctx.buffer(4096, false);
    std::vector<uint32_t> spirv(probe::READBANDWIDTH_COMP_SPV.begin(), probe::READBANDWIDTH_COMP_SPV.end());
    Pipeline p = ctx.pipeline(spirv, { &source, &sink }, 4, {});
    for (uint32_t groupsPerSm : { 4u, 8u, 16u, 32u }) {
        uint32_t sms = ctx.view.smCount ? ctx.view.smCount : 64;
        uint32_t groups[3] = { sms * groupsPerSm, 1, 1 };
        uint32_t count = static_cast<uint32_t>(bytes / 16);
        double ms = ctx.timeDispatches(p, { bytesOf(count) }, groups, options.quick ? 1 : 5, options.quick ? 1 : 7);
        report("read bandwidth (vulkan, 2 GiB, " + std::to_string(groupsPerSm) + " groups/SM)", ms,
               bytes / (ms * 1e-3) / 1e9, "GB/s", 0, true);
    }
    ctx.destroy(p);
    ctx.destroy(source);
    ctx.destroy(sink);
}

// The driver's statistics (registers, spills, shared memory on NVIDIA) of
// the attention kernels' pipelines as the library builds them for
// Llama-8B's heads (32 of 128, 8 KV heads, f16 caches): the decode kernel,
// the query/key/value mat-vec (f16 and grouped Q4_0 rows, the norm inside)
// with RoPE and the cache write, and with the attention too
// (MatMulParams::attentionC: its "rope attn" rows), and the
// cooperative-matrix prefill's variants. Nothing is timed
// (kompute-bench's attention cases time them); where the device has no
// VK_KHR_pipeline_executable_properties, the pipelines are only made.
void
runAttentionStats(Context& ctx, const Options& options)
{
    std::vector<Buffer> buffers;
    for (int i = 0; i < 11; ++i) {
        buffers.push_back(ctx.buffer(256, false));
    }
    auto make = [&](const std::string& label, const char* variant, uint32_t bindings, uint32_t pushBytes,
                    const std::vector<uint32_t>& constants) {
        if (!options.selects(label)) {
            return;
        }
        std::printf("%s\n", label.c_str());
        std::vector<Buffer*> used;
        for (uint32_t i = 0; i < bindings; ++i) {
            used.push_back(&buffers[i]);
        }
        Pipeline p = ctx.pipeline(kp::kernels::builtinSpirv(variant), used, pushBytes, constants);
        ctx.destroy(p);
    };
    const uint32_t sg = ctx.view.subgroupSize;
    // Decode (Attention.cpp's flashDecode for this shape): 256
    // invocations, up to 16 lanes a row (16 bytes each), 4 rows a pass, the
    // next pass loaded ahead; 7 bindings, 13 words of push constants.
    if (sg >= 2 && 256 % sg == 0) {
        uint32_t lanes = std::min(sg, 16u);
        make("attention stats decode f16 256:4", "attention_decode_f16_v8", 7, 13 * 4,
             { 256, 128, 4, 256, 1, lanes, 32 / lanes, 4, 256 / sg, 0, 1 });
    }
    // The qkv mat-vec (6144 rows of 4096) as OpMatMul builds it with normA
    // and ropeC (bindings 0 to 8, the rotation's constants 19 to 21, its 13
    // words of push constants after the mat-vec's), and with attentionC
    // (bindings 9 and 10, constants 22 to 24, two more words).
    for (uint32_t w : { kF16, kQ4_0X8 }) {
        bool intDot = w != kF16;
        if (intDot && !ctx.view.intDotSupported) {
            continue;
        }
        MatVecConfig config = chooseMatVec(ctx.view, 6144, w, false, false, intDot, 4096);
        if (!matVecProblem(config, ctx.view, w).empty()) {
            continue;
        }
        MatVecVariant variant{ kF32, w, kF32, false, !intDot, true };
        variant.norm = 1 + 0 + 4; // f32 norm weights from a multiple of 4
        std::vector<uint32_t> constants = matVecSpecialization(config, variant);
        constants.resize(19, 0u);
        constants.insert(constants.end(), { 1u, 0u, 0u }); // f16 caches, no factors, no bias
        std::string build = intDot ? "matvec_int_dot_rope" : "matvec_rope";
        std::string label = std::string("attention stats qkv ") + (intDot ? "q4_0x8" : "f16") + " " +
                            std::to_string(config.threads) + "x" + std::to_string(config.rows) + " rope";
        make(label, build.c_str(), 9, sizeof(MatVecPush) + 13 * 4, constants);
        constants.insert(constants.end(), { 4u, 128u, 0u }); // 4 query heads a KV head, 128 values, f32 output
        make(label + " attn", (build + "_attn").c_str(), 11, sizeof(MatVecPush) + 15 * 4, constants);
        // The tail's loads in flight and heads at once (ids 25 to 27:
        // 16-byte chunks of a K row, 8-byte parts of V rows, query heads
        // attended together; the library takes 4, 4 and 2).
        for (auto [kLoads, vLoads, atOnce] : std::vector<std::array<uint32_t, 3>>{
               { 16, 8, 4 }, { 8, 4, 4 }, { 2, 2, 4 }, { 1, 1, 4 }, { 4, 4, 2 }, { 4, 4, 1 }, { 1, 1, 1 } }) {
            std::vector<uint32_t> loads = constants;
            loads.insert(loads.end(), { kLoads, vLoads, atOnce });
            make(label + " attn k" + std::to_string(kLoads) + " v" + std::to_string(vLoads) + " h" +
                   std::to_string(atOnce),
                 (build + "_attn").c_str(), 11, sizeof(MatVecPush) + 15 * 4, loads);
        }
    }
    // Prefill on NV cooperative matrices (the form NVIDIA devices take):
    // C positions a tile, S subgroups; 5 bindings, 12 words of push
    // constants.
    bool shape16 = std::any_of(ctx.nvF16.begin(), ctx.nvF16.end(),
                               [](const CoopmatShape& c) { return c.m == 16 && c.n == 16 && c.k == 16; });
    if (ctx.nv && shape16) {
        for (uint32_t c : { 32u, 64u }) {
            for (uint32_t subgroups : { 1u, 2u, 4u }) {
                for (uint32_t prefetch : { 0u, 1u }) {
                    std::string label = "attention stats prefill d128 c" + std::to_string(c) + " s" +
                                        std::to_string(subgroups) + (prefetch ? " prefetch" : "");
                    std::string variant = "attention_coopmat_d128_c" + std::to_string(c);
                    try {
                        make(label, variant.c_str(), 5, 12 * 4,
                             { subgroups * sg, subgroups, 4, 1, 16, 16, 16, std::max(1u, sg / 16), 1, prefetch, 0 });
                    } catch (const std::exception& e) {
                        std::printf("  not made: %s\n", e.what()); // (more shared memory than the device has)
                    }
                }
            }
        }
    }
    for (auto& b : buffers) {
        ctx.destroy(b);
    }
}

// Keeps the GPU busy so that the clocks leave idle (345 MHz on the H200)
// before anything is timed: a read of 256 MiB over and over, its buffers
// and pipeline made once (making them at each row cost time of its own).
class WarmUp
{
  public:
    explicit WarmUp(Context& ctx)
      : mCtx(ctx)
      , mBytes(std::min<size_t>(256u << 20, ctx.view.maxStorageRange))
      , mSource(ctx.buffer(mBytes, false))
      , mSink(ctx.buffer(4096, false))
      , mPipeline(ctx.pipeline(std::vector<uint32_t>(probe::READBANDWIDTH_COMP_SPV.begin(),
                                                     probe::READBANDWIDTH_COMP_SPV.end()),
                               { &mSource, &mSink },
                               4,
                               {}))
    {
    }
    ~WarmUp()
    {
        mCtx.destroy(mPipeline);
        mCtx.destroy(mSource);
        mCtx.destroy(mSink);
    }
    WarmUp(const WarmUp&) = delete;
    WarmUp& operator=(const WarmUp&) = delete;

    /** Busy for `seconds`. */
    void run(double seconds)
    {
        uint32_t count = static_cast<uint32_t>(mBytes / 16);
        uint32_t groups[3] = { 1024, 1, 1 };
        auto start = std::chrono::steady_clock::now();
        while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
            mCtx.timeDispatches(mPipeline, { bytesOf(count) }, groups, 50, 1);
        }
    }

    /** Before a timed row: `seconds` of work where the GPU has idled for
     * more than 0.1 s (the host data, a slow pipeline build: gaps of under
     * a second were seen to drop the H200's clocks, docs/matmul-tuning.md),
     * a 0.02 s spell where it worked a moment ago (a row of a sweep after
     * a quick pipeline build), so that a sweep's rows are not each a
     * quarter of a second of warming. */
    void beforeRow(double seconds)
    {
        run(mCtx.idleSeconds() > 0.1 ? seconds : 0.02);
    }

  private:
    Context& mCtx;
    size_t mBytes;
    Buffer mSource;
    Buffer mSink;
    Pipeline mPipeline;
};

std::string
coopmatLabel(const char* kind, const GemmProblem& g, const CoopmatConfig& c)
{
    return std::string("gemm ") + kind + " " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
           std::to_string(g.k) + " " + elementTypeName(g.a) + "x" + elementTypeName(g.b) + (g.transB ? "^T" : "") +
           "->" + elementTypeName(g.c) + " tile " + std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" +
           std::to_string(c.bk) + " warp " + std::to_string(c.wm) + "x" + std::to_string(c.wn) + " mma " +
           std::to_string(c.shape.m) + "x" + std::to_string(c.shape.n) + "x" + std::to_string(c.shape.k);
}

// --- The tuning table (--write-tuning FILE) -------------------------------------

// One case of the tuning sweep: a product the library runs, the rules'
// configuration for it, and the best of the candidates timed (each checked
// against the host, as every row of the probe).
struct TunedCase
{
    kp::kernels::matmul::TunedKernel kernel;
    uint32_t a, b, m, n, k;
    std::string ruleConfig;
    double ruleRate = 0;
    std::string bestConfig;
    double bestRate = 0;
    const char* unit = "";
};

// Times `run` (which adds at most one row to gRows) and keeps its rate in
// `tuned` as the rules' (isRule) or as the best so far.
void
timeCandidate(TunedCase& tuned, const std::string& config, bool isRule, const std::function<void()>& run)
{
    size_t before = gRows.size();
    run();
    if (gRows.size() == before || !gRows.back().ok) {
        return; // not run here (does not fit, filtered out) or wrong
    }
    const Row& row = gRows.back();
    tuned.unit = row.unit;
    if (isRule) {
        tuned.ruleRate = std::max(tuned.ruleRate, row.rate);
    }
    if (row.rate > tuned.bestRate) {
        tuned.bestRate = row.rate;
        tuned.bestConfig = config;
    }
}

// Times the rules' configuration first, each of `candidates` (a
// configuration timed once: repeats are passed over), and the rules' again
// last, each with `run(config, text)`, where `text(config)` is the
// configuration as the table writes it.
template<typename Config>
void
timeCandidates(TunedCase& tuned,
               const Config& rule,
               const std::vector<Config>& candidates,
               const std::function<std::string(const Config&)>& text,
               const std::function<void(const Config&, const std::string&)>& run)
{
    std::vector<Config> order = { rule };
    order.insert(order.end(), candidates.begin(), candidates.end());
    order.push_back(rule);
    std::set<std::string> seen;
    for (size_t i = 0; i < order.size(); ++i) {
        std::string t = text(order[i]);
        bool isRule = t == tuned.ruleConfig;
        if (!seen.insert(t).second && !(isRule && i + 1 == order.size())) {
            continue;
        }
        timeCandidate(tuned, t, isRule, [&] { run(order[i], t); });
    }
}

kp::JsonValue tuningTable(const Context& ctx, const std::vector<TunedCase>& cases, bool print = false);

// The sweep behind --write-tuning: the int-dot mat-vec's quantized-x mode
// on the Llama-8B decode products, the cooperative-matrix GEMM on its
// prefill products (512 tokens) and at 8192^3, and the tiled GEMM at
// 8192^3 in f32, each against the rules' choice; the table of the cases
// where a candidate beat the rules by more than 2% (less is within the
// noise of one call: the rules keep those), in the form
// kernels/MatMulTuning.hpp reads (the README, "Tuning tables"), is
// written to `path` after every case, so that a run cut off keeps what it
// measured. The rules' configuration is timed first and again last (the
// better kept), after a warm-up: making a case's host data idles the GPU,
// whose next row ran at a quarter of its speed in the first H100 sweep.
std::vector<TunedCase>
runTuning(Context& ctx, const Options& options, WarmUp& warmUp, const std::string& path)
{
    using kp::kernels::matmul::TunedKernel;
    std::vector<TunedCase> cases;
    const uint32_t sms = std::max(ctx.view.smCount, 1u);
    const uint32_t scale = options.quick ? 16 : 1;
    auto afterData = [&] { warmUp.run(options.quick ? 0.02 : 1.0); };
    auto write = [&] {
        std::ofstream out(path, std::ios::binary);
        out << tuningTable(ctx, cases).toJson(2) << "\n";
        if (!out) {
            throw std::runtime_error("could not write " + path);
        }
    };
    auto finish = [&](const TunedCase& tuned) {
        cases.push_back(tuned);
        write();
    };
    write(); // (a table of no entries, until the first case ends)

    // Mat-vec: a layer's products (the gate and up together, the down, the
    // query/key/value, the attention output). (Not the output's 128256
    // rows: its host data alone would take a minute of the call.)
    bool intDotRuns = ctx.intDot || (options.allPaths && ctx.intDotSupported);
    for (auto shape : std::vector<std::pair<uint32_t, uint32_t>>{
           { 28672, 4096 }, { 4096, 14336 }, { 6144, 4096 }, { 4096, 4096 } }) {
        if (!intDotRuns) {
            break;
        }
        uint32_t rows = shape.first / scale, k = shape.second / scale;
        if (k % 256 != 0) {
            k = (k / 256 + 1) * 256; // whole super-blocks and groups of 8 blocks
        }
        for (uint32_t w : { kQ4_0X8, kQ8_0, kQ8_0X8, kQ4_K, kQ5_K }) {
            MatVecConfig rule = chooseMatVec(ctx.view, rows, w, false, false, true, k);
            if (!rule.qxBlocks) {
                continue;
            }
            TunedCase tuned{ TunedKernel::eMatVecQx, kF32, w, 1, rows, k, kp::kernels::matmul::qxConfigText(rule, sms) };
            if (!options.selects(matVecName(ctx, rows, k, w, rule, true))) {
                continue; // (--filter leaves the rules' row out: nothing to beat, and no data made)
            }
            std::vector<MatVecConfig> candidates;
            for (uint32_t threads : { 128u, 256u }) {
                for (uint32_t r : { 8u, 16u, 32u }) {
                    for (uint32_t perSm : { 2u, 4u }) {
                        for (uint32_t prefetch : { 0u, 1u }) {
                            for (uint32_t interleave : isGrouped(w) ? std::vector<uint32_t>{ 4u, 8u }
                                                                    : std::vector<uint32_t>{ 0u }) {
                                MatVecConfig c = rule;
                                c.threads = threads;
                                c.rows = r;
                                c.maxGroups = perSm * sms;
                                c.prefetch = prefetch;
                                c.stage = false;
                                c.interleave = interleave;
                                candidates.push_back(c);
                            }
                        }
                    }
                }
            }
            MatVecData data(ctx, rows, k, w);
            afterData();
            timeCandidates<MatVecConfig>(
              tuned, rule, candidates,
              [&](const MatVecConfig& c) { return kp::kernels::matmul::qxConfigText(c, sms); },
              [&](const MatVecConfig& c, const std::string&) { runMatVec(ctx, options, rows, k, w, data, c, true); });
            data.release(ctx);
            finish(tuned);
        }
    }

    // Cooperative-matrix GEMM, on the form the library takes (KHR where
    // the device has it), f16 rows into the weights as the runner's prompt
    // steps multiply them.
    const bool khr = ctx.khr && !ctx.khrF16.empty();
    const std::vector<CoopmatShape>& shapes = khr ? ctx.khrF16 : ctx.nvF16;
    if ((ctx.khr || ctx.nv) && !shapes.empty()) {
        uint32_t tokens = options.quick ? 64 : 512;
        std::vector<GemmProblem> products;
        for (uint32_t w : { kF16, kQ8_0, kQ4_0X8 }) {
            for (auto shape : std::vector<std::pair<uint32_t, uint32_t>>{
                   { 6144, 4096 }, { 14336, 4096 }, { 4096, 14336 }, { 4096, 4096 } }) {
                products.push_back({ tokens, shape.first / scale, shape.second / scale, true, kF16, w, kF32 });
            }
        }
        uint32_t big = options.quick ? 256 : 8192;
        products.push_back({ big, big, big, false, kF16, kF16, kF32 });
        std::vector<std::pair<uint32_t, uint32_t>> subgroupTiles = { { 64, 32 }, { 64, 64 }, { 32, 32 }, { 32, 64 } };
        std::vector<std::array<uint32_t, 3>> workgroupTiles = { { 128, 128, 64 }, { 128, 128, 32 }, { 128, 256, 32 },
                                                                { 256, 128, 32 }, { 64, 64, 32 },   { 64, 64, 64 } };
        for (const GemmProblem& g : products) {
            CoopmatConfig rule;
            if (!chooseCoopmat(ctx.view, shapes, g.m, g.n, 1, rule)) {
                continue;
            }
            TunedCase tuned{ TunedKernel::eCoopmat, g.a, g.b, g.m, g.n, g.k,
                             kp::kernels::matmul::coopmatConfigText(rule) };
            auto label = [&](const CoopmatConfig& c, const std::string& text) {
                return "tune " + coopmatLabel(khr ? "khr" : "nv", g, c) + " " + text;
            };
            if (!options.selects(label(rule, tuned.ruleConfig))) {
                continue; // (as the mat-vec's)
            }
            // The tiles with one tile of loads in flight, and the rules'
            // tile with 2 and 3 (each count is a build the driver compiles
            // for seconds: not every tile's).
            std::vector<CoopmatConfig> candidates;
            for (uint32_t ahead : { 2u, 3u }) {
                CoopmatConfig c = rule;
                c.loadAhead = ahead;
                candidates.push_back(c);
            }
            // (One shared stage: two lost on every product of the first
            // H100 sweep, and of the probe's before it.)
            for (const auto& t : workgroupTiles) {
                for (const auto& [wm, wn] : subgroupTiles) {
                    CoopmatConfig c = rule;
                    c.bm = t[0];
                    c.bn = t[1];
                    c.bk = t[2];
                    c.wm = wm;
                    c.wn = wn;
                    c.doubleBuffer = false;
                    c.loadAhead = 1;
                    if (coopmatProblem(c, ctx.view).empty()) {
                        candidates.push_back(c);
                    }
                }
            }
            GemmData data(ctx, g);
            afterData();
            timeCandidates<CoopmatConfig>(
              tuned, rule, candidates, kp::kernels::matmul::coopmatConfigText,
              [&](CoopmatConfig c, const std::string& text) {
                  // As OpMatMul: Q8_0/Q4_0 B as words where the tile takes them.
                  c.quantWords = coopmatQuantWordsFit(c, g.b, g.k, g.k, 0, 0, 1);
                  if (c.quantWords && !coopmatProblem(c, ctx.view).empty()) {
                      c.quantWords = false;
                  }
                  GemmVariant v{ g.a, g.b, g.c, false, g.transB, true, !isQuantized(g.b) };
                  uint32_t tile[2] = { c.bm, c.bn };
                  auto spirv = kp::kernels::builtinSpirv(coopmatVariant(c));
                  if (khr) {
                      spirv = kp::internal::coopmatNvToKhr(spirv, false);
                  }
                  runGemm(ctx, options, label(c, text), g, data, spirv, coopmatSpecialization(c, v, false), tile, true);
              });
            data.release(ctx);
            finish(tuned);
        }
    }

    // Tiled GEMM in f32 (no tensor cores).
    {
        uint32_t big = options.quick ? 256 : 8192;
        GemmProblem g{ big, big, big, false, kF32, kF32, kF32 };
        TiledConfig rule = chooseTiled(ctx.view, g.m, g.n, 1, kF32);
        TunedCase tuned{ TunedKernel::eTiled, kF32, kF32, g.m, g.n, g.k, kp::kernels::matmul::tiledConfigText(rule) };
        auto label = [&](const std::string& text) { return "tune gemm tiled " + std::to_string(big) + "^3 f32 " + text; };
        if (!options.selects(label(tuned.ruleConfig))) {
            return cases; // (as the mat-vec's)
        }
        std::vector<TiledConfig> candidates;
        for (auto t : std::vector<TiledConfig>{ { 128, 128, 8, 8, 8 }, { 128, 128, 16, 8, 8 }, { 128, 64, 16, 8, 4 },
                                                 { 64, 128, 16, 4, 8 }, { 64, 64, 16, 4, 4 }, { 32, 32, 16, 4, 4 } }) {
            for (bool db : { false, true }) {
                t.doubleBuffer = db;
                if (tiledProblem(t, kF32, ctx.view).empty()) {
                    candidates.push_back(t);
                }
            }
        }
        GemmData data(ctx, g);
        afterData();
        timeCandidates<TiledConfig>(
          tuned, rule, candidates, kp::kernels::matmul::tiledConfigText,
          [&](const TiledConfig& t, const std::string& text) {
              GemmVariant v{ kF32, kF32, kF32, false, false, true, true };
              uint32_t tile[2] = { t.bm, t.bn };
              runGemm(ctx, options, label(text), g, data, kp::kernels::builtinSpirv("matmul_tiled"),
                      tiledSpecialization(t, v), tile, false);
          });
        data.release(ctx);
        finish(tuned);
    }
    return cases;
}

// A case's operands and shape, as its verdict and the read-back name it:
// "f16 x q8_0 512x6144x4096".
std::string
caseShape(const TunedCase& c)
{
    return std::string(elementTypeName(c.a)) + " x " + elementTypeName(c.b) + " " + std::to_string(c.m) + "x" +
           std::to_string(c.n) + "x" + std::to_string(c.k);
}

// Whether a case's best beat the rules by more than 2% (or the rules' row
// did not run or was wrong): what earns it an entry.
bool
beatsRules(const TunedCase& c)
{
    return !c.bestConfig.empty() && c.bestConfig != c.ruleConfig && (c.ruleRate == 0 || c.bestRate > c.ruleRate * 1.02);
}

// The table of the cases that beat the rules (`print`: each case's verdict
// on stdout too).
kp::JsonValue
tuningTable(const Context& ctx, const std::vector<TunedCase>& cases, bool print)
{
    kp::JsonValue entries = kp::JsonValue::array();
    for (const TunedCase& c : cases) {
        bool beats = beatsRules(c);
        if (print) {
            std::printf("tuning %-10s %s: rules %s %.2f, best %s %.2f %s%s\n",
                        kp::kernels::matmul::tunedKernelName(c.kernel), caseShape(c).c_str(), c.ruleConfig.c_str(),
                        c.ruleRate, c.bestConfig.c_str(), c.bestRate, c.unit, beats ? ": written" : "");
        }
        if (!beats) {
            continue;
        }
        kp::JsonValue entry = kp::JsonValue::object();
        entry.set("kernel", kp::kernels::matmul::tunedKernelName(c.kernel));
        if (c.kernel != kp::kernels::matmul::TunedKernel::eMatVecQx) {
            entry.set("a", elementTypeName(c.a));
        }
        entry.set("b", elementTypeName(c.b));
        if (c.kernel != kp::kernels::matmul::TunedKernel::eMatVecQx) {
            entry.set("m", c.m);
        }
        entry.set("n", c.n);
        entry.set("k", c.k);
        entry.set("config", c.bestConfig);
        // (What the probe measured, for whoever reads the table.)
        entry.set("rate", std::round(c.bestRate * 100) / 100);
        entry.set("rules", c.ruleConfig);
        entry.set("rules_rate", std::round(c.ruleRate * 100) / 100);
        entry.set("unit", c.unit);
        entries.push(entry);
    }
    kp::JsonValue device = kp::JsonValue::object();
    device.set("device", ctx.view.name);
    device.set("driver", ctx.view.driver);
    device.set("entries", entries);
    kp::JsonValue table = kp::JsonValue::object();
    table.set("kompute_tuning", 1);
    table.set("measured_by", "kompute-kernel-probe --write-tuning");
    table.set("devices", kp::JsonValue(kp::JsonValue::Array{ device }));
    return table;
}

// The table at `path` as the library reads it: each entry written must
// come back as the one the library picks for its product on this device,
// or the table would be passed over without a word where it matters.
// Returns what does not (empty: all of it); a file that is no table throws.
std::string
tableReadsBack(const Context& ctx, const std::vector<TunedCase>& cases, const std::string& path)
{
    using namespace kp::kernels::matmul;
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::shared_ptr<const TuningTable>> tables = { std::make_shared<const TuningTable>(
      readTuningTable(text, path)) };
    for (const TunedCase& c : cases) {
        if (!beatsRules(c)) {
            continue;
        }
        auto found = findTuning(tables, ctx.view, TuningQuery{ c.kernel, c.a, c.b, c.m, c.n, c.k },
                                [](const std::string&) { return std::string(); });
        if (!found || found->config != c.bestConfig) {
            return std::string("the ") + tunedKernelName(c.kernel) + " entry for " + caseShape(c) + " (\"" +
                   c.bestConfig + "\") reads back as " + (found ? "\"" + found->config + "\"" : "no entry");
        }
    }
    return {};
}

} // namespace

int
main(int argc, char** argv)
{
    Options options;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--quick") {
            options.quick = true;
        } else if (arg == "--validate") {
            options.validate = true;
        } else if (arg == "--all-paths") {
            options.allPaths = true;
        } else if (arg == "--filter" && i + 1 < argc) {
            options.filter = argv[++i];
        } else if (arg == "--device" && i + 1 < argc) {
            options.device = static_cast<uint32_t>(std::atoi(argv[++i]));
        } else if (arg == "--write-tuning" && i + 1 < argc) {
            options.writeTuning = argv[++i];
        } else {
            std::fprintf(stderr, "usage: kompute-kernel-probe [--quick] [--all-paths] [--validate] [--filter TEXT] "
                                 "[--device N] [--write-tuning FILE]\n");
            return 2;
        }
    }
    try {
        Context ctx(options.device, options.validate);
        WarmUp warmUp(ctx);
        warmUp.run(options.quick ? 0.05 : 1.5);
        runReadBandwidth(ctx, options);
        runAttentionStats(ctx, options);

        uint32_t big = options.quick ? 256 : 8192;
        // Idle gaps (pipeline builds, host data) let the clocks drop to 345
        // MHz within a second; every timing starts after a short busy spell.
        double busy = options.quick ? 0.0 : 0.25;
        auto warm = [&] {
            if (busy > 0) {
                warmUp.beforeRow(busy);
            }
        };
        // (And again right before the timing where a pipeline build in
        // between let the GPU idle.)
        ctx.beforeTiming = [&] {
            if (busy > 0 && ctx.idleSeconds() > 0.1) {
                warmUp.run(busy);
            }
        };
        if (!options.writeTuning.empty()) {
            // The tuning sweep alone, its table written as the cases end.
            std::vector<TunedCase> cases = runTuning(ctx, options, warmUp, options.writeTuning);
            tuningTable(ctx, cases, true); // (prints each case's verdict)
            std::string problem = tableReadsBack(ctx, cases, options.writeTuning);
            if (!problem.empty()) {
                std::fprintf(stderr, "kompute-kernel-probe: %s: %s\n", options.writeTuning.c_str(), problem.c_str());
                return 1;
            }
            std::printf("tuning table written to %s (read back: every entry found)\n", options.writeTuning.c_str());
            return gValidationMessages == 0 ? 0 : 1;
        }
        auto coopmatSpirv = [](const CoopmatConfig& c, bool khr, bool bf16) {
            auto nv = kp::kernels::builtinSpirv(coopmatVariant(c));
            return khr ? kp::internal::coopmatNvToKhr(nv, bf16) : nv;
        };
        std::vector<uint32_t> tiledSpirv = kp::kernels::builtinSpirv("matmul_tiled");
        std::vector<CoopmatConfig> tiles = { { 128, 128, 32, 64, 64 }, { 128, 128, 32, 64, 32 },
                                             { 128, 256, 32, 64, 64 }, { 256, 128, 32, 64, 64 },
                                             { 128, 128, 64, 64, 64 }, { 64, 128, 32, 32, 64 },
                                             { 64, 64, 32, 32, 32 } };
        auto sweepCoopmat = [&](const char* kind, const GemmProblem& g, GemmData& data, bool khr,
                                const std::vector<CoopmatShape>& shapes, bool bf16, size_t maxTiles,
                                bool bothBuffers) {
            for (const auto& shape : shapes) {
                if (shape.k < 16) {
                    continue; // k = 8 shapes ran at half the rate in the first probe
                }
                size_t tried = 0;
                // Raw staging (CoopmatConfig::rawStaging) against converting
                // at the load, where the operands have something to convert.
                bool rawMatters = g.a == kF32 || g.b == kF32 || g.b == kQ8_0 || g.b == kQ4_0;
                for (auto c : tiles) {
                    for (bool db : { true, false }) {
                        if (!db && !bothBuffers) {
                            continue;
                        }
                        c.shape = shape;
                        c.subgroupSize = ctx.view.subgroupSize;
                        c.doubleBuffer = db;
                        if (!coopmatProblem(c, ctx.view).empty() || tried >= maxTiles * (bothBuffers ? 2 : 1)) {
                            continue;
                        }
                        ++tried;
                        for (bool raw : { true, false }) {
                            if (!raw && !rawMatters) {
                                continue;
                            }
                            c.rawStaging = raw;
                            GemmVariant v{ g.a, g.b, g.c, false, g.transB, true, !isQuantized(g.b) };
                            uint32_t tile[2] = { c.bm, c.bn };
                            warm();
                            runGemm(ctx, options,
                                    coopmatLabel(kind, g, c) + (db ? " db" : " sb") + (rawMatters && raw ? " raw" : ""),
                                    g, data, coopmatSpirv(c, khr, bf16), coopmatSpecialization(c, v, bf16), tile, true);
                        }
                    }
                }
            }
        };
        // The cooperative-matrix GEMM's software pipeline (issue 20): the
        // loads LOAD_AHEAD tiles ahead of the multiply-adds, and the parts
        // of the kernel timed alone (TIMING_PART: 1 multiply-adds and
        // barriers, 2 loads, stores and barriers, 3 multiply-adds alone).
        // A filter starting with "pipeline" runs only these rows.
        bool pipelineOnly = options.filter.rfind("pipeline", 0) == 0;
        // The LLM's prefill shapes (M tokens, K in, N out), and the prefill
        // sweeps' fragment shape: NV 16x8x16 (the best of the 8192^3 sweeps).
        uint32_t tokens = options.quick ? 64 : 512, in = options.quick ? 256 : 4096, out = options.quick ? 512 : 14336;
        std::vector<CoopmatShape> prefillShapes;
        for (const auto& s : ctx.nvF16) {
            if (s.n == 8 && s.k == 16) {
                prefillShapes.push_back(s);
            }
        }
        if (ctx.nv && !prefillShapes.empty() && (options.filter.empty() || pipelineOnly)) {
            const CoopmatShape& mma = prefillShapes.front();
            const bool khrMma = ctx.khr && std::any_of(ctx.khrF16.begin(), ctx.khrF16.end(), [&](const CoopmatShape& s) {
                                    return s.m == mma.m && s.n == mma.n && s.k == mma.k;
                                });
            // The library's tile (128 x 128 x 64, one stage) on the f16
            // products, each part alone too; the quantized ones with B as
            // chunks and as words (CoopmatConfig::quantWords). (Rows
            // dropped: 2-3 tiles ahead after 3165399; the 128 x 128 x 32 and
            // 128 x 256 x 32 tiles and the quantized products' part 2 after
            // 557fe3c; tiles of 4 subgroups, 128 x 64 x 64 and 64 x 64 x 64,
            // 0.5-0.9x the library's tile everywhere, and the raw operands
            // converted before the tile's barrier, 0.8-1.0x, after their one
            // run: docs/matmul-tuning.md.)
            std::vector<CoopmatConfig> pipelineTiles = { { 128, 128, 64, 64, 32 } };
            std::vector<GemmProblem> products = { { big, big, big, false, kF16, kF16, kF32 },
                                                  { tokens, out, in, true, kF16, kF16, kF32 } };
            // The Llama-8B prefill products with quantized weights: ffn
            // gate or up, ffn_down, the fused qkv, the attention output
            // (GGUF's blocks and our grouped forms).
            for (uint32_t type : { kQ4_0, kQ8_0, kQ4_0X8, kQ8_0X8 }) {
                products.push_back({ tokens, out, in, true, kF16, type, kF32 });
                products.push_back({ tokens, in, out, true, kF16, type, kF32 });
                if (!options.quick) {
                    products.push_back({ tokens, 6144, in, true, kF16, type, kF32 });
                    products.push_back({ tokens, in, in, true, kF16, type, kF32 });
                }
            }
            for (const GemmProblem& g : products) {
                // The product's rows first: a product none of whose rows the
                // filter selects makes no data (the 8192^3 one's alone take
                // seconds of host work and device memory).
                struct PipelineRow {
                    CoopmatConfig config;
                    std::string label;
                    bool khr;
                };
                std::vector<PipelineRow> rows;
                bool quant = isQuantized(g.b);
                for (auto c : pipelineTiles) {
                    if (quant && c.bk != 64) {
                        continue;
                    }
                    c.shape = mma;
                    c.subgroupSize = ctx.view.subgroupSize;
                    // Two shared stages where they fit, else one.
                    c.doubleBuffer = true;
                    if (!coopmatProblem(c, ctx.view).empty()) {
                        c.doubleBuffer = false;
                    }
                    for (bool words : { false, true }) {
                        if (!quant && words) {
                            continue;
                        }
                        c.quantWords = words;
                        if ((words && !coopmatQuantWordsFit(c, g.b, g.k, g.k, 0, 0, 1)) ||
                            !coopmatProblem(c, ctx.view).empty()) {
                            continue;
                        }
                        // The NV form, and the KHR form (the library's
                        // choice where the device has it: the same kernel
                        // rewritten, whose speed and order of formats
                        // differ; docs/matmul-tuning.md, thirteenth session).
                        for (bool khr : { false, true }) {
                            if (khr && !khrMma) {
                                continue;
                            }
                            rows.push_back({ c,
                                             "pipeline " + coopmatLabel(khr ? "khr" : "nv", g, c) +
                                               (c.doubleBuffer ? " db" : " sb") +
                                               (quant ? (words ? " words" : " chunks") : ""),
                                             khr });
                        }
                    }
                }
                // The parts each row is timed in (the quantized products'
                // multiply-adds are the f16 products': whole only), and
                // their labels.
                const std::vector<uint32_t> parts = quant ? std::vector<uint32_t>{ 0u }
                                                          : std::vector<uint32_t>{ 0u, 1u, 2u, 3u };
                auto partLabel = [](const PipelineRow& row, uint32_t part) {
                    return row.label + (part ? " part " + std::to_string(part) + " (timing only)" : "");
                };
                bool anySelected = false;
                for (const PipelineRow& row : rows) {
                    for (uint32_t part : parts) {
                        anySelected = anySelected || options.selects(partLabel(row, part));
                    }
                }
                if (!anySelected) {
                    continue;
                }
                GemmData data(ctx, g);
                // Making the host data idles the GPU for seconds: the first
                // row ran at 40% of its speed after the short warm-up alone.
                if (busy > 0) {
                    warmUp.run(1.0);
                }
                for (const PipelineRow& row : rows) {
                    GemmVariant v{ g.a, g.b, g.c, false, g.transB, true, !quant };
                    uint32_t tile[2] = { row.config.bm, row.config.bn };
                    auto spec = coopmatSpecialization(row.config, v, false);
                    for (uint32_t part : parts) {
                        spec[20] = part; // TIMING_PART
                        warm();
                        runGemm(ctx, options, partLabel(row, part), g, data, coopmatSpirv(row.config, row.khr, false),
                                spec, tile, true, part != 0);
                    }
                }
                data.release(ctx);
            }
        }
        // A filter that names only mat-vecs ("matvec 4096x14336"), the
        // read bandwidth and the attention's statistics skips the GEMMs and the hundreds of megabytes of
        // host data they make (a minute of device time before the mat-vecs).
        if (!options.onlyRowsStartingWith({ "matvec", "read bandwidth", "attention" }) && !pipelineOnly) {
            GemmProblem f16Square{ big, big, big, false, kF16, kF16, kF32 };
            if (ctx.nv || ctx.khr) {
                GemmData data(ctx, f16Square);
                if (ctx.nv) {
                    sweepCoopmat("nv", f16Square, data, false, ctx.nvF16, false, tiles.size(), true);
                }
                if (ctx.khr) {
                    sweepCoopmat("khr", f16Square, data, true, ctx.khrF16, false, 4, false);
                }
                data.release(ctx);
            }
            if (ctx.bf16Coopmat) {
                GemmProblem bf16Square{ big, big, big, false, kBF16, kBF16, kF32 };
                GemmData data(ctx, bf16Square);
                sweepCoopmat("khr-bf16", bf16Square, data, true, ctx.khrBf16, true, 4, false);
                data.release(ctx);
            }
            // LLM prefill: X[512][4096] (f32) x W[14336][4096]^T in f16, Q8_0, Q4_0.
            for (uint32_t w : { kF16, kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K }) {
                GemmProblem prefill{ tokens, out, in, true, kF32, w, kF32 };
                GemmData data(ctx, prefill);
                if (ctx.nv) {
                    sweepCoopmat("nv", prefill, data, false, prefillShapes, false, 3, false);
                }
                for (auto t : std::vector<TiledConfig>{ { 128, 128, 16, 8, 8, true }, { 64, 64, 32, 4, 4, true } }) {
                    if (!tiledProblem(t, w, ctx.view).empty()) {
                        continue;
                    }
                    GemmVariant v{ kF32, w, kF32, false, true, true, !isQuantized(w) };
                    uint32_t tile[2] = { t.bm, t.bn };
                    warm();
                    runGemm(ctx, options,
                            "gemm tiled prefill " + std::to_string(tokens) + "x" + std::to_string(out) + "x" +
                              std::to_string(in) + " f32x" + elementTypeName(w) + "^T tile " + std::to_string(t.bm) + "x" +
                              std::to_string(t.bn) + "x" + std::to_string(t.bk) + " " + std::to_string(t.tm) + "x" +
                              std::to_string(t.tn),
                            prefill, data, tiledSpirv, tiledSpecialization(t, v), tile, false);
                }
                data.release(ctx);
            }
            // Why the prefill shape runs at a quarter of the 8192^3 rate (issue
            // 20): the same kernel with one difference at a time (f16 A instead
            // of f32, B not transposed, 8192^3 with B transposed, more rows);
            // then f16 A into the quantized weights.
            if (ctx.nv) {
                for (const GemmProblem& g : std::vector<GemmProblem>{ { tokens, out, in, true, kF16, kF16, kF32 },
                                                                      { tokens, out, in, false, kF32, kF16, kF32 },
                                                                      { tokens, out, in, false, kF16, kF16, kF32 },
                                                                      { big, big, big, true, kF16, kF16, kF32 },
                                                                      { tokens * 8, out, in, true, kF32, kF16, kF32 },
                                                                      // ffn_down: 128 tiles of 128 x 128 for 132 SMs
                                                                      { tokens, in, out, true, kF32, kQ4_0, kF32 },
                                                                      // f16 rows (the runner's prefill steps)
                                                                      // into the quantized weights
                                                                      { tokens, out, in, true, kF16, kQ8_0, kF32 },
                                                                      { tokens, out, in, true, kF16, kQ4_0, kF32 },
                                                                      { tokens, out, in, true, kF16, kQ4_K, kF32 },
                                                                      { tokens, in, out, true, kF16, kQ4_0, kF32 } }) {
                    GemmData data(ctx, g);
                    // Every tile for ffn_down: which fills the device best.
                    sweepCoopmat("nv", g, data, false, prefillShapes, false, g.n == in ? tiles.size() : 3, false);
                    data.release(ctx);
                }
            }
            // f32 and bf16 GEMM on the tiled kernel (no tensor cores).
            for (uint32_t type : { kF32, kBF16 }) {
                GemmProblem g{ big, big, big, false, type, type, kF32 };
                GemmData data(ctx, g);
                for (auto t : std::vector<TiledConfig>{ { 128, 128, 8, 8, 8 }, { 128, 128, 16, 8, 8 }, { 128, 64, 16, 8, 4 },
                                                         { 64, 128, 16, 4, 8 }, { 128, 128, 32, 8, 8 } }) {
                    for (bool db : { false, true }) {
                        t.doubleBuffer = db;
                        if (!tiledProblem(t, type, ctx.view).empty() || (type == kBF16 && t.bk != 8)) {
                            continue;
                        }
                        GemmVariant v{ type, type, kF32, false, false, true, true };
                        uint32_t tile[2] = { t.bm, t.bn };
                        warm();
                        runGemm(ctx, options,
                                "gemm tiled " + std::to_string(big) + "^3 " + elementTypeName(type) + " tile " +
                                  std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk) + " " +
                                  std::to_string(t.tm) + "x" + std::to_string(t.tn) + (db ? " db" : " sb"),
                                g, data, tiledSpirv, tiledSpecialization(t, v), tile, false);
                    }
                }
                data.release(ctx);
            }
        }
        // Mat-vec: the shapes of a Llama-8B layer (ffn_gate_up, ffn_up, ffn_down,
        // attn_qkv, attn_output).
        for (auto shape : std::vector<std::pair<uint32_t, uint32_t>>{
               { 28672, 4096 }, { 14336, 4096 }, { 4096, 14336 }, { 6144, 4096 }, { 4096, 4096 } }) {
            uint32_t rows = options.quick ? shape.first / 16 : shape.first;
            uint32_t k = options.quick ? shape.second / 16 : shape.second;
            for (uint32_t w : { kF16, kQ8_0, kQ4_0, kQ8_0X8, kQ4_0X8, kQ4_K, kQ5_K, kQ6_K }) {
                if (isQuantized(w) && (isGrouped(w) || !hasUnitRowModes(w)) && k % 256 != 0) {
                    continue; // --quick's k = 896: not whole super-blocks
                }
                auto configsOf = [&](bool intDot) {
                    std::vector<MatVecConfig> configs;
                    if (isGrouped(w)) {
                        // Not staged; the int-dot build's quantized-x mode.
                        configs.push_back({ 256, 4, 8, false, 32 });
                        if (intDot) {
                            configs = groupedConfigs(k, std::max(ctx.view.smCount, 1u));
                        }
                    } else if (intDot && !hasUnitRowModes(w)) {
                        // Q4_K, Q5_K: the int-dot build has only its quantized-x mode.
                        configs = qxConfigs(k, std::max(ctx.view.smCount, 1u));
                    } else if (isQuantized(w) && !hasUnitRowModes(w)) {
                        // The K-quants' unit row mode (no staging).
                        for (uint32_t threads : { 64u, 128u, 256u }) {
                            for (uint32_t r : { 2u, 4u, 8u }) {
                                configs.push_back({ threads, r, 8, false, 32 });
                            }
                        }
                    } else if (isQuantized(w)) {
                        for (uint32_t threads : { 128u, 256u }) {
                            for (uint32_t r : { 4u, 8u, 16u }) {
                                configs.push_back({ threads, r, 8, true, 32 });
                            }
                        }
                        configs.push_back({ 128, 8, 8, true, 64 });
                        configs.push_back({ 256, 4, 8, false, 32 }); // unstaged
                        if (intDot) {
                            auto qx = qxConfigs(k, std::max(ctx.view.smCount, 1u));
                            configs.insert(configs.end(), qx.begin(), qx.end());
                        }
                    } else {
                        for (uint32_t threads : { 128u, 256u }) {
                            for (uint32_t r : { 1u, 2u, 4u }) {
                                configs.push_back({ threads, r, 8, false, 32 });
                            }
                        }
                    }
                    return configs;
                };
                // The builds that run here, and the variants the filter
                // selects: none, no host data (making it takes seconds).
                std::vector<bool> builds;
                bool selected = false;
                for (bool intDot : { false, true }) {
                    bool intDotRuns = ctx.intDot || (options.allPaths && ctx.intDotSupported);
                    if (intDot && (!intDotRuns || !hasQxRowMode(w))) {
                        continue;
                    }
                    builds.push_back(intDot);
                    for (const auto& config : configsOf(intDot)) {
                        selected = selected || options.selects(matVecName(ctx, rows, k, w, config, intDot));
                    }
                }
                // Quantized-x configurations in parts, where x is whole: x
                // alone (its reads, quantization and barrier), the weights
                // alone, and their loads alone, against the whole kernel's
                // row; the library's choice where the filter selects its
                // parts' rows, then any of the sweep's that a part of the
                // filter names with " part" (a filter that selects a shape's
                // rows would otherwise time every configuration four times
                // more: 693 rows of 4096 x 14336 in the eighth session).
                std::vector<MatVecConfig> partConfigs;
                if (hasQxRowMode(w) && std::find(builds.begin(), builds.end(), true) != builds.end()) {
                    std::vector<MatVecConfig> candidates = configsOf(true);
                    candidates.insert(candidates.begin(), chooseMatVec(ctx.view, rows, w, false, false, true, k));
                    std::set<std::string> names;
                    for (size_t i = 0; i < candidates.size(); ++i) {
                        const MatVecConfig& config = candidates[i];
                        std::string name = matVecName(ctx, rows, k, w, config, true) + " part";
                        bool asked = i == 0 ? options.selects(name) : options.namesPart(name);
                        if (config.qxBlocks * 32 >= k && asked && names.insert(name).second) {
                            partConfigs.push_back(config);
                        }
                    }
                }
                if (!selected && partConfigs.empty()) {
                    continue;
                }
                MatVecData data(ctx, rows, k, w);
                for (bool intDot : builds) {
                    for (const auto& config : configsOf(intDot)) {
                        if (options.selects(matVecName(ctx, rows, k, w, config, intDot))) {
                            warm();
                            runMatVec(ctx, options, rows, k, w, data, config, intDot);
                        }
                    }
                }
                for (const auto& config : partConfigs) {
                    // The whole kernel beside its parts (part 0), and
                    // without the barriers between its dispatches (part 4:
                    // not under --validate, where the synchronization
                    // validation would rightly report its races).
                    for (uint32_t part : { 0u, 1u, 2u, 3u, 4u }) {
                        if (part == 4 && options.validate) {
                            continue;
                        }
                        warm();
                        runMatVec(ctx, options, rows, k, w, data, config, true, part, true);
                    }
                }
                data.release(ctx);
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "probe failed: %s\n", e.what());
        return 1;
    }
    std::printf("\n%-70s %12s %12s %10s\n", "summary: best per case", "ms", "rate", "error");
    // Best of each case (the name up to " tile" / " threads").
    std::vector<std::pair<std::string, Row>> best;
    for (const auto& row : gRows) {
        std::string key = row.name.substr(0, std::min(row.name.find(" tile "), row.name.find(" threads ")));
        auto it = std::find_if(best.begin(), best.end(), [&](const auto& b) { return b.first == key; });
        if (it == best.end()) {
            best.push_back({ key, row });
        } else if (row.ok && (!it->second.ok || row.rate > it->second.rate)) {
            it->second = row;
        }
    }
    for (const auto& [key, row] : best) {
        std::printf("%-70s %12.4f %9.2f %s %.1e %s | %s\n", key.c_str(), row.ms, row.rate, row.unit, row.error,
                    row.ok ? "ok" : "BAD", row.name.c_str());
    }
    if (options.validate) {
        std::printf("validation errors: %d\n", gValidationMessages);
    }
    return gValidationMessages == 0 ? 0 : 1;
}
