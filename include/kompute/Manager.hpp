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

/** Memory use of one Vulkan memory type (see Manager::memoryStats). */
struct MemoryTypeStats
{
    /** The memory type's index in VkPhysicalDeviceMemoryProperties. */
    uint32_t memoryTypeIndex = 0;
    /** The heap it draws from. */
    uint32_t heapIndex = 0;
    /** Its property flags (DEVICE_LOCAL, HOST_VISIBLE, ...). */
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

/** Memory statistics of a Manager, one entry per memory type. A snapshot:
 * a plain value. */
struct MemoryStats
{
    /** One entry per memory type of the device. */
    std::vector<MemoryTypeStats> memoryTypes;

    /** Sum of MemoryTypeStats::allocatedBytes over the memory types. */
    uint64_t allocatedBytes() const;
    /** Sum of MemoryTypeStats::usedBytes over the memory types. */
    uint64_t usedBytes() const;
    /** Sum of MemoryTypeStats::deviceMemoryCount over the memory types. */
    uint32_t deviceMemoryCount() const;
};

/** Pipeline objects made by a Manager (see Manager::pipelineStats).
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

/**
 * Owns the device: the Vulkan instance (shared by the process's Managers),
 * the physical and logical device, the queues, the memory allocator, the
 * descriptor pools, the pipeline cache and the pipelines shared between
 * algorithms; and it makes everything else: tensors, images, algorithms
 * and sequences, handed out as std::shared_ptr.
 *
 * Lifetime: every object a Manager makes keeps its device alive, so the
 * objects may outlive the Manager object. destroy() (or ~Manager) waits for
 * the device once, destroys every object still alive (they stay as inert
 * handles whose use throws kp::DestroyedError), then the device if the
 * Manager created it. A Manager on the application's device ("bring your
 * own Vulkan") destroys nothing it was given and leaves its objects
 * working. See @ref readme_lifetimes and @ref readme_bring_your_own_vulkan.
 *
 * Thread safety: one Manager may be used from several threads at once
 * (creating objects, evaluating different sequences concurrently, dropping
 * objects), also while another thread runs destroy(); see
 * @ref readme_thread_safety. Functions of a destroyed Manager throw
 * kp::DestroyedError, except destroy(), clear() and the getVk* handles.
 */
class Manager
{
  public:
    /** Device 0, one queue of the first queue family with compute. Throws
     * kp::Error when no Vulkan device can be used, kp::VulkanError when
     * instance or device creation fails. */
    Manager();
    /**
     * Creates an instance and a device on the physical device at
     * `physicalDeviceIndex`. One queue is created per entry of
     * `familyQueueIndices` (repeat a family to get several of its queues;
     * empty means one queue of the first compute family). Each family must
     * support compute and have enough queues (kp::Error otherwise, naming
     * the family). Extensions the device lacks are skipped with a warning.
     * Every optional capability of the table the device supports is
     * enabled (see capabilities()).
     */
    Manager(uint32_t physicalDeviceIndex,
            const std::vector<uint32_t>& familyQueueIndices = {},
            const std::vector<std::string>& desiredExtensions = {});
    /**
     * The same, with device features asked for. Kompute enables every
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
    /** BYOV with explicit queues: queue k is queue number j of family
     * familyQueueIndices[k], where j counts earlier repeats. */
    Manager(std::shared_ptr<vk::Instance> instance,
            std::shared_ptr<vk::PhysicalDevice> physicalDevice,
            std::shared_ptr<vk::Device> device,
            const std::vector<uint32_t>& familyQueueIndices);
    /**
     * BYOV with what the application enabled on its device: the
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
    /** As destroy(); errors are logged, never thrown. */
    ~Manager();

    /** A sequence on queue `queueIndex` (position in familyQueueIndices).
     * With totalTimestamps > 0 it records a timestamp at its start and
     * after each of up to totalTimestamps operations. Throws kp::Error for
     * a queue index of queueCount() or more, or timestamps on a queue
     * family without them. */
    std::shared_ptr<Sequence> sequence(uint32_t queueIndex = 0,
                                       uint32_t totalTimestamps = 0);

    /** A tensor holding a copy of `data` (elements of T, one of those
     * Memory::dataType<T>() maps), in `memoryType` memory. Throws kp::Error
     * for empty data, more than 4 GiB, or a memory type the device does not
     * have (eDeviceAndHost on some discrete GPUs), kp::OutOfMemoryError
     * when the memory is not there. */
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

    /** tensorT<float>(data, memoryType): upstream's default tensor. */
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

    /** Raw form without data: undefined contents. */
    std::shared_ptr<Tensor> tensor(
      uint32_t elementTotalCount,
      uint32_t elementMemorySize,
      const Memory::DataTypes& dataType,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);

    // --- Images (see Image.hpp). Width x height x channels elements, row
    // after row; 1, 2 or 4 channels. Without a tiling, eHost and
    // eDeviceAndHost images are linear and the others optimal.

    /** An image of `width` x `height` pixels of `numChannels` channels (1,
     * 2 or 4) holding `data` (width x height x channels elements of T, row
     * after row: fewer throw kp::Error, more are ignored with a warning),
     * uploaded at once. Throws kp::Error for a format no storage image can
     * hold or the device cannot store, and for optimal tiling in eHost or
     * eDeviceAndHost memory (see kp::Image). */
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

    /** The same with the default tiling. */
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

    /** An image with undefined contents and the default tiling. */
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

    /** imageT<float>(data, width, height, numChannels, tiling,
     * memoryType). */
    std::shared_ptr<ImageT<float>> image(
      const std::vector<float>& data,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    /** imageT<float>(data, width, height, numChannels, memoryType). */
    std::shared_ptr<ImageT<float>> image(
      const std::vector<float>& data,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    /** A float image with undefined contents and the given tiling. */
    std::shared_ptr<ImageT<float>> image(
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    /** A float image with undefined contents and the default tiling. */
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
    /** Raw form with the default tiling. */
    std::shared_ptr<Image> image(
      void* data,
      size_t dataSize,
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      const Memory::DataTypes& dataType,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    /** Raw form without data (undefined contents), with the given tiling. */
    std::shared_ptr<Image> image(
      uint32_t width,
      uint32_t height,
      uint32_t numChannels,
      const Memory::DataTypes& dataType,
      vk::ImageTiling tiling,
      Memory::MemoryTypes memoryType = Memory::MemoryTypes::eDevice);
    /** Raw form without data, with the default tiling. */
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
     * it (kp::Error for a mistake, see Algorithm::rebuild). With no
     * objects or no SPIR-V, an empty algorithm is returned (for OpMult or a
     * later rebuild).
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

    /** algorithm<float, float>(): upstream's default form, every argument
     * optional. */
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

    /** The same with constants already in raw form (kp::ConstantBytes; the
     * Python module uses it). */
    std::shared_ptr<Algorithm> algorithmWithConstants(
      const std::vector<std::shared_ptr<Memory>>& memObjects,
      const std::vector<uint32_t>& spirv,
      const Workgroup& workgroup,
      const ConstantBytes& specializationConstants,
      const ConstantBytes& pushConstants);

    /** Merges a pipeline cache saved by savePipelineCache into this
     * manager's cache, so algorithms build faster. Returns false, with a
     * warning, if the file is missing or from another device or driver
     * version. */
    bool loadPipelineCache(const std::string& path);
    /** Writes this manager's pipeline cache to a file; throws kp::Error
     * when it cannot be written. */
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

    /** The properties of the Manager's physical device (name, vendor,
     * limits, ...). */
    vk::PhysicalDeviceProperties getDeviceProperties() const;
    /** Every physical device of the Manager's instance, in the order of
     * the indices the constructors take. */
    std::vector<vk::PhysicalDevice> listDevices() const;
    /** The Vulkan instance (shared by the process's Managers; the
     * application's for a BYOV Manager). Not to be destroyed by the caller. */
    std::shared_ptr<vk::Instance> getVkInstance() const;


    /**
     * Family indices for `count` compute queues of device
     * `physicalDeviceIndex`, to pass as familyQueueIndices: queues of
     * compute-only families first (GPUs run them beside the general queue),
     * then of the other compute families. Throws kp::Error if the device
     * has fewer compute queues than `count`.
     *
     *     kp::Manager mgr(0, kp::Manager::computeQueueFamilies(2));
     */
    static std::vector<uint32_t> computeQueueFamilies(uint32_t count,
                                                      uint32_t physicalDeviceIndex = 0);

    /** The logical device (the Manager's own, or the application's for a
     * BYOV Manager); owned by the Manager, not to be destroyed by the
     * caller. */
    std::shared_ptr<vk::Device> getVkDevice() const;
    /** The physical device the Manager runs on. */
    std::shared_ptr<vk::PhysicalDevice> getVkPhysicalDevice() const;
    /** Number of queues this manager uses (sequence(i) takes i below it). */
    uint32_t queueCount() const;
    /** Family index of queue `queueIndex` (kp::Error when out of range). */
    uint32_t queueFamilyIndex(uint32_t queueIndex) const;
    /** Bytes allocated, used and peak per memory type. Memory that dropped
     * objects leave is counted until the device is done with it. */
    MemoryStats memoryStats() const;
    /** Shader modules and pipelines created, and pipelines alive. */
    PipelineStats pipelineStats() const;
    /** What the device supports and what is enabled on it: every
     * row of the capability table, the cooperative-matrix shapes, subgroup
     * sizes, integer dot-product acceleration and more, reduced by
     * KOMPUTE_ENV_DISABLE. A copy; it does not change while the Manager
     * lives. */
    DeviceCapabilities capabilities() const;
    /** This Manager's device described as kompute-info describes devices
     * (kp::describeDevice), with what this Manager enabled (Python's
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
    /** The strategy set by setWaitStrategy (or KOMPUTE_ENV_WAIT). */
    WaitStrategy getWaitStrategy() const;
    /** The longest eAuto polls before it blocks, in nanoseconds. */
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
