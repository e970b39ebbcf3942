// SPDX-License-Identifier: Apache-2.0
#include "TestSupport.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <unistd.h>

// The storage of the suites' Vulkan-Hpp default dispatcher (the test targets
// build with VULKAN_HPP_DISPATCH_LOADER_DYNAMIC=1; main() fills it).
VULKAN_HPP_DEFAULT_DISPATCH_LOADER_DYNAMIC_STORAGE

namespace kp_test {

namespace {
// Set by main() (KOMPUTE_TEST_SYNC_VALIDATION).
bool gSyncValidation = true;
} // namespace

bool
syncValidation()
{
    return gSyncValidation;
}

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
constexpr const char* kSyncValidation =
  "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT";
constexpr const char* kValidationPrefix = "[validation]";

struct LogState
{
    std::mutex mutex;
    // Validation errors since the last check (a ValidatedTest's TearDown, or
    // the listener below for code outside such fixtures).
    std::vector<std::string> validationErrors;
    // Where a live LogCapture records messages, if any.
    std::vector<LogCapture::Message>* capture = nullptr;
};

LogState&
logState()
{
    static LogState state;
    return state;
}

void
testSink(kp::logger::Level level, const std::string& message)
{
    bool validationError =
      level >= kp::logger::Level::Error &&
      message.compare(0, std::strlen(kValidationPrefix), kValidationPrefix) == 0;
    {
        auto& state = logState();
        std::lock_guard<std::mutex> lock(state.mutex);
        if (validationError) {
            state.validationErrors.push_back(message);
        }
        if (state.capture != nullptr) {
            state.capture->push_back({ level, message });
        }
    }
    std::fprintf(stderr,
                 "[kompute %s]%s %s\n",
                 kp::logger::levelName(level),
                 validationError ? " VALIDATION ERROR" : "",
                 message.c_str());
}

// Makes sure a variable holding a list names `item`, appending it if not.
void
ensureListed(const char* name, const char* item, const char* separator)
{
    const char* current = std::getenv(name);
    if (current == nullptr || *current == '\0') {
        setenv(name, item, 1);
    } else if (std::string(current).find(item) == std::string::npos) {
        std::string value = std::string(current) + separator + item;
        setenv(name, value.c_str(), 1);
    }
}

// Catches validation errors of tests that do not check them themselves
// (tests not derived from ValidatedTest), and of code run between tests.
class UncheckedValidationListener : public ::testing::EmptyTestEventListener
{
  public:
    void OnTestStart(const ::testing::TestInfo&) override { report("before the test"); }
    void OnTestEnd(const ::testing::TestInfo& info) override
    {
        report(std::string(info.test_suite_name()) + "." + info.name());
    }
    void OnTestProgramEnd(const ::testing::UnitTest&) override { report("after the tests"); }

    bool failed() const { return mFailed; }

  private:
    void report(const std::string& where)
    {
        auto errors = validationErrors();
        if (errors.empty()) {
            return;
        }
        mFailed = true;
        std::fprintf(stderr,
                     "FAILURE: %zu validation error(s) not checked by a fixture (%s)\n",
                     errors.size(),
                     where.c_str());
        resetValidationErrors();
    }

    bool mFailed = false;
};

/**
 * The per-test time limit (KOMPUTE_TEST_TIMEOUT, seconds; unset or 0: none).
 * A test that runs past it is reported by name, the command in
 * KOMPUTE_TEST_HANG_COMMAND runs (its "%p" replaced by this process's id:
 * say, a debugger printing every thread's stack), and the binary exits with
 * status 124, as timeout(1) does. A hang on a GPU then says where it is
 * instead of eating the whole run's time limit.
 */
class TestWatchdog : public ::testing::EmptyTestEventListener
{
  public:
    explicit TestWatchdog(std::chrono::seconds limit)
      : mLimit(limit)
      , mThread([this] { watch(); })
    {
    }
    ~TestWatchdog() override
    {
        {
            std::lock_guard<std::mutex> lock(mMutex);
            mStopping = true;
        }
        mChanged.notify_all();
        mThread.join();
    }

    void OnTestStart(const ::testing::TestInfo& info) override
    {
        std::lock_guard<std::mutex> lock(mMutex);
        mTest = std::string(info.test_suite_name()) + "." + info.name();
        mDeadline = std::chrono::steady_clock::now() + mLimit;
        mRunning = true;
        mChanged.notify_all();
    }
    void OnTestEnd(const ::testing::TestInfo&) override
    {
        std::lock_guard<std::mutex> lock(mMutex);
        mRunning = false;
        mChanged.notify_all();
    }

  private:
    void watch()
    {
        std::unique_lock<std::mutex> lock(mMutex);
        while (!mStopping) {
            if (!mRunning) {
                mChanged.wait(lock);
                continue;
            }
            if (mChanged.wait_until(lock, mDeadline) == std::cv_status::timeout && mRunning &&
                std::chrono::steady_clock::now() >= mDeadline) {
                std::fprintf(stderr,
                             "[   HUNG   ] %s ran past the test time limit of %lld s "
                             "(KOMPUTE_TEST_TIMEOUT)\n",
                             mTest.c_str(),
                             static_cast<long long>(mLimit.count()));
                std::fflush(stderr);
                runHangCommand();
                std::fflush(stdout);
                std::_Exit(124);
            }
        }
    }

    static void runHangCommand()
    {
        const char* command = std::getenv("KOMPUTE_TEST_HANG_COMMAND");
        if (command == nullptr || *command == '\0') {
            return;
        }
        std::string line(command);
        std::string pid = std::to_string(static_cast<long long>(getpid()));
        for (size_t at = line.find("%p"); at != std::string::npos; at = line.find("%p", at)) {
            line.replace(at, 2, pid);
            at += pid.size();
        }
        int status = std::system(line.c_str());
        std::fprintf(stderr, "[   HUNG   ] '%s' exited with status %d\n", line.c_str(), status);
    }

    const std::chrono::seconds mLimit;
    std::mutex mMutex;
    std::condition_variable mChanged;
    bool mStopping = false;
    bool mRunning = false;
    std::string mTest;
    std::chrono::steady_clock::time_point mDeadline;
    std::thread mThread; // last: starts once the state above exists
};

} // namespace

// --- Validation errors ---------------------------------------------------

size_t
validationErrorCount()
{
    auto& state = logState();
    std::lock_guard<std::mutex> lock(state.mutex);
    return state.validationErrors.size();
}

std::vector<std::string>
validationErrors()
{
    auto& state = logState();
    std::lock_guard<std::mutex> lock(state.mutex);
    return state.validationErrors;
}

void
resetValidationErrors()
{
    auto& state = logState();
    std::lock_guard<std::mutex> lock(state.mutex);
    state.validationErrors.clear();
}

void
installTestLogSink()
{
    kp::logger::setSink(testSink);
}

void
expectNoValidationErrors()
{
    auto errors = validationErrors();
    std::ostringstream list;
    for (const auto& error : errors) {
        list << "\n  " << error;
    }
    EXPECT_EQ(errors.size(), 0u) << "the validation layer reported errors:" << list.str();
    resetValidationErrors();
}

// --- LogCapture -------------------------------------------------------------

namespace {
std::vector<LogCapture::Message>&
captured()
{
    static std::vector<LogCapture::Message> messages;
    return messages;
}
}

LogCapture::LogCapture()
{
    auto& state = logState();
    std::lock_guard<std::mutex> lock(state.mutex);
    captured().clear();
    state.capture = &captured();
}

LogCapture::~LogCapture()
{
    auto& state = logState();
    std::lock_guard<std::mutex> lock(state.mutex);
    state.capture = nullptr;
    captured().clear();
}

std::vector<LogCapture::Message>
LogCapture::messages() const
{
    auto& state = logState();
    std::lock_guard<std::mutex> lock(state.mutex);
    return captured();
}

bool
LogCapture::contains(kp::logger::Level level, const std::string& fragment) const
{
    for (const auto& message : messages()) {
        if (message.level == level && message.text.find(fragment) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// --- Environment and managers ---------------------------------------------

ScopedEnv::ScopedEnv(const char* name, const char* value)
  : mName(name)
{
    const char* old = std::getenv(name);
    mHadValue = old != nullptr;
    if (mHadValue) {
        mOldValue = old;
    }
    if (value != nullptr) {
        setenv(name, value, 1);
    } else {
        unsetenv(name);
    }
}

ScopedEnv::~ScopedEnv()
{
    if (mHadValue) {
        setenv(mName.c_str(), mOldValue.c_str(), 1);
    } else {
        unsetenv(mName.c_str());
    }
}

std::unique_ptr<kp::Manager>
makeManager()
{
    return std::make_unique<kp::Manager>();
}

// --- RawVulkanDevice -----------------------------------------------------------

namespace {

VKAPI_ATTR VkBool32 VKAPI_CALL
rawDeviceMessenger(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                   VkDebugUtilsMessageTypeFlagsEXT,
                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                   void*)
{
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        KP_LOG_ERROR("{} {}", kValidationPrefix, data->pMessage);
    }
    return VK_FALSE;
}

void
checkResult(VkResult result, const char* action)
{
    if (result != VK_SUCCESS) {
        throw kp::VulkanError(static_cast<vk::Result>(result), action);
    }
}

} // namespace

RawVulkanDevice::RawVulkanDevice(const VkPhysicalDeviceFeatures2* features,
                                 const std::vector<const char*>& deviceExtensions)
{
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.apiVersion = VK_API_VERSION_1_1;
    const char* layers[] = { kValidationLayer };
    const char* extensions[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
    VkInstanceCreateInfo instanceInfo{};
    instanceInfo.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    instanceInfo.pApplicationInfo = &app;
    instanceInfo.enabledLayerCount = 1;
    instanceInfo.ppEnabledLayerNames = layers;
    instanceInfo.enabledExtensionCount = 1;
    instanceInfo.ppEnabledExtensionNames = extensions;
    VkInstance rawInstance = VK_NULL_HANDLE;
    // Through the suite's dispatcher (filled from the loader Kompute opened),
    // as a program that links no libvulkan makes its Vulkan calls.
    checkResult(VULKAN_HPP_DEFAULT_DISPATCHER.vkCreateInstance(&instanceInfo, nullptr, &rawInstance),
                "Creating an instance");
    instance = std::make_shared<vk::Instance>(rawInstance);

    auto createMessenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      instance->getProcAddr("vkCreateDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerCreateInfoEXT messengerInfo{};
    messengerInfo.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    messengerInfo.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messengerInfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    messengerInfo.pfnUserCallback = rawDeviceMessenger;
    checkResult(createMessenger(rawInstance, &messengerInfo, nullptr, &mMessenger),
                "Creating a debug messenger");

    physicalDevice =
      std::make_shared<vk::PhysicalDevice>(instance->enumeratePhysicalDevices().at(0));
    auto families = physicalDevice->getQueueFamilyProperties();
    while (!(families.at(computeFamily).queueFlags & vk::QueueFlagBits::eCompute)) {
        ++computeFamily;
    }
    float priority = 1.0f;
    vk::DeviceQueueCreateInfo queueInfo({}, computeFamily, 1, &priority);
    vk::DeviceCreateInfo deviceInfo({}, 1, &queueInfo);
    deviceInfo.pNext = features;
    deviceInfo.enabledExtensionCount = static_cast<uint32_t>(deviceExtensions.size());
    deviceInfo.ppEnabledExtensionNames = deviceExtensions.data();
    device = std::make_shared<vk::Device>(physicalDevice->createDevice(deviceInfo));
    queue = std::make_shared<vk::Queue>(device->getQueue(computeFamily, 0));
}

RawVulkanDevice::~RawVulkanDevice()
{
    device->destroy();
    auto destroyMessenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      instance->getProcAddr("vkDestroyDebugUtilsMessengerEXT"));
    destroyMessenger(static_cast<VkInstance>(*instance), mMessenger, nullptr);
    instance->destroy();
}

// --- Data -------------------------------------------------------------------

const std::vector<MemoryTypes>&
allMemoryTypes()
{
    static const std::vector<MemoryTypes> types = {
        MemoryTypes::eDevice, MemoryTypes::eHost, MemoryTypes::eStorage, MemoryTypes::eDeviceAndHost
    };
    return types;
}

std::vector<uint8_t>
deviceBytes(kp::Manager& mgr, const std::shared_ptr<kp::Tensor>& tensor)
{
    uint32_t count = tensor->size();
    uint32_t elementSize = tensor->dataTypeMemorySize();
    auto storage = mgr.tensor(count, elementSize, tensor->dataType(), MemoryTypes::eStorage);
    // Pre-filled so that a copy that did not happen cannot go unnoticed.
    std::vector<uint8_t> sentinel(tensor->memorySize(), 0xA5);
    auto out =
      mgr.tensor(sentinel.data(), count, elementSize, tensor->dataType(), MemoryTypes::eDevice);
    mgr.sequence()
      ->record<kp::OpCopy>({ tensor, storage })
      ->record<kp::OpCopy>({ storage, out })
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    return out->vector<uint8_t>();
}

std::vector<uint8_t>
hostBytes(const std::shared_ptr<kp::Tensor>& tensor)
{
    return tensor->vector<uint8_t>();
}

// --- FillOp -------------------------------------------------------------------

FillOp::FillOp(std::shared_ptr<kp::Tensor> tensor,
               uint32_t pattern,
               const vk::DispatchLoaderDynamic* dispatcher)
  : mTensor(std::move(tensor))
  , mPattern(pattern)
  , mDispatcher(dispatcher != nullptr ? dispatcher : &VULKAN_HPP_DEFAULT_DISPATCHER)
{
}

void
FillOp::record(const vk::CommandBuffer& commandBuffer)
{
    // Order the fill after earlier transfers that touched the buffer.
    mTensor->recordPrimaryMemoryBarrier(commandBuffer,
                                        vk::AccessFlagBits::eTransferRead |
                                          vk::AccessFlagBits::eTransferWrite,
                                        vk::AccessFlagBits::eTransferWrite,
                                        vk::PipelineStageFlagBits::eTransfer,
                                        vk::PipelineStageFlagBits::eTransfer);
    commandBuffer.fillBuffer(
      *mTensor->getPrimaryBuffer(), 0, VK_WHOLE_SIZE, mPattern, *mDispatcher);
}

// --- RawDeviceCopy ------------------------------------------------------------

RawDeviceCopy::RawDeviceCopy(std::shared_ptr<kp::Tensor> source,
                             std::shared_ptr<kp::Tensor> target,
                             bool barrier)
  : mSource(std::move(source))
  , mTarget(std::move(target))
  , mBarrier(barrier)
{
}

void
RawDeviceCopy::record(const vk::CommandBuffer& commandBuffer)
{
    ++recordCount;
    if (mBarrier) {
        vk::MemoryBarrier barrier(vk::AccessFlagBits::eTransferWrite,
                                  vk::AccessFlagBits::eTransferRead |
                                    vk::AccessFlagBits::eTransferWrite);
        commandBuffer.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer,
                                      vk::PipelineStageFlagBits::eTransfer,
                                      {},
                                      1,
                                      &barrier,
                                      0,
                                      nullptr,
                                      0,
                                      nullptr);
    }
    vk::BufferCopy region(0, 0, mSource->memorySize());
    commandBuffer.copyBuffer(
      *mSource->getPrimaryBuffer(), *mTarget->getPrimaryBuffer(), 1, &region);
}

bool
RawDeviceCopy::declareAccesses(std::vector<kp::MemoryAccess>&) const
{
    return !mBarrier;
}

bool
isHazard(const std::string& message, const std::string& kind)
{
    std::string dashed = kind;
    for (char& c : dashed) {
        c = c == '_' ? '-' : c;
    }
    return message.find("SYNC-HAZARD-" + dashed) != std::string::npos ||
           message.find(kind + " hazard") != std::string::npos;
}

void
RawDeviceCopy::preEval(const vk::CommandBuffer&)
{
    ++preEvalCount;
}

void
RawDeviceCopy::postEval(const vk::CommandBuffer&)
{
    ++postEvalCount;
}

} // namespace kp_test

void
kp::PrintTo(Memory::MemoryTypes memoryType, std::ostream* out)
{
    *out << Memory::toString(memoryType);
}

int
main(int argc, char** argv)
{
    // Set before any Manager exists: the Manager reads the layer list, and
    // the layer its settings, at instance creation. KOMPUTE_TEST_VALIDATION=0
    // runs without the layer, for paths an installed layer does not know
    // (the GPU scripts' tests-bf16: the H200's layer predates bfloat16).
    const char* validation = std::getenv("KOMPUTE_TEST_VALIDATION");
    if (validation == nullptr || std::strcmp(validation, "0") != 0) {
        kp_test::ensureListed("KOMPUTE_ENV_DEBUG_LAYERS", kp_test::kValidationLayer, " ");
    }
    // KOMPUTE_TEST_SYNC_VALIDATION=0 runs the layer's core checks without
    // its synchronization validation, which cannot see ordering done by the
    // shaders' atomics: for the dispatch chains' cases (MatMulParams::chained),
    // which skip themselves where it is on (kp_test::syncValidation()).
    const char* sync = std::getenv("KOMPUTE_TEST_SYNC_VALIDATION");
    kp_test::gSyncValidation = sync == nullptr || std::strcmp(sync, "0") != 0;
    if (kp_test::gSyncValidation) {
        // The layer splits VK_LAYER_ENABLES at ':' on Linux (',' is not a
        // separator there: a list joined with it enables nothing).
        kp_test::ensureListed("VK_LAYER_ENABLES", kp_test::kSyncValidation, ":");
        // Layers of the settings framework (the H200's 1.4.309) read their
        // settings from VK_KHRONOS_VALIDATION_* (and still honour the list
        // above). Without their SPIR-V analysis they count no shader writes to
        // storage buffers: a dispatch followed by an unordered copy of what it
        // wrote went unreported (test_dispatch's missing-barrier test).
        setenv("VK_KHRONOS_VALIDATION_VALIDATE_SYNC", "true", 0);
        setenv("VK_KHRONOS_VALIDATION_SYNCVAL_SHADER_ACCESSES_HEURISTIC", "true", 0);
    } else {
        setenv("VK_LAYER_ENABLES", "", 1);
        setenv("VK_KHRONOS_VALIDATION_VALIDATE_SYNC", "false", 1);
    }

    ::testing::InitGoogleTest(&argc, argv);

    // The suites' own vk:: calls go through Vulkan-Hpp's default dispatcher
    // (defined above), filled from the loader Kompute opens, so that the test
    // binaries link no libvulkan, as Kompute's users need not. Without a
    // loader (test_loader's cases) it stays empty.
    try {
        kp::loadVulkanDispatcher(VULKAN_HPP_DEFAULT_DISPATCHER);
    } catch (const kp::VulkanLoaderError&) {
    }

    kp_test::installTestLogSink();
    // Validation errors are logged at Error level: they must not be filtered.
    if (kp::logger::getLogLevel() > kp::logger::Level::Error) {
        kp::logger::setLogLevel(kp::logger::Level::Error);
    }

    auto* listener = new kp_test::UncheckedValidationListener;
    ::testing::UnitTest::GetInstance()->listeners().Append(listener); // gtest owns it
    if (const char* limit = std::getenv("KOMPUTE_TEST_TIMEOUT"); limit && std::atoi(limit) > 0) {
        ::testing::UnitTest::GetInstance()->listeners().Append(
          new kp_test::TestWatchdog(std::chrono::seconds(std::atoi(limit))));
    }
    int status = RUN_ALL_TESTS();
    if (listener->failed()) {
        status = 1;
    }
    kp::logger::setSink({});
    return status;
}
