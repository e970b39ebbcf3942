// SPDX-License-Identifier: Apache-2.0
// The capability table: what Manager::capabilities() reports (checked
// against the driver's own answers), what a Manager enables by default and
// on request, KOMPUTE_ENV_DISABLE, and that every SPIR-V capability,
// extension and execution mode a shader declares is checked against what is
// enabled before the driver sees it.
#include "DispatchTestHelpers.hpp"

#include <spirv/unified1/spirv.hpp>

using namespace kp_test;

namespace {

// out[i] = in[i] * 2.
const char* kDoubleShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer In { float values[]; };
layout(set = 0, binding = 1) buffer Out { float results[]; };
void main() { uint i = gl_GlobalInvocationID.x; results[i] = values[i] * 2.0; }
)";

std::shared_ptr<kp::Algorithm>
algorithmFor(kp::Manager& mgr, const std::vector<uint32_t>& spirv, uint32_t bindings = 2)
{
    std::vector<std::shared_ptr<kp::Memory>> objects;
    for (uint32_t i = 0; i < bindings; ++i) {
        objects.push_back(mgr.tensor({ 1.0f, 2.0f, 3.0f, 4.0f }));
    }
    return mgr.algorithm(objects, spirv);
}

std::vector<float>
runDouble(kp::Manager& mgr)
{
    auto in = mgr.tensor({ 1.0f, 2.0f });
    auto out = mgr.tensor({ 0.0f, 0.0f });
    dispatchOnce(mgr, mgr.algorithm({ in, out }, compile(kDoubleShader)), { in }, { out });
    return out->vector();
}

// What the environment the tests run in turns off already (the GPU script
// turns bfloat16 off where its validation layer does not know the
// extension): every manager of these tests keeps it off (DisablePaths), and
// expects it.
const std::string&
inheritedDisableList()
{
    static const std::string list = [] {
        const char* value = std::getenv("KOMPUTE_ENV_DISABLE");
        return std::string(value != nullptr ? value : "");
    }();
    return list;
}

/** The disabled groups of a manager made under DisablePaths(`groups`):
 * the inherited ones, then those of `groups` not among them. */
std::vector<std::string>
withInheritedGroups(const std::vector<std::string>& groups)
{
    std::vector<std::string> all;
    std::string list = inheritedDisableList();
    size_t start = 0;
    while (start <= list.size()) {
        size_t end = std::min(list.find(',', start), list.size());
        std::string name = list.substr(start, end - start);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (!name.empty() && std::find(all.begin(), all.end(), name) == all.end()) {
            all.push_back(name);
        }
        start = end + 1;
    }
    for (const auto& name : groups) {
        if (std::find(all.begin(), all.end(), name) == all.end()) {
            all.push_back(name);
        }
    }
    return all;
}

std::unique_ptr<kp::Manager>
managerDisabling(const char* list)
{
    DisablePaths env(list);
    return std::make_unique<kp::Manager>();
}

const kp::DeviceFeature*
row(const kp::DeviceCapabilities& caps, const std::string& name)
{
    for (const auto& feature : caps.features) {
        if (feature.name == name) {
            return &feature;
        }
    }
    return nullptr;
}

} // namespace

using CapabilitiesTest = KomputeTest;

// --- What the table reports -----------------------------------------------------------

TEST_F(CapabilitiesTest, ReportsWhatTheDriverSupportsAndEnablesItByDefault)
{
    kp::DeviceCapabilities caps = mgr().capabilities();
    vk::PhysicalDevice physical = *mgr().getVkPhysicalDevice();
    if (caps.apiVersion < VK_API_VERSION_1_3) {
        GTEST_SKIP() << "compares against Vulkan 1.3 feature structures";
    }
    // The default state is what it checks: only bfloat16 (no row here) may
    // be off through the environment.
    if (withInheritedGroups({ "bfloat16" }) != std::vector<std::string>{ "bfloat16" }) {
        GTEST_SKIP() << "KOMPUTE_ENV_DISABLE=" << inheritedDisableList()
                     << " turns off groups whose default state this test checks";
    }
    auto chain = physical.getFeatures2<vk::PhysicalDeviceFeatures2,
                                       vk::PhysicalDeviceVulkan11Features,
                                       vk::PhysicalDeviceVulkan12Features,
                                       vk::PhysicalDeviceVulkan13Features>();
    const auto& core = chain.get<vk::PhysicalDeviceFeatures2>().features;
    const auto& v11 = chain.get<vk::PhysicalDeviceVulkan11Features>();
    const auto& v12 = chain.get<vk::PhysicalDeviceVulkan12Features>();
    const auto& v13 = chain.get<vk::PhysicalDeviceVulkan13Features>();
    const std::pair<const char*, vk::Bool32> expected[] = {
        { "shaderFloat64", core.shaderFloat64 },
        { "shaderInt64", core.shaderInt64 },
        { "shaderInt16", core.shaderInt16 },
        { "shaderFloat16", v12.shaderFloat16 },
        { "shaderInt8", v12.shaderInt8 },
        { "storageBuffer16BitAccess", v11.storageBuffer16BitAccess },
        { "storageBuffer8BitAccess", v12.storageBuffer8BitAccess },
        { "shaderBufferInt64Atomics", v12.shaderBufferInt64Atomics },
        { "bufferDeviceAddress", v12.bufferDeviceAddress },
        { "vulkanMemoryModel", v12.vulkanMemoryModel },
        { "timelineSemaphore", v12.timelineSemaphore },
        { "variablePointers", v11.variablePointers },
        { "subgroupSizeControl", v13.subgroupSizeControl },
        { "shaderIntegerDotProduct", v13.shaderIntegerDotProduct },
        { "shaderResourceResidency", core.shaderResourceResidency },
    };
    for (const auto& [name, value] : expected) {
        const kp::DeviceFeature* feature = row(caps, name);
        ASSERT_NE(feature, nullptr) << name;
        EXPECT_EQ(feature->supported, value == VK_TRUE) << name;
        EXPECT_EQ(feature->enabled, value == VK_TRUE) << name << " is enabled when supported";
        EXPECT_EQ(feature->extension, "") << name << " is core in Vulkan 1.3";
        EXPECT_NE(feature->vulkanName.find("::"), std::string::npos) << feature->vulkanName;
    }
    EXPECT_EQ(caps.float16, v12.shaderFloat16 == VK_TRUE);
    EXPECT_EQ(caps.int8, v12.shaderInt8 == VK_TRUE);
    EXPECT_EQ(caps.float64, core.shaderFloat64 == VK_TRUE);
    EXPECT_EQ(caps.storageBuffer16Bit, v11.storageBuffer16BitAccess == VK_TRUE);
    EXPECT_EQ(caps.integerDotProduct.supported, v13.shaderIntegerDotProduct == VK_TRUE);
    EXPECT_EQ(caps.timelineSemaphore, v12.timelineSemaphore == VK_TRUE);
    EXPECT_EQ(caps.disabledGroups, withInheritedGroups({}));

    // Properties.
    auto properties = physical.getProperties2<vk::PhysicalDeviceProperties2,
                                              vk::PhysicalDeviceSubgroupProperties,
                                              vk::PhysicalDeviceSubgroupSizeControlProperties,
                                              vk::PhysicalDeviceMaintenance3Properties>();
    const auto& subgroup = properties.get<vk::PhysicalDeviceSubgroupProperties>();
    const auto& sizeControl = properties.get<vk::PhysicalDeviceSubgroupSizeControlProperties>();
    EXPECT_EQ(caps.subgroup.size, subgroup.subgroupSize);
    EXPECT_EQ(caps.subgroup.minSize, sizeControl.minSubgroupSize);
    EXPECT_EQ(caps.subgroup.maxSize, sizeControl.maxSubgroupSize);
    if (subgroup.supportedStages & vk::ShaderStageFlagBits::eCompute) {
        EXPECT_EQ(caps.subgroup.operations, subgroup.supportedOperations);
    }
    EXPECT_EQ(caps.maxComputeSharedMemorySize,
              properties.get<vk::PhysicalDeviceProperties2>().properties.limits.maxComputeSharedMemorySize);
    EXPECT_EQ(caps.maxMemoryAllocationSize,
              properties.get<vk::PhysicalDeviceMaintenance3Properties>().maxMemoryAllocationSize);
    EXPECT_EQ(caps.deviceName, std::string(mgr().getDeviceProperties().deviceName.data()));
}

TEST_F(CapabilitiesTest, EveryRowHasItsNamesAndADisableGroup)
{
    kp::DeviceCapabilities caps = mgr().capabilities();
    ASSERT_GT(caps.features.size(), 50u);
    for (const auto& feature : caps.features) {
        EXPECT_FALSE(feature.name.empty());
        EXPECT_FALSE(feature.group.empty()) << feature.name;
        EXPECT_FALSE(feature.vulkanName.empty()) << feature.name;
        EXPECT_TRUE(!feature.enabled || feature.supported) << feature.name;
    }
    // Extensions the enabled rows need are reported as enabled.
    for (const auto& feature : caps.features) {
        if (feature.enabled && !feature.extension.empty()) {
            EXPECT_NE(std::find(caps.enabledExtensions.begin(),
                                caps.enabledExtensions.end(),
                                feature.extension),
                      caps.enabledExtensions.end())
              << feature.name << " needs " << feature.extension;
        }
    }
}

TEST_F(CapabilitiesTest, CooperativeMatrixShapesAreThoseTheDriverLists)
{
    kp::DeviceCapabilities caps = mgr().capabilities();
    vk::PhysicalDevice physical = *mgr().getVkPhysicalDevice();
    VkInstance instance = static_cast<VkInstance>(*mgr().getVkInstance());
    auto available = [&](const char* name) {
        for (const auto& extension : physical.enumerateDeviceExtensionProperties()) {
            if (std::string(extension.extensionName.data()) == name) {
                return true;
            }
        }
        return false;
    };
    // The number of shapes each command lists (no structure needed for it).
    using CountShapes = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, void*);
    auto count = [&](const char* command) {
        auto function = reinterpret_cast<CountShapes>(vkGetInstanceProcAddr(instance, command));
        uint32_t shapes = 0;
        EXPECT_NE(function, nullptr) << command;
        if (function != nullptr) {
            EXPECT_EQ(function(static_cast<VkPhysicalDevice>(physical), &shapes, nullptr), VK_SUCCESS);
        }
        return shapes;
    };
    if (available("VK_NV_cooperative_matrix") && caps.cooperativeMatrix.nv) {
        EXPECT_EQ(caps.cooperativeMatrix.nvShapes.size(),
                  count("vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
        EXPECT_FALSE(caps.cooperativeMatrix.nvShapes.empty());
    } else {
        EXPECT_FALSE(caps.cooperativeMatrix.nv);
        EXPECT_TRUE(caps.cooperativeMatrix.nvShapes.empty());
    }
    if (available("VK_KHR_cooperative_matrix") && caps.cooperativeMatrix.khr) {
        size_t listed = count("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
        // Without bfloat16 cooperative matrices their shapes are left out.
        EXPECT_LE(caps.cooperativeMatrix.khrShapes.size(), listed);
        EXPECT_FALSE(caps.cooperativeMatrix.khrShapes.empty());
        for (const auto& shape : caps.cooperativeMatrix.khrShapes) {
            EXPECT_GT(shape.m * shape.n * shape.k, 0u);
            EXPECT_NE(kp::toString(shape.a).find("unknown"), 0u);
        }
    } else {
        EXPECT_FALSE(caps.cooperativeMatrix.khr);
        EXPECT_TRUE(caps.cooperativeMatrix.khrShapes.empty());
    }
    if (!available("VK_NV_cooperative_matrix2")) {
        EXPECT_FALSE(caps.cooperativeMatrix.nv2.flexibleDimensions);
        EXPECT_TRUE(caps.cooperativeMatrix.nv2.flexibleShapes.empty());
    }
}

TEST_F(CapabilitiesTest, ComponentTypesAndScopesHaveNames)
{
    EXPECT_EQ(kp::toString(kp::ComponentType::eFloat16), "float16");
    EXPECT_EQ(kp::toString(kp::ComponentType::eBFloat16), "bfloat16");
    EXPECT_EQ(kp::toString(kp::ComponentType::eSint8), "sint8");
    EXPECT_EQ(kp::toString(static_cast<kp::ComponentType>(77)), "unknown(77)");
    EXPECT_EQ(kp::toString(kp::MatrixScope::eSubgroup), "subgroup");
}

// --- KOMPUTE_ENV_DISABLE -------------------------------------------------------------

TEST_F(CapabilitiesTest, DisableListTurnsCapabilitiesOffAndShadersNeedingThemAreRefused)
{
    const char* shader = R"(
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer In { float values[]; };
layout(set = 0, binding = 1) buffer Out { float results[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    float16_t h = float16_t(values[i]);
    results[i] = float(h * float16_t(3.0));
}
)";
    std::vector<uint32_t> spirv = compile(shader);
    if (!mgr().capabilities().float16) {
        GTEST_SKIP() << "the device has no float16 arithmetic";
    }
    // Enabled by default: the shader runs.
    auto in = mgr().tensor({ 1.0f, 2.0f, 0.5f, -4.0f });
    auto out = mgr().tensor({ 0.0f, 0.0f, 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, spirv);
    dispatchOnce(mgr(), algorithm, { in }, { out });
    EXPECT_EQ(out->vector(), (std::vector<float>{ 3.0f, 6.0f, 1.5f, -12.0f }));

    auto disabled = managerDisabling(" int-dot, float16 ,coopmat");
    kp::DeviceCapabilities caps = disabled->capabilities();
    EXPECT_FALSE(caps.float16);
    EXPECT_FALSE(caps.integerDotProduct.supported);
    EXPECT_FALSE(caps.cooperativeMatrix.khr || caps.cooperativeMatrix.nv);
    EXPECT_TRUE(row(caps, "shaderFloat16")->supported);
    EXPECT_FALSE(row(caps, "shaderFloat16")->enabled);
    EXPECT_EQ(caps.disabledGroups, withInheritedGroups({ "int-dot", "float16", "coopmat" }));
    // Others stay.
    EXPECT_EQ(caps.int8, mgr().capabilities().int8);
    EXPECT_TRUE(throwsWith([&] { algorithmFor(*disabled, spirv); },
                           { "SPIR-V capability Float16", "shaderFloat16",
                             "KOMPUTE_ENV_DISABLE=float16" }));
}

TEST_F(CapabilitiesTest, UnknownDisableNamesAreReportedWithTheKnownOnes)
{
    LogCapture log;
    auto manager = managerDisabling("coopmatt");
    EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "'coopmatt'"));
    EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "coopmat, "));
    EXPECT_EQ(manager->capabilities().disabledGroups, withInheritedGroups({}));
}

TEST_F(CapabilitiesTest, TheKernelLibrarysPathNamesAreKnownNames)
{
    // The kernel library reads them when it builds an operation: the
    // Manager neither warns about them nor turns any capability off.
    LogCapture log;
    auto manager = managerDisabling("matvec-qx,attention-decode-flash,staged,coopmat-khr");
    EXPECT_FALSE(log.contains(kp::logger::Level::Warn, "KOMPUTE_ENV_DISABLE names"));
    EXPECT_EQ(manager->capabilities().disabledGroups, withInheritedGroups({}));
    // An unknown name beside them is still reported, with the path names.
    LogCapture second;
    auto other = managerDisabling("matvec-qx,matvec-qxx");
    EXPECT_TRUE(second.contains(kp::logger::Level::Warn, "'matvec-qxx'"));
    EXPECT_FALSE(second.contains(kp::logger::Level::Warn, "'matvec-qx'"));
    EXPECT_TRUE(second.contains(kp::logger::Level::Warn, "the kernel library's paths: subgroup, matvec"));
}

TEST_F(CapabilitiesTest, DisabledTimelineSemaphoresAreNotUsed)
{
    auto manager = managerDisabling("timeline-semaphore");
    EXPECT_FALSE(manager->capabilities().timelineSemaphore);
    auto first = manager->sequence();
    auto second = manager->sequence();
    EXPECT_FALSE(first->getTimelineSemaphore());
    // Dependencies still work, through host waits.
    auto tensor = manager->tensor({ 1.0f, 2.0f });
    first->record<kp::OpSyncDevice>({ tensor });
    second->record<kp::OpSyncLocal>({ tensor });
    second->waitFor(first);
    first->evalAsync();
    second->evalAsync();
    second->evalAwait();
    first->evalAwait();
    EXPECT_EQ(tensor->vector(), (std::vector<float>{ 1.0f, 2.0f }));
}

// --- Capabilities a shader declares ------------------------------------------------------

TEST_F(CapabilitiesTest, CapabilitiesTheDeviceLacksAreRefusedNamingTheFeature)
{
    std::vector<uint32_t> spirv = withCapability(compile(kDoubleShader), spv::CapabilitySparseResidency);
    if (mgr().capabilities().enabled("shaderResourceResidency")) {
        EXPECT_NO_THROW(algorithmFor(mgr(), spirv));
    } else {
        EXPECT_TRUE(throwsWith([&] { algorithmFor(mgr(), spirv); },
                               { "SPIR-V capability SparseResidency",
                                 "VkPhysicalDeviceFeatures::shaderResourceResidency",
                                 "does not support it" }));
    }
}

TEST_F(CapabilitiesTest, CapabilitiesOutsideTheTableAreRefused)
{
    for (uint32_t capability : { spv::CapabilityGeometry, spv::CapabilityMultiView }) {
        std::vector<uint32_t> spirv = withCapability(compile(kDoubleShader), capability);
        EXPECT_TRUE(throwsWith([&] { algorithmFor(mgr(), spirv); },
                               { "SPIR-V capability", "cannot use", "capability table" }));
    }
}

TEST_F(CapabilitiesTest, FloatAtomicsRunWhereEnabledAndAreRefusedWhereNot)
{
    const char* shader = R"(
#version 450
#extension GL_EXT_shader_atomic_float : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer In { float values[]; };
layout(set = 0, binding = 1) buffer Sum { float sum; };
void main() { atomicAdd(sum, values[gl_GlobalInvocationID.x]); }
)";
    std::vector<uint32_t> spirv = compile(shader);
    if (mgr().capabilities().float32AtomicAdd) {
        auto in = mgr().tensor({ 1.0f, 2.0f, 3.5f, 0.25f });
        auto sum = mgr().tensor({ 10.0f });
        auto algorithm = mgr().algorithm({ in, sum }, spirv, kp::Workgroup{ 4, 1, 1 });
        dispatchOnce(mgr(), algorithm, { in, sum }, { sum });
        EXPECT_EQ(sum->vector(), (std::vector<float>{ 16.75f }));
    }
    auto disabled = managerDisabling("atomic-float");
    EXPECT_FALSE(disabled->capabilities().float32AtomicAdd);
    EXPECT_TRUE(throwsWith([&] { algorithmFor(*disabled, spirv); },
                           { "SPIR-V capability AtomicFloat32AddEXT",
                             "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT::shaderBufferFloat32AtomicAdd" }));

    const char* doubles = R"(
#version 450
#extension GL_EXT_shader_atomic_float : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Sum { double sum; };
layout(set = 0, binding = 1) buffer Unused { float unused[]; };
void main() { atomicAdd(sum, 1.0lf); }
)";
    std::vector<uint32_t> spirv64 = compile(doubles);
    if (!mgr().capabilities().float64AtomicAdd) {
        EXPECT_TRUE(throwsWith([&] { algorithmFor(mgr(), spirv64); },
                               { "AtomicFloat64AddEXT", "shaderBufferFloat64AtomicAdd" }));
    }
}

TEST_F(CapabilitiesTest, Int64AtomicsRunWhereEnabledAndAreRefusedWhereNot)
{
    const char* shader = R"(
#version 450
#extension GL_EXT_shader_atomic_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Sum { uint64_t sum; };
void main() { atomicAdd(sum, uint64_t(1) << 40); }
)";
    std::vector<uint32_t> spirv = compile(shader);
    if (mgr().capabilities().int64Atomics) {
        auto sum = mgr().tensorT<uint64_t>(std::vector<uint64_t>{ 5 });
        auto algorithm = mgr().algorithm({ sum }, spirv, kp::Workgroup{ 3, 1, 1 });
        dispatchOnce(mgr(), algorithm, { sum }, { sum });
        EXPECT_EQ(sum->vector(), (std::vector<uint64_t>{ 5 + 3 * (uint64_t(1) << 40) }));
    }
    auto disabled = managerDisabling("atomic-int64");
    EXPECT_TRUE(throwsWith([&] { algorithmFor(*disabled, spirv, 1); },
                           { "SPIR-V capability Int64Atomics", "shaderBufferInt64Atomics",
                             "KOMPUTE_ENV_DISABLE=atomic-int64" }));
}

TEST_F(CapabilitiesTest, SubgroupOperationsAreCheckedAgainstTheDevice)
{
    const char* shader = R"(
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer In { float values[]; };
layout(set = 0, binding = 1) buffer Out { float results[]; };
void main() { uint i = gl_GlobalInvocationID.x; results[i] = subgroupAdd(values[i]); }
)";
    std::vector<uint32_t> spirv = compile(shader);
    if (mgr().capabilities().subgroup.operations & vk::SubgroupFeatureFlagBits::eArithmetic) {
        // One invocation per workgroup: each subgroup adds one value.
        auto in = mgr().tensor({ 1.0f, 2.0f, 3.0f });
        auto out = mgr().tensor({ 0.0f, 0.0f, 0.0f });
        auto algorithm = mgr().algorithm({ in, out }, spirv);
        dispatchOnce(mgr(), algorithm, { in }, { out });
        EXPECT_EQ(out->vector(), (std::vector<float>{ 1.0f, 2.0f, 3.0f }));
    }
    auto disabled = managerDisabling("subgroup");
    EXPECT_FALSE(disabled->capabilities().subgroup.operations);
    EXPECT_TRUE(throwsWith([&] { algorithmFor(*disabled, spirv); },
                           { "GroupNonUniform", "KOMPUTE_ENV_DISABLE=subgroup" }));
}

TEST_F(CapabilitiesTest, CooperativeMatricesNeedTheirExtension)
{
    // NVIDIA's: C = A * A for one 16x16 float16 matrix, in one subgroup.
    // A reaches the matrix through shared memory, as in the kernel library:
    // the 1.4.309 layer's SPIR-V analysis takes a cooperative-matrix load
    // straight from a buffer for a write (readonly or not), and reported it
    // racing with the upload before it.
    const char* shader = R"(
#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer A { float16_t a[]; };
layout(set = 0, binding = 1) writeonly buffer C { float c[]; };
shared float16_t staged[256];
void main() {
    for (uint i = gl_LocalInvocationID.x; i < 256u; i += gl_WorkGroupSize.x) {
        staged[i] = a[i];
    }
    barrier();
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma;
    coopMatLoadNV(ma, staged, 0, 16, false);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> mc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    mc = coopMatMulAddNV(ma, ma, mc);
    coopMatStoreNV(mc, c, 0, 16, false);
}
)";
    std::vector<uint32_t> spirv = compile(shader);
    kp::DeviceCapabilities caps = mgr().capabilities();
    bool shape16 = false;
    for (const auto& s : caps.cooperativeMatrix.nvShapes) {
        shape16 = shape16 || (s.m == 16 && s.n == 16 && s.k == 16 && s.a == kp::ComponentType::eFloat16 &&
                              s.c == kp::ComponentType::eFloat32 && s.scope == kp::MatrixScope::eSubgroup);
    }
    if (caps.cooperativeMatrix.nv && shape16) {
        std::vector<kp::float16_t> a(256);
        std::vector<float> expected(256, 0.0f);
        for (int i = 0; i < 256; ++i) {
            a[i] = kp::float16_t(static_cast<float>((i * 7) % 5) - 2.0f);
        }
        for (int r = 0; r < 16; ++r) {
            for (int c = 0; c < 16; ++c) {
                for (int k = 0; k < 16; ++k) {
                    expected[r * 16 + c] += float(a[r * 16 + k]) * float(a[k * 16 + c]);
                }
            }
        }
        auto ta = mgr().tensorT<kp::float16_t>(a);
        auto tc = mgr().tensor(std::vector<float>(256, 0.0f));
        auto algorithm = mgr().algorithm<uint32_t, float>(
          { ta, tc }, spirv, kp::Workgroup{ 1, 1, 1 }, { caps.subgroup.size }, {});
        dispatchOnce(mgr(), algorithm, { ta }, { tc });
        EXPECT_EQ(tc->vector(), expected);
    } else if (!caps.cooperativeMatrix.nv) {
        EXPECT_TRUE(throwsWith(
          [&] {
              auto ta = mgr().tensorT<kp::float16_t>(std::vector<kp::float16_t>(256));
              auto tc = mgr().tensor(std::vector<float>(256, 0.0f));
              mgr().algorithm({ ta, tc }, spirv);
          },
          { "SPIR-V capability CooperativeMatrixNV",
            "VkPhysicalDeviceCooperativeMatrixFeaturesNV::cooperativeMatrix" }));
    }

    // The KHR one: declared by a module the linked SPIRV-Tools may not know.
    std::vector<uint32_t> khr = withCapability(compile(kDoubleShader),
                                               6022 /* CooperativeMatrixKHR */,
                                               "SPV_KHR_cooperative_matrix");
    if (caps.cooperativeMatrix.khr) {
        EXPECT_NO_THROW(algorithmFor(mgr(), khr));
    } else {
        EXPECT_TRUE(throwsWith([&] { algorithmFor(mgr(), khr); },
                               { "SPIR-V capability CooperativeMatrixKHR",
                                 "VkPhysicalDeviceCooperativeMatrixFeaturesKHR::cooperativeMatrix" }));
    }
    std::vector<uint32_t> bf16 = withCapability(compile(kDoubleShader), 5116 /* BFloat16TypeKHR */,
                                                "SPV_KHR_bfloat16");
    if (!caps.bfloat16) {
        EXPECT_TRUE(throwsWith([&] { algorithmFor(mgr(), bf16); },
                               { "SPIR-V capability BFloat16TypeKHR", "shaderBFloat16Type" }));
    }
}

TEST_F(CapabilitiesTest, SpirvExtensionsAreChecked)
{
    std::vector<uint32_t> unknown =
      withCapability(compile(kDoubleShader), spv::CapabilityShader, "SPV_XYZ_not_an_extension");
    EXPECT_TRUE(throwsWith([&] { algorithmFor(mgr(), unknown); },
                           { "SPIR-V extension SPV_XYZ_not_an_extension" }));
    // One a device extension provides, which Kompute does not enable.
    std::vector<uint32_t> amd =
      withCapability(compile(kDoubleShader), spv::CapabilityShader, "SPV_AMD_shader_trinary_minmax");
    EXPECT_TRUE(throwsWith([&] { algorithmFor(mgr(), amd); },
                           { "SPV_AMD_shader_trinary_minmax", "VK_AMD_shader_trinary_minmax" }));
}

TEST_F(CapabilitiesTest, FloatControlsAreCheckedPerWidth)
{
    const char* shader = R"(
#version 450
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 32);
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer In { float values[]; };
layout(set = 0, binding = 1) buffer Out { float results[]; };
void main() { uint i = gl_GlobalInvocationID.x; results[i] = values[i] * 2.0; }
)";
    std::vector<uint32_t> spirv = compile(shader);
    if (mgr().capabilities().floatControls.denormPreserve[1]) {
        EXPECT_NO_THROW(algorithmFor(mgr(), spirv));
    } else {
        EXPECT_TRUE(throwsWith([&] { algorithmFor(mgr(), spirv); },
                               { "DenormPreserve", "32-bit", "shaderDenormPreserveFloat32" }));
    }
}

// --- What a Manager enables on request --------------------------------------------------

TEST_F(CapabilitiesTest, RequestedFeaturesAreMergedWithTheDefaults)
{
    kp::DeviceCapabilities defaults = mgr().capabilities();
    if (defaults.apiVersion < VK_API_VERSION_1_2 || !defaults.storageBuffer16Bit) {
        GTEST_SKIP() << "needs Vulkan 1.2 and 16-bit storage";
    }
    auto enabledNames = [](const kp::DeviceCapabilities& caps) {
        std::vector<std::string> names;
        for (const auto& feature : caps.features) {
            if (feature.enabled) {
                names.push_back(feature.name);
            }
        }
        return names;
    };
    // A core member outside the table, a row through the Vulkan 1.1
    // structure that VkPhysicalDeviceVulkan11Features replaced on this
    // device, and a row through the 1.2 structure.
    vk::PhysicalDeviceVulkan12Features v12;
    v12.shaderInt8 = defaults.int8;
    vk::PhysicalDevice16BitStorageFeatures storage16;
    storage16.storageBuffer16BitAccess = VK_TRUE;
    storage16.pNext = &v12;
    vk::PhysicalDeviceFeatures2 request;
    request.features.robustBufferAccess = VK_TRUE;
    request.pNext = &storage16;
    {
        kp::Manager manager(0, {}, {}, request);
        kp::DeviceCapabilities caps = manager.capabilities();
        // Merged, not replaced: exactly the defaults stay on.
        EXPECT_EQ(enabledNames(caps), enabledNames(defaults));
        EXPECT_EQ(caps.enabledExtensions, defaults.enabledExtensions);
        EXPECT_EQ(runDouble(manager), (std::vector<float>{ 2.0f, 4.0f }));
    }
    // A row that is off by default is turned on by asking for it.
    const kp::DeviceFeature* inputOutput16 = row(defaults, "storageInputOutput16");
    ASSERT_NE(inputOutput16, nullptr);
    EXPECT_FALSE(inputOutput16->enabled);
    if (inputOutput16->supported) {
        vk::PhysicalDeviceVulkan11Features v11;
        v11.storageInputOutput16 = VK_TRUE;
        vk::PhysicalDeviceFeatures2 more;
        more.pNext = &v11;
        kp::Manager manager(0, {}, {}, more);
        EXPECT_TRUE(manager.capabilities().enabled("storageInputOutput16"));
    }
}

TEST_F(CapabilitiesTest, RequestsTheDeviceCannotMeetThrowBeforeTheDeviceIsCreated)
{
    kp::DeviceCapabilities caps = mgr().capabilities();
    if (!row(caps, "cooperativeMatrixNV")->supported) {
        vk::PhysicalDeviceCooperativeMatrixFeaturesNV cooperative;
        cooperative.cooperativeMatrix = VK_TRUE;
        vk::PhysicalDeviceFeatures2 request;
        request.pNext = &cooperative;
        EXPECT_TRUE(throwsWith([&] { kp::Manager manager(0, {}, {}, request); },
                               { "VkPhysicalDeviceCooperativeMatrixFeaturesNV::cooperativeMatrix",
                                 "was requested", "does not support it" }));
    }
    // A structure the table does not know cannot be merged.
    vk::PhysicalDeviceRobustness2FeaturesEXT robustness;
    robustness.nullDescriptor = VK_TRUE;
    vk::PhysicalDeviceFeatures2 unknown;
    unknown.pNext = &robustness;
    EXPECT_TRUE(throwsWith([&] { kp::Manager manager(0, {}, {}, unknown); },
                           { "PhysicalDeviceRobustness2FeaturesEXT", "cannot merge" }));
}

TEST_F(CapabilitiesTest, MembersOutsideTheTableReachTheDriver)
{
    vk::PhysicalDevice physical = *mgr().getVkPhysicalDevice();
    if (physical.getFeatures().sparseBinding) {
        GTEST_SKIP() << "needs a device without sparseBinding";
    }
    vk::PhysicalDeviceFeatures2 request;
    request.features.sparseBinding = VK_TRUE;
    try {
        kp::Manager manager(0, {}, {}, request);
        ADD_FAILURE() << "a device was created with a feature the driver lacks";
    } catch (const kp::VulkanError& error) {
        EXPECT_EQ(error.result(), vk::Result::eErrorFeatureNotPresent) << error.what();
    }
    // The validation layer reports the unsupported feature too: expected.
    resetValidationErrors();
}
