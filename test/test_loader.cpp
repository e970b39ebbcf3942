// SPDX-License-Identifier: Apache-2.0
// The Vulkan loader, opened at run time (src/internal/VulkanLoader.cpp):
// without it every entry point that needs Vulkan throws kp::VulkanLoaderError
// naming what was tried, nothing crashes, and once the loader can be found
// the next Manager works; without a driver the Manager's error says so; a
// dispatcher of the program's own (kp::loadVulkanDispatcher) records into
// Kompute's command buffers; an application's instance and device work
// beside Kompute's own.
//
// Once a loader is open it stays open (the suite's main() opens it), so the
// cases without one run in a child process of their own that starts with the
// environment they need: a death test in gtest's "threadsafe" style, which
// runs this binary again. The child reports each failed check on stderr and
// exits with status 1 if any failed.
#include "TestSupport.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

using namespace kp_test;

namespace {

constexpr const char* kLoaderVariable = "KOMPUTE_ENV_VULKAN_LOADER";
constexpr const char* kDone = "child: every check held";

/** The checks of a scenario that runs in a child process. */
class ChildChecks
{
  public:
    void expect(bool condition, const std::string& what)
    {
        if (!condition) {
            std::cerr << "child check failed: " << what << "\n";
            ++mFailures;
        }
    }

    [[noreturn]] void finish()
    {
        for (const auto& error : validationErrors()) {
            expect(false, "validation error: " + error);
        }
        std::cerr << (mFailures == 0 ? kDone : "child: some checks failed") << std::endl;
        std::exit(mFailures == 0 ? 0 : 1);
    }

  private:
    int mFailures = 0;
};

bool
contains(const std::string& text, const std::string& fragment)
{
    return text.find(fragment) != std::string::npos;
}

/** What `call` threw: the message of a kp::VulkanLoaderError, or a
 * description of anything else. */
struct Outcome
{
    bool loaderError = false;
    std::string message;
};

template<typename Call>
Outcome
outcomeOf(Call&& call)
{
    try {
        call();
    } catch (const kp::VulkanLoaderError& error) {
        return { true, error.what() };
    } catch (const std::exception& error) {
        return { false, std::string("another exception: ") + error.what() };
    }
    return { false, "no exception" };
}

// A product computed on the device (the built-in OpMult shader).
std::vector<float>
multiplyOnDevice(kp::Manager& manager)
{
    auto a = manager.tensor({ 1.0f, 2.0f, 3.0f });
    auto b = manager.tensor({ 4.0f, 5.0f, -6.0f });
    auto product = manager.tensor({ 0.0f, 0.0f, 0.0f });
    manager.sequence()
      ->record<kp::OpSyncDevice>({ a, b })
      ->record<kp::OpMult>({ a, b, product }, manager.algorithm())
      ->record<kp::OpSyncLocal>({ product })
      ->eval();
    return product->vector();
}

const std::vector<float> kProduct = { 4.0f, 10.0f, -18.0f };

// Started with KOMPUTE_ENV_VULKAN_LOADER naming `missing`, a file that does
// not exist.
void
missingLoaderThenRetry(const std::string& missing, const std::string& notALibrary)
{
    ChildChecks checks;
    Outcome manager = outcomeOf([] { kp::Manager m; });
    std::cerr << "kp::Manager(): " << manager.message << "\n";
    checks.expect(manager.loaderError, "kp::Manager() throws kp::VulkanLoaderError: " + manager.message);
    checks.expect(contains(manager.message, "No Vulkan loader found: KOMPUTE_ENV_VULKAN_LOADER names " +
                                              missing + ": ") &&
                    contains(manager.message, "No such file"),
                  "the message names the variable, the file and why: " + manager.message);

    // Every entry point that needs Vulkan, more than once: the failure is
    // not remembered, and it is a kp::Error (a std::runtime_error) too.
    struct EntryPoint
    {
        const char* name;
        void (*call)();
    };
    const EntryPoint entryPoints[] = {
        { "kp::Manager(0, {0})", [] { kp::Manager m(0, { 0 }); } },
        { "Manager::computeQueueFamilies", [] { kp::Manager::computeQueueFamilies(1); } },
        { "kp::describeDevices", [] { kp::describeDevices(); } },
        { "kp::describeDevice", [] { kp::describeDevice(0); } },
        { "kp::vulkanGetInstanceProcAddr", [] { kp::vulkanGetInstanceProcAddr(); } },
        { "kp::loadVulkanDispatcher",
          [] {
              vk::DispatchLoaderDynamic dispatcher;
              kp::loadVulkanDispatcher(dispatcher);
          } },
        { "kp::Manager() again", [] { kp::Manager m; } },
    };
    for (const auto& entry : entryPoints) {
        Outcome outcome = outcomeOf(entry.call);
        checks.expect(outcome.loaderError && outcome.message == manager.message,
                      std::string(entry.name) + " throws the same error: " + outcome.message);
    }
    try {
        kp::Manager m;
        checks.expect(false, "kp::Manager() threw nothing");
    } catch (const std::runtime_error& error) {
        checks.expect(dynamic_cast<const kp::Error*>(&error) != nullptr, "the error is a kp::Error");
    }

    // A library that is no Vulkan loader, and a file that is no library.
    setenv(kLoaderVariable, "libm.so.6", 1);
    Outcome libm = outcomeOf([] { kp::Manager m; });
    checks.expect(libm.loaderError && contains(libm.message, "libm.so.6: it is no Vulkan loader"),
                  "libm.so.6 is refused as no Vulkan loader: " + libm.message);
    setenv(kLoaderVariable, notALibrary.c_str(), 1);
    Outcome text = outcomeOf([] { kp::Manager m; });
    checks.expect(text.loaderError && contains(text.message, notALibrary + ": "),
                  "a text file is refused, naming it: " + text.message);

    // The variable unset: the system's loader is opened on this retry, by
    // one of four threads that make their first Managers at once (the
    // ThreadSanitizer run watches that), and every Manager computes.
    unsetenv(kLoaderVariable);
    constexpr int kThreads = 4;
    std::vector<std::string> results(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
        threads.emplace_back([&results, i] {
            try {
                kp::Manager m;
                results[i] = multiplyOnDevice(m) == kProduct ? "computed" : "wrong product";
            } catch (const std::exception& error) {
                results[i] = error.what();
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    for (const auto& result : results) {
        checks.expect(result == "computed", "a Manager made after the retry computes: " + result);
    }
    std::string path = kp::describeDevices()["vulkan_loader_library"].asString();
    checks.expect(contains(path, "libvulkan.so"), "describeDevices names the loader's file: " + path);
    checks.finish();
}

// Started without a driver (VK_DRIVER_FILES names none that exists). (No
// retry here: the loader 1.3.239 keeps the drivers it found at its first
// call, so a driver installed later needs a new process.)
void
missingDriver()
{
    ChildChecks checks;
    for (int attempt = 0; attempt < 2; ++attempt) {
        try {
            kp::Manager m;
            checks.expect(false, "kp::Manager() without a driver threw nothing");
        } catch (const kp::VulkanError& error) {
            std::cerr << "kp::Manager(): " << error.what() << "\n";
            checks.expect(error.result() == vk::Result::eErrorIncompatibleDriver,
                          "the result is VK_ERROR_INCOMPATIBLE_DRIVER");
            checks.expect(contains(error.what(), "found no usable driver") &&
                            contains(error.what(), "VK_ERROR_INCOMPATIBLE_DRIVER"),
                          std::string("the message says there is no driver: ") + error.what());
        }
    }
    checks.finish();
}

std::string
writeTextFile()
{
    std::string path = ::testing::TempDir() + "kompute_not_a_library.so";
    std::FILE* file = std::fopen(path.c_str(), "w");
    if (file != nullptr) {
        std::fputs("not a shared library\n", file);
        std::fclose(file);
    }
    return path;
}

} // namespace

class LoaderTest : public ::testing::Test
{
  protected:
    void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(LoaderTest, MissingLoaderIsAClearErrorAndTheNextManagerAfterItIsFoundWorks)
{
    const std::string missing = "/nonexistent/kompute-test/libvulkan.so.1";
    const std::string notALibrary = writeTextFile();
    ScopedEnv hidden(kLoaderVariable, missing.c_str());
    EXPECT_EXIT(missingLoaderThenRetry(missing, notALibrary), ::testing::ExitedWithCode(0),
                "No Vulkan loader found: KOMPUTE_ENV_VULKAN_LOADER names "
                "/nonexistent/kompute-test/libvulkan.so.1.*" +
                  std::string(kDone));
    std::remove(notALibrary.c_str());
}

TEST_F(LoaderTest, MissingDriverIsAClearError)
{
    ScopedEnv noDriver("VK_DRIVER_FILES", "/nonexistent/kompute-test/icd.json");
    ScopedEnv noOldDriverVariable("VK_ICD_FILENAMES", nullptr);
    EXPECT_EXIT(missingDriver(), ::testing::ExitedWithCode(0),
                "found no usable driver.*" + std::string(kDone));
}

// --- In this process (its loader is open) ------------------------------------

using LoaderInProcessTest = KomputeTest;

TEST_F(LoaderInProcessTest, ADispatcherOfTheProgramsOwnServesKomputesDevices)
{
    // A dispatcher of this test's own, passed explicitly (not the suite's
    // default one): what a program that links no libvulkan records with.
    vk::DispatchLoaderDynamic own;
    kp::loadVulkanDispatcher(own);
    EXPECT_EQ(own.vkGetInstanceProcAddr, kp::vulkanGetInstanceProcAddr());
    EXPECT_NE(own.vkCmdFillBuffer, nullptr);
    // Extension commands come per instance.
    EXPECT_NE(own.vkGetInstanceProcAddr(static_cast<VkInstance>(*mgr().getVkInstance()),
                                        "vkCreateDebugUtilsMessengerEXT"),
              nullptr);

    auto words = mgr().tensorT<uint32_t>(std::vector<uint32_t>(16, 0));
    mgr()
      .sequence()
      ->record(std::make_shared<FillOp>(words, 0xA5A5A5A5u, &own))
      ->record<kp::OpSyncLocal>({ words })
      ->eval();
    EXPECT_EQ(words->vector(), std::vector<uint32_t>(16, 0xA5A5A5A5u));
    EXPECT_EQ(mgr().getVkPhysicalDevice()->getProperties(own).deviceID,
              mgr().getDeviceProperties().deviceID);
}

TEST_F(LoaderInProcessTest, AnApplicationsInstanceAndDeviceBesideKomputesOwn)
{
    // The application's instance and device, made through the suite's
    // dispatcher (vk::createInstance, vk:: methods), and Kompute's own
    // instance (with the layers of KOMPUTE_ENV_DEBUG_LAYERS) and device: one
    // dispatcher of Kompute's serves both instances and both devices.
    RawVulkanDevice application;
    kp::Manager byov(application.instance, application.physicalDevice, application.device);
    kp::Manager own;
    EXPECT_NE(*byov.getVkInstance(), *own.getVkInstance());
    EXPECT_EQ(multiplyOnDevice(byov), kProduct);
    EXPECT_EQ(multiplyOnDevice(own), kProduct);
    EXPECT_EQ(multiplyOnDevice(byov), kProduct);
    byov.destroy();
    // The application's own Vulkan calls after Kompute's.
    application.device->waitIdle();
}
