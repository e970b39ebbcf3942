// SPDX-License-Identifier: Apache-2.0
// Shared fixture code of the Kompute test suites.
//
// Every test binary links test/support/TestSupport.cpp, whose main():
//   * turns the Khronos validation layer on, with synchronization validation
//     (KOMPUTE_ENV_DEBUG_LAYERS and VK_LAYER_ENABLES), so that running a test
//     binary by hand validates exactly as CTest does;
//   * installs a log sink that prints every Kompute log message and counts
//     the validation layer's errors (the Manager logs them at Error level with
//     the prefix "[validation]").
// Fixtures derived from ValidatedTest fail a test that produced any
// validation error; a test that is not such a fixture and still produced one
// makes the binary exit with a failure.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <kompute/Kompute.hpp>

namespace kp_test {

// --- Validation errors ---------------------------------------------------

/** Validation errors seen since the last reset (or the start of the test). */
size_t
validationErrorCount();
std::vector<std::string>
validationErrors();
void
resetValidationErrors();

/** Whether the synchronization validation is on in this process (it is,
 * unless KOMPUTE_TEST_SYNC_VALIDATION=0; see main()). */
bool
syncValidation();

/** Installs the suite's log sink (prints messages, counts validation
 * errors). main() does it; tests that replace the sink call it again. */
void
installTestLogSink();

/** Whether a validation message reports a synchronization hazard of `kind`
 * ("READ_AFTER_WRITE", "WRITE_AFTER_READ", ...), as the layer's versions
 * word it: "SYNC-HAZARD-READ-AFTER-WRITE" (1.3.239) or "READ_AFTER_WRITE
 * hazard" (later ones, which leave the message ID out of the text). */
bool
isHazard(const std::string& message, const std::string& kind);

/** Adds a failure listing the validation errors seen since the last reset,
 * then resets the count. */
void
expectNoValidationErrors();

/** Records every log message delivered while it lives (the messages still
 * reach the suite's sink). */
class LogCapture
{
  public:
    struct Message
    {
        kp::logger::Level level;
        std::string text;
    };

    LogCapture();
    ~LogCapture();
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;

    std::vector<Message> messages() const;
    /** True if a message of exactly `level` contains `fragment`. */
    bool contains(kp::logger::Level level, const std::string& fragment) const;
};

// --- Environment and managers ---------------------------------------------

/** Sets (or, with a null value, unsets) an environment variable for its
 * lifetime, then restores the previous state. */
class ScopedEnv
{
  public:
    ScopedEnv(const char* name, const char* value);
    ~ScopedEnv();
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    std::string mName;
    bool mHadValue = false;
    std::string mOldValue;
};

/** Sets KOMPUTE_ENV_DISABLE for its lifetime to what the environment the
 * suite runs in already disables (the H200 run disables bfloat16, which its
 * validation layer does not know) plus `groups` (null or empty: nothing
 * more); read when a Manager or operation is built. */
struct DisablePaths : ScopedEnv
{
    explicit DisablePaths(const char* groups)
      : ScopedEnv("KOMPUTE_ENV_DISABLE", combined(groups).empty() ? nullptr : combined(groups).c_str())
    {
    }

  private:
    static std::string combined(const char* groups)
    {
        const char* outer = std::getenv("KOMPUTE_ENV_DISABLE");
        std::string value = outer ? outer : "";
        if (groups && *groups) {
            value += value.empty() ? "" : ",";
            value += groups;
        }
        return value;
    }
};

/** A Manager on device 0. */
std::unique_ptr<kp::Manager>
makeManager();

/**
 * A Vulkan instance and device made with plain Vulkan calls, as by an
 * application that brings its own Vulkan (no Manager involved). The
 * validation layer is on, and its errors are logged like the Manager's, so
 * the fixtures count them. The device has one queue, of the first family
 * with compute. Kompute objects on it must be released before it.
 */
class RawVulkanDevice
{
  public:
    /** `features` (a VkPhysicalDeviceFeatures2 chain, may be null) and
     * `extensions` are what the device is created with. */
    explicit RawVulkanDevice(const VkPhysicalDeviceFeatures2* features = nullptr,
                             const std::vector<const char*>& extensions = {});
    ~RawVulkanDevice();
    RawVulkanDevice(const RawVulkanDevice&) = delete;
    RawVulkanDevice& operator=(const RawVulkanDevice&) = delete;

    std::shared_ptr<vk::Instance> instance;
    std::shared_ptr<vk::PhysicalDevice> physicalDevice;
    std::shared_ptr<vk::Device> device;
    std::shared_ptr<vk::Queue> queue;
    uint32_t computeFamily = 0;

  private:
    VkDebugUtilsMessengerEXT mMessenger = VK_NULL_HANDLE;
};

// --- Fixtures ---------------------------------------------------------------

/**
 * Base of every test fixture: fails the test if the validation layer
 * reported an error during it, and provides a Manager created on first use
 * (destroyed in TearDown before the check, so that errors reported when the
 * device is destroyed count too).
 */
template<typename Base>
class ValidatedTest : public Base
{
  protected:
    void SetUp() override { resetValidationErrors(); }

    void TearDown() override
    {
        mManager.reset();
        expectNoValidationErrors();
    }

    kp::Manager& mgr()
    {
        if (!mManager) {
            mManager = makeManager();
        }
        return *mManager;
    }

    std::unique_ptr<kp::Manager> mManager;
};

using KomputeTest = ValidatedTest<::testing::Test>;

template<typename Param>
using KomputeParamTest = ValidatedTest<::testing::TestWithParam<Param>>;

// --- Data types and memory types ------------------------------------------

using MemoryTypes = kp::Memory::MemoryTypes;
using DataTypes = kp::Memory::DataTypes;

/** Every memory type, in enum order. */
const std::vector<MemoryTypes>&
allMemoryTypes();

template<typename T>
struct TypeTag
{
    using type = T;
};

/** Every C++ element type with a Kompute data type (all but eCustom). */
using ElementTypes = std::tuple<bool,
                                int8_t,
                                uint8_t,
                                int16_t,
                                uint16_t,
                                int32_t,
                                uint32_t,
                                int64_t,
                                uint64_t,
                                float,
                                double,
                                kp::float16_t>;

/** Calls f(TypeTag<T>{}) for each T of ElementTypes. */
template<typename F>
void
forEachElementType(F&& f)
{
    std::apply([&](auto... values) { (f(TypeTag<decltype(values)>{}), ...); }, ElementTypes{});
}

/** "eFloat" etc. for SCOPED_TRACE and messages. */
template<typename T>
std::string
typeName()
{
    return kp::Memory::toString(kp::Memory::dataType<T>());
}

/**
 * `count` host values of type T that exercise the type: its extremes and
 * special values (infinities, NaN, signed zero, subnormals for floating
 * types) followed by a pattern that depends on `seed`.
 */
template<typename T>
std::vector<T>
sampleValues(size_t count, uint32_t seed = 0)
{
    std::vector<T> values;
    values.reserve(count);
    if constexpr (std::is_same_v<T, bool>) {
        for (size_t i = 0; i < count; ++i) {
            values.push_back((i + seed) % 3 == 0);
        }
    } else if constexpr (std::is_same_v<T, kp::float16_t>) {
        const std::vector<uint16_t> specials = {
            0x7BFF, // 65504, the largest half
            0xFBFF, // -65504
            0x0001, // smallest subnormal
            0x8000, // -0
            0x7C00, // +infinity
            0x7E00, // quiet NaN
        };
        for (size_t i = 0; i < count; ++i) {
            if (i < specials.size()) {
                values.push_back(kp::float16_t::fromBits(specials[i]));
            } else {
                // Multiples of 1/4 below 512 are exact in half precision.
                float v = static_cast<float>((static_cast<int64_t>(i % 1024) - 512)) * 0.5f +
                          static_cast<float>(seed % 4) * 0.25f;
                values.push_back(kp::float16_t(v));
            }
        }
    } else if constexpr (std::is_floating_point_v<T>) {
        using L = std::numeric_limits<T>;
        const std::vector<T> specials = { L::max(), L::lowest(),   L::min(),       L::denorm_min(),
                                          -T(0),    L::infinity(), -L::infinity(), L::quiet_NaN() };
        for (size_t i = 0; i < count; ++i) {
            if (i < specials.size()) {
                values.push_back(specials[i]);
            } else {
                values.push_back(static_cast<T>(static_cast<double>(i) * 0.75 - 100.0 +
                                                static_cast<double>(seed) * 1.0625));
            }
        }
    } else {
        using L = std::numeric_limits<T>;
        using U = std::make_unsigned_t<T>;
        const std::vector<T> specials = { L::min(), L::max(), T(0), static_cast<T>(U(~U(0))) };
        for (size_t i = 0; i < count; ++i) {
            if (i < specials.size()) {
                values.push_back(specials[i]);
            } else {
                uint64_t pattern = i * 2654435761ull + seed * 40503ull + 1;
                values.push_back(static_cast<T>(static_cast<U>(pattern)));
            }
        }
    }
    return values;
}

/** A value for printing (int8_t as a number, float16_t as float). */
template<typename T>
auto
printable(const T& value)
{
    if constexpr (std::is_same_v<T, bool>) {
        return value;
    } else if constexpr (std::is_same_v<T, kp::float16_t>) {
        return static_cast<float>(value);
    } else if constexpr (std::is_integral_v<T>) {
        return +value;
    } else {
        return value;
    }
}

/** Element-wise comparison of the bits of two vectors (so NaN == NaN and
 * -0 != +0), reporting the first differing element. */
template<typename T>
::testing::AssertionResult
sameElements(const std::vector<T>& actual, const std::vector<T>& expected)
{
    if (actual.size() != expected.size()) {
        return ::testing::AssertionFailure()
               << "sizes differ: " << actual.size() << " vs expected " << expected.size();
    }
    size_t mismatches = 0;
    std::ostringstream first;
    for (size_t i = 0; i < actual.size(); ++i) {
        bool same;
        if constexpr (std::is_same_v<T, bool>) {
            same = actual[i] == expected[i];
        } else {
            same = std::memcmp(&actual[i], &expected[i], sizeof(T)) == 0;
        }
        if (!same) {
            if (mismatches == 0) {
                first << "element " << i << " is " << printable(T(actual[i])) << ", expected "
                      << printable(T(expected[i]));
            }
            ++mismatches;
        }
    }
    if (mismatches > 0) {
        return ::testing::AssertionFailure()
               << mismatches << " of " << actual.size() << " elements differ; " << first.str();
    }
    return ::testing::AssertionSuccess();
}

/** Converts raw element bytes to values of T (bool: any non-zero byte). */
template<typename T>
std::vector<T>
fromBytes(const std::vector<uint8_t>& bytes)
{
    std::vector<T> values(bytes.size() / sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
        for (size_t i = 0; i < values.size(); ++i) {
            values[i] = bytes[i] != 0;
        }
    } else {
        std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
    }
    return values;
}

/** The raw bytes of values of T, as a tensor stores them. */
template<typename T>
std::vector<uint8_t>
toBytes(const std::vector<T>& values)
{
    std::vector<uint8_t> bytes(values.size() * sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
        for (size_t i = 0; i < values.size(); ++i) {
            bytes[i] = values[i] ? 1 : 0;
        }
    } else {
        std::memcpy(bytes.data(), values.data(), bytes.size());
    }
    return bytes;
}

// --- Reading device data ----------------------------------------------------

/**
 * The device data of `tensor` (whatever its memory type, eStorage
 * included), read without touching its host view: OpCopy into an eStorage
 * tensor, OpCopy into a fresh eDevice tensor, OpSyncLocal, read its host view.
 */
std::vector<uint8_t>
deviceBytes(kp::Manager& mgr, const std::shared_ptr<kp::Tensor>& tensor);

template<typename T>
std::vector<T>
deviceValues(kp::Manager& mgr, const std::shared_ptr<kp::Tensor>& tensor)
{
    return fromBytes<T>(deviceBytes(mgr, tensor));
}

/** The tensor's host view as bytes. */
std::vector<uint8_t>
hostBytes(const std::shared_ptr<kp::Tensor>& tensor);

// --- A custom operation -------------------------------------------------------

/**
 * A user-written operation (kp::OpBase subclass): copies the device data of
 * `source` into `target` with vkCmdCopyBuffer, leaving host views and
 * staging buffers alone. With `barrier`, it declares no accesses (so a
 * sequence puts full barriers around it) and the copy first waits for
 * earlier transfer writes, as an operation recorded elsewhere must. Without
 * it, nothing orders the copy after earlier operations: it records no
 * barrier and wrongly declares that it touches no memory, so that a
 * sequence adds none either (the validation tests use that on purpose).
 * Counts its calls.
 */
class RawDeviceCopy : public kp::OpBase
{
  public:
    RawDeviceCopy(std::shared_ptr<kp::Tensor> source,
                  std::shared_ptr<kp::Tensor> target,
                  bool barrier = true);

    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer& commandBuffer) override;
    void postEval(const vk::CommandBuffer& commandBuffer) override;
    bool declareAccesses(std::vector<kp::MemoryAccess>& accesses) const override;

    int recordCount = 0;
    int preEvalCount = 0;
    int postEvalCount = 0;

  private:
    std::shared_ptr<kp::Tensor> mSource;
    std::shared_ptr<kp::Tensor> mTarget;
    bool mBarrier;
};

/**
 * A user-written operation that fills a tensor's device buffer with a
 * 32-bit pattern (vkCmdFillBuffer): data produced on the device. The fill
 * goes through `dispatcher` where one is given (it must outlive the
 * operation), else through the suite's default dispatcher.
 */
class FillOp : public kp::OpBase
{
  public:
    FillOp(std::shared_ptr<kp::Tensor> tensor,
           uint32_t pattern,
           const vk::DispatchLoaderDynamic* dispatcher = nullptr);

    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer&) override {}
    void postEval(const vk::CommandBuffer&) override {}

  private:
    std::shared_ptr<kp::Tensor> mTensor;
    uint32_t mPattern;
    const vk::DispatchLoaderDynamic* mDispatcher;
};

} // namespace kp_test

namespace kp {
/** For gtest's messages about parameters (found by argument lookup). */
void
PrintTo(Memory::MemoryTypes memoryType, std::ostream* out);
}
