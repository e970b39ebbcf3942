// SPDX-License-Identifier: Apache-2.0
// kp::DeviceCapabilities (ours): a read-only view of what a Manager's device
// supports and what Kompute enabled on it, from the one capability table
// that also drives device creation and shader checking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kompute/Vulkan.hpp"

namespace kp {

/** Element type of a cooperative matrix (the values of VkComponentTypeKHR). */
enum class ComponentType : int32_t
{
    eFloat16 = 0,
    eFloat32 = 1,
    eFloat64 = 2,
    eSint8 = 3,
    eSint16 = 4,
    eSint32 = 5,
    eSint64 = 6,
    eUint8 = 7,
    eUint16 = 8,
    eUint32 = 9,
    eUint64 = 10,
    eBFloat16 = 1000141000,
    eSint8PackedNV = 1000491000,
    eUint8PackedNV = 1000491001,
    eFloat8E4M3 = 1000491002,
    eFloat8E5M2 = 1000491003,
};

/** "float16", "bfloat16", "sint8", ... ("unknown(N)" for other values). */
std::string
toString(ComponentType type);

/** Scope of a cooperative matrix (the values of VkScopeKHR). */
enum class MatrixScope : int32_t
{
    eDevice = 1,
    eWorkgroup = 2,
    eSubgroup = 3,
    eQueueFamily = 5,
};

/** "device", "workgroup", "subgroup", "queue_family". */
std::string
toString(MatrixScope scope);

/**
 * One matrix multiply-add the device runs on its matrix units:
 * Result(m x n) = A(m x k) * B(k x n) + C(m x n). For the flexible shapes of
 * VK_NV_cooperative_matrix2, m, n and k are granularities (any multiple
 * works) and workgroupInvocations is the workgroup size they need (0: any).
 */
struct CooperativeMatrixShape
{
    uint32_t m = 0;
    uint32_t n = 0;
    uint32_t k = 0;
    ComponentType a = ComponentType::eFloat16;
    ComponentType b = ComponentType::eFloat16;
    ComponentType c = ComponentType::eFloat32;
    ComponentType result = ComponentType::eFloat32;
    bool saturatingAccumulation = false;
    MatrixScope scope = MatrixScope::eSubgroup;
    uint32_t workgroupInvocations = 0;
};

/** One row of the capability table on one device. */
struct DeviceFeature
{
    /** The table's name for it: the Vulkan structure member
     * ("shaderFloat16"), with a suffix where two structures share a member
     * name ("cooperativeMatrixNV"). */
    std::string name;
    /** Where it is queried and enabled on this device, e.g.
     * "VkPhysicalDeviceVulkan12Features::shaderFloat16". */
    std::string vulkanName;
    /** The device extension it needs on this device; empty when it is core
     * in the device's Vulkan version. */
    std::string extension;
    /** The name that turns it off in KOMPUTE_ENV_DISABLE ("float16", ...). */
    std::string group;
    bool supported = false;
    bool enabled = false;
};

/**
 * What a Manager's device can do, as Kompute set it up (ours). The typed
 * members say what shaders may use: the feature is supported by the device,
 * enabled on it (by Kompute, or by the application for a bring-your-own-
 * Vulkan Manager) and not turned off by KOMPUTE_ENV_DISABLE. `features`
 * lists every row of the capability table with both states.
 */
struct DeviceCapabilities
{
    // --- The device -------------------------------------------------------
    std::string deviceName;
    uint32_t vendorID = 0;
    uint32_t deviceID = 0;
    vk::PhysicalDeviceType deviceType = vk::PhysicalDeviceType::eOther;
    /** The version Kompute uses it at: the lower of the device's and the
     * instance's. */
    uint32_t apiVersion = 0;
    uint32_t driverVersion = 0;
    /** From VkPhysicalDeviceDriverProperties, where the device has it. */
    std::string driverName;
    std::string driverInfo;

    // --- Every row of the table, and what was enabled ----------------------
    std::vector<DeviceFeature> features;
    std::vector<std::string> enabledExtensions;
    /** The KOMPUTE_ENV_DISABLE names in effect. */
    std::vector<std::string> disabledGroups;

    /** Whether row `name` (DeviceFeature::name) is enabled. */
    bool enabled(const std::string& name) const;
    /** Whether the device supports row `name`. */
    bool supported(const std::string& name) const;

    // --- Arithmetic and storage types --------------------------------------
    bool float16 = false;
    bool float64 = false;
    bool int8 = false;
    bool int16 = false;
    bool int64 = false;
    bool bfloat16 = false;
    bool bfloat16DotProduct = false;
    bool storageBuffer8Bit = false;
    bool storageBuffer16Bit = false;
    bool storagePushConstant8 = false;
    bool storagePushConstant16 = false;

    // --- Atomics beyond 32-bit integers (on storage buffers) ----------------
    bool int64Atomics = false;
    bool float16AtomicAdd = false;
    bool float32AtomicAdd = false;
    bool float32AtomicMinMax = false;
    bool float64AtomicAdd = false;
    bool float64AtomicMinMax = false;

    // --- Memory model and addressing ---------------------------------------
    bool bufferDeviceAddress = false;
    bool vulkanMemoryModel = false;
    bool vulkanMemoryModelDeviceScope = false;
    bool variablePointers = false;
    bool scalarBlockLayout = false;
    bool workgroupMemoryExplicitLayout = false;
    bool timelineSemaphore = false;

    // --- Integer dot product (VK_KHR_shader_integer_dot_product) -------------
    struct IntegerDotProduct
    {
        bool supported = false;
        /** The driver runs these natively (faster than plain arithmetic). */
        bool accelerated8Bit = false;          // signed and unsigned
        bool accelerated8BitMixed = false;     // mixed signedness
        bool accelerated4x8BitPacked = false;  // signed and unsigned
        bool accelerated4x8BitPackedMixed = false;
        bool accelerated16Bit = false;
        bool accelerated32Bit = false;
        bool acceleratedAccumulating4x8BitPacked = false;
    } integerDotProduct;

    // --- Subgroups -----------------------------------------------------------
    struct Subgroup
    {
        /** Default size; min/max from VK_EXT_subgroup_size_control. */
        uint32_t size = 0;
        uint32_t minSize = 0;
        uint32_t maxSize = 0;
        uint32_t maxComputeWorkgroupSubgroups = 0;
        /** Operations shaders may use in compute (empty if the device does
         * not support subgroup operations in compute shaders). */
        vk::SubgroupFeatureFlags operations;
        vk::ShaderStageFlags stages;
        bool extendedTypes = false;
        /** A pipeline may ask for a subgroup size (sizeControl) in the
         * stages of requiredSizeStages, and full subgroups. */
        bool sizeControl = false;
        bool computeFullSubgroups = false;
        vk::ShaderStageFlags requiredSizeStages;
    } subgroup;

    // --- Cooperative matrices --------------------------------------------------
    struct CooperativeMatrix
    {
        /** VK_KHR_cooperative_matrix, and the shapes it runs. */
        bool khr = false;
        vk::ShaderStageFlags khrStages;
        std::vector<CooperativeMatrixShape> khrShapes;
        /** VK_NV_cooperative_matrix, and its shapes. */
        bool nv = false;
        vk::ShaderStageFlags nvStages;
        std::vector<CooperativeMatrixShape> nvShapes;
        bool bfloat16 = false; // bfloat16 cooperative matrices
        /** VK_NV_cooperative_matrix2. */
        struct Nv2
        {
            bool workgroupScope = false;
            bool flexibleDimensions = false;
            bool reductions = false;
            bool conversions = false;
            bool perElementOperations = false;
            bool tensorAddressing = false;
            bool blockLoads = false;
            uint32_t workgroupScopeMaxWorkgroupSize = 0;
            uint32_t flexibleDimensionsMaxDimension = 0;
            uint32_t workgroupScopeReservedSharedMemory = 0;
            std::vector<CooperativeMatrixShape> flexibleShapes;
        } nv2;
    } cooperativeMatrix;

    // --- Floating-point controls (VK_KHR_shader_float_controls) ----------------
    /** Index 0: 16-bit floats, 1: 32-bit, 2: 64-bit. */
    struct FloatControls
    {
        bool denormPreserve[3] = {};
        bool denormFlushToZero[3] = {};
        bool signedZeroInfNanPreserve[3] = {};
        bool roundingModeRTE[3] = {};
        bool roundingModeRTZ[3] = {};
    } floatControls;

    // --- Sizes kernels are tuned by ---------------------------------------------
    uint32_t maxComputeSharedMemorySize = 0;
    uint64_t maxMemoryAllocationSize = 0;
    /** 0 where the device does not report it (before Vulkan 1.3). */
    uint64_t maxBufferSize = 0;
    /** Streaming multiprocessors and warps per SM (VK_NV_shader_sm_builtins;
     * 0 elsewhere). */
    uint32_t shaderSMCount = 0;
    uint32_t shaderWarpsPerSM = 0;
};

} // namespace kp
