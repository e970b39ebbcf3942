// SPDX-License-Identifier: Apache-2.0
#include "internal/Capabilities.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sstream>

#include <spirv/unified1/spirv.hpp>

#include "internal/Check.hpp"
#include "internal/Environment.hpp"
#include "internal/SpirvReflection.hpp"
#include "kernels/KernelSupport.hpp"
#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

using logger::format;

namespace {

constexpr uint32_t kNever = UINT32_MAX;

// --- The feature structures ---------------------------------------------------

struct StructInfo
{
    const char* name;
    VkStructureType sType;
    size_t size;
    /** The structure can be used without an extension from this version. */
    uint32_t coreSince;
    /** From this version another structure holds its members (Vulkan 1.2
     * folded the 1.1 and promoted structures into VkPhysicalDeviceVulkan1x-
     * Features, which must not be chained together with them). */
    uint32_t replacedSince;
    /** The extension that provides it before coreSince, and the extension
     * that one depends on (both null for core structures). */
    const char* extension;
    const char* dependency;
};

// Indexed by FeatureStruct.
const StructInfo kStructs[] = {
    { "VkPhysicalDeviceFeatures", VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
      sizeof(VkPhysicalDeviceFeatures2), VK_API_VERSION_1_0, kNever, nullptr, nullptr },
    { "VkPhysicalDeviceVulkan11Features", VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
      sizeof(VkPhysicalDeviceVulkan11Features), VK_API_VERSION_1_2, kNever, nullptr, nullptr },
    { "VkPhysicalDeviceVulkan12Features", VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      sizeof(VkPhysicalDeviceVulkan12Features), VK_API_VERSION_1_2, kNever, nullptr, nullptr },
    { "VkPhysicalDeviceVulkan13Features", VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
      sizeof(VkPhysicalDeviceVulkan13Features), VK_API_VERSION_1_3, kNever, nullptr, nullptr },
    { "VkPhysicalDevice16BitStorageFeatures", VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
      sizeof(VkPhysicalDevice16BitStorageFeatures), VK_API_VERSION_1_1, VK_API_VERSION_1_2,
      "VK_KHR_16bit_storage", nullptr },
    { "VkPhysicalDeviceVariablePointersFeatures",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES,
      sizeof(VkPhysicalDeviceVariablePointersFeatures), VK_API_VERSION_1_1, VK_API_VERSION_1_2,
      "VK_KHR_variable_pointers", nullptr },
    { "VkPhysicalDeviceShaderFloat16Int8Features",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
      sizeof(VkPhysicalDeviceShaderFloat16Int8Features), VK_API_VERSION_1_2, VK_API_VERSION_1_2,
      "VK_KHR_shader_float16_int8", nullptr },
    { "VkPhysicalDevice8BitStorageFeatures", VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
      sizeof(VkPhysicalDevice8BitStorageFeatures), VK_API_VERSION_1_2, VK_API_VERSION_1_2,
      "VK_KHR_8bit_storage", nullptr },
    { "VkPhysicalDeviceShaderAtomicInt64Features",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES,
      sizeof(VkPhysicalDeviceShaderAtomicInt64Features), VK_API_VERSION_1_2, VK_API_VERSION_1_2,
      "VK_KHR_shader_atomic_int64", nullptr },
    { "VkPhysicalDeviceTimelineSemaphoreFeatures",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
      sizeof(VkPhysicalDeviceTimelineSemaphoreFeatures), VK_API_VERSION_1_2, VK_API_VERSION_1_2,
      "VK_KHR_timeline_semaphore", nullptr },
    { "VkPhysicalDeviceBufferDeviceAddressFeatures",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
      sizeof(VkPhysicalDeviceBufferDeviceAddressFeatures), VK_API_VERSION_1_2, VK_API_VERSION_1_2,
      "VK_KHR_buffer_device_address", nullptr },
    { "VkPhysicalDeviceVulkanMemoryModelFeatures",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
      sizeof(VkPhysicalDeviceVulkanMemoryModelFeatures), VK_API_VERSION_1_2, VK_API_VERSION_1_2,
      "VK_KHR_vulkan_memory_model", nullptr },
    { "VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_EXTENDED_TYPES_FEATURES,
      sizeof(VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures), VK_API_VERSION_1_2,
      VK_API_VERSION_1_2, "VK_KHR_shader_subgroup_extended_types", nullptr },
    { "VkPhysicalDeviceScalarBlockLayoutFeatures",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES,
      sizeof(VkPhysicalDeviceScalarBlockLayoutFeatures), VK_API_VERSION_1_2, VK_API_VERSION_1_2,
      "VK_EXT_scalar_block_layout", nullptr },
    { "VkPhysicalDeviceSubgroupSizeControlFeatures",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
      sizeof(VkPhysicalDeviceSubgroupSizeControlFeatures), VK_API_VERSION_1_3, VK_API_VERSION_1_3,
      "VK_EXT_subgroup_size_control", nullptr },
    { "VkPhysicalDeviceShaderIntegerDotProductFeatures",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
      sizeof(VkPhysicalDeviceShaderIntegerDotProductFeatures), VK_API_VERSION_1_3,
      VK_API_VERSION_1_3, "VK_KHR_shader_integer_dot_product", nullptr },
    { "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
      sizeof(VkPhysicalDeviceShaderAtomicFloatFeaturesEXT), kNever, kNever,
      "VK_EXT_shader_atomic_float", nullptr },
    { "VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT,
      sizeof(VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT), kNever, kNever,
      "VK_EXT_shader_atomic_float2", "VK_EXT_shader_atomic_float" },
    { "VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_WORKGROUP_MEMORY_EXPLICIT_LAYOUT_FEATURES_KHR,
      sizeof(VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR), kNever, kNever,
      "VK_KHR_workgroup_memory_explicit_layout", nullptr },
    { "VkPhysicalDeviceShaderClockFeaturesKHR",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR,
      sizeof(VkPhysicalDeviceShaderClockFeaturesKHR), kNever, kNever, "VK_KHR_shader_clock",
      nullptr },
    { "VkPhysicalDeviceShaderSMBuiltinsFeaturesNV",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_FEATURES_NV,
      sizeof(VkPhysicalDeviceShaderSMBuiltinsFeaturesNV), kNever, kNever,
      "VK_NV_shader_sm_builtins", nullptr },
    { "VkPhysicalDeviceCooperativeMatrixFeaturesNV",
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
      sizeof(VkPhysicalDeviceCooperativeMatrixFeaturesNV), kNever, kNever,
      "VK_NV_cooperative_matrix", nullptr },
    { "VkPhysicalDeviceCooperativeMatrixFeaturesKHR",
      vkx::kStructPhysicalDeviceCooperativeMatrixFeaturesKHR,
      sizeof(vkx::CooperativeMatrixFeaturesKHR), kNever, kNever, vkx::kCooperativeMatrixKHR,
      nullptr },
    { "VkPhysicalDeviceCooperativeMatrix2FeaturesNV",
      vkx::kStructPhysicalDeviceCooperativeMatrix2FeaturesNV,
      sizeof(vkx::CooperativeMatrix2FeaturesNV), kNever, kNever, vkx::kCooperativeMatrix2NV,
      vkx::kCooperativeMatrixKHR },
    { "VkPhysicalDeviceShaderBfloat16FeaturesKHR",
      vkx::kStructPhysicalDeviceShaderBfloat16FeaturesKHR,
      sizeof(vkx::ShaderBfloat16FeaturesKHR), kNever, kNever, vkx::kShaderBfloat16KHR, nullptr },
};
static_assert(sizeof(kStructs) / sizeof(kStructs[0]) == static_cast<size_t>(FeatureStruct::eCount),
              "kStructs must have one entry per FeatureStruct");

const StructInfo&
info(FeatureStruct which)
{
    return kStructs[static_cast<size_t>(which)];
}

// --- The rows ---------------------------------------------------------------------

struct Location
{
    FeatureStruct where = FeatureStruct::eCount;
    size_t offset = 0;
};

#define KP_CORE(member)                                                                            \
    Location                                                                                       \
    {                                                                                              \
        FeatureStruct::eCore,                                                                      \
          offsetof(VkPhysicalDeviceFeatures2, features) + offsetof(VkPhysicalDeviceFeatures, member) \
    }
#define KP_AT(which, type, member)                                                                 \
    Location                                                                                       \
    {                                                                                              \
        FeatureStruct::which, offsetof(type, member)                                               \
    }
#define KP_V11(member) KP_AT(eVulkan11, VkPhysicalDeviceVulkan11Features, member)
#define KP_V12(member) KP_AT(eVulkan12, VkPhysicalDeviceVulkan12Features, member)
#define KP_V13(member) KP_AT(eVulkan13, VkPhysicalDeviceVulkan13Features, member)

struct Row
{
    /** Unique name (the Vulkan member, suffixed where two share one). */
    const char* name;
    /** Comma-separated KOMPUTE_ENV_DISABLE names that turn it off. */
    const char* groups;
    /** Where it lives: the first location usable on the device. */
    Location primary;
    Location fallback;
    /** Enabled on devices Kompute creates, when supported. Off only for
     * what costs performance or concerns graphics. */
    bool byDefault = true;
    /** A row that must be enabled for this one to be (null: none). */
    const char* needs = nullptr;
    /** Rows without a feature member: an extension (core from coreSince). */
    const char* extension = nullptr;
    uint32_t extensionCoreSince = kNever;
};

// clang-format off
const Row kRows[] = {
    // Arithmetic types.
    { "shaderFloat64", "float64", KP_CORE(shaderFloat64), {} },
    { "shaderInt64", "int64", KP_CORE(shaderInt64), {} },
    { "shaderInt16", "int16", KP_CORE(shaderInt16), {} },
    { "shaderFloat16", "float16", KP_V12(shaderFloat16),
      KP_AT(eShaderFloat16Int8, VkPhysicalDeviceShaderFloat16Int8Features, shaderFloat16) },
    { "shaderInt8", "int8", KP_V12(shaderInt8),
      KP_AT(eShaderFloat16Int8, VkPhysicalDeviceShaderFloat16Int8Features, shaderInt8) },
    // 16- and 8-bit storage.
    { "storageBuffer16BitAccess", "storage16", KP_V11(storageBuffer16BitAccess),
      KP_AT(e16BitStorage, VkPhysicalDevice16BitStorageFeatures, storageBuffer16BitAccess) },
    { "uniformAndStorageBuffer16BitAccess", "storage16", KP_V11(uniformAndStorageBuffer16BitAccess),
      KP_AT(e16BitStorage, VkPhysicalDevice16BitStorageFeatures, uniformAndStorageBuffer16BitAccess) },
    { "storagePushConstant16", "storage16", KP_V11(storagePushConstant16),
      KP_AT(e16BitStorage, VkPhysicalDevice16BitStorageFeatures, storagePushConstant16) },
    { "storageInputOutput16", "storage16", KP_V11(storageInputOutput16),
      KP_AT(e16BitStorage, VkPhysicalDevice16BitStorageFeatures, storageInputOutput16),
      false }, // shader stage inputs/outputs: graphics only
    { "storageBuffer8BitAccess", "storage8", KP_V12(storageBuffer8BitAccess),
      KP_AT(e8BitStorage, VkPhysicalDevice8BitStorageFeatures, storageBuffer8BitAccess) },
    { "uniformAndStorageBuffer8BitAccess", "storage8", KP_V12(uniformAndStorageBuffer8BitAccess),
      KP_AT(e8BitStorage, VkPhysicalDevice8BitStorageFeatures, uniformAndStorageBuffer8BitAccess) },
    { "storagePushConstant8", "storage8", KP_V12(storagePushConstant8),
      KP_AT(e8BitStorage, VkPhysicalDevice8BitStorageFeatures, storagePushConstant8) },
    // Atomics.
    { "shaderBufferInt64Atomics", "atomic-int64", KP_V12(shaderBufferInt64Atomics),
      KP_AT(eShaderAtomicInt64, VkPhysicalDeviceShaderAtomicInt64Features, shaderBufferInt64Atomics) },
    { "shaderSharedInt64Atomics", "atomic-int64", KP_V12(shaderSharedInt64Atomics),
      KP_AT(eShaderAtomicInt64, VkPhysicalDeviceShaderAtomicInt64Features, shaderSharedInt64Atomics) },
#define KP_FLOAT_ATOMIC(member) \
    { #member, "atomic-float", KP_AT(eShaderAtomicFloat, VkPhysicalDeviceShaderAtomicFloatFeaturesEXT, member), {} }
#define KP_FLOAT_ATOMIC2(member) \
    { #member, "atomic-float", KP_AT(eShaderAtomicFloat2, VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT, member), {} }
    KP_FLOAT_ATOMIC(shaderBufferFloat32Atomics),
    KP_FLOAT_ATOMIC(shaderBufferFloat32AtomicAdd),
    KP_FLOAT_ATOMIC(shaderBufferFloat64Atomics),
    KP_FLOAT_ATOMIC(shaderBufferFloat64AtomicAdd),
    KP_FLOAT_ATOMIC(shaderSharedFloat32Atomics),
    KP_FLOAT_ATOMIC(shaderSharedFloat32AtomicAdd),
    KP_FLOAT_ATOMIC(shaderSharedFloat64Atomics),
    KP_FLOAT_ATOMIC(shaderSharedFloat64AtomicAdd),
    KP_FLOAT_ATOMIC(shaderImageFloat32Atomics),
    KP_FLOAT_ATOMIC(shaderImageFloat32AtomicAdd),
    KP_FLOAT_ATOMIC2(shaderBufferFloat16Atomics),
    KP_FLOAT_ATOMIC2(shaderBufferFloat16AtomicAdd),
    KP_FLOAT_ATOMIC2(shaderBufferFloat16AtomicMinMax),
    KP_FLOAT_ATOMIC2(shaderBufferFloat32AtomicMinMax),
    KP_FLOAT_ATOMIC2(shaderBufferFloat64AtomicMinMax),
    KP_FLOAT_ATOMIC2(shaderSharedFloat16Atomics),
    KP_FLOAT_ATOMIC2(shaderSharedFloat16AtomicAdd),
    KP_FLOAT_ATOMIC2(shaderSharedFloat16AtomicMinMax),
    KP_FLOAT_ATOMIC2(shaderSharedFloat32AtomicMinMax),
    KP_FLOAT_ATOMIC2(shaderSharedFloat64AtomicMinMax),
    KP_FLOAT_ATOMIC2(shaderImageFloat32AtomicMinMax),
#undef KP_FLOAT_ATOMIC
#undef KP_FLOAT_ATOMIC2
    // bfloat16 (VK_KHR_shader_bfloat16).
    { "shaderBFloat16Type", "bfloat16",
      KP_AT(eShaderBfloat16, vkx::ShaderBfloat16FeaturesKHR, shaderBFloat16Type), {} },
    { "shaderBFloat16DotProduct", "bfloat16",
      KP_AT(eShaderBfloat16, vkx::ShaderBfloat16FeaturesKHR, shaderBFloat16DotProduct), {} },
    { "shaderBFloat16CooperativeMatrix", "bfloat16,coopmat",
      KP_AT(eShaderBfloat16, vkx::ShaderBfloat16FeaturesKHR, shaderBFloat16CooperativeMatrix), {},
      true, "cooperativeMatrix" },
    // Integer dot product.
    { "shaderIntegerDotProduct", "int-dot", KP_V13(shaderIntegerDotProduct),
      KP_AT(eShaderIntegerDotProduct, VkPhysicalDeviceShaderIntegerDotProductFeatures,
            shaderIntegerDotProduct) },
    // Subgroups.
    { "subgroupSizeControl", "subgroup-size-control", KP_V13(subgroupSizeControl),
      KP_AT(eSubgroupSizeControl, VkPhysicalDeviceSubgroupSizeControlFeatures, subgroupSizeControl) },
    { "computeFullSubgroups", "subgroup-size-control", KP_V13(computeFullSubgroups),
      KP_AT(eSubgroupSizeControl, VkPhysicalDeviceSubgroupSizeControlFeatures, computeFullSubgroups) },
    { "shaderSubgroupExtendedTypes", "subgroup", KP_V12(shaderSubgroupExtendedTypes),
      KP_AT(eSubgroupExtendedTypes, VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures,
            shaderSubgroupExtendedTypes) },
    // Cooperative matrices.
    { "cooperativeMatrix", "coopmat",
      KP_AT(eCooperativeMatrixKHR, vkx::CooperativeMatrixFeaturesKHR, cooperativeMatrix), {} },
    { "cooperativeMatrixRobustBufferAccess", "coopmat",
      KP_AT(eCooperativeMatrixKHR, vkx::CooperativeMatrixFeaturesKHR,
            cooperativeMatrixRobustBufferAccess), {},
      false, "cooperativeMatrix" }, // only matters with robustBufferAccess, which costs speed
    { "cooperativeMatrixNV", "coopmat",
      KP_AT(eCooperativeMatrixNV, VkPhysicalDeviceCooperativeMatrixFeaturesNV, cooperativeMatrix), {} },
    { "cooperativeMatrixRobustBufferAccessNV", "coopmat",
      KP_AT(eCooperativeMatrixNV, VkPhysicalDeviceCooperativeMatrixFeaturesNV,
            cooperativeMatrixRobustBufferAccess), {},
      false, "cooperativeMatrixNV" },
#define KP_COOPMAT2(member) \
    { #member, "coopmat,coopmat2", KP_AT(eCooperativeMatrix2NV, vkx::CooperativeMatrix2FeaturesNV, member), {}, \
      true, "cooperativeMatrix" }
    KP_COOPMAT2(cooperativeMatrixWorkgroupScope),
    KP_COOPMAT2(cooperativeMatrixFlexibleDimensions),
    KP_COOPMAT2(cooperativeMatrixReductions),
    KP_COOPMAT2(cooperativeMatrixConversions),
    KP_COOPMAT2(cooperativeMatrixPerElementOperations),
    KP_COOPMAT2(cooperativeMatrixTensorAddressing),
    KP_COOPMAT2(cooperativeMatrixBlockLoads),
#undef KP_COOPMAT2
    // Memory model, addressing and layout.
    { "bufferDeviceAddress", "buffer-device-address", KP_V12(bufferDeviceAddress),
      KP_AT(eBufferDeviceAddress, VkPhysicalDeviceBufferDeviceAddressFeatures, bufferDeviceAddress) },
    { "bufferDeviceAddressCaptureReplay", "buffer-device-address",
      KP_V12(bufferDeviceAddressCaptureReplay),
      KP_AT(eBufferDeviceAddress, VkPhysicalDeviceBufferDeviceAddressFeatures,
            bufferDeviceAddressCaptureReplay),
      false }, // for capture tools; may cost speed
    { "bufferDeviceAddressMultiDevice", "buffer-device-address",
      KP_V12(bufferDeviceAddressMultiDevice),
      KP_AT(eBufferDeviceAddress, VkPhysicalDeviceBufferDeviceAddressFeatures,
            bufferDeviceAddressMultiDevice),
      false },
    { "vulkanMemoryModel", "memory-model", KP_V12(vulkanMemoryModel),
      KP_AT(eVulkanMemoryModel, VkPhysicalDeviceVulkanMemoryModelFeatures, vulkanMemoryModel) },
    { "vulkanMemoryModelDeviceScope", "memory-model", KP_V12(vulkanMemoryModelDeviceScope),
      KP_AT(eVulkanMemoryModel, VkPhysicalDeviceVulkanMemoryModelFeatures,
            vulkanMemoryModelDeviceScope) },
    { "vulkanMemoryModelAvailabilityVisibilityChains", "memory-model",
      KP_V12(vulkanMemoryModelAvailabilityVisibilityChains),
      KP_AT(eVulkanMemoryModel, VkPhysicalDeviceVulkanMemoryModelFeatures,
            vulkanMemoryModelAvailabilityVisibilityChains) },
    { "variablePointersStorageBuffer", "variable-pointers", KP_V11(variablePointersStorageBuffer),
      KP_AT(eVariablePointers, VkPhysicalDeviceVariablePointersFeatures, variablePointersStorageBuffer) },
    { "variablePointers", "variable-pointers", KP_V11(variablePointers),
      KP_AT(eVariablePointers, VkPhysicalDeviceVariablePointersFeatures, variablePointers) },
    { "scalarBlockLayout", "scalar-block-layout", KP_V12(scalarBlockLayout),
      KP_AT(eScalarBlockLayout, VkPhysicalDeviceScalarBlockLayoutFeatures, scalarBlockLayout) },
    { "workgroupMemoryExplicitLayout", "workgroup-layout",
      KP_AT(eWorkgroupMemoryExplicitLayout, VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR,
            workgroupMemoryExplicitLayout), {} },
    { "workgroupMemoryExplicitLayoutScalarBlockLayout", "workgroup-layout",
      KP_AT(eWorkgroupMemoryExplicitLayout, VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR,
            workgroupMemoryExplicitLayoutScalarBlockLayout), {} },
    { "workgroupMemoryExplicitLayout8BitAccess", "workgroup-layout",
      KP_AT(eWorkgroupMemoryExplicitLayout, VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR,
            workgroupMemoryExplicitLayout8BitAccess), {} },
    { "workgroupMemoryExplicitLayout16BitAccess", "workgroup-layout",
      KP_AT(eWorkgroupMemoryExplicitLayout, VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR,
            workgroupMemoryExplicitLayout16BitAccess), {} },
    // LocalSizeId execution modes need it.
    { "maintenance4", "maintenance4", KP_V13(maintenance4), {} },
    // Synchronisation.
    { "timelineSemaphore", "timeline-semaphore", KP_V12(timelineSemaphore),
      KP_AT(eTimelineSemaphore, VkPhysicalDeviceTimelineSemaphoreFeatures, timelineSemaphore) },
    // Shader clocks and NVIDIA's SM built-ins.
    { "shaderSubgroupClock", "shader-clock",
      KP_AT(eShaderClock, VkPhysicalDeviceShaderClockFeaturesKHR, shaderSubgroupClock), {} },
    { "shaderDeviceClock", "shader-clock",
      KP_AT(eShaderClock, VkPhysicalDeviceShaderClockFeaturesKHR, shaderDeviceClock), {} },
    { "shaderSMBuiltins", "sm-builtins",
      KP_AT(eShaderSMBuiltins, VkPhysicalDeviceShaderSMBuiltinsFeaturesNV, shaderSMBuiltins), {} },
    // Images (storage images are Kompute's; the rest is for completeness).
    { "shaderStorageImageReadWithoutFormat", "image", KP_CORE(shaderStorageImageReadWithoutFormat), {} },
    { "shaderStorageImageWriteWithoutFormat", "image", KP_CORE(shaderStorageImageWriteWithoutFormat), {} },
    { "shaderStorageImageMultisample", "image", KP_CORE(shaderStorageImageMultisample), {} },
    { "shaderImageGatherExtended", "image", KP_CORE(shaderImageGatherExtended), {} },
    { "imageCubeArray", "image", KP_CORE(imageCubeArray), {} },
    { "shaderResourceResidency", "image", KP_CORE(shaderResourceResidency), {} },
    { "shaderResourceMinLod", "image", KP_CORE(shaderResourceMinLod), {} },
    // Extensions without a feature member.
    { "shaderFloatControls", "float-controls", {}, {}, true, nullptr,
      "VK_KHR_shader_float_controls", VK_API_VERSION_1_2 },
    { "shaderNonSemanticInfo", "non-semantic-info", {}, {}, true, nullptr,
      "VK_KHR_shader_non_semantic_info", VK_API_VERSION_1_3 },
};
// clang-format on

constexpr size_t kRowCount = sizeof(kRows) / sizeof(kRows[0]);

#undef KP_CORE
#undef KP_AT
#undef KP_V11
#undef KP_V12
#undef KP_V13

size_t
rowIndex(const std::string& name)
{
    for (size_t i = 0; i < kRowCount; ++i) {
        if (name == kRows[i].name) {
            return i;
        }
    }
    throw std::logic_error("Kompute's capability table has no row named " + name);
}

bool
inGroup(const Row& row, const std::string& group)
{
    for (const auto& name : splitList(row.groups)) {
        if (name == group) {
            return true;
        }
    }
    return false;
}

// --- SPIR-V capabilities and what they need -----------------------------------------

enum class Special
{
    eNone,
    eSubgroupOperation,  // `bit` of subgroupSupportedOperations, in compute
    eFloatControls,      // a float-controls property (checked per execution mode)
    eCooperativeMatrixKHR, // and cooperativeMatrixSupportedStages has compute
    eCooperativeMatrixNV,
};

struct CapabilityRule
{
    uint32_t capability;
    const char* name;
    /** Allowed if any of these rows is enabled (comma-separated), or the
     * device's Vulkan version is at least `version`, or `extension` is
     * enabled (each optional). */
    const char* rows;
    uint32_t version;
    const char* extension;
    Special special = Special::eNone;
    uint32_t bit = 0;
};

constexpr uint32_t kAlways = VK_API_VERSION_1_0;

// From the Vulkan specification's SPIR-V environment appendix (the
// <spirvcapabilities> of vk.xml), limited to what a compute shader can use.
// clang-format off
const CapabilityRule kCapabilityRules[] = {
    { spv::CapabilityMatrix, "Matrix", nullptr, kAlways, nullptr },
    { spv::CapabilityShader, "Shader", nullptr, kAlways, nullptr },
    { spv::CapabilityInputAttachment, "InputAttachment", nullptr, kAlways, nullptr },
    { spv::CapabilitySampled1D, "Sampled1D", nullptr, kAlways, nullptr },
    { spv::CapabilityImage1D, "Image1D", nullptr, kAlways, nullptr },
    { spv::CapabilitySampledBuffer, "SampledBuffer", nullptr, kAlways, nullptr },
    { spv::CapabilityImageBuffer, "ImageBuffer", nullptr, kAlways, nullptr },
    { spv::CapabilityImageQuery, "ImageQuery", nullptr, kAlways, nullptr },
    { spv::CapabilityDerivativeControl, "DerivativeControl", nullptr, kAlways, nullptr },
    { spv::CapabilityStorageImageExtendedFormats, "StorageImageExtendedFormats", nullptr, kAlways, nullptr },
    { spv::CapabilityDeviceGroup, "DeviceGroup", nullptr, VK_API_VERSION_1_1, "VK_KHR_device_group" },
    { spv::CapabilityShaderNonUniform, "ShaderNonUniform", nullptr, VK_API_VERSION_1_2, "VK_EXT_descriptor_indexing" },
    { spv::CapabilityFloat64, "Float64", "shaderFloat64", 0, nullptr },
    { spv::CapabilityInt64, "Int64", "shaderInt64", 0, nullptr },
    { spv::CapabilityInt16, "Int16", "shaderInt16", 0, nullptr },
    { spv::CapabilityFloat16, "Float16", "shaderFloat16", 0, "VK_AMD_gpu_shader_half_float" },
    { spv::CapabilityInt8, "Int8", "shaderInt8", 0, nullptr },
    { spv::CapabilityStorageBuffer16BitAccess, "StorageBuffer16BitAccess", "storageBuffer16BitAccess", 0, nullptr },
    { spv::CapabilityUniformAndStorageBuffer16BitAccess, "UniformAndStorageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess", 0, nullptr },
    { spv::CapabilityStoragePushConstant16, "StoragePushConstant16", "storagePushConstant16", 0, nullptr },
    { spv::CapabilityStorageInputOutput16, "StorageInputOutput16", "storageInputOutput16", 0, nullptr },
    { spv::CapabilityStorageBuffer8BitAccess, "StorageBuffer8BitAccess", "storageBuffer8BitAccess", 0, nullptr },
    { spv::CapabilityUniformAndStorageBuffer8BitAccess, "UniformAndStorageBuffer8BitAccess", "uniformAndStorageBuffer8BitAccess", 0, nullptr },
    { spv::CapabilityStoragePushConstant8, "StoragePushConstant8", "storagePushConstant8", 0, nullptr },
    { spv::CapabilityInt64Atomics, "Int64Atomics", "shaderBufferInt64Atomics,shaderSharedInt64Atomics", 0, nullptr },
    { spv::CapabilityAtomicFloat16AddEXT, "AtomicFloat16AddEXT", "shaderBufferFloat16AtomicAdd,shaderSharedFloat16AtomicAdd", 0, nullptr },
    { spv::CapabilityAtomicFloat32AddEXT, "AtomicFloat32AddEXT", "shaderBufferFloat32AtomicAdd,shaderSharedFloat32AtomicAdd,shaderImageFloat32AtomicAdd", 0, nullptr },
    { spv::CapabilityAtomicFloat64AddEXT, "AtomicFloat64AddEXT", "shaderBufferFloat64AtomicAdd,shaderSharedFloat64AtomicAdd", 0, nullptr },
    { spv::CapabilityAtomicFloat16MinMaxEXT, "AtomicFloat16MinMaxEXT", "shaderBufferFloat16AtomicMinMax,shaderSharedFloat16AtomicMinMax", 0, nullptr },
    { spv::CapabilityAtomicFloat32MinMaxEXT, "AtomicFloat32MinMaxEXT", "shaderBufferFloat32AtomicMinMax,shaderSharedFloat32AtomicMinMax,shaderImageFloat32AtomicMinMax", 0, nullptr },
    { spv::CapabilityAtomicFloat64MinMaxEXT, "AtomicFloat64MinMaxEXT", "shaderBufferFloat64AtomicMinMax,shaderSharedFloat64AtomicMinMax", 0, nullptr },
    { vkx::spirv::kCapabilityBFloat16TypeKHR, "BFloat16TypeKHR", "shaderBFloat16Type", 0, nullptr },
    { vkx::spirv::kCapabilityBFloat16DotProductKHR, "BFloat16DotProductKHR", "shaderBFloat16DotProduct", 0, nullptr },
    { vkx::spirv::kCapabilityBFloat16CooperativeMatrixKHR, "BFloat16CooperativeMatrixKHR", "shaderBFloat16CooperativeMatrix", 0, nullptr },
    { spv::CapabilityDotProductInputAll, "DotProductInputAll", "shaderIntegerDotProduct", 0, nullptr },
    { spv::CapabilityDotProductInput4x8Bit, "DotProductInput4x8Bit", "shaderIntegerDotProduct", 0, nullptr },
    { spv::CapabilityDotProductInput4x8BitPacked, "DotProductInput4x8BitPacked", "shaderIntegerDotProduct", 0, nullptr },
    { spv::CapabilityDotProduct, "DotProduct", "shaderIntegerDotProduct", 0, nullptr },
    { spv::CapabilityGroupNonUniform, "GroupNonUniform", nullptr, 0, nullptr, Special::eSubgroupOperation, VK_SUBGROUP_FEATURE_BASIC_BIT },
    { spv::CapabilityGroupNonUniformVote, "GroupNonUniformVote", nullptr, 0, nullptr, Special::eSubgroupOperation, VK_SUBGROUP_FEATURE_VOTE_BIT },
    { spv::CapabilityGroupNonUniformArithmetic, "GroupNonUniformArithmetic", nullptr, 0, nullptr, Special::eSubgroupOperation, VK_SUBGROUP_FEATURE_ARITHMETIC_BIT },
    { spv::CapabilityGroupNonUniformBallot, "GroupNonUniformBallot", nullptr, 0, nullptr, Special::eSubgroupOperation, VK_SUBGROUP_FEATURE_BALLOT_BIT },
    { spv::CapabilityGroupNonUniformShuffle, "GroupNonUniformShuffle", nullptr, 0, nullptr, Special::eSubgroupOperation, VK_SUBGROUP_FEATURE_SHUFFLE_BIT },
    { spv::CapabilityGroupNonUniformShuffleRelative, "GroupNonUniformShuffleRelative", nullptr, 0, nullptr, Special::eSubgroupOperation, VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT },
    { spv::CapabilityGroupNonUniformClustered, "GroupNonUniformClustered", nullptr, 0, nullptr, Special::eSubgroupOperation, VK_SUBGROUP_FEATURE_CLUSTERED_BIT },
    { spv::CapabilityGroupNonUniformQuad, "GroupNonUniformQuad", nullptr, 0, nullptr, Special::eSubgroupOperation, VK_SUBGROUP_FEATURE_QUAD_BIT },
    { spv::CapabilitySubgroupBallotKHR, "SubgroupBallotKHR", nullptr, 0, "VK_EXT_shader_subgroup_ballot" },
    { spv::CapabilitySubgroupVoteKHR, "SubgroupVoteKHR", nullptr, 0, "VK_EXT_shader_subgroup_vote" },
    { vkx::spirv::kCapabilityCooperativeMatrixKHR, "CooperativeMatrixKHR", "cooperativeMatrix", 0, nullptr, Special::eCooperativeMatrixKHR },
    { spv::CapabilityCooperativeMatrixNV, "CooperativeMatrixNV", "cooperativeMatrixNV", 0, nullptr, Special::eCooperativeMatrixNV },
    { vkx::spirv::kCapabilityCooperativeMatrixReductionsNV, "CooperativeMatrixReductionsNV", "cooperativeMatrixReductions", 0, nullptr },
    { vkx::spirv::kCapabilityCooperativeMatrixConversionsNV, "CooperativeMatrixConversionsNV", "cooperativeMatrixConversions", 0, nullptr },
    { vkx::spirv::kCapabilityCooperativeMatrixPerElementOperationsNV, "CooperativeMatrixPerElementOperationsNV", "cooperativeMatrixPerElementOperations", 0, nullptr },
    { vkx::spirv::kCapabilityCooperativeMatrixTensorAddressingNV, "CooperativeMatrixTensorAddressingNV", "cooperativeMatrixTensorAddressing", 0, nullptr },
    { vkx::spirv::kCapabilityCooperativeMatrixBlockLoadsNV, "CooperativeMatrixBlockLoadsNV", "cooperativeMatrixBlockLoads", 0, nullptr },
    { vkx::spirv::kCapabilityTensorAddressingNV, "TensorAddressingNV", "cooperativeMatrixTensorAddressing", 0, nullptr },
    { spv::CapabilityVulkanMemoryModel, "VulkanMemoryModel", "vulkanMemoryModel", 0, nullptr },
    { spv::CapabilityVulkanMemoryModelDeviceScope, "VulkanMemoryModelDeviceScope", "vulkanMemoryModelDeviceScope", 0, nullptr },
    { spv::CapabilityPhysicalStorageBufferAddresses, "PhysicalStorageBufferAddresses", "bufferDeviceAddress", 0, nullptr },
    { spv::CapabilityVariablePointersStorageBuffer, "VariablePointersStorageBuffer", "variablePointersStorageBuffer", 0, nullptr },
    { spv::CapabilityVariablePointers, "VariablePointers", "variablePointers", 0, nullptr },
    { spv::CapabilityWorkgroupMemoryExplicitLayoutKHR, "WorkgroupMemoryExplicitLayoutKHR", "workgroupMemoryExplicitLayout", 0, nullptr },
    { spv::CapabilityWorkgroupMemoryExplicitLayout8BitAccessKHR, "WorkgroupMemoryExplicitLayout8BitAccessKHR", "workgroupMemoryExplicitLayout8BitAccess", 0, nullptr },
    { spv::CapabilityWorkgroupMemoryExplicitLayout16BitAccessKHR, "WorkgroupMemoryExplicitLayout16BitAccessKHR", "workgroupMemoryExplicitLayout16BitAccess", 0, nullptr },
    { spv::CapabilityShaderClockKHR, "ShaderClockKHR", "shaderSubgroupClock,shaderDeviceClock", 0, nullptr },
    { spv::CapabilityShaderSMBuiltinsNV, "ShaderSMBuiltinsNV", "shaderSMBuiltins", 0, nullptr },
    { spv::CapabilityDenormPreserve, "DenormPreserve", nullptr, 0, nullptr, Special::eFloatControls },
    { spv::CapabilityDenormFlushToZero, "DenormFlushToZero", nullptr, 0, nullptr, Special::eFloatControls },
    { spv::CapabilitySignedZeroInfNanPreserve, "SignedZeroInfNanPreserve", nullptr, 0, nullptr, Special::eFloatControls },
    { spv::CapabilityRoundingModeRTE, "RoundingModeRTE", nullptr, 0, nullptr, Special::eFloatControls },
    { spv::CapabilityRoundingModeRTZ, "RoundingModeRTZ", nullptr, 0, nullptr, Special::eFloatControls },
    { spv::CapabilityStorageImageReadWithoutFormat, "StorageImageReadWithoutFormat", "shaderStorageImageReadWithoutFormat", VK_API_VERSION_1_3, "VK_KHR_format_feature_flags2" },
    { spv::CapabilityStorageImageWriteWithoutFormat, "StorageImageWriteWithoutFormat", "shaderStorageImageWriteWithoutFormat", VK_API_VERSION_1_3, "VK_KHR_format_feature_flags2" },
    { spv::CapabilityStorageImageMultisample, "StorageImageMultisample", "shaderStorageImageMultisample", 0, nullptr },
    { spv::CapabilityImageMSArray, "ImageMSArray", "shaderStorageImageMultisample", 0, nullptr },
    { spv::CapabilityImageGatherExtended, "ImageGatherExtended", "shaderImageGatherExtended", 0, nullptr },
    { spv::CapabilityImageCubeArray, "ImageCubeArray", "imageCubeArray", 0, nullptr },
    { spv::CapabilitySampledCubeArray, "SampledCubeArray", "imageCubeArray", 0, nullptr },
    { spv::CapabilitySparseResidency, "SparseResidency", "shaderResourceResidency", 0, nullptr },
    { spv::CapabilityMinLod, "MinLod", "shaderResourceMinLod", 0, nullptr },
};
// clang-format on

// Names of capabilities a compute shader on Kompute cannot use, for messages.
struct CapabilityName
{
    uint32_t capability;
    const char* name;
};
const CapabilityName kOtherCapabilityNames[] = {
    { spv::CapabilityGeometry, "Geometry" },
    { spv::CapabilityTessellation, "Tessellation" },
    { spv::CapabilityAddresses, "Addresses" },
    { spv::CapabilityLinkage, "Linkage" },
    { spv::CapabilityKernel, "Kernel" },
    { spv::CapabilityVector16, "Vector16" },
    { spv::CapabilityFloat16Buffer, "Float16Buffer" },
    { spv::CapabilityGenericPointer, "GenericPointer" },
    { spv::CapabilityClipDistance, "ClipDistance" },
    { spv::CapabilityCullDistance, "CullDistance" },
    { spv::CapabilitySampleRateShading, "SampleRateShading" },
    { spv::CapabilityMultiViewport, "MultiViewport" },
    { spv::CapabilityDrawParameters, "DrawParameters" },
    { spv::CapabilityMultiView, "MultiView" },
    { spv::CapabilityRuntimeDescriptorArray, "RuntimeDescriptorArray" },
    { spv::CapabilityInt64ImageEXT, "Int64ImageEXT" },
    { spv::CapabilityGroupNonUniformPartitionedNV, "GroupNonUniformPartitionedNV" },
    { spv::CapabilityGroupNonUniformRotateKHR, "GroupNonUniformRotateKHR" },
    { spv::CapabilityRayQueryKHR, "RayQueryKHR" },
    { spv::CapabilityMeshShadingEXT, "MeshShadingEXT" },
    { spv::CapabilityDemoteToHelperInvocation, "DemoteToHelperInvocation" },
};

const CapabilityRule*
findRule(uint32_t capability)
{
    for (const auto& rule : kCapabilityRules) {
        if (rule.capability == capability) {
            return &rule;
        }
    }
    return nullptr;
}

// --- SPIR-V extensions and what they need ---------------------------------------------

struct ExtensionRule
{
    const char* spirv;
    uint32_t version; // allowed from this Vulkan version (0: only with the extension)
    const char* extension;
};

// From <spirvextensions> of vk.xml, limited to what compute shaders use.
const ExtensionRule kExtensionRules[] = {
    { "SPV_KHR_storage_buffer_storage_class", VK_API_VERSION_1_1, "VK_KHR_storage_buffer_storage_class" },
    { "SPV_KHR_variable_pointers", VK_API_VERSION_1_1, "VK_KHR_variable_pointers" },
    { "SPV_KHR_16bit_storage", VK_API_VERSION_1_1, "VK_KHR_16bit_storage" },
    { "SPV_KHR_device_group", VK_API_VERSION_1_1, "VK_KHR_device_group" },
    { "SPV_KHR_multiview", VK_API_VERSION_1_1, "VK_KHR_multiview" },
    { "SPV_KHR_shader_draw_parameters", VK_API_VERSION_1_1, "VK_KHR_shader_draw_parameters" },
    { "SPV_KHR_8bit_storage", VK_API_VERSION_1_2, "VK_KHR_8bit_storage" },
    { "SPV_KHR_float_controls", VK_API_VERSION_1_2, "VK_KHR_shader_float_controls" },
    { "SPV_KHR_vulkan_memory_model", VK_API_VERSION_1_2, "VK_KHR_vulkan_memory_model" },
    { "SPV_KHR_physical_storage_buffer", VK_API_VERSION_1_2, "VK_KHR_buffer_device_address" },
    { "SPV_EXT_physical_storage_buffer", 0, "VK_EXT_buffer_device_address" },
    { "SPV_EXT_descriptor_indexing", VK_API_VERSION_1_2, "VK_EXT_descriptor_indexing" },
    { "SPV_KHR_integer_dot_product", VK_API_VERSION_1_3, "VK_KHR_shader_integer_dot_product" },
    { "SPV_KHR_non_semantic_info", VK_API_VERSION_1_3, "VK_KHR_shader_non_semantic_info" },
    { "SPV_KHR_subgroup_uniform_control_flow", VK_API_VERSION_1_3, "VK_KHR_shader_subgroup_uniform_control_flow" },
    { "SPV_EXT_demote_to_helper_invocation", VK_API_VERSION_1_3, "VK_EXT_shader_demote_to_helper_invocation" },
    { "SPV_KHR_terminate_invocation", VK_API_VERSION_1_3, "VK_KHR_shader_terminate_invocation" },
    { "SPV_KHR_shader_clock", 0, "VK_KHR_shader_clock" },
    { "SPV_KHR_shader_ballot", 0, "VK_EXT_shader_subgroup_ballot" },
    { "SPV_KHR_subgroup_vote", 0, "VK_EXT_shader_subgroup_vote" },
    { "SPV_KHR_workgroup_memory_explicit_layout", 0, "VK_KHR_workgroup_memory_explicit_layout" },
    { "SPV_EXT_shader_atomic_float_add", 0, "VK_EXT_shader_atomic_float" },
    { "SPV_EXT_shader_atomic_float_min_max", 0, "VK_EXT_shader_atomic_float2" },
    { "SPV_EXT_shader_atomic_float16_add", 0, "VK_EXT_shader_atomic_float2" },
    { "SPV_EXT_shader_image_int64", 0, "VK_EXT_shader_image_atomic_int64" },
    { "SPV_NV_cooperative_matrix", 0, "VK_NV_cooperative_matrix" },
    { "SPV_KHR_cooperative_matrix", 0, vkx::kCooperativeMatrixKHR },
    { "SPV_NV_cooperative_matrix2", 0, vkx::kCooperativeMatrix2NV },
    { "SPV_NV_tensor_addressing", 0, vkx::kCooperativeMatrix2NV },
    { "SPV_KHR_bfloat16", 0, vkx::kShaderBfloat16KHR },
    { "SPV_NV_shader_sm_builtins", 0, "VK_NV_shader_sm_builtins" },
    { "SPV_AMD_gpu_shader_half_float", 0, "VK_AMD_gpu_shader_half_float" },
    { "SPV_AMD_gpu_shader_int16", 0, "VK_AMD_gpu_shader_int16" },
    { "SPV_AMD_shader_ballot", 0, "VK_AMD_shader_ballot" },
    { "SPV_AMD_shader_trinary_minmax", 0, "VK_AMD_shader_trinary_minmax" },
    { "SPV_AMD_gcn_shader", 0, "VK_AMD_gcn_shader" },
    { "SPV_INTEL_shader_integer_functions2", 0, "VK_INTEL_shader_integer_functions2" },
    { "SPV_GOOGLE_hlsl_functionality1", 0, "VK_GOOGLE_hlsl_functionality1" },
    { "SPV_GOOGLE_user_type", 0, "VK_GOOGLE_user_type" },
    { "SPV_GOOGLE_decorate_string", 0, "VK_GOOGLE_decorate_string" },
};

// --- Small helpers -------------------------------------------------------------------

std::string
versionName(uint32_t version)
{
    return format("{}.{}", VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
}

bool
contains(const std::vector<std::string>& names, const std::string& name)
{
    return std::find(names.begin(), names.end(), name) != names.end();
}

void
addUnique(std::vector<std::string>& names, const std::string& name)
{
    if (!contains(names, name)) {
        names.push_back(name);
    }
}

ComponentType
componentType(int32_t value)
{
    return static_cast<ComponentType>(value);
}

MatrixScope
matrixScope(int32_t value)
{
    return static_cast<MatrixScope>(value);
}

/** Float-controls execution modes and the property (per float width)
 * each needs. */
struct FloatControlRule
{
    uint32_t mode;
    const char* name;
    const char* property; // without the width
    bool (DeviceCapabilities::FloatControls::*supported)[3];
};

const FloatControlRule kFloatControlRules[] = {
    { spv::ExecutionModeDenormPreserve, "DenormPreserve", "shaderDenormPreserveFloat",
      &DeviceCapabilities::FloatControls::denormPreserve },
    { spv::ExecutionModeDenormFlushToZero, "DenormFlushToZero", "shaderDenormFlushToZeroFloat",
      &DeviceCapabilities::FloatControls::denormFlushToZero },
    { spv::ExecutionModeSignedZeroInfNanPreserve, "SignedZeroInfNanPreserve",
      "shaderSignedZeroInfNanPreserveFloat",
      &DeviceCapabilities::FloatControls::signedZeroInfNanPreserve },
    { spv::ExecutionModeRoundingModeRTE, "RoundingModeRTE", "shaderRoundingModeRTEFloat",
      &DeviceCapabilities::FloatControls::roundingModeRTE },
    { spv::ExecutionModeRoundingModeRTZ, "RoundingModeRTZ", "shaderRoundingModeRTZFloat",
      &DeviceCapabilities::FloatControls::roundingModeRTZ },
};

/** A zeroed Vulkan structure with its sType set. */
template<typename T>
T
structure(VkStructureType type)
{
    T value;
    std::memset(&value, 0, sizeof(value));
    value.sType = type;
    return value;
}

template<typename Function>
Function
instanceFunction(vk::Instance instance, const char* name)
{
    return reinterpret_cast<Function>(VULKAN_HPP_DEFAULT_DISPATCHER.vkGetInstanceProcAddr(static_cast<VkInstance>(instance), name));
}

} // namespace

// --- FeatureChain -------------------------------------------------------------------

struct FeatureChain::Storage
{
    VkPhysicalDeviceFeatures2 core;
    VkPhysicalDeviceVulkan11Features vulkan11;
    VkPhysicalDeviceVulkan12Features vulkan12;
    VkPhysicalDeviceVulkan13Features vulkan13;
    VkPhysicalDevice16BitStorageFeatures storage16;
    VkPhysicalDeviceVariablePointersFeatures variablePointers;
    VkPhysicalDeviceShaderFloat16Int8Features float16Int8;
    VkPhysicalDevice8BitStorageFeatures storage8;
    VkPhysicalDeviceShaderAtomicInt64Features atomicInt64;
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline;
    VkPhysicalDeviceBufferDeviceAddressFeatures bufferDeviceAddress;
    VkPhysicalDeviceVulkanMemoryModelFeatures memoryModel;
    VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures subgroupExtendedTypes;
    VkPhysicalDeviceScalarBlockLayoutFeatures scalarBlockLayout;
    VkPhysicalDeviceSubgroupSizeControlFeatures subgroupSizeControl;
    VkPhysicalDeviceShaderIntegerDotProductFeatures integerDotProduct;
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat;
    VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT atomicFloat2;
    VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR workgroupLayout;
    VkPhysicalDeviceShaderClockFeaturesKHR clock;
    VkPhysicalDeviceShaderSMBuiltinsFeaturesNV smBuiltins;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cooperativeMatrixNV;
    vkx::CooperativeMatrixFeaturesKHR cooperativeMatrixKHR;
    vkx::CooperativeMatrix2FeaturesNV cooperativeMatrix2NV;
    vkx::ShaderBfloat16FeaturesKHR bfloat16;

    void* get(FeatureStruct which)
    {
        switch (which) {
            case FeatureStruct::eCore: return &core;
            case FeatureStruct::eVulkan11: return &vulkan11;
            case FeatureStruct::eVulkan12: return &vulkan12;
            case FeatureStruct::eVulkan13: return &vulkan13;
            case FeatureStruct::e16BitStorage: return &storage16;
            case FeatureStruct::eVariablePointers: return &variablePointers;
            case FeatureStruct::eShaderFloat16Int8: return &float16Int8;
            case FeatureStruct::e8BitStorage: return &storage8;
            case FeatureStruct::eShaderAtomicInt64: return &atomicInt64;
            case FeatureStruct::eTimelineSemaphore: return &timeline;
            case FeatureStruct::eBufferDeviceAddress: return &bufferDeviceAddress;
            case FeatureStruct::eVulkanMemoryModel: return &memoryModel;
            case FeatureStruct::eSubgroupExtendedTypes: return &subgroupExtendedTypes;
            case FeatureStruct::eScalarBlockLayout: return &scalarBlockLayout;
            case FeatureStruct::eSubgroupSizeControl: return &subgroupSizeControl;
            case FeatureStruct::eShaderIntegerDotProduct: return &integerDotProduct;
            case FeatureStruct::eShaderAtomicFloat: return &atomicFloat;
            case FeatureStruct::eShaderAtomicFloat2: return &atomicFloat2;
            case FeatureStruct::eWorkgroupMemoryExplicitLayout: return &workgroupLayout;
            case FeatureStruct::eShaderClock: return &clock;
            case FeatureStruct::eShaderSMBuiltins: return &smBuiltins;
            case FeatureStruct::eCooperativeMatrixNV: return &cooperativeMatrixNV;
            case FeatureStruct::eCooperativeMatrixKHR: return &cooperativeMatrixKHR;
            case FeatureStruct::eCooperativeMatrix2NV: return &cooperativeMatrix2NV;
            case FeatureStruct::eShaderBfloat16: return &bfloat16;
            case FeatureStruct::eCount: break;
        }
        throw std::logic_error("FeatureChain: no such structure");
    }
};

namespace {
// Every structure starts with sType and pNext.
struct ChainHeader
{
    VkStructureType sType;
    void* pNext;
};
} // namespace

FeatureChain::FeatureChain()
  : mStorage(std::make_unique<Storage>())
{
    std::memset(mStorage.get(), 0, sizeof(Storage));
    for (size_t i = 0; i < static_cast<size_t>(FeatureStruct::eCount); ++i) {
        auto which = static_cast<FeatureStruct>(i);
        static_cast<ChainHeader*>(get(which))->sType = info(which).sType;
    }
}

FeatureChain::~FeatureChain() = default;

void
FeatureChain::link(const std::vector<FeatureStruct>& linked)
{
    void* next = nullptr;
    for (auto it = linked.rbegin(); it != linked.rend(); ++it) {
        if (*it == FeatureStruct::eCore) {
            continue;
        }
        static_cast<ChainHeader*>(get(*it))->pNext = next;
        next = get(*it);
    }
    mStorage->core.pNext = next;
}

VkPhysicalDeviceFeatures2*
FeatureChain::head()
{
    return &mStorage->core;
}

void*
FeatureChain::get(FeatureStruct which)
{
    return mStorage->get(which);
}

const void*
FeatureChain::get(FeatureStruct which) const
{
    return mStorage->get(which);
}

VkBool32&
FeatureChain::member(FeatureStruct which, size_t offset)
{
    return *reinterpret_cast<VkBool32*>(static_cast<char*>(get(which)) + offset);
}

VkBool32
FeatureChain::member(FeatureStruct which, size_t offset) const
{
    VkBool32 value;
    std::memcpy(&value, static_cast<const char*>(get(which)) + offset, sizeof(value));
    return value;
}

// --- Capabilities ----------------------------------------------------------------

namespace {

/** Which structures, and where each row lives, on one device. */
struct Placement
{
    std::vector<bool> usable; // by FeatureStruct
    std::vector<Location> rowLocation; // by row; where == eCount: extension row or nowhere

    Placement(uint32_t apiVersion, const std::vector<std::string>& available)
      : usable(static_cast<size_t>(FeatureStruct::eCount), false)
      , rowLocation(kRowCount)
    {
        for (size_t i = 0; i < usable.size(); ++i) {
            const StructInfo& s = kStructs[i];
            bool provided = apiVersion >= s.coreSince ||
                            (s.extension != nullptr && contains(available, s.extension) &&
                             (s.dependency == nullptr || contains(available, s.dependency)));
            usable[i] = apiVersion < s.replacedSince && provided;
        }
        for (size_t r = 0; r < kRowCount; ++r) {
            for (const Location& location : { kRows[r].primary, kRows[r].fallback }) {
                if (location.where != FeatureStruct::eCount &&
                    usable[static_cast<size_t>(location.where)]) {
                    rowLocation[r] = location;
                    break;
                }
            }
        }
    }

    std::vector<FeatureStruct> linked() const
    {
        std::vector<FeatureStruct> structs;
        for (size_t i = 0; i < usable.size(); ++i) {
            if (usable[i]) {
                structs.push_back(static_cast<FeatureStruct>(i));
            }
        }
        return structs;
    }

    /** The extension to enable for row `r` on this device (null: none). */
    const char* extensionOf(size_t r, uint32_t apiVersion) const
    {
        const Row& row = kRows[r];
        if (row.extension != nullptr) {
            return apiVersion >= row.extensionCoreSince ? nullptr : row.extension;
        }
        const Location& location = rowLocation[r];
        if (location.where == FeatureStruct::eCount) {
            return nullptr;
        }
        const StructInfo& s = info(location.where);
        return apiVersion >= s.coreSince ? nullptr : s.extension;
    }
};

} // namespace

Capabilities::Capabilities(vk::Instance instance,
                           vk::PhysicalDevice physicalDevice,
                           uint32_t apiVersion)
  : mPhysicalDevice(physicalDevice)
  , mApiVersion(apiVersion)
  , mProperties(physicalDevice.getProperties())
  , mSupported(kRowCount, false)
  , mEnabled(kRowCount, false)
  , mDisabled(kRowCount, false)
  , mPassThrough(std::make_unique<FeatureChain>())
{
    uint32_t count = 0;
    check(physicalDevice.enumerateDeviceExtensionProperties(nullptr, &count, nullptr),
          "Listing device extensions");
    std::vector<vk::ExtensionProperties> extensions(count);
    check(physicalDevice.enumerateDeviceExtensionProperties(nullptr, &count, extensions.data()),
          "Listing device extensions");
    for (uint32_t i = 0; i < count; ++i) {
        mAvailableExtensions.emplace_back(extensions[i].extensionName.data());
    }

    // Features: every structure usable on the device, in one query.
    Placement placement(mApiVersion, mAvailableExtensions);
    FeatureChain queried;
    queried.link(placement.linked());
    VULKAN_HPP_DEFAULT_DISPATCHER.vkGetPhysicalDeviceFeatures2(physicalDevice, queried.head());
    for (size_t r = 0; r < kRowCount; ++r) {
        const Row& row = kRows[r];
        if (row.extension != nullptr) {
            mSupported[r] = mApiVersion >= row.extensionCoreSince ||
                            contains(mAvailableExtensions, row.extension);
        } else if (placement.rowLocation[r].where != FeatureStruct::eCount) {
            const Location& at = placement.rowLocation[r];
            mSupported[r] = queried.member(at.where, at.offset) == VK_TRUE;
        }
    }

    // Properties.
    auto available = [&](const char* name) { return contains(mAvailableExtensions, name); };
    bool v12 = mApiVersion >= VK_API_VERSION_1_2;
    bool v13 = mApiVersion >= VK_API_VERSION_1_3;
    auto properties2 = structure<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    auto subgroup = structure<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    auto maintenance3 = structure<VkPhysicalDeviceMaintenance3Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
    auto driver = structure<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
    auto floatControls = structure<VkPhysicalDeviceFloatControlsProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES);
    auto sizeControl = structure<VkPhysicalDeviceSubgroupSizeControlProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES);
    auto dot = structure<VkPhysicalDeviceShaderIntegerDotProductProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES);
    auto maintenance4 = structure<VkPhysicalDeviceMaintenance4Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES);
    auto coopNV = structure<VkPhysicalDeviceCooperativeMatrixPropertiesNV>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV);
    auto coopKHR = structure<vkx::CooperativeMatrixPropertiesKHR>(
      vkx::kStructPhysicalDeviceCooperativeMatrixPropertiesKHR);
    auto coop2 = structure<vkx::CooperativeMatrix2PropertiesNV>(
      vkx::kStructPhysicalDeviceCooperativeMatrix2PropertiesNV);
    auto sm = structure<VkPhysicalDeviceShaderSMBuiltinsPropertiesNV>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV);
    bool hasDriver = v12 || available("VK_KHR_driver_properties");
    bool hasFloatControls = v12 || available("VK_KHR_shader_float_controls");
    bool hasSizeControl = v13 || available("VK_EXT_subgroup_size_control");
    bool hasDot = v13 || available("VK_KHR_shader_integer_dot_product");
    bool hasMaintenance4 = v13 || available("VK_KHR_maintenance4");
    bool hasCoopNV = available("VK_NV_cooperative_matrix");
    bool hasCoopKHR = available(vkx::kCooperativeMatrixKHR);
    bool hasCoop2 = available(vkx::kCooperativeMatrix2NV) && hasCoopKHR;
    bool hasSM = available("VK_NV_shader_sm_builtins");
    {
        void* next = nullptr;
        auto chain = [&next](auto& structure, bool use) {
            if (use) {
                structure.pNext = next;
                next = &structure;
            }
        };
        chain(subgroup, true);
        chain(maintenance3, true);
        chain(driver, hasDriver);
        chain(floatControls, hasFloatControls);
        chain(sizeControl, hasSizeControl);
        chain(dot, hasDot);
        chain(maintenance4, hasMaintenance4);
        chain(coopNV, hasCoopNV);
        chain(coopKHR, hasCoopKHR);
        chain(coop2, hasCoop2);
        chain(sm, hasSM);
        properties2.pNext = next;
        VULKAN_HPP_DEFAULT_DISPATCHER.vkGetPhysicalDeviceProperties2(physicalDevice, &properties2);
    }

    DeviceCapabilities& q = mQueried;
    const VkPhysicalDeviceProperties& p = properties2.properties;
    q.deviceName = p.deviceName;
    q.vendorID = p.vendorID;
    q.deviceID = p.deviceID;
    q.deviceType = static_cast<vk::PhysicalDeviceType>(p.deviceType);
    q.apiVersion = mApiVersion;
    q.driverVersion = p.driverVersion;
    if (hasDriver) {
        q.driverName = driver.driverName;
        q.driverInfo = driver.driverInfo;
    }
    q.maxComputeSharedMemorySize = p.limits.maxComputeSharedMemorySize;
    q.maxMemoryAllocationSize = maintenance3.maxMemoryAllocationSize;
    q.maxBufferSize = hasMaintenance4 ? maintenance4.maxBufferSize : 0;
    if (hasSM) {
        q.shaderSMCount = sm.shaderSMCount;
        q.shaderWarpsPerSM = sm.shaderWarpsPerSM;
    }

    q.subgroup.size = subgroup.subgroupSize;
    q.subgroup.minSize = subgroup.subgroupSize;
    q.subgroup.maxSize = subgroup.subgroupSize;
    q.subgroup.stages = vk::ShaderStageFlags(subgroup.supportedStages);
    q.subgroup.operations = vk::SubgroupFeatureFlags(subgroup.supportedOperations);
    if (hasSizeControl) {
        q.subgroup.minSize = sizeControl.minSubgroupSize;
        q.subgroup.maxSize = sizeControl.maxSubgroupSize;
        q.subgroup.maxComputeWorkgroupSubgroups = sizeControl.maxComputeWorkgroupSubgroups;
        q.subgroup.requiredSizeStages = vk::ShaderStageFlags(sizeControl.requiredSubgroupSizeStages);
    }

    if (hasDot) {
        auto& d = q.integerDotProduct;
        d.accelerated8Bit = dot.integerDotProduct8BitUnsignedAccelerated &&
                            dot.integerDotProduct8BitSignedAccelerated;
        d.accelerated8BitMixed = dot.integerDotProduct8BitMixedSignednessAccelerated;
        d.accelerated4x8BitPacked = dot.integerDotProduct4x8BitPackedUnsignedAccelerated &&
                                    dot.integerDotProduct4x8BitPackedSignedAccelerated;
        d.accelerated4x8BitPackedMixed = dot.integerDotProduct4x8BitPackedMixedSignednessAccelerated;
        d.accelerated16Bit = dot.integerDotProduct16BitUnsignedAccelerated &&
                             dot.integerDotProduct16BitSignedAccelerated;
        d.accelerated32Bit = dot.integerDotProduct32BitUnsignedAccelerated &&
                             dot.integerDotProduct32BitSignedAccelerated;
        d.acceleratedAccumulating4x8BitPacked =
          dot.integerDotProductAccumulatingSaturating4x8BitPackedUnsignedAccelerated &&
          dot.integerDotProductAccumulatingSaturating4x8BitPackedSignedAccelerated;
    }

    if (hasFloatControls) {
        auto& f = q.floatControls;
        const VkBool32 denormPreserve[3] = { floatControls.shaderDenormPreserveFloat16,
                                             floatControls.shaderDenormPreserveFloat32,
                                             floatControls.shaderDenormPreserveFloat64 };
        const VkBool32 flush[3] = { floatControls.shaderDenormFlushToZeroFloat16,
                                    floatControls.shaderDenormFlushToZeroFloat32,
                                    floatControls.shaderDenormFlushToZeroFloat64 };
        const VkBool32 signedZero[3] = { floatControls.shaderSignedZeroInfNanPreserveFloat16,
                                         floatControls.shaderSignedZeroInfNanPreserveFloat32,
                                         floatControls.shaderSignedZeroInfNanPreserveFloat64 };
        const VkBool32 rte[3] = { floatControls.shaderRoundingModeRTEFloat16,
                                  floatControls.shaderRoundingModeRTEFloat32,
                                  floatControls.shaderRoundingModeRTEFloat64 };
        const VkBool32 rtz[3] = { floatControls.shaderRoundingModeRTZFloat16,
                                  floatControls.shaderRoundingModeRTZFloat32,
                                  floatControls.shaderRoundingModeRTZFloat64 };
        for (int i = 0; i < 3; ++i) {
            f.denormPreserve[i] = denormPreserve[i] == VK_TRUE;
            f.denormFlushToZero[i] = flush[i] == VK_TRUE;
            f.signedZeroInfNanPreserve[i] = signedZero[i] == VK_TRUE;
            f.roundingModeRTE[i] = rte[i] == VK_TRUE;
            f.roundingModeRTZ[i] = rtz[i] == VK_TRUE;
        }
    }

    // Cooperative-matrix shapes, through the extensions' own commands.
    auto& m = q.cooperativeMatrix;
    if (hasCoopNV) {
        m.nvStages = vk::ShaderStageFlags(coopNV.cooperativeMatrixSupportedStages);
        auto get = instanceFunction<vkx::PFN_GetCooperativeMatrixPropertiesNV>(
          instance, vkx::kGetCooperativeMatrixPropertiesNV);
        uint32_t shapes = 0;
        if (get != nullptr && get(physicalDevice, &shapes, nullptr) == VK_SUCCESS) {
            std::vector<VkCooperativeMatrixPropertiesNV> list(
              shapes,
              structure<VkCooperativeMatrixPropertiesNV>(VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
            check(get(physicalDevice, &shapes, list.data()),
                  "Listing the cooperative-matrix shapes (VK_NV_cooperative_matrix)");
            for (uint32_t i = 0; i < shapes; ++i) {
                const auto& s = list[i];
                m.nvShapes.push_back({ s.MSize, s.NSize, s.KSize,
                                       componentType(s.AType), componentType(s.BType),
                                       componentType(s.CType), componentType(s.DType), false,
                                       matrixScope(s.scope), 0 });
            }
        }
    }
    if (hasCoopKHR) {
        m.khrStages = vk::ShaderStageFlags(coopKHR.cooperativeMatrixSupportedStages);
        auto get = instanceFunction<vkx::PFN_GetCooperativeMatrixPropertiesKHR>(
          instance, vkx::kGetCooperativeMatrixPropertiesKHR);
        uint32_t shapes = 0;
        if (get != nullptr && get(physicalDevice, &shapes, nullptr) == VK_SUCCESS) {
            std::vector<vkx::CooperativeMatrixShapeKHR> list(
              shapes,
              structure<vkx::CooperativeMatrixShapeKHR>(vkx::kStructCooperativeMatrixPropertiesKHR));
            check(get(physicalDevice, &shapes, list.data()),
                  "Listing the cooperative-matrix shapes (VK_KHR_cooperative_matrix)");
            for (uint32_t i = 0; i < shapes; ++i) {
                const auto& s = list[i];
                m.khrShapes.push_back({ s.MSize, s.NSize, s.KSize,
                                        componentType(s.AType), componentType(s.BType),
                                        componentType(s.CType), componentType(s.ResultType),
                                        s.saturatingAccumulation == VK_TRUE,
                                        matrixScope(s.scope), 0 });
            }
        }
    }
    if (hasCoop2) {
        m.nv2.workgroupScopeMaxWorkgroupSize = coop2.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
        m.nv2.flexibleDimensionsMaxDimension = coop2.cooperativeMatrixFlexibleDimensionsMaxDimension;
        m.nv2.workgroupScopeReservedSharedMemory =
          coop2.cooperativeMatrixWorkgroupScopeReservedSharedMemory;
        auto get = instanceFunction<vkx::PFN_GetCooperativeMatrixFlexibleDimensionsPropertiesNV>(
          instance, vkx::kGetCooperativeMatrixFlexibleDimensionsPropertiesNV);
        uint32_t shapes = 0;
        if (get != nullptr && get(physicalDevice, &shapes, nullptr) == VK_SUCCESS) {
            std::vector<vkx::CooperativeMatrixFlexibleShapeNV> list(
              shapes,
              structure<vkx::CooperativeMatrixFlexibleShapeNV>(
                vkx::kStructCooperativeMatrixFlexibleDimensionsPropertiesNV));
            check(get(physicalDevice, &shapes, list.data()),
                  "Listing the flexible cooperative-matrix shapes (VK_NV_cooperative_matrix2)");
            for (uint32_t i = 0; i < shapes; ++i) {
                const auto& s = list[i];
                m.nv2.flexibleShapes.push_back(
                  { s.MGranularity, s.NGranularity, s.KGranularity, componentType(s.AType),
                    componentType(s.BType), componentType(s.CType), componentType(s.ResultType),
                    s.saturatingAccumulation == VK_TRUE, matrixScope(s.scope),
                    s.workgroupInvocations });
            }
        }
    }
    updateView();
}

Capabilities::~Capabilities() = default;
Capabilities::Capabilities(Capabilities&&) noexcept = default;
Capabilities& Capabilities::operator=(Capabilities&&) noexcept = default;

void
Capabilities::enableDefaults()
{
    for (size_t r = 0; r < kRowCount; ++r) {
        if (mSupported[r] && kRows[r].byDefault) {
            mEnabled[r] = true;
        }
    }
    updateView();
}

void
Capabilities::readChain(const void* next, bool adopting, std::vector<bool>& rows)
{
    Placement placement(mApiVersion, mAvailableExtensions);
    for (auto* header = static_cast<const ChainHeader*>(next); header != nullptr;
         header = static_cast<const ChainHeader*>(header->pNext)) {
        size_t which = 0;
        while (which < static_cast<size_t>(FeatureStruct::eCount) &&
               kStructs[which].sType != header->sType) {
            ++which;
        }
        if (which == static_cast<size_t>(FeatureStruct::eCount)) {
            std::string name = vk::to_string(static_cast<vk::StructureType>(header->sType));
            if (adopting) {
                // The application may enable anything (graphics features,
                // say); Kompute uses only what its table knows.
                KP_LOG_DEBUG("The feature chain holds a {} structure, which Kompute does not use",
                             name);
                continue;
            }
            throw Error(format("The requested feature chain holds a structure of type {}, which "
                               "Kompute cannot merge into its device creation: pass features in "
                               "the structures of Kompute's capability table "
                               "(VkPhysicalDeviceFeatures2, VkPhysicalDeviceVulkan11/12/13Features "
                               "and the extensions' feature structures it lists)",
                               name));
        }
        auto structure = static_cast<FeatureStruct>(which);
        const StructInfo& s = kStructs[which];
        const char* bytes = reinterpret_cast<const char*>(header);
        // Rows first: any structure that holds a row's member.
        std::vector<bool> isRowMember(s.size / sizeof(VkBool32), false);
        for (size_t r = 0; r < kRowCount; ++r) {
            for (const Location& at : { kRows[r].primary, kRows[r].fallback }) {
                if (at.where != structure) {
                    continue;
                }
                isRowMember[at.offset / sizeof(VkBool32)] = true;
                VkBool32 value;
                std::memcpy(&value, bytes + at.offset, sizeof(value));
                if (value == VK_TRUE) {
                    rows[r] = true;
                }
            }
        }
        if (adopting) {
            continue;
        }
        // Members outside the table go to vkCreateDevice as they are, where
        // their structure is part of this device's chain.
        size_t first = (structure == FeatureStruct::eCore ? offsetof(VkPhysicalDeviceFeatures2, features)
                                                           : sizeof(ChainHeader)) /
                       sizeof(VkBool32);
        for (size_t word = first; word < isRowMember.size(); ++word) {
            VkBool32 value;
            std::memcpy(&value, bytes + word * sizeof(VkBool32), sizeof(value));
            if (value != VK_TRUE || isRowMember[word]) {
                continue;
            }
            if (!placement.usable[which] || (s.extension != nullptr && mApiVersion < s.coreSince)) {
                throw Error(format("The requested {} sets a member that is not in Kompute's "
                                   "capability table, and '{}' (Vulkan {}) cannot take that "
                                   "structure: request it on a device of Vulkan {} or later",
                                   s.name,
                                   mProperties.deviceName.data(),
                                   versionName(mApiVersion),
                                   versionName(s.coreSince)));
            }
            mPassThrough->member(structure, word * sizeof(VkBool32)) = VK_TRUE;
        }
    }
}

void
Capabilities::request(const std::vector<std::string>& extensions,
                      const vk::PhysicalDeviceFeatures2* features)
{
    for (const auto& name : extensions) {
        if (!contains(mAvailableExtensions, name)) {
            KP_LOG_WARN("Device extension {} is not supported by '{}'; continuing without it",
                        name,
                        mProperties.deviceName.data());
        } else {
            addUnique(mEnabledExtensions, name);
        }
    }
    if (features == nullptr) {
        updateView();
        return;
    }
    std::vector<bool> requested(kRowCount, false);
    readChain(features, false, requested);
    for (size_t r = 0; r < kRowCount; ++r) {
        if (!requested[r]) {
            continue;
        }
        if (!mSupported[r]) {
            throw Error(format("The device feature {} was requested, but '{}' does not support it",
                               rowVulkanName(r),
                               mProperties.deviceName.data()));
        }
        mEnabled[r] = true;
    }
    updateView();
}

void
Capabilities::adopt(const std::vector<std::string>& extensions,
                    const vk::PhysicalDeviceFeatures2* features)
{
    for (const auto& name : extensions) {
        addUnique(mEnabledExtensions, name);
    }
    std::vector<bool> given(kRowCount, false);
    if (features != nullptr) {
        readChain(features, true, given);
    }
    Placement placement(mApiVersion, mAvailableExtensions);
    for (size_t r = 0; r < kRowCount; ++r) {
        const char* extension = placement.extensionOf(r, mApiVersion);
        bool extensionOn = extension == nullptr || contains(mEnabledExtensions, extension);
        bool on = kRows[r].extension != nullptr ? mSupported[r] && extensionOn
                                                : given[r] && extensionOn;
        if (on && !mSupported[r]) {
            KP_LOG_WARN("The application says it enabled {}, which '{}' does not support; "
                        "Kompute will not use it",
                        rowVulkanName(r),
                        mProperties.deviceName.data());
            on = false;
        }
        mEnabled[r] = on;
    }
    updateView();
}

void
Capabilities::applyDisableList(const char* list)
{
    std::vector<std::string> known = disableGroups();
    // Names the kernel library reads when it builds an operation.
    const std::vector<std::string>& kernelPaths = kernels::kernelPathNames();
    auto join = [](const std::vector<std::string>& names) {
        std::string joined;
        for (const auto& n : names) {
            joined += (joined.empty() ? "" : ", ") + n;
        }
        return joined;
    };
    for (const auto& name : splitList(list)) {
        if (!contains(known, name)) {
            if (!contains(kernelPaths, name)) {
                KP_LOG_WARN("KOMPUTE_ENV_DISABLE names '{}', which is not a capability Kompute can "
                            "turn off; known names: {}; the kernel library's paths: {}",
                            name,
                            join(known),
                            join(kernelPaths));
            }
            continue;
        }
        disableGroup(name);
    }
    // A Vulkan 1.1 loader exports no timeline-semaphore commands, which
    // Kompute calls by their core names.
    if (vulkanCommands.vkGetSemaphoreCounterValue == nullptr ||
        vulkanCommands.vkWaitSemaphores == nullptr) {
        disableGroup("timeline-semaphore");
    }
    updateView();
}

void
Capabilities::disableGroup(const std::string& name)
{
    addUnique(mDisabledGroups, name);
    for (size_t r = 0; r < kRowCount; ++r) {
        if (inGroup(kRows[r], name)) {
            mDisabled[r] = true;
        }
    }
}

Capabilities::DeviceCreateInfo
Capabilities::deviceCreateInfo() const
{
    Placement placement(mApiVersion, mAvailableExtensions);
    DeviceCreateInfo result;
    result.features = std::make_unique<FeatureChain>();
    FeatureChain& chain = *result.features;
    std::vector<bool> linked(static_cast<size_t>(FeatureStruct::eCount), false);
    // Core structures always; extension structures when a row needs them.
    for (size_t i = 0; i < linked.size(); ++i) {
        linked[i] = placement.usable[i] && (kStructs[i].extension == nullptr ||
                                            mApiVersion >= kStructs[i].coreSince);
        if (linked[i]) {
            // Members outside the table that the application asked for.
            std::memcpy(static_cast<char*>(chain.get(static_cast<FeatureStruct>(i))) +
                          sizeof(ChainHeader),
                        static_cast<const char*>(mPassThrough->get(static_cast<FeatureStruct>(i))) +
                          sizeof(ChainHeader),
                        kStructs[i].size - sizeof(ChainHeader));
        }
    }
    result.extensions = mEnabledExtensions;
    for (size_t r = 0; r < kRowCount; ++r) {
        if (!effective(r)) {
            continue;
        }
        if (const char* extension = placement.extensionOf(r, mApiVersion)) {
            addUnique(result.extensions, extension);
        }
        const Location& at = placement.rowLocation[r];
        if (at.where != FeatureStruct::eCount) {
            chain.member(at.where, at.offset) = VK_TRUE;
            linked[static_cast<size_t>(at.where)] = true;
        }
    }
    // Extensions that enabled ones depend on.
    for (size_t i = 0; i < linked.size(); ++i) {
        if (linked[i] && kStructs[i].dependency != nullptr &&
            contains(result.extensions, kStructs[i].extension)) {
            addUnique(result.extensions, kStructs[i].dependency);
        }
    }
    std::vector<FeatureStruct> order;
    for (size_t i = 0; i < linked.size(); ++i) {
        if (linked[i]) {
            order.push_back(static_cast<FeatureStruct>(i));
        }
    }
    chain.link(order);
    return result;
}

bool
Capabilities::enabled(const std::string& name) const
{
    return effective(rowIndex(name));
}

bool
Capabilities::supported(const std::string& name) const
{
    return mSupported[rowIndex(name)];
}

bool
Capabilities::extensionEnabled(const std::string& name) const
{
    return contains(mView.enabledExtensions, name);
}

bool
Capabilities::extensionAvailable(const std::string& name) const
{
    return contains(mAvailableExtensions, name);
}

std::string
Capabilities::rowVulkanName(size_t r) const
{
    const Row& row = kRows[r];
    if (row.extension != nullptr) {
        return row.extension;
    }
    Placement placement(mApiVersion, mAvailableExtensions);
    Location at = placement.rowLocation[r];
    if (at.where == FeatureStruct::eCount) {
        at = row.primary; // not on this device: name its newest home
    }
    // The member's own name: the row's, without a vendor suffix.
    std::string member = row.name;
    if (at.where == FeatureStruct::eCooperativeMatrixNV && member.size() > 2 &&
        member.compare(member.size() - 2, 2, "NV") == 0) {
        member.resize(member.size() - 2);
    }
    return std::string(info(at.where).name) + "::" + member;
}

std::string
Capabilities::whyNotEnabled(size_t r) const
{
    const std::string device = format("'{}'", mProperties.deviceName.data());
    if (!mSupported[r]) {
        Placement placement(mApiVersion, mAvailableExtensions);
        const Row& row = kRows[r];
        const char* extension = row.extension;
        if (extension == nullptr && placement.rowLocation[r].where == FeatureStruct::eCount) {
            const Location& newest = row.primary;
            extension = info(newest.where).extension;
            if (extension == nullptr) {
                return format("{} (Vulkan {}) does not have it: it needs Vulkan {}",
                              device,
                              versionName(mApiVersion),
                              versionName(info(newest.where).coreSince));
            }
        }
        if (extension != nullptr && !contains(mAvailableExtensions, extension)) {
            return format("{} does not offer the extension {}", device, extension);
        }
        return device + " does not support it";
    }
    if (mDisabled[r]) {
        for (const auto& group : mDisabledGroups) {
            if (inGroup(kRows[r], group)) {
                return format("it is turned off by KOMPUTE_ENV_DISABLE={}", group);
            }
        }
        return "it is turned off by KOMPUTE_ENV_DISABLE";
    }
    if (mEnabled[r] && kRows[r].needs != nullptr) {
        size_t needed = rowIndex(kRows[r].needs);
        return format("it needs {}, and {}", rowVulkanName(needed), whyNotEnabled(needed));
    }
    Placement placement(mApiVersion, mAvailableExtensions);
    const char* extension = placement.extensionOf(r, mApiVersion);
    return format("{} supports it, but it was not enabled on this device{} (a Manager on your own "
                  "VkDevice: pass the extensions and features you enabled to its constructor)",
                  device,
                  extension != nullptr ? format(" with the extension {}", extension) : std::string());
}

std::vector<std::string>
Capabilities::disableGroups()
{
    std::vector<std::string> groups;
    for (const auto& row : kRows) {
        for (const auto& group : splitList(row.groups)) {
            addUnique(groups, group);
        }
    }
    return groups;
}

std::string
Capabilities::capabilityName(uint32_t capability)
{
    if (const CapabilityRule* rule = findRule(capability)) {
        return rule->name;
    }
    for (const auto& entry : kOtherCapabilityNames) {
        if (entry.capability == capability) {
            return entry.name;
        }
    }
    return "capability " + std::to_string(capability);
}

bool
Capabilities::effective(size_t r) const
{
    if (!mEnabled[r] || !mSupported[r] || mDisabled[r]) {
        return false;
    }
    // A row that needs another is off without it.
    return kRows[r].needs == nullptr || effective(rowIndex(kRows[r].needs));
}

void
Capabilities::updateView()
{
    Placement placement(mApiVersion, mAvailableExtensions);
    DeviceCapabilities v = mQueried;
    v.features.clear();
    for (size_t r = 0; r < kRowCount; ++r) {
        DeviceFeature feature;
        feature.name = kRows[r].name;
        feature.vulkanName = rowVulkanName(r);
        const char* extension = placement.extensionOf(r, mApiVersion);
        if (extension == nullptr && !mSupported[r] && kRows[r].extension == nullptr &&
            placement.rowLocation[r].where == FeatureStruct::eCount) {
            extension = info(kRows[r].primary.where).extension;
        }
        feature.extension = extension != nullptr ? extension : "";
        feature.group = kRows[r].groups;
        feature.supported = mSupported[r];
        feature.enabled = effective(r);
        v.features.push_back(feature);
    }
    auto on = [this](const char* name) { return enabled(name); };
    v.enabledExtensions = mEnabledExtensions;
    for (size_t r = 0; r < kRowCount; ++r) {
        if (v.features[r].enabled) {
            if (const char* extension = placement.extensionOf(r, mApiVersion)) {
                addUnique(v.enabledExtensions, extension);
            }
        }
    }
    v.disabledGroups = mDisabledGroups;

    v.float16 = on("shaderFloat16");
    v.float64 = on("shaderFloat64");
    v.int8 = on("shaderInt8");
    v.int16 = on("shaderInt16");
    v.int64 = on("shaderInt64");
    v.bfloat16 = on("shaderBFloat16Type");
    v.bfloat16DotProduct = on("shaderBFloat16DotProduct");
    v.storageBuffer8Bit = on("storageBuffer8BitAccess");
    v.storageBuffer16Bit = on("storageBuffer16BitAccess");
    v.storagePushConstant8 = on("storagePushConstant8");
    v.storagePushConstant16 = on("storagePushConstant16");
    v.int64Atomics = on("shaderBufferInt64Atomics");
    v.float16AtomicAdd = on("shaderBufferFloat16AtomicAdd");
    v.float32AtomicAdd = on("shaderBufferFloat32AtomicAdd");
    v.float32AtomicMinMax = on("shaderBufferFloat32AtomicMinMax");
    v.float64AtomicAdd = on("shaderBufferFloat64AtomicAdd");
    v.float64AtomicMinMax = on("shaderBufferFloat64AtomicMinMax");
    v.bufferDeviceAddress = on("bufferDeviceAddress");
    v.vulkanMemoryModel = on("vulkanMemoryModel");
    v.vulkanMemoryModelDeviceScope = on("vulkanMemoryModelDeviceScope");
    v.variablePointers = on("variablePointers");
    v.scalarBlockLayout = on("scalarBlockLayout");
    v.workgroupMemoryExplicitLayout = on("workgroupMemoryExplicitLayout");
    v.timelineSemaphore = on("timelineSemaphore");

    v.integerDotProduct.supported = on("shaderIntegerDotProduct");
    if (!v.integerDotProduct.supported) {
        v.integerDotProduct = DeviceCapabilities::IntegerDotProduct{};
    }

    bool subgroupsOff = contains(mDisabledGroups, "subgroup");
    if (subgroupsOff || !(v.subgroup.stages & vk::ShaderStageFlagBits::eCompute)) {
        v.subgroup.operations = vk::SubgroupFeatureFlags();
    }
    v.subgroup.extendedTypes = on("shaderSubgroupExtendedTypes");
    v.subgroup.sizeControl = on("subgroupSizeControl");
    v.subgroup.computeFullSubgroups = on("computeFullSubgroups");
    if (!v.subgroup.sizeControl) {
        v.subgroup.requiredSizeStages = vk::ShaderStageFlags();
    }

    auto& m = v.cooperativeMatrix;
    m.khr = on("cooperativeMatrix") && (m.khrStages & vk::ShaderStageFlagBits::eCompute);
    m.nv = on("cooperativeMatrixNV") && (m.nvStages & vk::ShaderStageFlagBits::eCompute);
    m.bfloat16 = m.khr && on("shaderBFloat16CooperativeMatrix");
    if (!m.khr) {
        m.khrShapes.clear();
    } else if (!m.bfloat16) {
        // Shapes of bfloat16 need the bfloat16 feature too.
        auto bf16 = [](const CooperativeMatrixShape& s) {
            return s.a == ComponentType::eBFloat16 || s.b == ComponentType::eBFloat16 ||
                   s.c == ComponentType::eBFloat16 || s.result == ComponentType::eBFloat16;
        };
        m.khrShapes.erase(std::remove_if(m.khrShapes.begin(), m.khrShapes.end(), bf16),
                          m.khrShapes.end());
    }
    if (!m.nv) {
        m.nvShapes.clear();
    }
    m.nv2.workgroupScope = on("cooperativeMatrixWorkgroupScope");
    m.nv2.flexibleDimensions = on("cooperativeMatrixFlexibleDimensions");
    m.nv2.reductions = on("cooperativeMatrixReductions");
    m.nv2.conversions = on("cooperativeMatrixConversions");
    m.nv2.perElementOperations = on("cooperativeMatrixPerElementOperations");
    m.nv2.tensorAddressing = on("cooperativeMatrixTensorAddressing");
    m.nv2.blockLoads = on("cooperativeMatrixBlockLoads");
    if (!m.nv2.flexibleDimensions) {
        m.nv2.flexibleShapes.clear();
    }

    bool floatControls = on("shaderFloatControls");
    if (!floatControls) {
        v.floatControls = DeviceCapabilities::FloatControls{};
    }
    mView = std::move(v);
}

void
Capabilities::checkShader(const ReflectedModule& module) const
{
    const std::string device = format("'{}'", mProperties.deviceName.data());
    auto anyRowEnabled = [this](const char* rows) {
        for (const auto& name : splitList(rows)) {
            if (enabled(name)) {
                return true;
            }
        }
        return false;
    };
    for (uint32_t capability : module.capabilities) {
        const CapabilityRule* rule = findRule(capability);
        if (rule == nullptr) {
            throw Error(format("The shader declares the SPIR-V capability {}, which a compute "
                               "shader on Kompute cannot use (it is not in Kompute's capability "
                               "table, src/internal/Capabilities.cpp, so it is refused before "
                               "the driver sees it)",
                               capabilityName(capability)));
        }
        bool allowed = (rule->version != 0 && mApiVersion >= rule->version) ||
                       (rule->extension != nullptr && extensionEnabled(rule->extension)) ||
                       (rule->rows != nullptr && anyRowEnabled(rule->rows));
        switch (rule->special) {
            case Special::eNone: break;
            case Special::eSubgroupOperation:
                allowed = static_cast<uint32_t>(mView.subgroup.operations) & rule->bit;
                if (!allowed) {
                    throw Error(format(
                      "The shader uses the SPIR-V capability {}, which needs the subgroup "
                      "operation {} in compute shaders (VkPhysicalDeviceSubgroupProperties::"
                      "supportedOperations); {}",
                      rule->name,
                      vk::to_string(static_cast<vk::SubgroupFeatureFlagBits>(rule->bit)),
                      contains(mDisabledGroups, "subgroup")
                        ? std::string("it is turned off by KOMPUTE_ENV_DISABLE=subgroup")
                        : device + " does not support it"));
                }
                continue;
            case Special::eFloatControls:
                // Checked per execution mode below; the extension is needed
                // before Vulkan 1.2.
                allowed = enabled("shaderFloatControls");
                break;
            case Special::eCooperativeMatrixKHR:
                if (allowed && !(mView.cooperativeMatrix.khrStages & vk::ShaderStageFlagBits::eCompute)) {
                    throw Error(format("The shader uses the SPIR-V capability {}, but {} does not run "
                                       "cooperative matrices in compute shaders "
                                       "(cooperativeMatrixSupportedStages)",
                                       rule->name,
                                       device));
                }
                break;
            case Special::eCooperativeMatrixNV:
                if (allowed && !(mView.cooperativeMatrix.nvStages & vk::ShaderStageFlagBits::eCompute)) {
                    throw Error(format("The shader uses the SPIR-V capability {}, but {} does not run "
                                       "cooperative matrices in compute shaders "
                                       "(cooperativeMatrixSupportedStages)",
                                       rule->name,
                                       device));
                }
                break;
        }
        if (allowed) {
            continue;
        }
        // Name what it needs: the first row, else the version or extension.
        std::vector<std::string> rows = splitList(rule->rows);
        if (!rows.empty()) {
            size_t r = rowIndex(rows.front());
            std::string needs = rowVulkanName(r);
            for (size_t i = 1; i < rows.size(); ++i) {
                needs += " or " + rowVulkanName(rowIndex(rows[i]));
            }
            throw Error(format("The shader uses the SPIR-V capability {}, which needs the device "
                               "feature {}; {}",
                               rule->name,
                               needs,
                               whyNotEnabled(r)));
        }
        std::string needs;
        if (rule->version != 0) {
            needs = "Vulkan " + versionName(rule->version);
        }
        if (rule->extension != nullptr) {
            needs += (needs.empty() ? "the device extension " : " or the device extension ") +
                     std::string(rule->extension);
        }
        if (rule->special == Special::eFloatControls) {
            needs = "Vulkan 1.2 or the device extension VK_KHR_shader_float_controls";
        }
        throw Error(format("The shader uses the SPIR-V capability {}, which needs {}; {} (Vulkan {}) "
                           "does not have it enabled",
                           rule->name,
                           needs,
                           device,
                           versionName(mApiVersion)));
    }

    for (const auto& name : module.extensions) {
        const ExtensionRule* rule = nullptr;
        for (const auto& candidate : kExtensionRules) {
            if (name == candidate.spirv) {
                rule = &candidate;
            }
        }
        if (rule == nullptr) {
            throw Error(format("The shader declares the SPIR-V extension {}, which Kompute does "
                               "not know to be allowed in Vulkan compute shaders",
                               name));
        }
        bool allowed = (rule->version != 0 && mApiVersion >= rule->version) ||
                       extensionEnabled(rule->extension);
        if (!allowed) {
            throw Error(format("The shader uses the SPIR-V extension {}, which needs the device "
                               "extension {}{}; {} {}",
                               name,
                               rule->extension,
                               rule->version != 0 ? " (or Vulkan " + versionName(rule->version) + ")"
                                                  : std::string(),
                               device,
                               contains(mAvailableExtensions, rule->extension)
                                 ? "has it, but it was not enabled on this device"
                                 : "does not offer it"));
        }
    }

    if (module.usesLocalSizeId && !enabled("maintenance4")) {
        size_t r = rowIndex("maintenance4");
        throw Error(format("The shader gives its local size with the LocalSizeId execution mode, "
                           "which needs the device feature {}; {}",
                           rowVulkanName(r),
                           whyNotEnabled(r)));
    }

    // Float-controls execution modes, per bit width.
    for (const auto& mode : module.floatControlModes) {
        int index = mode.width == 16 ? 0 : mode.width == 32 ? 1 : mode.width == 64 ? 2 : -1;
        for (const auto& rule : kFloatControlRules) {
            if (rule.mode == mode.mode && (index < 0 || !(mView.floatControls.*rule.supported)[index])) {
                throw Error(format("The shader asks for the float-controls execution mode {} on "
                                   "{}-bit floats, which needs "
                                   "VkPhysicalDeviceFloatControlsProperties::{}{}; {} does not "
                                   "support it",
                                   rule.name,
                                   mode.width,
                                   rule.property,
                                   mode.width,
                                   device));
            }
        }
    }
}

} // namespace internal

std::string
toString(ComponentType type)
{
    switch (type) {
        case ComponentType::eFloat16: return "float16";
        case ComponentType::eFloat32: return "float32";
        case ComponentType::eFloat64: return "float64";
        case ComponentType::eSint8: return "sint8";
        case ComponentType::eSint16: return "sint16";
        case ComponentType::eSint32: return "sint32";
        case ComponentType::eSint64: return "sint64";
        case ComponentType::eUint8: return "uint8";
        case ComponentType::eUint16: return "uint16";
        case ComponentType::eUint32: return "uint32";
        case ComponentType::eUint64: return "uint64";
        case ComponentType::eBFloat16: return "bfloat16";
        case ComponentType::eSint8PackedNV: return "sint8_packed";
        case ComponentType::eUint8PackedNV: return "uint8_packed";
        case ComponentType::eFloat8E4M3: return "float8_e4m3";
        case ComponentType::eFloat8E5M2: return "float8_e5m2";
    }
    return "unknown(" + std::to_string(static_cast<int32_t>(type)) + ")";
}

std::string
toString(MatrixScope scope)
{
    switch (scope) {
        case MatrixScope::eDevice: return "device";
        case MatrixScope::eWorkgroup: return "workgroup";
        case MatrixScope::eSubgroup: return "subgroup";
        case MatrixScope::eQueueFamily: return "queue_family";
    }
    return "unknown(" + std::to_string(static_cast<int32_t>(scope)) + ")";
}

bool
DeviceCapabilities::enabled(const std::string& name) const
{
    for (const auto& feature : features) {
        if (feature.name == name) {
            return feature.enabled;
        }
    }
    return false;
}

bool
DeviceCapabilities::supported(const std::string& name) const
{
    for (const auto& feature : features) {
        if (feature.name == name) {
            return feature.supported;
        }
    }
    return false;
}

} // namespace kp
