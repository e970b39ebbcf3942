// SPDX-License-Identifier: Apache-2.0
#include "kompute/Manager.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "internal/DeviceDescription.hpp"
#include "internal/Environment.hpp"
#include "internal/Instance.hpp"
#include "internal/VulkanLoader.hpp"
#include "kompute/Algorithm.hpp"
#include "kompute/Sequence.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using internal::check;
using logger::format;

namespace {

// --- Instance -------------------------------------------------------------

std::vector<std::string>
requestedLayers()
{
    return internal::environmentList("KOMPUTE_ENV_DEBUG_LAYERS");
}

VKAPI_ATTR VkBool32 VKAPI_CALL
debugMessenger(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
               VkDebugUtilsMessageTypeFlagsEXT types,
               const VkDebugUtilsMessengerCallbackDataEXT* data,
               void*)
{
    const char* text = data != nullptr && data->pMessage != nullptr ? data->pMessage : "";
    // Layers since 1.3.2xx leave the message's ID ("VUID-...", "SYNC-HAZARD-...")
    // out of pMessage: it goes in front, so that every log line names it.
    const char* id = data != nullptr ? data->pMessageIdName : nullptr;
    std::string withId;
    if (id != nullptr && *id != '\0' && std::strstr(text, id) == nullptr) {
        withId = std::string("[ ") + id + " ] " + text;
    }
    const char* message = withId.empty() ? text : withId.c_str();
    // Images stay in GENERAL layout on purpose (see Image.hpp), so the
    // layer's advice to copy them in TRANSFER_*_OPTIMAL layouts would be
    // printed for every image copy: it is kept for debug logs.
    bool generalLayoutAdvice = (types & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT) &&
                               data != nullptr && data->pMessageIdName != nullptr &&
                               std::strstr(data->pMessageIdName,
                                           "CoreValidation-DrawState-InvalidImageLayout") !=
                                 nullptr &&
                               std::strstr(message, "instead of GENERAL") != nullptr;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        KP_LOG_ERROR("[validation] {}", message);
    } else if (generalLayoutAdvice) {
        KP_LOG_DEBUG("[validation] {}", message);
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        KP_LOG_WARN("[validation] {}", message);
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT) {
        KP_LOG_DEBUG("[validation] {}", message);
    } else {
        KP_LOG_TRACE("[validation] {}", message);
    }
    return VK_FALSE;
}

struct CreatedInstance
{
    vk::Instance instance;
    vk::DebugUtilsMessengerEXT messenger;
    uint32_t apiVersion = 0;
};

// The layers named in KOMPUTE_ENV_DEBUG_LAYERS that are installed.
std::vector<std::string>
availableRequestedLayers()
{
    uint32_t layerCount = 0;
    check(vk::enumerateInstanceLayerProperties(&layerCount, nullptr),
          "Listing Vulkan instance layers");
    std::vector<vk::LayerProperties> availableLayers(layerCount);
    check(vk::enumerateInstanceLayerProperties(&layerCount, availableLayers.data()),
          "Listing Vulkan instance layers");
    std::vector<std::string> layerNames;
    for (const auto& layer : requestedLayers()) {
        bool found = std::any_of(availableLayers.begin(), availableLayers.end(), [&](const auto& l) {
            return layer == l.layerName.data();
        });
        if (found) {
            layerNames.push_back(layer);
        } else {
            KP_LOG_WARN("Layer {} named in KOMPUTE_ENV_DEBUG_LAYERS is not installed; "
                        "continuing without it",
                        layer);
        }
    }
    return layerNames;
}

CreatedInstance
createInstance(const std::vector<std::string>& layerNames)
{
    CreatedInstance created;
    uint32_t loaderVersion = VK_API_VERSION_1_0;
    // Null in a Vulkan 1.0 loader.
    PFN_vkEnumerateInstanceVersion enumerateVersion =
      VULKAN_HPP_DEFAULT_DISPATCHER.vkEnumerateInstanceVersion;
    if (enumerateVersion != nullptr) {
        enumerateVersion(&loaderVersion);
    }
    if (loaderVersion < KOMPUTE_VK_API_VERSION) {
        throw Error(format("The Vulkan loader supports Vulkan {}.{}, but Kompute needs {}.{}",
                           VK_API_VERSION_MAJOR(loaderVersion),
                           VK_API_VERSION_MINOR(loaderVersion),
                           KOMPUTE_VK_API_MAJOR_VERSION,
                           KOMPUTE_VK_API_MINOR_VERSION));
    }
    // Ask for the newest version both we and the loader know; devices that
    // support less still work (their own version caps what we use).
    created.apiVersion = std::min<uint32_t>(loaderVersion, VK_API_VERSION_1_3);

    uint32_t extensionCount = 0;
    check(vk::enumerateInstanceExtensionProperties(nullptr, &extensionCount, nullptr),
          "Listing Vulkan instance extensions");
    std::vector<vk::ExtensionProperties> available(extensionCount);
    check(vk::enumerateInstanceExtensionProperties(nullptr, &extensionCount, available.data()),
          "Listing Vulkan instance extensions");
    auto hasExtension = [&](const char* name) {
        return std::any_of(available.begin(), available.end(), [name](const auto& e) {
            return std::strcmp(e.extensionName, name) == 0;
        });
    };
    std::vector<const char*> extensions;
    bool debugUtils = hasExtension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (debugUtils) {
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    vk::InstanceCreateFlags flags;
    if (hasExtension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        // Lists portability drivers such as MoltenVK.
        extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        flags |= vk::InstanceCreateFlagBits::eEnumeratePortabilityKHR;
    }

    std::vector<const char*> layers;
    for (const auto& name : layerNames) {
        layers.push_back(name.c_str());
    }

    vk::ApplicationInfo appInfo("kompute", 1, "kompute", 1, created.apiVersion);
    vk::InstanceCreateInfo info(flags,
                                &appInfo,
                                static_cast<uint32_t>(layers.size()),
                                layers.data(),
                                static_cast<uint32_t>(extensions.size()),
                                extensions.data());
    vk::Result result = vk::createInstance(&info, nullptr, &created.instance);
    check(result,
          result == vk::Result::eErrorIncompatibleDriver
            ? "Creating the Vulkan instance (the Vulkan loader found no usable driver: install "
              "one, e.g. Mesa's lavapipe from mesa-vulkan-drivers on a machine without a GPU)"
            : "Creating the Vulkan instance");

    if (debugUtils) {
        auto createMessenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          created.instance.getProcAddr("vkCreateDebugUtilsMessengerEXT"));
        if (createMessenger != nullptr) {
            VkDebugUtilsMessengerCreateInfoEXT messengerInfo{};
            messengerInfo.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
            messengerInfo.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                                            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                            VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT;
            messengerInfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                        VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                        VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
            messengerInfo.pfnUserCallback = debugMessenger;
            VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
            if (createMessenger(static_cast<VkInstance>(created.instance),
                                &messengerInfo,
                                nullptr,
                                &messenger) == VK_SUCCESS) {
                created.messenger = messenger;
            }
        }
    }
    return created;
}

// One instance per process (per set of layers), shared by every Manager and
// never destroyed. Some drivers (NVIDIA's among them) stop creating
// instances, or misbehave, after a few dozen create/destroy cycles in one
// process, which a program or test suite making many Managers would hit; and
// destroying an instance during exit, when the driver may already have torn
// itself down, crashed there too. The cache is deliberately leaked: it stays
// reachable through a static pointer, so leak checkers do not report it.
class InstanceCache
{
  public:
    CreatedInstance get()
    {
        // The layer query runs under the lock too: the loader opens and
        // closes layer libraries in it, and threads making their first
        // Managers at once would otherwise run those dlopen/dlclose calls
        // side by side (glibc's own lock makes that safe, but it is not
        // one ThreadSanitizer sees, and older loaders keep global state
        // there). Instances are made a few times per process, so this
        // costs nothing.
        std::lock_guard<std::mutex> lock(mMutex);
        std::vector<std::string> layers = availableRequestedLayers();
        for (const auto& entry : mEntries) {
            if (entry.first == layers) {
                return entry.second;
            }
        }
        mEntries.emplace_back(layers, createInstance(layers));
        return mEntries.back().second;
    }

  private:
    std::mutex mMutex;
    std::vector<std::pair<std::vector<std::string>, CreatedInstance>> mEntries;
};

CreatedInstance
processInstance()
{
    internal::requireVulkan();
    static InstanceCache* cache = new InstanceCache();
    return cache->get();
}

// --- Device ---------------------------------------------------------------

std::vector<vk::PhysicalDevice>
physicalDevices(vk::Instance instance)
{
    uint32_t count = 0;
    check(instance.enumeratePhysicalDevices(&count, nullptr), "Listing Vulkan devices");
    std::vector<vk::PhysicalDevice> devices(count);
    check(instance.enumeratePhysicalDevices(&count, devices.data()), "Listing Vulkan devices");
    devices.resize(count);
    return devices;
}

// The first family with compute, which the default Manager uses.
uint32_t
firstComputeFamily(vk::PhysicalDevice physicalDevice)
{
    auto families = physicalDevice.getQueueFamilyProperties();
    for (uint32_t i = 0; i < families.size(); ++i) {
        if (families[i].queueFlags & vk::QueueFlagBits::eCompute) {
            return i;
        }
    }
    throw Error(format("Device '{}' has no queue family with compute support",
                       physicalDevice.getProperties().deviceName.data()));
}

std::vector<uint32_t>
defaultQueueFamilies(const std::shared_ptr<vk::PhysicalDevice>& physicalDevice)
{
    if (!physicalDevice || !*physicalDevice) {
        throw Error("BYOV Manager: the physical device is null");
    }
    internal::requireVulkan();
    return { firstComputeFamily(*physicalDevice) };
}

void
validateQueueFamilies(vk::PhysicalDevice physicalDevice, const std::vector<uint32_t>& families)
{
    auto properties = physicalDevice.getQueueFamilyProperties();
    std::vector<uint32_t> requested(properties.size(), 0);
    for (uint32_t family : families) {
        if (family >= properties.size()) {
            throw Error(format("Queue family {} does not exist: the device has {} queue "
                               "families (0..{})",
                               family,
                               properties.size(),
                               properties.size() - 1));
        }
        if (!(properties[family].queueFlags & vk::QueueFlagBits::eCompute)) {
            throw Error(format("Queue family {} does not support compute (its flags are {}); "
                               "choose a family with the compute flag",
                               family,
                               vk::to_string(properties[family].queueFlags)));
        }
        if (++requested[family] > properties[family].queueCount) {
            throw Error(format("Queue family {} has {} queue(s), but {} were requested",
                               family,
                               properties[family].queueCount,
                               requested[family]));
        }
    }
}

struct CreatedDevice
{
    vk::Device device;
    internal::Capabilities capabilities;
};

const char*
disableList()
{
    return std::getenv("KOMPUTE_ENV_DISABLE");
}

// Creates the device with what the capability table enables by default,
// merged with what the application asked for, less KOMPUTE_ENV_DISABLE.
CreatedDevice
createDevice(vk::Instance instance,
             vk::PhysicalDevice physicalDevice,
             uint32_t instanceApiVersion,
             const std::vector<uint32_t>& queueFamilies,
             const std::vector<std::string>& desiredExtensions,
             const vk::PhysicalDeviceFeatures2* desiredFeatures)
{
    vk::PhysicalDeviceProperties properties = physicalDevice.getProperties();
    uint32_t apiVersion = std::min(instanceApiVersion, properties.apiVersion);

    // One VkDeviceQueueCreateInfo per family, asking for as many queues as
    // the family is named.
    std::vector<uint32_t> perFamily(physicalDevice.getQueueFamilyProperties().size(), 0);
    for (uint32_t family : queueFamilies) {
        ++perFamily[family];
    }
    uint32_t mostQueues = *std::max_element(perFamily.begin(), perFamily.end());
    std::vector<float> priorities(mostQueues, 1.0f);
    std::vector<vk::DeviceQueueCreateInfo> queueInfos;
    for (uint32_t family = 0; family < perFamily.size(); ++family) {
        if (perFamily[family] > 0) {
            queueInfos.emplace_back(
              vk::DeviceQueueCreateFlags(), family, perFamily[family], priorities.data());
        }
    }

    internal::Capabilities capabilities(instance, physicalDevice, apiVersion);
    capabilities.enableDefaults();
    capabilities.request(desiredExtensions, desiredFeatures);
    capabilities.applyDisableList(disableList());
    internal::Capabilities::DeviceCreateInfo enable = capabilities.deviceCreateInfo();

    // The specification requires enabling it wherever it is offered.
    const std::string portabilitySubset = "VK_KHR_portability_subset";
    if (capabilities.extensionAvailable(portabilitySubset) &&
        std::find(enable.extensions.begin(), enable.extensions.end(), portabilitySubset) ==
          enable.extensions.end()) {
        enable.extensions.push_back(portabilitySubset);
    }
    std::vector<const char*> extensions;
    for (const auto& name : enable.extensions) {
        extensions.push_back(name.c_str());
    }

    vk::DeviceCreateInfo info(vk::DeviceCreateFlags(),
                              static_cast<uint32_t>(queueInfos.size()),
                              queueInfos.data(),
                              0,
                              nullptr,
                              static_cast<uint32_t>(extensions.size()),
                              extensions.data(),
                              nullptr);
    info.pNext = enable.features->head();
    vk::Device device;
    check(physicalDevice.createDevice(&info, nullptr, &device),
          format("Creating a Vulkan device on '{}'", properties.deviceName.data()));
    return CreatedDevice{ device, std::move(capabilities) };
}

std::vector<uint32_t>
chooseComputeQueues(vk::PhysicalDevice physicalDevice, uint32_t count)
{
    auto families = physicalDevice.getQueueFamilyProperties();
    std::vector<uint32_t> order;
    for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t i = 0; i < families.size(); ++i) {
            bool compute = static_cast<bool>(families[i].queueFlags & vk::QueueFlagBits::eCompute);
            bool graphics = static_cast<bool>(families[i].queueFlags & vk::QueueFlagBits::eGraphics);
            if (compute && graphics == (pass == 1)) {
                order.push_back(i);
            }
        }
    }
    std::vector<uint32_t> chosen;
    uint32_t available = 0;
    for (uint32_t family : order) {
        available += families[family].queueCount;
        for (uint32_t q = 0; q < families[family].queueCount && chosen.size() < count; ++q) {
            chosen.push_back(family);
        }
    }
    if (chosen.size() < count) {
        throw Error(format("{} compute queue(s) were asked for, but '{}' has {}",
                           count,
                           physicalDevice.getProperties().deviceName.data(),
                           available));
    }
    return chosen;
}

} // namespace

// --- For descriptions without a Manager ---------------------------------------

namespace internal {

SharedInstance
sharedInstance()
{
    CreatedInstance created = processInstance();
    return SharedInstance{ created.instance, created.apiVersion };
}

std::vector<vk::PhysicalDevice>
physicalDevices(vk::Instance instance)
{
    return kp::physicalDevices(instance);
}

} // namespace internal

// --- Queue selection ------------------------------------------------------

std::vector<uint32_t>
Manager::computeQueueFamilies(uint32_t count, uint32_t physicalDeviceIndex)
{
    if (count == 0) {
        throw Error("computeQueueFamilies: ask for at least one queue");
    }
    CreatedInstance instance = processInstance();
    auto devices = physicalDevices(instance.instance);
    if (physicalDeviceIndex >= devices.size()) {
        throw Error(format("Device index {} is out of range: {} Vulkan device(s) found",
                           physicalDeviceIndex,
                           devices.size()));
    }
    return chooseComputeQueues(devices[physicalDeviceIndex], count);
}

// --- MemoryStats -----------------------------------------------------------

uint64_t
MemoryStats::allocatedBytes() const
{
    uint64_t total = 0;
    for (const auto& type : memoryTypes) {
        total += type.allocatedBytes;
    }
    return total;
}

uint64_t
MemoryStats::usedBytes() const
{
    uint64_t total = 0;
    for (const auto& type : memoryTypes) {
        total += type.usedBytes;
    }
    return total;
}

uint32_t
MemoryStats::deviceMemoryCount() const
{
    uint32_t total = 0;
    for (const auto& type : memoryTypes) {
        total += type.deviceMemoryCount;
    }
    return total;
}

// --- Manager ---------------------------------------------------------------

Manager::Manager()
  : Manager(0)
{
}

Manager::Manager(uint32_t physicalDeviceIndex,
                 const std::vector<uint32_t>& familyQueueIndices,
                 const std::vector<std::string>& desiredExtensions)
{
    createDevice(physicalDeviceIndex, familyQueueIndices, desiredExtensions, nullptr);
}

Manager::Manager(uint32_t physicalDeviceIndex,
                 const std::vector<uint32_t>& familyQueueIndices,
                 const std::vector<std::string>& desiredExtensions,
                 const vk::PhysicalDeviceFeatures2& desiredFeatures)
{
    createDevice(physicalDeviceIndex, familyQueueIndices, desiredExtensions, &desiredFeatures);
}

void
Manager::createDevice(uint32_t physicalDeviceIndex,
                      const std::vector<uint32_t>& familyQueueIndices,
                      const std::vector<std::string>& desiredExtensions,
                      const vk::PhysicalDeviceFeatures2* desiredFeatures)
{
    CreatedInstance instance = processInstance();
    internal::Device::Handles handles;
    handles.instance = instance.instance;
    try {
        auto devices = physicalDevices(instance.instance);
        if (devices.empty()) {
            throw Error("No Vulkan device was found: install a Vulkan driver (on a machine "
                        "without a GPU, Mesa's lavapipe from mesa-vulkan-drivers)");
        }
        if (physicalDeviceIndex >= devices.size()) {
            throw Error(format("Device index {} is out of range: {} Vulkan device(s) found "
                               "(use 0..{})",
                               physicalDeviceIndex,
                               devices.size(),
                               devices.size() - 1));
        }
        handles.physicalDevice = devices[physicalDeviceIndex];
        std::vector<uint32_t> families = familyQueueIndices;
        if (families.empty()) {
            families.push_back(firstComputeFamily(handles.physicalDevice));
        }
        validateQueueFamilies(handles.physicalDevice, families);
        CreatedDevice device = kp::createDevice(instance.instance,
                                                handles.physicalDevice,
                                                instance.apiVersion,
                                                families,
                                                desiredExtensions,
                                                desiredFeatures);
        handles.device = device.device;
        handles.ownsDevice = true;
        mDevice = std::make_shared<internal::Device>(
          handles, families, std::move(device.capabilities), false);
        internal::registerManagerDevice(mDevice);
    } catch (...) {
        if (handles.device) {
            handles.device.destroy();
        }
        throw;
    }
    mInstance = std::make_shared<vk::Instance>(mDevice->instance());
    mPhysicalDevice = std::make_shared<vk::PhysicalDevice>(mDevice->physicalDevice());
    mVkDevice = std::make_shared<vk::Device>(mDevice->device());
    const auto& properties = mDevice->properties();
    KP_LOG_INFO("Kompute is using device '{}' (Vulkan {}.{}.{})",
                properties.deviceName.data(),
                VK_API_VERSION_MAJOR(properties.apiVersion),
                VK_API_VERSION_MINOR(properties.apiVersion),
                VK_API_VERSION_PATCH(properties.apiVersion));
}

Manager::Manager(std::shared_ptr<vk::Instance> instance,
                 std::shared_ptr<vk::PhysicalDevice> physicalDevice,
                 std::shared_ptr<vk::Device> device)
  : Manager(instance, physicalDevice, device, defaultQueueFamilies(physicalDevice))
{
}

Manager::Manager(std::shared_ptr<vk::Instance> instance,
                 std::shared_ptr<vk::PhysicalDevice> physicalDevice,
                 std::shared_ptr<vk::Device> device,
                 const std::vector<uint32_t>& familyQueueIndices)
  : mInstance(instance)
  , mPhysicalDevice(physicalDevice)
  , mVkDevice(device)
{
    // The features the application enabled are unknown; assume only what
    // every device has. Shaders needing more are refused with a clear error.
    adoptDevice(familyQueueIndices, {}, nullptr);
}

Manager::Manager(std::shared_ptr<vk::Instance> instance,
                 std::shared_ptr<vk::PhysicalDevice> physicalDevice,
                 std::shared_ptr<vk::Device> device,
                 const std::vector<uint32_t>& familyQueueIndices,
                 const std::vector<std::string>& enabledExtensions,
                 const vk::PhysicalDeviceFeatures2& enabledFeatures)
  : mInstance(instance)
  , mPhysicalDevice(physicalDevice)
  , mVkDevice(device)
{
    std::vector<uint32_t> families = familyQueueIndices;
    if (families.empty()) {
        families = defaultQueueFamilies(physicalDevice);
    }
    adoptDevice(families, enabledExtensions, &enabledFeatures);
}

void
Manager::adoptDevice(const std::vector<uint32_t>& familyQueueIndices,
                     const std::vector<std::string>& enabledExtensions,
                     const vk::PhysicalDeviceFeatures2* enabledFeatures)
{
    const auto& instance = mInstance;
    const auto& physicalDevice = mPhysicalDevice;
    const auto& device = mVkDevice;
    if (!instance || !*instance || !physicalDevice || !*physicalDevice || !device || !*device) {
        throw Error("BYOV Manager: the instance, physical device and device must all be valid "
                    "handles");
    }
    if (familyQueueIndices.empty()) {
        throw Error("BYOV Manager: give at least one queue family index");
    }
    // The application's handles work with Kompute's dispatcher where they
    // come from the loader it opened: the process's libvulkan, which the
    // application links (or KOMPUTE_ENV_VULKAN_LOADER's library).
    internal::requireVulkan();
    validateQueueFamilies(*physicalDevice, familyQueueIndices);
    internal::Device::Handles handles;
    handles.instance = *instance;
    handles.physicalDevice = *physicalDevice;
    handles.device = *device;
    // The device-level Vulkan version the application can use is the
    // device's (capped at the newest Kompute knows).
    uint32_t apiVersion =
      std::min<uint32_t>(physicalDevice->getProperties().apiVersion, VK_API_VERSION_1_3);
    internal::Capabilities capabilities(*instance, *physicalDevice, apiVersion);
    capabilities.adopt(enabledExtensions, enabledFeatures);
    capabilities.applyDisableList(disableList());
    mDevice = std::make_shared<internal::Device>(
      handles, familyQueueIndices, std::move(capabilities), false);
    internal::registerManagerDevice(mDevice);
}

Manager::~Manager()
{
    try {
        destroy();
    } catch (const std::exception& error) {
        KP_LOG_ERROR("Destroying the Manager failed: {}", error.what());
    }
}

std::shared_ptr<internal::Device>
Manager::device() const
{
    if (!mDevice || !mDevice->isAlive()) {
        throw DestroyedError("This kp::Manager was destroyed: create a new Manager");
    }
    return mDevice;
}

std::shared_ptr<Sequence>
Manager::sequence(uint32_t queueIndex, uint32_t totalTimestamps)
{
    return std::make_shared<Sequence>(device(), queueIndex, totalTimestamps);
}

std::shared_ptr<TensorT<float>>
Manager::tensor(const std::vector<float>& data, Memory::MemoryTypes memoryType)
{
    return tensorT<float>(data, memoryType);
}

std::shared_ptr<Tensor>
Manager::tensor(void* data,
                uint32_t elementTotalCount,
                uint32_t elementMemorySize,
                const Memory::DataTypes& dataType,
                Memory::MemoryTypes memoryType)
{
    return std::make_shared<Tensor>(
      device(), data, elementTotalCount, elementMemorySize, dataType, memoryType);
}

std::shared_ptr<Tensor>
Manager::tensor(uint32_t elementTotalCount,
                uint32_t elementMemorySize,
                const Memory::DataTypes& dataType,
                Memory::MemoryTypes memoryType)
{
    return tensor(nullptr, elementTotalCount, elementMemorySize, dataType, memoryType);
}

std::shared_ptr<ImageT<float>>
Manager::image(const std::vector<float>& data,
               uint32_t width,
               uint32_t height,
               uint32_t numChannels,
               vk::ImageTiling tiling,
               Memory::MemoryTypes memoryType)
{
    return imageT<float>(data, width, height, numChannels, tiling, memoryType);
}

std::shared_ptr<ImageT<float>>
Manager::image(const std::vector<float>& data,
               uint32_t width,
               uint32_t height,
               uint32_t numChannels,
               Memory::MemoryTypes memoryType)
{
    return imageT<float>(data, width, height, numChannels, memoryType);
}

std::shared_ptr<ImageT<float>>
Manager::image(uint32_t width,
               uint32_t height,
               uint32_t numChannels,
               vk::ImageTiling tiling,
               Memory::MemoryTypes memoryType)
{
    return imageT<float>(width, height, numChannels, tiling, memoryType);
}

std::shared_ptr<ImageT<float>>
Manager::image(uint32_t width,
               uint32_t height,
               uint32_t numChannels,
               Memory::MemoryTypes memoryType)
{
    return imageT<float>(width, height, numChannels, memoryType);
}

std::shared_ptr<Image>
Manager::image(void* data,
               size_t dataSize,
               uint32_t width,
               uint32_t height,
               uint32_t numChannels,
               const Memory::DataTypes& dataType,
               vk::ImageTiling tiling,
               Memory::MemoryTypes memoryType)
{
    return std::make_shared<Image>(
      device(), data, dataSize, width, height, numChannels, dataType, tiling, memoryType);
}

std::shared_ptr<Image>
Manager::image(void* data,
               size_t dataSize,
               uint32_t width,
               uint32_t height,
               uint32_t numChannels,
               const Memory::DataTypes& dataType,
               Memory::MemoryTypes memoryType)
{
    return std::make_shared<Image>(
      device(), data, dataSize, width, height, numChannels, dataType, std::nullopt, memoryType);
}

std::shared_ptr<Image>
Manager::image(uint32_t width,
               uint32_t height,
               uint32_t numChannels,
               const Memory::DataTypes& dataType,
               vk::ImageTiling tiling,
               Memory::MemoryTypes memoryType)
{
    return image(nullptr, 0, width, height, numChannels, dataType, tiling, memoryType);
}

std::shared_ptr<Image>
Manager::image(uint32_t width,
               uint32_t height,
               uint32_t numChannels,
               const Memory::DataTypes& dataType,
               Memory::MemoryTypes memoryType)
{
    return image(nullptr, 0, width, height, numChannels, dataType, memoryType);
}

std::shared_ptr<Algorithm>
Manager::algorithm(const std::vector<std::shared_ptr<Memory>>& memObjects,
                   const std::vector<uint32_t>& spirv,
                   const Workgroup& workgroup,
                   const std::vector<float>& specializationConstants,
                   const std::vector<float>& pushConstants)
{
    return algorithmWithConstants(memObjects,
                                  spirv,
                                  workgroup,
                                  ConstantBytes::from(specializationConstants),
                                  ConstantBytes::from(pushConstants));
}

std::shared_ptr<Algorithm>
Manager::algorithmWithConstants(const std::vector<std::shared_ptr<Memory>>& memObjects,
                                const std::vector<uint32_t>& spirv,
                                const Workgroup& workgroup,
                                const ConstantBytes& specializationConstants,
                                const ConstantBytes& pushConstants)
{
    return std::make_shared<Algorithm>(
      device(), memObjects, spirv, workgroup, specializationConstants, pushConstants);
}

bool
Manager::loadPipelineCache(const std::string& path)
{
    return device()->loadPipelineCache(path);
}

void
Manager::savePipelineCache(const std::string& path)
{
    device()->savePipelineCache(path);
}

void
Manager::destroy()
{
    if (!mDevice) {
        return;
    }
    std::shared_ptr<internal::Device> device = std::move(mDevice);
    if (device->ownsDevice()) {
        device->destroy();
    }
    // A BYOV manager leaves its objects working: they keep the context alive
    // and free themselves when released, as upstream does.
}

void
Manager::clear()
{
}

vk::PhysicalDeviceProperties
Manager::getDeviceProperties() const
{
    return device()->properties();
}

std::vector<vk::PhysicalDevice>
Manager::listDevices() const
{
    return physicalDevices(device()->instance());
}

std::shared_ptr<vk::Instance>
Manager::getVkInstance() const
{
    return mInstance;
}

std::shared_ptr<vk::Device>
Manager::getVkDevice() const
{
    return mVkDevice;
}

std::shared_ptr<vk::PhysicalDevice>
Manager::getVkPhysicalDevice() const
{
    return mPhysicalDevice;
}

uint32_t
Manager::queueCount() const
{
    return device()->queueCount();
}

uint32_t
Manager::queueFamilyIndex(uint32_t queueIndex) const
{
    return device()->queue(queueIndex).familyIndex;
}

MemoryStats
Manager::memoryStats() const
{
    // Memory that the device has finished with counts as free.
    std::shared_ptr<internal::Device> context = device();
    context->collectRetired();
    return context->allocator().stats();
}

PipelineStats
Manager::pipelineStats() const
{
    std::shared_ptr<internal::Device> context = device();
    context->collectRetired();
    PipelineStats stats;
    stats.shaderModulesCreated = context->pipelines().shaderModulesCreated();
    stats.pipelinesCreated = context->pipelines().pipelinesCreated();
    stats.livePipelines = context->pipelines().livePipelines();
    return stats;
}

DeviceCapabilities
Manager::capabilities() const
{
    return device()->capabilities().view();
}

JsonValue
Manager::deviceDescription() const
{
    auto context = device();
    uint32_t index = 0;
    auto devices = physicalDevices(context->instance());
    for (uint32_t i = 0; i < devices.size(); ++i) {
        if (devices[i] == context->physicalDevice()) {
            index = i;
        }
    }
    return internal::describeDevice(
      context->physicalDevice(), index, context->capabilities(), context->shaderCopies());
}

void
Manager::setWaitStrategy(WaitStrategy strategy, uint64_t autoSpinLimitNs)
{
    device()->waitSettings().set(strategy, autoSpinLimitNs);
}

WaitStrategy
Manager::getWaitStrategy() const
{
    return device()->waitSettings().strategy();
}

uint64_t
Manager::getAutoSpinLimitNs() const
{
    return device()->waitSettings().spinLimitNs();
}

} // namespace kp
