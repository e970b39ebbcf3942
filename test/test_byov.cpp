// SPDX-License-Identifier: Apache-2.0
// Bring your own Vulkan: an application creates its instance and device with
// the raw C API, runs Kompute work on them, records a Kompute operation into
// a command buffer it owns, then destroys its own objects, with the
// validation layer watching throughout (through a messenger of the
// application's own).
#include "DispatchTestHelpers.hpp"

#include <cstring>

using namespace kp_test;

namespace {

const char* kDouble = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < values.length()) {
        values[i] = values[i] * 2.0;
    }
}
)";

VKAPI_ATTR VkBool32 VKAPI_CALL
countErrors(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
            VkDebugUtilsMessageTypeFlagsEXT,
            const VkDebugUtilsMessengerCallbackDataEXT* data,
            void* user)
{
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        static_cast<std::vector<std::string>*>(user)->push_back(data->pMessage);
    }
    return VK_FALSE;
}

// The application's own Vulkan objects, made with the C API.
struct Application
{
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physicalDevice = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    uint32_t computeFamily = 0;
    std::vector<std::string> validationErrors;

    Application()
    {
        const char* layer = "VK_LAYER_KHRONOS_validation";
        const char* extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        VkApplicationInfo app{};
        app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
        app.apiVersion = VK_API_VERSION_1_2;
        VkInstanceCreateInfo info{};
        info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
        info.pApplicationInfo = &app;
        info.enabledLayerCount = 1;
        info.ppEnabledLayerNames = &layer;
        info.enabledExtensionCount = 1;
        info.ppEnabledExtensionNames = &extension;
        EXPECT_EQ(vkCreateInstance(&info, nullptr, &instance), VK_SUCCESS);

        VkDebugUtilsMessengerCreateInfoEXT messengerInfo{};
        messengerInfo.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
        messengerInfo.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
        messengerInfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                    VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
        messengerInfo.pfnUserCallback = countErrors;
        messengerInfo.pUserData = &validationErrors;
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
        EXPECT_EQ(create(instance, &messengerInfo, nullptr, &messenger), VK_SUCCESS);

        uint32_t count = 1;
        VkResult listed = vkEnumeratePhysicalDevices(instance, &count, &physicalDevice);
        EXPECT_TRUE(listed == VK_SUCCESS || listed == VK_INCOMPLETE);

        uint32_t familyCount = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(physicalDevice, &familyCount, nullptr);
        std::vector<VkQueueFamilyProperties> families(familyCount);
        vkGetPhysicalDeviceQueueFamilyProperties(physicalDevice, &familyCount, families.data());
        for (uint32_t i = 0; i < familyCount; ++i) {
            if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                computeFamily = i;
                break;
            }
        }
        float priority = 1.0f;
        VkDeviceQueueCreateInfo queueInfo{};
        queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
        queueInfo.queueFamilyIndex = computeFamily;
        queueInfo.queueCount = 1;
        queueInfo.pQueuePriorities = &priority;
        VkDeviceCreateInfo deviceInfo{};
        deviceInfo.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
        deviceInfo.queueCreateInfoCount = 1;
        deviceInfo.pQueueCreateInfos = &queueInfo;
        EXPECT_EQ(vkCreateDevice(physicalDevice, &deviceInfo, nullptr, &device), VK_SUCCESS);
    }

    ~Application()
    {
        vkDestroyDevice(device, nullptr);
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
        destroy(instance, messenger, nullptr);
        vkDestroyInstance(instance, nullptr);
    }
};

std::unique_ptr<kp::Manager>
wrap(Application& app, const std::vector<uint32_t>* families = nullptr)
{
    auto instance = std::make_shared<vk::Instance>(app.instance);
    auto physicalDevice = std::make_shared<vk::PhysicalDevice>(app.physicalDevice);
    auto device = std::make_shared<vk::Device>(app.device);
    if (families != nullptr) {
        return std::make_unique<kp::Manager>(instance, physicalDevice, device, *families);
    }
    return std::make_unique<kp::Manager>(instance, physicalDevice, device);
}

} // namespace

TEST(Byov, KomputeRunsOnTheApplicationsDeviceAndDestroysNothingOfIt)
{
    Application app;
    {
        auto mgr = wrap(app);
        EXPECT_EQ(mgr->queueCount(), 1u);
        EXPECT_EQ(mgr->queueFamilyIndex(0), app.computeFamily);
        auto values = mgr->tensor({ 1.0f, 2.0f, 3.0f, 4.0f });
        auto algorithm = mgr->algorithm({ values }, compile(kDouble), { 1, 1, 1 });
        mgr->sequence()
          ->record<kp::OpSyncDevice>({ values })
          ->record<kp::OpAlgoDispatch>(algorithm)
          ->record<kp::OpSyncLocal>({ values })
          ->eval();
        EXPECT_EQ(values->vector(), (std::vector<float>{ 2.0f, 4.0f, 6.0f, 8.0f }));
        mgr->destroy();
        // A BYOV manager's objects keep working after it is gone (upstream's
        // semantics): the device is the application's.
        mgr.reset();
        EXPECT_EQ(values->vector(), (std::vector<float>{ 2.0f, 4.0f, 6.0f, 8.0f }));
    }
    // The application's device is untouched: it still creates objects.
    VkFenceCreateInfo fenceInfo{};
    fenceInfo.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    VkFence fence = VK_NULL_HANDLE;
    EXPECT_EQ(vkCreateFence(app.device, &fenceInfo, nullptr, &fence), VK_SUCCESS);
    vkDestroyFence(app.device, fence, nullptr);
    EXPECT_TRUE(app.validationErrors.empty()) << app.validationErrors.front();
}

TEST(Byov, ExplicitQueueFamiliesAreUsed)
{
    Application app;
    std::vector<uint32_t> families{ app.computeFamily };
    {
        auto mgr = wrap(app, &families);
        auto values = mgr->tensor({ 5.0f });
        auto algorithm = mgr->algorithm({ values }, compile(kDouble), { 1, 1, 1 });
        mgr->sequence(0)
          ->eval<kp::OpSyncDevice>({ values })
          ->eval<kp::OpAlgoDispatch>(algorithm)
          ->eval<kp::OpSyncLocal>({ values });
        EXPECT_EQ(values->vector(), (std::vector<float>{ 10.0f }));
        EXPECT_THROW(mgr->sequence(1), kp::Error);
    }
    std::vector<uint32_t> tooMany{ app.computeFamily, app.computeFamily, app.computeFamily,
                                   app.computeFamily, app.computeFamily, app.computeFamily,
                                   app.computeFamily, app.computeFamily, app.computeFamily,
                                   app.computeFamily, app.computeFamily, app.computeFamily,
                                   app.computeFamily, app.computeFamily, app.computeFamily,
                                   app.computeFamily, app.computeFamily };
    EXPECT_THROW(wrap(app, &tooMany), kp::Error);
    EXPECT_TRUE(app.validationErrors.empty()) << app.validationErrors.front();
}

TEST(Byov, KomputeOperationsRecordIntoTheApplicationsCommandBuffer)
{
    Application app;
    {
        auto mgr = wrap(app);
        auto values = mgr->tensor({ 1.5f, -2.0f });
        auto algorithm = mgr->algorithm({ values }, compile(kDouble), { 1, 1, 1 });
        // Interoperation: the tensor's buffer and the algorithm's pipeline
        // are plain Vulkan handles.
        EXPECT_TRUE(static_cast<bool>(*values->getPrimaryBuffer()));
        EXPECT_TRUE(static_cast<bool>(algorithm->getPipeline()));

        VkCommandPoolCreateInfo poolInfo{};
        poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        poolInfo.queueFamilyIndex = app.computeFamily;
        VkCommandPool pool = VK_NULL_HANDLE;
        ASSERT_EQ(vkCreateCommandPool(app.device, &poolInfo, nullptr, &pool), VK_SUCCESS);
        VkCommandBufferAllocateInfo allocateInfo{};
        allocateInfo.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        allocateInfo.commandPool = pool;
        allocateInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        allocateInfo.commandBufferCount = 1;
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        ASSERT_EQ(vkAllocateCommandBuffers(app.device, &allocateInfo, &cmd), VK_SUCCESS);
        VkCommandBufferBeginInfo beginInfo{};
        beginInfo.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        ASSERT_EQ(vkBeginCommandBuffer(cmd, &beginInfo), VK_SUCCESS);

        kp::OpSyncDevice upload({ values });
        kp::OpAlgoDispatch dispatch(algorithm);
        kp::OpSyncLocal download({ values });
        for (kp::OpBase* op : std::initializer_list<kp::OpBase*>{ &upload, &dispatch, &download }) {
            op->record(cmd);
        }
        // The application makes the results visible to the host itself.
        VkMemoryBarrier barrier{};
        barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
        barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cmd,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT,
                             0,
                             1,
                             &barrier,
                             0,
                             nullptr,
                             0,
                             nullptr);
        ASSERT_EQ(vkEndCommandBuffer(cmd), VK_SUCCESS);

        VkQueue queue = VK_NULL_HANDLE;
        vkGetDeviceQueue(app.device, app.computeFamily, 0, &queue);
        VkSubmitInfo submit{};
        submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        submit.commandBufferCount = 1;
        submit.pCommandBuffers = &cmd;
        ASSERT_EQ(vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE), VK_SUCCESS);
        ASSERT_EQ(vkQueueWaitIdle(queue), VK_SUCCESS);
        EXPECT_EQ(values->vector(), (std::vector<float>{ 3.0f, -4.0f }));
        vkDestroyCommandPool(app.device, pool, nullptr);
    }
    EXPECT_TRUE(app.validationErrors.empty()) << app.validationErrors.front();
}

// --- Optional features on the application's device ------------------------------------

namespace {

// out[i] = in[i] * 2 in 64-bit floats.
const char* kDoubleFloat64 = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { double values[]; };
void main() { uint i = gl_GlobalInvocationID.x; values[i] = values[i] * 2.0lf; }
)";

const char* kInt64 = R"(
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { int64_t values[]; };
void main() { uint i = gl_GlobalInvocationID.x; values[i] = values[i] << 33; }
)";

const char* kFloatAtomicSum = R"(
#version 450
#extension GL_EXT_shader_atomic_float : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Sum { float sum; };
void main() { atomicAdd(sum, 1.5); }
)";

bool
hasExtension(vk::PhysicalDevice physicalDevice, const char* name)
{
    for (const auto& extension : physicalDevice.enumerateDeviceExtensionProperties()) {
        if (std::strcmp(extension.extensionName.data(), name) == 0) {
            return true;
        }
    }
    return false;
}

} // namespace

using ByovFeaturesTest = KomputeTest;

TEST_F(ByovFeaturesTest, WithoutTheApplicationsFeaturesOptionalCapabilitiesAreRefused)
{
    RawVulkanDevice app;
    {
        kp::Manager manager(app.instance, app.physicalDevice, app.device);
        EXPECT_FALSE(manager.capabilities().float64);
        auto values = manager.tensorT<double>({ 1.0, 2.5 });
        EXPECT_TRUE(throwsWith([&] { manager.algorithm({ values }, compile(kDoubleFloat64)); },
                               { "SPIR-V capability Float64", "shaderFloat64",
                                 "pass the extensions and features you enabled" }));
    }
}

TEST_F(ByovFeaturesTest, TheFeaturesTheApplicationEnabledAreAccepted)
{
    VkPhysicalDeviceFeatures supported = RawVulkanDevice().physicalDevice->getFeatures();
    if (!supported.shaderFloat64 || !supported.shaderInt64) {
        GTEST_SKIP() << "needs shaderFloat64 and shaderInt64";
    }
    vk::PhysicalDeviceFeatures2 features;
    features.features.shaderFloat64 = VK_TRUE; // but not shaderInt64
    RawVulkanDevice app(&static_cast<const VkPhysicalDeviceFeatures2&>(features));
    {
        kp::Manager manager(
          app.instance, app.physicalDevice, app.device, { app.computeFamily }, {}, features);
        kp::DeviceCapabilities caps = manager.capabilities();
        EXPECT_TRUE(caps.float64);
        EXPECT_FALSE(caps.int64);
        auto values = manager.tensorT<double>({ 1.0, 2.5, -0.125 });
        auto algorithm = manager.algorithm({ values }, compile(kDoubleFloat64));
        dispatchOnce(manager, algorithm, { values }, { values });
        EXPECT_EQ(values->vector(), (std::vector<double>{ 2.0, 5.0, -0.25 }));
        // What the application did not enable stays refused.
        auto longs = manager.tensorT<int64_t>({ 1, 2 });
        EXPECT_TRUE(throwsWith([&] { manager.algorithm({ longs }, compile(kInt64)); },
                               { "SPIR-V capability Int64", "not enabled on this device" }));
    }
}

TEST_F(ByovFeaturesTest, ExtensionFeaturesCountOnlyWithTheirExtensionListed)
{
    RawVulkanDevice probe;
    if (!hasExtension(*probe.physicalDevice, "VK_EXT_shader_atomic_float")) {
        GTEST_SKIP() << "needs VK_EXT_shader_atomic_float";
    }
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomics{};
    atomics.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
    VkPhysicalDeviceFeatures2 query{};
    query.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    query.pNext = &atomics;
    vkGetPhysicalDeviceFeatures2(static_cast<VkPhysicalDevice>(*probe.physicalDevice), &query);
    if (!atomics.shaderBufferFloat32AtomicAdd) {
        GTEST_SKIP() << "needs shaderBufferFloat32AtomicAdd";
    }
    vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT enabledAtomics;
    enabledAtomics.shaderBufferFloat32AtomicAdd = VK_TRUE;
    vk::PhysicalDeviceFeatures2 enabled;
    enabled.pNext = &enabledAtomics;
    RawVulkanDevice app(&static_cast<const VkPhysicalDeviceFeatures2&>(enabled),
                        { "VK_EXT_shader_atomic_float" });
    {
        kp::Manager manager(
          app.instance, app.physicalDevice, app.device, {}, { "VK_EXT_shader_atomic_float" }, enabled);
        EXPECT_TRUE(manager.capabilities().float32AtomicAdd);
        auto sum = manager.tensor({ 1.0f });
        auto algorithm = manager.algorithm({ sum }, compile(kFloatAtomicSum), kp::Workgroup{ 4, 1, 1 });
        dispatchOnce(manager, algorithm, { sum }, { sum });
        EXPECT_EQ(sum->vector(), (std::vector<float>{ 7.0f }));
    }
    {
        // The structure without its extension: not something a device has.
        kp::Manager manager(app.instance, app.physicalDevice, app.device, {}, {}, enabled);
        EXPECT_FALSE(manager.capabilities().float32AtomicAdd);
        auto sum = manager.tensor({ 1.0f });
        EXPECT_TRUE(throwsWith([&] { manager.algorithm({ sum }, compile(kFloatAtomicSum)); },
                               { "AtomicFloat32AddEXT", "VK_EXT_shader_atomic_float" }));
    }
}
