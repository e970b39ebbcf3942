// SPDX-License-Identifier: Apache-2.0
// kp::Manager: owns the Vulkan instance and device, the queues and the
// memory allocator, and creates every other object.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kompute/Algorithm.hpp"
#include "kompute/Capabilities.hpp"
#include "kompute/DeviceInfo.hpp"
#include "kompute/Core.hpp"
#include "kompute/Image.hpp"
#include "kompute/LegacyTensorList.hpp"
#include "kompute/Memory.hpp"
#include "kompute/Tensor.hpp"

namespace kp {

class Sequence;
class Algorithm;

/** Memory use of one Vulkan memory type (ours, see Manager::memoryStats). */
struct MemoryTypeStats
{
    uint32_t memoryTypeIndex = 0;
    uint32_t heapIndex = 0;
    vk::MemoryPropertyFlags propertyFlags;
    /** Bytes held in VkDeviceMemory objects of this type. */
    uint64_t allocatedBytes = 0;
    /** Bytes handed out to tensors and images (including alignment). */
    uint64_t usedBytes = 0;
    /** Highest usedBytes seen. */
    uint64_t peakUsedBytes = 0;
    /** Number of live VkDeviceMemory objects of this type. */
    uint32_t deviceMemoryCount = 0;
    /** Number of live sub-allocations and dedicated allocations. */
    uint64_t allocationCount = 0;
};

/** Memory statistics of a Manager, one entry per memory type. */
struct MemoryStats
{
    std::vector<MemoryTypeStats> memoryTypes;

    uint64_t allocatedBytes() const;
    uint64_t usedBytes() const;
    uint32_t deviceMemoryCount() const;
};

/** Pipeline objects made by a Manager (ours, see Manager::pipelineStats).
 * Algorithms of the same SPIR-V, specialization constants and layout share
 * one shader module, pipeline layout and pipeline. */
struct PipelineStats
{
    /** VkShaderModules created so far (one per distinct SPIR-V in use). */
    uint64_t shaderModulesCreated = 0;
    /** VkPipelines (with their layouts) created so far. */
    uint64_t pipelinesCreated = 0;
    /** Pipelines alive now, shared by the algorithms that use them. */
    uint32_t livePipelines = 0;
};

namespace internal {
class Device;
}

class Manager
{
  public:
    /** Device 0, one queue of the first queue family with compute. */
    Manager();
    /**
     * Creates an instance and a device on the physical device at
     * `physicalDeviceIndex`. One queue is created per entry of
     * `familyQueueIndices` (repeat a family to get several of its queues;
     * empty means one queue of the first compute family). Each family must
     * support compute and have enough queues. Extensions the device lacks
     * are skipped with a warning.
     */
    Manager(uint32_t physicalDeviceIndex,
            const std::vector<uint32_t>& familyQueueIndices = {},
            const std::vector<std::string>& desiredExtensions = {});
    /**
     * The same, with device features asked for (ours). Kompute enables every
     * optional capability of its table that the device supports (see
     * capabilities()); `desiredFeatures` and its pNext chain are merged into
     * that, not put in its place: members of VkPhysicalDeviceFeatures and
     * VkPhysicalDeviceVulkan11/12/13Features are passed through, and the
     * extension feature structures of the table (cooperative matrices,
     * atomics, bfloat16, ...) are enabled together with their extensions.
     * A feature of the table the device lacks, or a structure Kompute does
     * not know, throws kp::Error before the device is created.
     *
     *     vk::PhysicalDeviceFeatures2 features;
     *     features.features.robustBufferAccess = VK_TRUE;
     *     kp::Manager mgr(0, {}, {}, features);
     */
    Manager(uint32_t physicalDeviceIndex,
            const std::vector<uint32_t>& familyQueueIndices,
            const std::vector<std::string>& desiredExtensions,
            const vk::PhysicalDeviceFeatures2& desiredFeatures);
    /**
     * Bring your own Vulkan: uses the given instance and device, creates
     * one queue handle of the first compute family of the device (which must
     * have been created with a queue of that family), and never destroys
     * what it was given.
     */
    Manager(std::shared_ptr<vk::Instance> instance,
            std::shared_ptr<vk::PhysicalDevice> physicalDevice,
            std::shared_ptr<vk::Device> device);
    /** BYOV with explicit queues (ours): queue k is queue number j of
     * family familyQueueIndices[k], where j counts earlier repeats. */
    Manager(std::shared_ptr<vk::Instance> instance,
            std::shared_ptr<vk::PhysicalDevice> physicalDevice,
            std::shared_ptr<vk::Device> device,
            const std::vector<uint32_t>& familyQueueIndices);
    /**
     * BYOV with what the application enabled on its device (ours): the
     * device extensions and the feature chain given to vkCreateDevice (the
     * VkPhysicalDeviceFeatures2 of its pNext, or one holding its
     * pEnabledFeatures). Shaders that need those features are then accepted;
     * with the other BYOV constructors only what every device has is.
     * Empty familyQueueIndices: the first compute family. Nothing given is
     * enabled by Kompute: it only records what the application did.
     */
    Manager(std::shared_ptr<vk::Instance> instance,
            std::shared_ptr<vk::PhysicalDevice> physicalDevice,
            std::shared_ptr<vk::Device> device,
            const std::vector<uint32_t>& familyQueueIndices,
            const std::vector<std::string>& enabledExtensions,
            const vk::PhysicalDeviceFeatures2& enabledFeatures);

    Manager(const Manager&) = delete;
    Manager(Manager&&) = delete;
    Manager& operator=(const Manager&) = delete;
    Manager& operator=(Manager&&) = delete;
    ~Manager();

    /** A sequence on queue `queueIndex` (position in familyQueueIndices).
     * With totalTimestamps > 0 it records a timestamp at its start and
     * after each of up to totalTimestamps operations. */
    std::shared_ptr<Sequence> sequence(uint32_t queueIndex = 0,
                                       uint32_t totalTimestamps = 0);

    template<typename T>
    std::shared_ptr<TensorT<T>> tensorT(
      const std::vector<T>& data,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice)
    {
        return std::make_shared<TensorT<T>>(device(), data, memoryType);
    }

    /** A tensor of `size` elements with undefined contents. */
    template<typename T>
    std::shared_ptr<TensorT<T>> tensorT(
      size_t size,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice)
    {
        return std::make_shared<TensorT<T>>(device(), size, memoryType);
    }

    std::shared_ptr<TensorT<float>> tensor(
      const std::vector<float>& data,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);

    /** Raw form: `elementTotalCount` elements of `elementMemorySize` bytes
     * copied from `data` (which may be null). */
    std::shared_ptr<Tensor> tensor(
      void* data,
      uint32_t elementTotalCount,
      uint32_t elementMemorySize,
      const Memory::DataTypes& dataType,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);

    std::shared_ptr<Tensor> tensor(
      uint32_t elementTotalCount,
      uint32_t elementMemorySize,
      const Memory::DataTypes& dataType,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);

    // --- Images (see Image.hpp). Width x height x channels elements, row
    // after row; 1, 2 or 4 channels. Without a tiling, eHost and
    // eDeviceAndHost images are linear and the others optimal.

    template<typename T>
    std::shared_ptr<ImageT<T>> imageT(
      const std::vector<T>& data,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice)
    {
        return std::make_shared<ImageT<T>>(
          device(), &data, width, height, numChannels, tiling, memoryType);
    }

    template<typename T>
    std::shared_ptr<ImageT<T>> imageT(
      const std::vector<T>& data,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice)
    {
        return std::make_shared<ImageT<T>>(
          device(), &data, width, height, numChannels, std::nullopt, memoryType);
    }

    /** An image with undefined contents. */
    template<typename T>
    std::shared_ptr<ImageT<T>> imageT(
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice)
    {
        return std::make_shared<ImageT<T>>(
          device(), nullptr, width, height, numChannels, tiling, memoryType);
    }

    template<typename T>
    std::shared_ptr<ImageT<T>> imageT(
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice)
    {
        return std::make_shared<ImageT<T>>(
          device(), nullptr, width, height, numChannels, std::nullopt, memoryType);
    }

    std::shared_ptr<ImageT<float>> image(
      const std::vector<float>& data,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    std::shared_ptr<ImageT<float>> image(
      const std::vector<float>& data,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    std::shared_ptr<ImageT<float>> image(
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    std::shared_ptr<ImageT<float>> image(
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);

    /** Raw form: `dataSize` ELEMENTS (width x height x channels, as
     * upstream checks it, not bytes) of `dataType` copied from `data`
     * (which may be null). */
    std::shared_ptr<Image> image(
      void* data,
      size_t dataSize,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      const Memory::DataTypes& dataType,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    std::shared_ptr<Image> image(
      void* data,
      size_t dataSize,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      const Memory::DataTypes& dataType,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    std::shared_ptr<Image> image(
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      const Memory::DataTypes& dataType,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    std::shared_ptr<Image> image(
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      const Memory::DataTypes& dataType,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);

    /**
     * An algorithm running `spirv` over `memObjects` (binding i = object i).
     * Specialization constants are of one scalar type S; push constants of
     * any trivially copyable type P (a struct too). The shader is validated
     * and checked against the objects and constants before the driver sees
     * it. With no objects or no SPIR-V, an empty algorithm is returned (for
     * OpMult or a later rebuild).
     */
    template<typename S = float, typename P = float>
    std::shared_ptr<Algorithm> algorithm(const std::vector<std::shared_ptr<Memory>>& memObjects,
                                         const std::vector<uint32_t>& spirv,
                                         const Workgroup& workgroup,
                                         const std::vector<S>& specializationConstants,
                                         const std::vector<P>& pushConstants)
    {
        return algorithmWithConstants(memObjects,
                                      spirv,
                                      workgroup,
                                      ConstantBytes::from(specializationConstants),
                                      ConstantBytes::from(pushConstants));
    }

    std::shared_ptr<Algorithm> algorithm(
      const std::vector<std::shared_ptr<Memory>>& memObjects = {},
      const std::vector<uint32_t>& spirv = {},
      const Workgroup& workgroup = {},
      const std::vector<float>& specializationConstants = {},
      const std::vector<float>& pushConstants = {});

    /** Kompute 0.9.0's form of algorithm(), over a list of kp::Tensor
     * (deprecated: pass a std::vector<std::shared_ptr<kp::Memory>>). */
    template<typename Tensors>
    [[deprecated("Kompute 0.9.0 form: pass the tensors as std::vector<std::shared_ptr<kp::Memory>>")]]
    std::enable_if_t<detail::isTensorList<Tensors>, std::shared_ptr<Algorithm>> algorithm(
      const Tensors& tensors,
      const std::vector<uint32_t>& spirv = {},
      const Workgroup& workgroup = {},
      const std::vector<float>& specializationConstants = {},
      const std::vector<float>& pushConstants = {})
    {
        return algorithm(
          detail::memoryList(tensors), spirv, workgroup, specializationConstants, pushConstants);
    }
    /** Kompute 0.9.0's typed form of algorithm<S, P>(), over a list of
     * kp::Tensor (deprecated). */
    template<typename S, typename P, typename Tensors>
    [[deprecated("Kompute 0.9.0 form: pass the tensors as std::vector<std::shared_ptr<kp::Memory>>")]]
    std::enable_if_t<detail::isTensorList<Tensors>, std::shared_ptr<Algorithm>> algorithm(
      const Tensors& tensors,
      const std::vector<uint32_t>& spirv,
      const Workgroup& workgroup,
      const std::vector<S>& specializationConstants,
      const std::vector<P>& pushConstants)
    {
        return algorithm<S, P>(
          detail::memoryList(tensors), spirv, workgroup, specializationConstants, pushConstants);
    }

    /** The same with constants already in raw form (ours; used by the
     * Python module). */
    std::shared_ptr<Algorithm> algorithmWithConstants(
      const std::vector<std::shared_ptr<Memory>>& memObjects,
      const std::vector<uint32_t>& spirv,
      const Workgroup& workgroup,
      const ConstantBytes& specializationConstants,
      const ConstantBytes& pushConstants);

    /** Merges a pipeline cache saved by savePipelineCache into this
     * manager's cache, so algorithms build faster (ours). Returns false,
     * with a warning, if the file is missing or from another device or
     * driver version. */
    bool loadPipelineCache(const std::string& path);
    /** Writes this manager's pipeline cache to a file (ours). */
    void savePipelineCache(const std::string& path);

    /**
     * Destroys every object this manager made that is still alive (their
     * handles stay valid but inert: any use throws kp::DestroyedError), then
     * the device if the manager created it. Waits for the device first.
     * Calling it twice is harmless. The VkInstance is shared by the
     * process's Managers and lives until exit (some drivers fail after many
     * instance create/destroy cycles in one process).
     */
    void destroy();
    /** Kept for upstream code: expired objects are pruned automatically. */
    void clear();

    vk::PhysicalDeviceProperties getDeviceProperties() const;
    std::vector<vk::PhysicalDevice> listDevices() const;
    std::shared_ptr<vk::Instance> getVkInstance() const;

    // --- ours ---

    /**
     * Family indices for `count` compute queues of device
     * `physicalDeviceIndex`, to pass as familyQueueIndices: queues of
     * compute-only families first (GPUs run them beside the general queue),
     * then of the other compute families. Throws if the device has fewer
     * compute queues than `count`.
     *
     *     kp::Manager mgr(0, kp::Manager::computeQueueFamilies(2));
     */
    static std::vector<uint32_t> computeQueueFamilies(uint32_t count,
                                                      uint32_t physicalDeviceIndex = 0);

    std::shared_ptr<vk::Device> getVkDevice() const;
    std::shared_ptr<vk::PhysicalDevice> getVkPhysicalDevice() const;
    /** Number of queues this manager uses (sequence(i) takes i below it). */
    uint32_t queueCount() const;
    /** Family index of queue `queueIndex`. */
    uint32_t queueFamilyIndex(uint32_t queueIndex) const;
    /** Bytes allocated, used and peak per memory type. Memory that dropped
     * objects leave is counted until the device is done with it. */
    MemoryStats memoryStats() const;
    /** Shader modules and pipelines created, and pipelines alive. */
    PipelineStats pipelineStats() const;
    /** What the device supports and what is enabled on it (ours): every
     * row of the capability table, the cooperative-matrix shapes, subgroup
     * sizes, integer dot-product acceleration and more, reduced by
     * KOMPUTE_ENV_DISABLE. A copy; it does not change while the Manager
     * lives. */
    DeviceCapabilities capabilities() const;
    /** This Manager's device described as kompute-info describes devices
     * (kp::describeDevice), with what this Manager enabled (ours; Python's
     * get_device_properties()). */
    JsonValue deviceDescription() const;

    /**
     * How the waits of this manager's sequences (eval(), evalAwait(), the
     * one-liner) wait for the device: see kp::WaitStrategy. The default is
     * eAuto, or the strategy named by KOMPUTE_ENV_WAIT (auto, spin, block).
     * `autoSpinLimitNs` is the longest eAuto polls before it blocks.
     * Takes effect at the next wait, also of existing sequences.
     */
    void setWaitStrategy(WaitStrategy strategy,
                         uint64_t autoSpinLimitNs = kDefaultAutoSpinLimitNs);
    WaitStrategy getWaitStrategy() const;
    uint64_t getAutoSpinLimitNs() const;
    /** eAuto's default spin limit: 100 us, a few times what a blocking
     * wait adds to a round trip on NVIDIA GPUs (about 20 us). */
    static constexpr uint64_t kDefaultAutoSpinLimitNs = 100'000;

  private:
    void createDevice(uint32_t physicalDeviceIndex,
                      const std::vector<uint32_t>& familyQueueIndices,
                      const std::vector<std::string>& desiredExtensions,
                      const vk::PhysicalDeviceFeatures2* desiredFeatures);
    void adoptDevice(const std::vector<uint32_t>& familyQueueIndices,
                     const std::vector<std::string>& enabledExtensions,
                     const vk::PhysicalDeviceFeatures2* enabledFeatures);

    /** The device context; throws kp::DestroyedError after destroy(). */
    std::shared_ptr<internal::Device> device() const;

    std::shared_ptr<internal::Device> mDevice;
    std::shared_ptr<vk::Instance> mInstance;
    std::shared_ptr<vk::PhysicalDevice> mPhysicalDevice;
    std::shared_ptr<vk::Device> mVkDevice;
};

} // namespace kp
