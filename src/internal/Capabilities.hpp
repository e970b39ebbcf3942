// SPDX-License-Identifier: Apache-2.0
// The capability table: every optional device capability Kompute knows, in
// one place. Each row names a Vulkan feature member (or an extension), where
// it is queried and enabled on a device of a given Vulkan version (a core
// VkPhysicalDeviceVulkan1xFeatures member, or an extension's structure), the
// KOMPUTE_ENV_DISABLE name that turns it off; a second table says which
// SPIR-V capabilities and extensions need which rows. Device creation
// (Manager), bring-your-own-Vulkan, shader checking (Algorithm), the public
// view kp::DeviceCapabilities (kompute-info, Python) and the kernels' choice
// of paths all read these tables; nothing lists features anywhere else.
//
// How to use it from a kernel: `device.capabilities().view()` is the
// kp::DeviceCapabilities of the device (cooperative-matrix shapes, subgroup
// sizes, shared memory, integer dot-product acceleration, float16 / int8 /
// bfloat16 support, ...), already reduced by KOMPUTE_ENV_DISABLE, so a kernel
// that picks its path from it gets the fallback when a path is turned off.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kompute/Vulkan.hpp"

#include "internal/VulkanExtensions.hpp"
#include "kompute/Capabilities.hpp"

namespace kp {
namespace internal {

struct ReflectedModule;

/** The Vulkan feature structures the table reads and writes. */
enum class FeatureStruct : uint8_t
{
    eCore, // VkPhysicalDeviceFeatures2::features
    eVulkan11,
    eVulkan12,
    eVulkan13,
    // Core in Vulkan 1.1 (from 1.2 inside VkPhysicalDeviceVulkan11Features).
    e16BitStorage,
    eVariablePointers,
    // Extensions promoted to Vulkan 1.2.
    eShaderFloat16Int8,
    e8BitStorage,
    eShaderAtomicInt64,
    eTimelineSemaphore,
    eBufferDeviceAddress,
    eVulkanMemoryModel,
    eSubgroupExtendedTypes,
    eScalarBlockLayout,
    // Extensions promoted to Vulkan 1.3.
    eSubgroupSizeControl,
    eShaderIntegerDotProduct,
    // Extensions.
    eShaderAtomicFloat,
    eShaderAtomicFloat2,
    eWorkgroupMemoryExplicitLayout,
    eShaderClock,
    eShaderSMBuiltins,
    eCooperativeMatrixNV,
    eCooperativeMatrixKHR,
    eCooperativeMatrix2NV,
    eShaderBfloat16,
    eCount,
};

/** Storage for a chain of feature structures (what vkGetPhysicalDevice-
 * Features2 fills and vkCreateDevice reads). Only the structures usable on
 * the device are linked. Not copyable: the structures point at each other. */
class FeatureChain
{
  public:
    FeatureChain();
    ~FeatureChain();
    FeatureChain(const FeatureChain&) = delete;
    FeatureChain& operator=(const FeatureChain&) = delete;

    /** Links `linked` (in that order) after VkPhysicalDeviceFeatures2. */
    void link(const std::vector<FeatureStruct>& linked);
    VkPhysicalDeviceFeatures2* head();
    /** The structure's storage (whether linked or not). */
    void* get(FeatureStruct which);
    const void* get(FeatureStruct which) const;
    VkBool32& member(FeatureStruct which, size_t offset);
    VkBool32 member(FeatureStruct which, size_t offset) const;

  private:
    struct Storage;
    std::unique_ptr<Storage> mStorage;
};

/**
 * The capabilities of one physical device: what it supports (queried once)
 * and what is enabled, decided in steps before the device is created:
 *
 *     Capabilities caps(instance, physicalDevice, apiVersion);
 *     caps.enableDefaults();                        // a device Kompute creates
 *     caps.request(userExtensions, userFeatures);   // merged, not replaced
 *     caps.applyDisableList(getenv("KOMPUTE_ENV_DISABLE"));
 *     auto create = caps.deviceCreateInfo();        // chain + extensions
 *
 * For a device the application created, adopt() records what it enabled.
 */
class Capabilities
{
  public:
    /** Queries the device at `apiVersion` (the lower of the instance's and
     * the device's versions): features, properties, extensions, and the
     * cooperative-matrix shapes. Nothing is enabled yet. */
    Capabilities(vk::Instance instance, vk::PhysicalDevice physicalDevice, uint32_t apiVersion);
    ~Capabilities();
    Capabilities(Capabilities&&) noexcept;
    Capabilities& operator=(Capabilities&&) noexcept;

    /** Enables every supported row that is on by default (all but the few
     * that cost something or concern graphics, see the table). */
    void enableDefaults();
    /**
     * Adds what the application asked for: device extensions (one the
     * device lacks is skipped with a warning, as upstream does) and the
     * features set in `features` (a VkPhysicalDeviceFeatures2 and its pNext
     * chain; may be null). A requested row the device lacks, or a structure
     * Kompute cannot place on this device, throws kp::Error. Members of
     * VkPhysicalDeviceFeatures and VkPhysicalDeviceVulkan1xFeatures that are
     * not rows of the table are passed to vkCreateDevice as given.
     */
    void request(const std::vector<std::string>& extensions,
                 const vk::PhysicalDeviceFeatures2* features);
    /** For a device the application created: the extensions and features
     * it enabled (rows the device lacks are ignored with a warning). */
    void adopt(const std::vector<std::string>& extensions,
               const vk::PhysicalDeviceFeatures2* features);
    /** Turns off the rows of the comma-separated groups in `list` (the
     * value of KOMPUTE_ENV_DISABLE; null or empty: nothing). Unknown names
     * are reported with a warning listing the known ones. Timeline
     * semaphores are turned off too where the loader lacks their commands. */
    void applyDisableList(const char* list);

    struct DeviceCreateInfo
    {
        std::unique_ptr<FeatureChain> features; // head() goes in pNext
        std::vector<std::string> extensions;
    };
    /** What vkCreateDevice needs to enable exactly what is enabled here. */
    DeviceCreateInfo deviceCreateInfo() const;

    /** Whether row `name` is enabled (supported, enabled, not disabled). */
    bool enabled(const std::string& name) const;
    bool supported(const std::string& name) const;
    bool extensionEnabled(const std::string& name) const;
    bool extensionAvailable(const std::string& name) const;
    uint32_t apiVersion() const { return mApiVersion; }
    const vk::PhysicalDeviceProperties& properties() const { return mProperties; }

    /** The public view, reduced to what is enabled. */
    const DeviceCapabilities& view() const { return mView; }

    /** Throws kp::Error, naming the SPIR-V capability (or extension or
     * execution mode) and the device feature or extension it needs, unless
     * everything `module` declares is enabled on this device. */
    void checkShader(const ReflectedModule& module) const;

    /** The KOMPUTE_ENV_DISABLE names, for documentation and messages. */
    static std::vector<std::string> disableGroups();
    /** Name of a SPIR-V capability ("Float16", "CooperativeMatrixKHR"). */
    static std::string capabilityName(uint32_t capability);

  private:
    void updateView();
    /** Turns off the rows of one KOMPUTE_ENV_DISABLE group. */
    void disableGroup(const std::string& name);
    /** Row `r` is enabled, supported, not disabled, and so is what it needs. */
    bool effective(size_t r) const;
    /** Why row `index` is not enabled, for error messages. */
    std::string whyNotEnabled(size_t index) const;
    std::string rowVulkanName(size_t index) const;
    void readChain(const void* next, bool adopting, std::vector<bool>& rows);

    vk::PhysicalDevice mPhysicalDevice;
    uint32_t mApiVersion = 0;
    vk::PhysicalDeviceProperties mProperties;
    std::vector<std::string> mAvailableExtensions;
    std::vector<std::string> mEnabledExtensions;
    std::vector<std::string> mDisabledGroups;
    /** Per row of the table: supported, enabled, disabled by the env. */
    std::vector<bool> mSupported;
    std::vector<bool> mEnabled;
    std::vector<bool> mDisabled;
    /** Feature members outside the table, given by the application. */
    std::unique_ptr<FeatureChain> mPassThrough;
    /** Properties and shapes as queried (before disabling). */
    DeviceCapabilities mQueried;
    DeviceCapabilities mView;
};

} // namespace internal
} // namespace kp
