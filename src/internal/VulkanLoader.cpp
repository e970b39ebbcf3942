// SPDX-License-Identifier: Apache-2.0
#include "internal/VulkanLoader.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#if !defined(_WIN32)
#include <dlfcn.h>
#endif

#include "kompute/Errors.hpp"
#include "kompute/Vulkan.hpp"

namespace kp {
namespace internal {

// The library's table of commands (VULKAN_HPP_DEFAULT_DISPATCHER inside it;
// see VulkanCommands.hpp for why it is no vk::DispatchLoaderDynamic).
// Constant-initialised (all null) before any code runs.
VulkanCommands vulkanCommands;

namespace {

constexpr const char* kVariable = "KOMPUTE_ENV_VULKAN_LOADER";

// The loader's usual names, most specific first (constants, so that a call
// from another file's static initialiser finds them).
#if defined(_WIN32)
constexpr const char* kDefaultNames[] = { "vulkan-1.dll" };
constexpr const char* kInstallHint = "install a GPU driver with Vulkan support (it brings vulkan-1.dll)";
#elif defined(__APPLE__)
constexpr const char* kDefaultNames[] = { "libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib" };
constexpr const char* kInstallHint = "install the Vulkan loader and MoltenVK (Homebrew: brew install vulkan-loader molten-vk)";
#else
constexpr const char* kDefaultNames[] = { "libvulkan.so.1", "libvulkan.so" };
constexpr const char* kInstallHint =
  "install the Vulkan loader (Debian/Ubuntu: apt-get install libvulkan1) and a Vulkan driver";
#endif

/** The open loader library; never closed (instances are never destroyed
 * either, and the driver may still run code of it at exit). */
struct OpenLoader
{
    vk::DynamicLoader library;
    std::string path;
};

// Constant-initialised too.
std::atomic<const OpenLoader*> gLoader{ nullptr };

std::mutex&
openMutex()
{
    static std::mutex mutex;
    return mutex;
}

// The instance- and device-level commands are the loader's exported entry
// points (its trampolines). They are the pointers vkGetInstanceProcAddr
// returns for core commands, but valid for every instance and every device
// of the process, so the table is filled once, before any instance exists,
// and never again: several Managers, the process's instances with and
// without layers, and an application's own (bring-your-own-Vulkan) instance
// all share it. vkGetDeviceProcAddr's pointers would be for one device only.
// Extension commands are not exported: Kompute looks those up per instance,
// through vkGetInstanceProcAddr.

/** Why the last dlopen failed, without the file name it starts with. */
std::string
openFailure(const std::string& name)
{
#if defined(_WIN32)
    (void)name;
    return "it could not be loaded";
#else
    const char* error = dlerror();
    if (error == nullptr) {
        return "it could not be loaded";
    }
    std::string text = error;
    std::string prefix = name + ": ";
    if (text.compare(0, prefix.size(), prefix) == 0) {
        text.erase(0, prefix.size());
    }
    return text;
#endif
}

std::string
pathOf(PFN_vkGetInstanceProcAddr function, const std::string& name)
{
#if !defined(_WIN32)
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(function), &info) != 0 && info.dli_fname != nullptr) {
        return info.dli_fname;
    }
#else
    (void)function;
#endif
    return name;
}

/** Opens `name` and fills the table from it; on failure returns why and
 * leaves the table empty. */
std::unique_ptr<OpenLoader>
open(const std::string& name, std::string& failure)
{
#if !defined(_WIN32)
    dlerror(); // clear an earlier error
#endif
    std::unique_ptr<OpenLoader> loader;
    try {
        loader.reset(new OpenLoader{ vk::DynamicLoader(name), std::string() });
    } catch (const std::runtime_error&) { // vk::DynamicLoader's "Failed to load"
        failure = openFailure(name);
        return nullptr;
    }
    auto getInstanceProcAddr =
      loader->library.getProcAddress<PFN_vkGetInstanceProcAddr>("vkGetInstanceProcAddr");
    if (getInstanceProcAddr == nullptr) {
        failure = "it is no Vulkan loader (it has no vkGetInstanceProcAddr)";
        return nullptr;
    }

    VulkanCommands commands;
    commands.vkGetInstanceProcAddr = getInstanceProcAddr;
#define KOMPUTE_GLOBAL_COMMAND(command)                                                            \
    commands.command = reinterpret_cast<PFN_##command>(getInstanceProcAddr(nullptr, #command));
#define KOMPUTE_EXPORTED_COMMAND(command)                                                          \
    commands.command = loader->library.getProcAddress<PFN_##command>(#command);
    KOMPUTE_VULKAN_GLOBAL_COMMANDS(KOMPUTE_GLOBAL_COMMAND)
    KOMPUTE_VULKAN_COMMANDS(KOMPUTE_EXPORTED_COMMAND)
    KOMPUTE_VULKAN_1_2_COMMANDS(KOMPUTE_EXPORTED_COMMAND)
    // Every Vulkan 1.1 loader has these.
    std::string missing;
#define KOMPUTE_REQUIRED_COMMAND(command)                                                          \
    if (commands.command == nullptr) {                                                             \
        missing += (missing.empty() ? "" : ", ") + std::string(#command);                          \
    }
    KOMPUTE_REQUIRED_COMMAND(vkCreateInstance)
    KOMPUTE_REQUIRED_COMMAND(vkEnumerateInstanceExtensionProperties)
    KOMPUTE_REQUIRED_COMMAND(vkEnumerateInstanceLayerProperties)
    KOMPUTE_VULKAN_COMMANDS(KOMPUTE_REQUIRED_COMMAND)
#undef KOMPUTE_REQUIRED_COMMAND
#undef KOMPUTE_EXPORTED_COMMAND
#undef KOMPUTE_GLOBAL_COMMAND
    if (!missing.empty()) {
        failure = "it is no Vulkan 1.1 loader (it does not export " + missing + ")";
        return nullptr;
    }
    vulkanCommands = commands;
    loader->path = pathOf(getInstanceProcAddr, name);
    return loader;
}

std::string
join(const std::vector<std::string>& tried)
{
    std::string text;
    for (const auto& item : tried) {
        text += (text.empty() ? "" : "; ") + item;
    }
    return text;
}

/** Opens the loader (the caller holds openMutex); throws VulkanLoaderError. */
void
openLoader()
{
    const char* chosen = std::getenv(kVariable);
    bool named = chosen != nullptr && *chosen != '\0';
    std::vector<std::string> names;
    if (named) {
        names.push_back(chosen);
    } else {
        names.assign(std::begin(kDefaultNames), std::end(kDefaultNames));
    }
    std::vector<std::string> tried;
    for (const auto& name : names) {
        std::string failure;
        if (std::unique_ptr<OpenLoader> loader = open(name, failure)) {
            gLoader.store(loader.release(), std::memory_order_release);
            return;
        }
        tried.push_back(name + ": " + failure);
    }
    if (named) {
        throw VulkanLoaderError("No Vulkan loader found: " + std::string(kVariable) +
                                " names " + join(tried) + ". Set it to the path of a Vulkan " +
                                "loader library, or unset it to use the system's (" +
                                kDefaultNames[0] + ")");
    }
    throw VulkanLoaderError("No Vulkan loader found (tried " + join(tried) + "): " + kInstallHint +
                            ", or set " + kVariable + " to the loader library's path");
}

} // namespace

void
requireVulkan()
{
    if (gLoader.load(std::memory_order_acquire) != nullptr) {
        return;
    }
    std::lock_guard<std::mutex> lock(openMutex());
    if (gLoader.load(std::memory_order_relaxed) == nullptr) {
        openLoader();
    }
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vulkanExportedCommand(VkInstance, const char* name)
{
    const OpenLoader* loader = gLoader.load(std::memory_order_acquire);
    return loader != nullptr ? loader->library.getProcAddress<PFN_vkVoidFunction>(name) : nullptr;
}

std::string
vulkanLoaderPath()
{
    const OpenLoader* loader = gLoader.load(std::memory_order_acquire);
    return loader != nullptr ? loader->path : std::string();
}

} // namespace internal

PFN_vkGetInstanceProcAddr
vulkanGetInstanceProcAddr()
{
    internal::requireVulkan();
    return internal::vulkanCommands.vkGetInstanceProcAddr;
}

} // namespace kp
