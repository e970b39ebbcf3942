// SPDX-License-Identifier: Apache-2.0
// kp::DeviceCapabilities: a read-only view of what a Manager's device
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
    eFloat16 = 0,                ///< 16-bit float
    eFloat32 = 1,                ///< 32-bit float
    eFloat64 = 2,                ///< 64-bit float
    eSint8 = 3,                  ///< 8-bit signed integer
    eSint16 = 4,                 ///< 16-bit signed integer
    eSint32 = 5,                 ///< 32-bit signed integer
    eSint64 = 6,                 ///< 64-bit signed integer
    eUint8 = 7,                  ///< 8-bit unsigned integer
    eUint16 = 8,                 ///< 16-bit unsigned integer
    eUint32 = 9,                 ///< 32-bit unsigned integer
    eUint64 = 10,                ///< 64-bit unsigned integer
    eBFloat16 = 1000141000,      ///< bfloat16 (VK_KHR_shader_bfloat16)
    eSint8PackedNV = 1000491000, ///< four signed 8-bit integers in 32 bits (NVIDIA)
    eUint8PackedNV = 1000491001, ///< four unsigned 8-bit integers in 32 bits (NVIDIA)
    eFloat8E4M3 = 1000491002,    ///< 8-bit float, 4 exponent and 3 mantissa bits
    eFloat8E5M2 = 1000491003,    ///< 8-bit float, 5 exponent and 2 mantissa bits
};

/** "float16", "bfloat16", "sint8", ... ("unknown(N)" for other values). */
std::string
toString(ComponentType type);

/** Scope of a cooperative matrix (the values of VkScopeKHR). */
enum class MatrixScope : int32_t
{
    eDevice = 1,      ///< the whole device
    eWorkgroup = 2,   ///< one workgroup (VK_NV_cooperative_matrix2)
    eSubgroup = 3,    ///< one subgroup: the usual scope
    eQueueFamily = 5, ///< a queue family
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
    uint32_t m = 0; ///< rows of A, C and the result
    uint32_t n = 0; ///< columns of B, C and the result
    uint32_t k = 0; ///< columns of A, rows of B
    ComponentType a = ComponentType::eFloat16;      ///< element type of A
    ComponentType b = ComponentType::eFloat16;      ///< element type of B
    ComponentType c = ComponentType::eFloat32;      ///< element type of C
    ComponentType result = ComponentType::eFloat32; ///< element type of the result
    /** Whether the accumulation saturates (integer types). */
    bool saturatingAccumulation = false;
    /** The scope the matrices are shared by. */
    MatrixScope scope = MatrixScope::eSubgroup;
    /** Workgroup size the flexible shapes need (0: any). */
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
    /** Whether the device supports it. */
    bool supported = false;
    /** Whether it is enabled on the Manager's device (and not turned off
     * by KOMPUTE_ENV_DISABLE): shaders may use it. */
    bool enabled = false;
};

/**
 * What a Manager's device can do, as Kompute set it up
 * (Manager::capabilities(); see @ref readme_device_capabilities). The typed
 * members say what shaders may use: the feature is supported by the device,
 * enabled on it (by Kompute, or by the application for a bring-your-own-
 * Vulkan Manager) and not turned off by KOMPUTE_ENV_DISABLE. `features`
 * lists every row of the capability table with both states. A plain value
 * (a copy): reading it needs no lock.
 */
struct DeviceCapabilities
{
    // --- The device -------------------------------------------------------
    /** VkPhysicalDeviceProperties::deviceName. */
    std::string deviceName;
    /** The PCI vendor ID (0x10DE NVIDIA, 0x1002 AMD, 0x8086 Intel, ...). */
    uint32_t vendorID = 0;
    /** The vendor's device ID. */
    uint32_t deviceID = 0;
    /** Discrete, integrated, virtual GPU or CPU. */
    vk::PhysicalDeviceType deviceType = vk::PhysicalDeviceType::eOther;
    /** The version Kompute uses it at: the lower of the device's and the
     * instance's. */
    uint32_t apiVersion = 0;
    /** The driver's version number, in the vendor's own encoding. */
    uint32_t driverVersion = 0;
    /** From VkPhysicalDeviceDriverProperties, where the device has it. */
    std::string driverName;
    /** From VkPhysicalDeviceDriverProperties (the driver's version text),
     * where the device has it. */
    std::string driverInfo;

    // --- Every row of the table, and what was enabled ----------------------
    /** Every row of the capability table, supported or not. */
    std::vector<DeviceFeature> features;
    /** The device extensions enabled on the device. */
    std::vector<std::string> enabledExtensions;
    /** The KOMPUTE_ENV_DISABLE names in effect. */
    std::vector<std::string> disabledGroups;

    /** Whether row `name` (DeviceFeature::name) is enabled. */
    bool enabled(const std::string& name) const;
    /** Whether the device supports row `name`. */
    bool supported(const std::string& name) const;

    // --- Arithmetic and storage types --------------------------------------
    bool float16 = false;               ///< 16-bit float arithmetic (shaderFloat16)
    bool float64 = false;               ///< 64-bit float arithmetic (shaderFloat64)
    bool int8 = false;                  ///< 8-bit integer arithmetic (shaderInt8)
    bool int16 = false;                 ///< 16-bit integer arithmetic (shaderInt16)
    bool int64 = false;                 ///< 64-bit integer arithmetic (shaderInt64)
    bool bfloat16 = false;              ///< the bfloat16 type in shaders (shaderBFloat16Type)
    bool bfloat16DotProduct = false;    ///< bfloat16 dot products (shaderBFloat16DotProduct)
    bool storageBuffer8Bit = false;     ///< 8-bit storage buffers (storageBuffer8BitAccess)
    bool storageBuffer16Bit = false;    ///< 16-bit storage buffers (storageBuffer16BitAccess)
    bool storagePushConstant8 = false;  ///< 8-bit values in push constants (storagePushConstant8)
    bool storagePushConstant16 = false; ///< 16-bit values in push constants (storagePushConstant16)

    // --- Atomics beyond 32-bit integers (on storage buffers) ----------------
    bool int64Atomics = false;        ///< 64-bit integer atomics (shaderBufferInt64Atomics)
    bool float16AtomicAdd = false;    ///< f16 atomic add (shaderBufferFloat16AtomicAdd)
    bool float32AtomicAdd = false;    ///< f32 atomic add (shaderBufferFloat32AtomicAdd)
    bool float32AtomicMinMax = false; ///< f32 atomic min, max (shaderBufferFloat32AtomicMinMax)
    bool float64AtomicAdd = false;    ///< f64 atomic add (shaderBufferFloat64AtomicAdd)
    bool float64AtomicMinMax = false; ///< f64 atomic min, max (shaderBufferFloat64AtomicMinMax)

    // --- Memory model and addressing ---------------------------------------
    bool bufferDeviceAddress = false;           ///< buffer device addresses (bufferDeviceAddress)
    bool vulkanMemoryModel = false;             ///< the Vulkan memory model (vulkanMemoryModel)
    bool vulkanMemoryModelDeviceScope = false;  ///< its device scope (vulkanMemoryModelDeviceScope)
    bool variablePointers = false;              ///< variable pointers (variablePointers)
    bool scalarBlockLayout = false;             ///< scalar block layout (scalarBlockLayout)
    /** Explicit layout of shared memory (workgroupMemoryExplicitLayout). */
    bool workgroupMemoryExplicitLayout = false;
    /** Timeline semaphores (timelineSemaphore): sequences then wait for
     * each other on the GPU, and without them on the host. */
    bool timelineSemaphore = false;

    // --- Integer dot product (VK_KHR_shader_integer_dot_product) -------------
    /** Integer dot products (VK_KHR_shader_integer_dot_product) and which
     * of them the driver accelerates. */
    struct IntegerDotProduct
    {
        /** Shaders may use integer dot products (shaderIntegerDotProduct). */
        bool supported = false;
        /** The driver runs these natively (faster than plain arithmetic):
         * 8-bit vectors, signed and unsigned. */
        bool accelerated8Bit = false;
        /** 8-bit vectors of mixed signedness. */
        bool accelerated8BitMixed = false;
        /** Four 8-bit values packed in 32 bits, signed and unsigned. */
        bool accelerated4x8BitPacked = false;
        /** Packed 8-bit values of mixed signedness. */
        bool accelerated4x8BitPackedMixed = false;
        /** 16-bit vectors, signed and unsigned. */
        bool accelerated16Bit = false;
        /** 32-bit vectors, signed and unsigned. */
        bool accelerated32Bit = false;
        /** Saturating accumulation of packed 8-bit dot products. */
        bool acceleratedAccumulating4x8BitPacked = false;
    } integerDotProduct; ///< integer dot products

    // --- Subgroups -----------------------------------------------------------
    /** Subgroups (VkPhysicalDeviceSubgroupProperties and
     * VK_EXT_subgroup_size_control). */
    struct Subgroup
    {
        /** Default size; min/max from VK_EXT_subgroup_size_control. */
        uint32_t size = 0;
        uint32_t minSize = 0; ///< smallest subgroup size a pipeline may ask for
        uint32_t maxSize = 0; ///< largest subgroup size a pipeline may ask for
        /** Most subgroups in one compute workgroup (0 where unknown). */
        uint32_t maxComputeWorkgroupSubgroups = 0;
        /** Operations shaders may use in compute (empty if the device does
         * not support subgroup operations in compute shaders). */
        vk::SubgroupFeatureFlags operations;
        /** Shader stages with subgroup operations. */
        vk::ShaderStageFlags stages;
        /** Subgroup operations on 8-, 16- and 64-bit types
         * (shaderSubgroupExtendedTypes). */
        bool extendedTypes = false;
        /** A pipeline may ask for a subgroup size (sizeControl) in the
         * stages of requiredSizeStages, and full subgroups. */
        bool sizeControl = false;
        /** A compute pipeline may ask for full subgroups. */
        bool computeFullSubgroups = false;
        /** Stages in which a pipeline may ask for a subgroup size. */
        vk::ShaderStageFlags requiredSizeStages;
    } subgroup; ///< subgroups

    // --- Cooperative matrices --------------------------------------------------
    /** Cooperative matrices (matrix units, tensor cores). */
    struct CooperativeMatrix
    {
        /** VK_KHR_cooperative_matrix, and the shapes it runs. */
        bool khr = false;
        vk::ShaderStageFlags khrStages; ///< stages with KHR cooperative matrices
        std::vector<CooperativeMatrixShape> khrShapes; ///< shapes of the KHR extension
        /** VK_NV_cooperative_matrix, and its shapes. */
        bool nv = false;
        vk::ShaderStageFlags nvStages; ///< stages with NV cooperative matrices
        std::vector<CooperativeMatrixShape> nvShapes; ///< shapes of the NV extension
        /** bfloat16 cooperative matrices (shaderBFloat16CooperativeMatrix). */
        bool bfloat16 = false;
        /** VK_NV_cooperative_matrix2. */
        struct Nv2
        {
            bool workgroupScope = false;       ///< workgroup-scope matrices
            bool flexibleDimensions = false;   ///< shapes of any multiple of the granularities
            bool reductions = false;           ///< reduction operations on matrices
            bool conversions = false;          ///< conversions between matrix uses and types
            bool perElementOperations = false; ///< per-element operations
            bool tensorAddressing = false;     ///< tensor layouts and views for loads and stores
            bool blockLoads = false;           ///< loads with a decode function per block
            /** Largest workgroup for workgroup-scope matrices. */
            uint32_t workgroupScopeMaxWorkgroupSize = 0;
            /** Largest dimension of a flexible shape. */
            uint32_t flexibleDimensionsMaxDimension = 0;
            /** Shared memory reserved by workgroup-scope matrices, bytes. */
            uint32_t workgroupScopeReservedSharedMemory = 0;
            /** The flexible shapes (granularities). */
            std::vector<CooperativeMatrixShape> flexibleShapes;
        } nv2; ///< VK_NV_cooperative_matrix2
    } cooperativeMatrix; ///< cooperative matrices

    // --- Floating-point controls (VK_KHR_shader_float_controls) ----------------
    /** Index 0: 16-bit floats, 1: 32-bit, 2: 64-bit. */
    struct FloatControls
    {
        bool denormPreserve[3] = {};           ///< denormals can be preserved
        bool denormFlushToZero[3] = {};        ///< denormals can be flushed to zero
        bool signedZeroInfNanPreserve[3] = {}; ///< signed zeros, infinities, NaNs kept
        bool roundingModeRTE[3] = {};          ///< round-to-nearest-even can be asked for
        bool roundingModeRTZ[3] = {};          ///< round-towards-zero can be asked for
    } floatControls; ///< floating-point controls

    // --- Sizes kernels are tuned by ---------------------------------------------
    /** Shared memory of one compute workgroup, bytes. */
    uint32_t maxComputeSharedMemorySize = 0;
    /** Largest single allocation, bytes (VkPhysicalDeviceMaintenance3Properties). */
    uint64_t maxMemoryAllocationSize = 0;
    /** Largest buffer, bytes; 0 where the device does not report it
     * (before Vulkan 1.3). */
    uint64_t maxBufferSize = 0;
    /** Streaming multiprocessors (VK_NV_shader_sm_builtins; 0 elsewhere). */
    uint32_t shaderSMCount = 0;
    uint32_t shaderWarpsPerSM = 0; ///< warps per SM (VK_NV_shader_sm_builtins; 0 elsewhere)
};

} // namespace kp
