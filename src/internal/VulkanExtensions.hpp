// SPDX-License-Identifier: Apache-2.0
// Declarations of the Vulkan extensions and SPIR-V capabilities that the
// capability table (Capabilities.hpp) needs but older Vulkan and SPIR-V
// headers lack: Debian 12 ships Vulkan-Headers 1.3.239, from before
// VK_KHR_cooperative_matrix, VK_NV_cooperative_matrix2 and
// VK_KHR_shader_bfloat16.
//
// Everything is declared under kp::internal::vkx. Where the system headers
// have an extension, the names below are aliases of theirs; otherwise they
// are our own declarations, written from the Vulkan specification (structure
// layouts, VkStructureType values, enumerants and command names). Only what
// the table uses is declared.
#pragma once

#include <cstdint>

#include <vulkan/vulkan.h>

namespace kp {
namespace internal {
namespace vkx {

// --- VK_KHR_cooperative_matrix (extension 507) ------------------------------

constexpr const char* kCooperativeMatrixKHR = "VK_KHR_cooperative_matrix";

/** VkComponentTypeKHR (values shared with VkComponentTypeNV). */
enum ComponentType : int32_t
{
    eComponentFloat16 = 0,
    eComponentFloat32 = 1,
    eComponentFloat64 = 2,
    eComponentSint8 = 3,
    eComponentSint16 = 4,
    eComponentSint32 = 5,
    eComponentSint64 = 6,
    eComponentUint8 = 7,
    eComponentUint16 = 8,
    eComponentUint32 = 9,
    eComponentUint64 = 10,
    eComponentBfloat16 = 1000141000, // VK_KHR_shader_bfloat16
    eComponentSint8PackedNV = 1000491000,
    eComponentUint8PackedNV = 1000491001,
    eComponentFloat8E4M3 = 1000491002,
    eComponentFloat8E5M2 = 1000491003,
};

/** VkScopeKHR (values shared with VkScopeNV). */
enum Scope : int32_t
{
    eScopeDevice = 1,
    eScopeWorkgroup = 2,
    eScopeSubgroup = 3,
    eScopeQueueFamily = 5,
};

#ifdef VK_KHR_cooperative_matrix
using CooperativeMatrixFeaturesKHR = VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
using CooperativeMatrixPropertiesKHR = VkPhysicalDeviceCooperativeMatrixPropertiesKHR;
using CooperativeMatrixShapeKHR = VkCooperativeMatrixPropertiesKHR;
#else
struct CooperativeMatrixFeaturesKHR
{
    VkStructureType sType;
    void* pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
};
struct CooperativeMatrixPropertiesKHR
{
    VkStructureType sType;
    void* pNext;
    VkShaderStageFlags cooperativeMatrixSupportedStages;
};
/** VkCooperativeMatrixPropertiesKHR: one supported shape. */
struct CooperativeMatrixShapeKHR
{
    VkStructureType sType;
    void* pNext;
    uint32_t MSize;
    uint32_t NSize;
    uint32_t KSize;
    int32_t AType; // VkComponentTypeKHR
    int32_t BType;
    int32_t CType;
    int32_t ResultType;
    VkBool32 saturatingAccumulation;
    int32_t scope; // VkScopeKHR
};
#endif

constexpr VkStructureType kStructPhysicalDeviceCooperativeMatrixFeaturesKHR =
  static_cast<VkStructureType>(1000506000);
constexpr VkStructureType kStructCooperativeMatrixPropertiesKHR =
  static_cast<VkStructureType>(1000506001);
constexpr VkStructureType kStructPhysicalDeviceCooperativeMatrixPropertiesKHR =
  static_cast<VkStructureType>(1000506002);

using PFN_GetCooperativeMatrixPropertiesKHR = VkResult(VKAPI_PTR*)(VkPhysicalDevice,
                                                                     uint32_t*,
                                                                     CooperativeMatrixShapeKHR*);
constexpr const char* kGetCooperativeMatrixPropertiesKHR =
  "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR";

// --- VK_NV_cooperative_matrix2 (extension 594) ------------------------------

constexpr const char* kCooperativeMatrix2NV = "VK_NV_cooperative_matrix2";

#ifdef VK_NV_cooperative_matrix2
using CooperativeMatrix2FeaturesNV = VkPhysicalDeviceCooperativeMatrix2FeaturesNV;
using CooperativeMatrix2PropertiesNV = VkPhysicalDeviceCooperativeMatrix2PropertiesNV;
using CooperativeMatrixFlexibleShapeNV = VkCooperativeMatrixFlexibleDimensionsPropertiesNV;
#else
struct CooperativeMatrix2FeaturesNV
{
    VkStructureType sType;
    void* pNext;
    VkBool32 cooperativeMatrixWorkgroupScope;
    VkBool32 cooperativeMatrixFlexibleDimensions;
    VkBool32 cooperativeMatrixReductions;
    VkBool32 cooperativeMatrixConversions;
    VkBool32 cooperativeMatrixPerElementOperations;
    VkBool32 cooperativeMatrixTensorAddressing;
    VkBool32 cooperativeMatrixBlockLoads;
};
struct CooperativeMatrix2PropertiesNV
{
    VkStructureType sType;
    void* pNext;
    uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
    uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension;
    uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory;
};
/** VkCooperativeMatrixFlexibleDimensionsPropertiesNV: one supported
 * combination of types, with the granularity of its dimensions. */
struct CooperativeMatrixFlexibleShapeNV
{
    VkStructureType sType;
    void* pNext;
    uint32_t MGranularity;
    uint32_t NGranularity;
    uint32_t KGranularity;
    int32_t AType;
    int32_t BType;
    int32_t CType;
    int32_t ResultType;
    VkBool32 saturatingAccumulation;
    int32_t scope;
    uint32_t workgroupInvocations;
};
#endif

constexpr VkStructureType kStructPhysicalDeviceCooperativeMatrix2FeaturesNV =
  static_cast<VkStructureType>(1000593000);
constexpr VkStructureType kStructCooperativeMatrixFlexibleDimensionsPropertiesNV =
  static_cast<VkStructureType>(1000593001);
constexpr VkStructureType kStructPhysicalDeviceCooperativeMatrix2PropertiesNV =
  static_cast<VkStructureType>(1000593002);

using PFN_GetCooperativeMatrixFlexibleDimensionsPropertiesNV =
  VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CooperativeMatrixFlexibleShapeNV*);
constexpr const char* kGetCooperativeMatrixFlexibleDimensionsPropertiesNV =
  "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV";

// --- VK_KHR_shader_bfloat16 (extension 142) ---------------------------------

constexpr const char* kShaderBfloat16KHR = "VK_KHR_shader_bfloat16";

#ifdef VK_KHR_shader_bfloat16
using ShaderBfloat16FeaturesKHR = VkPhysicalDeviceShaderBfloat16FeaturesKHR;
#else
struct ShaderBfloat16FeaturesKHR
{
    VkStructureType sType;
    void* pNext;
    VkBool32 shaderBFloat16Type;
    VkBool32 shaderBFloat16DotProduct;
    VkBool32 shaderBFloat16CooperativeMatrix;
};
#endif

constexpr VkStructureType kStructPhysicalDeviceShaderBfloat16FeaturesKHR =
  static_cast<VkStructureType>(1000141000);

// --- VK_NV_cooperative_matrix (in the 1.3.239 headers) ----------------------

using PFN_GetCooperativeMatrixPropertiesNV = PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV;
constexpr const char* kGetCooperativeMatrixPropertiesNV =
  "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV";

// --- SPIR-V capabilities newer than SPIRV-Headers 1.3.239 -------------------
// Values from the SPIR-V registry (spirv.core.grammar.json).

namespace spirv {
constexpr uint32_t kCapabilityBFloat16TypeKHR = 5116;
constexpr uint32_t kCapabilityBFloat16DotProductKHR = 5117;
constexpr uint32_t kCapabilityBFloat16CooperativeMatrixKHR = 5118;
constexpr uint32_t kCapabilityCooperativeMatrixReductionsNV = 5430;
constexpr uint32_t kCapabilityCooperativeMatrixConversionsNV = 5431;
constexpr uint32_t kCapabilityCooperativeMatrixPerElementOperationsNV = 5432;
constexpr uint32_t kCapabilityCooperativeMatrixTensorAddressingNV = 5433;
constexpr uint32_t kCapabilityCooperativeMatrixBlockLoadsNV = 5434;
constexpr uint32_t kCapabilityTensorAddressingNV = 5439;
constexpr uint32_t kCapabilityCooperativeMatrixKHR = 6022;
} // namespace spirv

} // namespace vkx
} // namespace internal
} // namespace kp
