// SPDX-License-Identifier: Apache-2.0
// Every misuse gets a clear exception (a kp::Error, which is a
// std::runtime_error), never a crash, a validation error or a silently
// wrong result.
#include "TestSupport.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace kp_test;

namespace {

// Runs `action`, expecting an exception of type E whose message contains
// every fragment (case-sensitive).
template<typename E = kp::Error, typename F>
::testing::AssertionResult
throwsWith(F&& action, std::initializer_list<const char*> fragments)
{
    try {
        action();
    } catch (const E& error) {
        std::string message = error.what();
        for (const char* fragment : fragments) {
            if (message.find(fragment) == std::string::npos) {
                return ::testing::AssertionFailure()
                       << "message \"" << message << "\" lacks \"" << fragment << "\"";
            }
        }
        return ::testing::AssertionSuccess() << message;
    } catch (const std::exception& other) {
        return ::testing::AssertionFailure() << "threw another type: " << other.what();
    }
    return ::testing::AssertionFailure() << "did not throw";
}

} // namespace

using ErrorsTest = KomputeTest;

TEST_F(ErrorsTest, ErrorsAreRuntimeErrors)
{
    static_assert(std::is_base_of_v<std::runtime_error, kp::Error>);
    static_assert(std::is_base_of_v<kp::Error, kp::VulkanError>);
    static_assert(std::is_base_of_v<kp::Error, kp::DestroyedError>);
    EXPECT_THROW(mgr().tensor(std::vector<float>{}), std::runtime_error);
}

TEST_F(ErrorsTest, VulkanErrorNamesTheResultAndTheAction)
{
    kp::VulkanError error(vk::Result::eErrorOutOfDeviceMemory, "Allocating 12 bytes");
    std::string message = error.what();
    EXPECT_NE(message.find("VK_ERROR_OUT_OF_DEVICE_MEMORY"), std::string::npos) << message;
    EXPECT_NE(message.find("Allocating 12 bytes"), std::string::npos) << message;
    EXPECT_EQ(error.result(), vk::Result::eErrorOutOfDeviceMemory);
    kp::VulkanError lost(vk::Result::eErrorDeviceLost, "Waiting");
    EXPECT_NE(std::string(lost.what()).find("VK_ERROR_DEVICE_LOST"), std::string::npos);
}

TEST_F(ErrorsTest, VulkanErrorsOfMemoryAndDeviceLossHaveTheirOwnTypes)
{
    static_assert(std::is_base_of_v<kp::VulkanError, kp::OutOfMemoryError>);
    static_assert(std::is_base_of_v<kp::VulkanError, kp::DeviceLostError>);
    auto thrown = [](vk::Result result) -> std::exception_ptr {
        try {
            kp::throwVulkanError(result, "Doing something");
        } catch (...) {
            return std::current_exception();
        }
        return nullptr;
    };
    auto expect = [&](vk::Result result, auto typeTag) {
        using Expected = typename decltype(typeTag)::type;
        try {
            std::rethrow_exception(thrown(result));
        } catch (const Expected& error) {
            EXPECT_EQ(error.result(), result);
            EXPECT_NE(std::string(error.what()).find(kp::VulkanError::resultName(result)),
                      std::string::npos)
              << error.what();
            EXPECT_NE(std::string(error.what()).find("Doing something"), std::string::npos);
            return;
        } catch (const std::exception& other) {
            ADD_FAILURE() << "another type for " << vk::to_string(result) << ": " << other.what();
        }
    };
    expect(vk::Result::eErrorOutOfDeviceMemory, TypeTag<kp::OutOfMemoryError>{});
    expect(vk::Result::eErrorOutOfHostMemory, TypeTag<kp::OutOfMemoryError>{});
    expect(vk::Result::eErrorDeviceLost, TypeTag<kp::DeviceLostError>{});
    expect(vk::Result::eErrorInitializationFailed, TypeTag<kp::VulkanError>{});
    // A plain VulkanError is neither of the two.
    try {
        std::rethrow_exception(thrown(vk::Result::eErrorInitializationFailed));
    } catch (const kp::OutOfMemoryError&) {
        ADD_FAILURE() << "an initialization failure is not out of memory";
    } catch (const kp::DeviceLostError&) {
        ADD_FAILURE() << "an initialization failure is not a lost device";
    } catch (const kp::VulkanError&) {
    }
    EXPECT_EQ(kp::VulkanError::resultName(vk::Result::eErrorDeviceLost), "VK_ERROR_DEVICE_LOST");
}

// --- Tensor creation -----------------------------------------------------------------

TEST_F(ErrorsTest, ZeroSizeTensorThrows)
{
    // Upstream's wording ("zero-sized"), which programs match on.
    EXPECT_TRUE(throwsWith([&] { mgr().tensor(std::vector<float>{}); }, { "zero-sized" }));
    EXPECT_TRUE(throwsWith([&] { mgr().tensorT<int32_t>(std::vector<int32_t>{}); }, { "zero" }));
    EXPECT_TRUE(throwsWith([&] { mgr().tensorT<double>(size_t{ 0 }); }, { "zero" }));
    EXPECT_TRUE(throwsWith([&] { mgr().tensor(nullptr, 0, 4, DataTypes::eFloat); }, { "zero" }));
    EXPECT_TRUE(throwsWith([&] { mgr().tensor(0u, 4u, DataTypes::eFloat, MemoryTypes::eStorage); },
                           { "zero" }));
    EXPECT_TRUE(throwsWith(
      [&] {
          kp::TensorT<float>(
            mgr().getVkPhysicalDevice(), mgr().getVkDevice(), std::vector<float>{});
      },
      { "zero" }));
    // Nothing was leaked by the failed creations.
    EXPECT_EQ(mgr().memoryStats().usedBytes(), 0u);
}

TEST_F(ErrorsTest, ElementSizeThatContradictsTheDataTypeThrows)
{
    float data[4] = {};
    EXPECT_TRUE(throwsWith([&] { mgr().tensor(data, 4, 2, DataTypes::eFloat); },
                           { "eFloat", "4 bytes", "2 bytes" }));
    EXPECT_TRUE(throwsWith([&] { mgr().tensor(data, 4, 0, DataTypes::eCustom); }, { "zero" }));
}

TEST_F(ErrorsTest, InvalidEnumValuesThrow)
{
    EXPECT_THROW(mgr().tensor({ 1.0f }, static_cast<MemoryTypes>(7)), kp::Error);
    float data[1] = {};
    EXPECT_THROW(mgr().tensor(data, 1, 4, static_cast<DataTypes>(42)), kp::Error);
}

TEST_F(ErrorsTest, TensorOverFourGibibytesThrows)
{
    EXPECT_TRUE(throwsWith(
      [&] { mgr().tensor(nullptr, 1u << 31, 4, DataTypes::eFloat, MemoryTypes::eStorage); },
      { "4 GiB" }));
}

TEST_F(ErrorsTest, TensorLargerThanItsHeapIsOutOfMemoryBeforeTheDriver)
{
    vk::PhysicalDevice physical = *mgr().getVkPhysicalDevice();
    auto memory = physical.getMemoryProperties();
    vk::DeviceSize largestDeviceHeap = 0;
    for (uint32_t i = 0; i < memory.memoryHeapCount; ++i) {
        if (memory.memoryHeaps[i].flags & vk::MemoryHeapFlagBits::eDeviceLocal) {
            largestDeviceHeap = std::max(largestDeviceHeap, memory.memoryHeaps[i].size);
        }
    }
    vk::DeviceSize maxAllocation = mgr().capabilities().maxMemoryAllocationSize;
    // The smaller of the two limits, passed by a tensor (at most 4 GiB).
    vk::DeviceSize limit = std::min(largestDeviceHeap, maxAllocation);
    vk::DeviceSize bytes = limit + (64ull << 20);
    if (bytes >= (4ull << 30)) {
        GTEST_SKIP() << "the device's limits are beyond what one tensor can hold";
    }
    auto count = static_cast<uint32_t>(bytes / 4);
    uint64_t usedBefore = mgr().memoryStats().usedBytes();
    for (auto type : { MemoryTypes::eStorage, MemoryTypes::eDevice }) {
        try {
            mgr().tensor(nullptr, count, 4, DataTypes::eFloat, type);
            ADD_FAILURE() << "a tensor of " << bytes << " bytes was created";
        } catch (const kp::OutOfMemoryError& error) {
            std::string message = error.what();
            EXPECT_EQ(error.result(), vk::Result::eErrorOutOfDeviceMemory);
            EXPECT_NE(message.find(std::to_string(count * 4ull) + " bytes"), std::string::npos)
              << message;
            EXPECT_TRUE(message.find("heap") != std::string::npos ||
                        message.find("maxMemoryAllocationSize") != std::string::npos)
              << message;
            EXPECT_NE(message.find("before the driver"), std::string::npos) << message;
        }
    }
    // Nothing leaked; the Manager still works.
    EXPECT_EQ(mgr().memoryStats().usedBytes(), usedBefore);
    auto small = mgr().tensor({ 1.0f, 2.0f });
    mgr().sequence()->eval<kp::OpSyncDevice>({ small })->eval<kp::OpSyncLocal>({ small });
    EXPECT_EQ(small->vector(), (std::vector<float>{ 1.0f, 2.0f }));
}

TEST_F(ErrorsTest, AllocationsBeyondWhatTheHeapHasLeftAreOutOfMemory)
{
    vk::PhysicalDevice physical = *mgr().getVkPhysicalDevice();
    auto memory = physical.getMemoryProperties();
    // The heap eStorage tensors come from, found by making a small one.
    auto probe = mgr().tensor(nullptr, 1024, 4, DataTypes::eFloat, MemoryTypes::eStorage);
    uint32_t heap = UINT32_MAX;
    for (const auto& type : mgr().memoryStats().memoryTypes) {
        if (type.usedBytes > 0 && (type.propertyFlags & vk::MemoryPropertyFlagBits::eDeviceLocal)) {
            heap = type.heapIndex;
        }
    }
    ASSERT_NE(heap, UINT32_MAX);
    vk::DeviceSize heapSize = memory.memoryHeaps[heap].size;
    vk::DeviceSize maxAllocation = mgr().capabilities().maxMemoryAllocationSize;
    vk::DeviceSize first = heapSize / 4 * 3;
    vk::DeviceSize second = heapSize / 2;
    if (first >= (4ull << 30) || first > maxAllocation || second > maxAllocation) {
        GTEST_SKIP() << "the heap is larger than tensors can fill here";
    }
    // Neither is larger than the heap; together they are.
    auto big = mgr().tensor(nullptr, static_cast<uint32_t>(first / 4), 4, DataTypes::eFloat, MemoryTypes::eStorage);
    EXPECT_TRUE(throwsWith<kp::OutOfMemoryError>(
      [&] {
          mgr().tensor(nullptr, static_cast<uint32_t>(second / 4), 4, DataTypes::eFloat, MemoryTypes::eStorage);
      },
      { "already uses", "before the driver" }));
    // Once the first is gone, the second fits.
    big.reset();
    EXPECT_NO_THROW(mgr().tensor(
      nullptr, static_cast<uint32_t>(second / 4), 4, DataTypes::eFloat, MemoryTypes::eStorage));
}

// --- Host views -----------------------------------------------------------------------

TEST_F(ErrorsTest, SetDataOfTheWrongSizeThrows)
{
    auto tensor = mgr().tensor({ 1.0f, 2.0f, 3.0f });
    EXPECT_TRUE(throwsWith(
      [&] {
          tensor->setData(std::vector<float>{ 1.0f, 2.0f });
      },
      { "8 bytes", "12 bytes" }));
    std::vector<double> doubles = { 1.0, 2.0, 3.0 };
    EXPECT_THROW(tensor->setData(doubles), kp::Error);
    EXPECT_THROW(tensor->setData(nullptr, 12), kp::Error);
    EXPECT_EQ(tensor->vector(), (std::vector<float>{ 1.0f, 2.0f, 3.0f })); // unchanged
}

TEST_F(ErrorsTest, SetDataOfAnotherElementTypeThrows)
{
    auto floats = mgr().tensor({ 1.0f, 2.0f });
    // Same byte size, different type: refused rather than reinterpreted.
    EXPECT_TRUE(throwsWith(
      [&] {
          floats->setData(std::vector<int32_t>{ 3, 4 });
      },
      { "eInt", "eFloat" }));
    EXPECT_THROW(floats->setData(std::vector<uint8_t>(8, 0)), kp::Error);
    EXPECT_EQ(floats->vector(), (std::vector<float>{ 1.0f, 2.0f })); // unchanged
    // Raw bytes go through the untyped form.
    std::vector<uint8_t> bytes(8, 0);
    EXPECT_NO_THROW(floats->setData(bytes.data(), bytes.size()));

    // eCustom tensors take any element type of the right total size.
    struct Pair
    {
        float a, b;
    };
    auto custom = mgr().tensor(nullptr, 2, sizeof(Pair), DataTypes::eCustom);
    EXPECT_NO_THROW(custom->setData(std::vector<Pair>{ { 1.0f, 2.0f }, { 3.0f, 4.0f } }));
    EXPECT_NO_THROW(custom->setData(std::vector<float>{ 1.0f, 2.0f, 3.0f, 4.0f }));
    EXPECT_THROW(custom->setData(std::vector<float>{ 1.0f }), kp::Error);
}

TEST_F(ErrorsTest, HostViewOfAStorageTensorIsRefused)
{
    auto storage = mgr().tensorT<float>({ 1.0f, 2.0f }, MemoryTypes::eStorage);
    EXPECT_TRUE(throwsWith([&] { storage->vector(); }, { "eStorage", "OpCopy" }));
    EXPECT_TRUE(throwsWith(
      [&] {
          storage->setData(std::vector<float>{ 3.0f, 4.0f });
      },
      { "eStorage" }));
    LogCapture log;
    EXPECT_EQ(storage->rawData(), nullptr);
    EXPECT_EQ(storage->data(), nullptr);
    EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "eStorage"));
}

// --- Operations -------------------------------------------------------------------------

TEST_F(ErrorsTest, OpCopyOfMismatchedSizesThrows)
{
    auto three = mgr().tensor({ 1.0f, 2.0f, 3.0f });
    auto four = mgr().tensor({ 1.0f, 2.0f, 3.0f, 4.0f });
    auto sequence = mgr().sequence();
    EXPECT_TRUE(throwsWith(
      [&] {
          sequence->record<kp::OpCopy>({ three, four });
      },
      { "sizes differ" }));
    EXPECT_TRUE(throwsWith(
      [&] {
          sequence->eval<kp::OpCopy>({ four, three });
      },
      { "sizes differ" }));
    // The sequence is still usable and nothing was copied.
    sequence->eval<kp::OpSyncDevice>({ three });
    EXPECT_EQ(four->vector(), (std::vector<float>{ 1.0f, 2.0f, 3.0f, 4.0f }));
}

TEST_F(ErrorsTest, OpCopyOfMismatchedDataTypesThrows)
{
    auto floats = mgr().tensor({ 1.0f, 2.0f });
    auto ints = mgr().tensorT<int32_t>({ 1, 2 });
    auto sequence = mgr().sequence();
    EXPECT_TRUE(throwsWith(
      [&] {
          sequence->record<kp::OpCopy>({ floats, ints });
      },
      { "data types differ", "eFloat", "eInt" }));
    // Same byte size, different element size and count: still refused.
    auto shorts = mgr().tensorT<int16_t>({ 1, 2, 3, 4 });
    EXPECT_THROW(sequence->record<kp::OpCopy>({ floats, shorts }), kp::Error);
    // One bad destination among good ones refuses the whole operation.
    auto good = mgr().tensor({ 0.0f, 0.0f });
    EXPECT_THROW(sequence->eval<kp::OpCopy>({ floats, good, ints }), kp::Error);
}

TEST_F(ErrorsTest, OperationsWithTooFewOrNullObjectsThrow)
{
    auto tensor = mgr().tensor({ 1.0f });
    std::shared_ptr<kp::Memory> null;
    EXPECT_TRUE(throwsWith([&] { kp::OpCopy({ tensor }); }, { "OpCopy", "at least 2" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpCopy({ tensor, null }); }, { "null" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpCopy({ tensor, tensor }); }, { "itself" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpSyncDevice({}); }, { "OpSyncDevice", "at least 1" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpSyncLocal({}); }, { "OpSyncLocal", "at least 1" }));
    EXPECT_THROW(kp::OpSyncDevice({ null }), kp::Error);
    EXPECT_THROW(kp::OpSyncLocal({ null }), kp::Error);
    EXPECT_THROW(kp::OpMemoryBarrier({},
                                     vk::AccessFlagBits::eTransferWrite,
                                     vk::AccessFlagBits::eTransferRead,
                                     vk::PipelineStageFlagBits::eTransfer,
                                     vk::PipelineStageFlagBits::eTransfer),
                 kp::Error);
    EXPECT_THROW(mgr().sequence()->record(nullptr), kp::Error);
    EXPECT_THROW(mgr().sequence()->eval(std::shared_ptr<kp::OpBase>()), kp::Error);
}

TEST_F(ErrorsTest, ObjectsOfTwoManagersInOneOperationThrow)
{
    kp::Manager other;
    auto mine = mgr().tensor({ 1.0f, 2.0f, 3.0f });
    auto mine2 = mgr().tensor({ 0.0f, 0.0f, 0.0f });
    auto theirs = other.tensor({ 4.0f, 5.0f, 6.0f });
    const char* fragment = "memory object 1 belongs to another Manager";
    EXPECT_TRUE(throwsWith([&] { kp::OpCopy({ mine, theirs }); }, { "OpCopy", fragment }));
    EXPECT_TRUE(throwsWith([&] { kp::OpCopy({ theirs, mine }); }, { "OpCopy", fragment }));
    EXPECT_TRUE(throwsWith([&] { kp::OpSyncDevice({ mine, theirs }); }, { "OpSyncDevice", fragment }));
    EXPECT_TRUE(throwsWith([&] { kp::OpSyncLocal({ mine, theirs }); }, { "OpSyncLocal", fragment }));
    EXPECT_TRUE(throwsWith(
      [&] {
          kp::OpMemoryBarrier({ mine, theirs },
                              vk::AccessFlagBits::eShaderWrite,
                              vk::AccessFlagBits::eShaderRead,
                              vk::PipelineStageFlagBits::eComputeShader,
                              vk::PipelineStageFlagBits::eComputeShader);
      },
      { "OpMemoryBarrier", fragment }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMult({ mine, theirs, mine2 }, mgr().algorithm()); },
                           { "OpMult", fragment }));
    // An algorithm of the other Manager is refused before it is rebuilt.
    auto foreign = other.algorithm({ theirs, other.tensor({ 1.0f, 1.0f, 1.0f }) },
                                   kp::Shader::compileSource(R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 1) buffer B { float b[]; };
void main() { b[gl_GlobalInvocationID.x] = a[gl_GlobalInvocationID.x]; }
)"));
    EXPECT_TRUE(throwsWith([&] { kp::OpMult({ mine, mine2, mine2 }, foreign); },
                           { "OpMult", "algorithm belongs to another Manager" }));
    EXPECT_TRUE(foreign->isInit());
    // Each Manager's objects still work together (OpCopy copies device
    // data: the source's host data goes to the device first).
    mgr().sequence()->eval<kp::OpSyncDevice>({ mine })->eval<kp::OpCopy>({ mine, mine2 });
    EXPECT_EQ(mine2->vector(), (std::vector<float>{ 1.0f, 2.0f, 3.0f }));
}

TEST_F(ErrorsTest, RangeSyncOutsideTheTensorThrows)
{
    auto tensor = mgr().tensorT<int32_t>({ 1, 2, 3, 4 });
    auto bigger = mgr().tensorT<int32_t>({ 1, 2, 3, 4, 5, 6 });
    EXPECT_TRUE(
      throwsWith([&] { kp::OpSyncDevice({ tensor }, 2, 3); }, { "[2, 5)", "4 elements" }));
    EXPECT_THROW(kp::OpSyncLocal({ tensor }, 4, 1), kp::Error);
    EXPECT_THROW(kp::OpSyncDevice({ tensor }, 0, 0), kp::Error);
    EXPECT_THROW(kp::OpSyncLocal({ tensor }, 0xFFFFFFFFu, 2), kp::Error); // no overflow
    // The range must fit every object of the list.
    EXPECT_THROW(kp::OpSyncDevice({ bigger, tensor }, 3, 2), kp::Error);
    EXPECT_NO_THROW(kp::OpSyncDevice({ bigger, tensor }, 1, 3));
}

// --- Destroyed objects --------------------------------------------------------------------

TEST_F(ErrorsTest, DestroyedTensorIsRefusedEverywhere)
{
    auto tensor = mgr().tensor({ 1.0f, 2.0f });
    auto other = mgr().tensor({ 3.0f, 4.0f });
    tensor->destroy();
    EXPECT_FALSE(tensor->isInit());
    EXPECT_TRUE(throwsWith<kp::DestroyedError>([&] { tensor->vector(); }, { "destroyed" }));
    EXPECT_THROW(tensor->setData(std::vector<float>{ 1.0f, 2.0f }), kp::DestroyedError);
    EXPECT_THROW(tensor->rawData(), kp::DestroyedError);
    EXPECT_THROW(tensor->getPrimaryBuffer(), kp::DestroyedError);
    EXPECT_THROW(kp::OpSyncDevice({ tensor }), kp::DestroyedError);
    EXPECT_THROW(kp::OpSyncLocal({ tensor }), kp::DestroyedError);
    EXPECT_THROW(kp::OpCopy({ other, tensor }), kp::DestroyedError);
    EXPECT_THROW(mgr().sequence()->eval<kp::OpCopy>({ other, tensor }), kp::DestroyedError);
    EXPECT_NO_THROW(tensor->destroy());
}

TEST_F(ErrorsTest, TensorDestroyedAfterTheOperationWasMadeIsRefusedAtRecord)
{
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensor({ 3.0f, 4.0f });
    auto op = std::make_shared<kp::OpCopy>(std::vector<std::shared_ptr<kp::Memory>>{ a, b });
    b->destroy();
    EXPECT_THROW(mgr().sequence()->record(op), kp::DestroyedError);
}

TEST_F(ErrorsTest, TensorDestroyedAfterRecordingIsRefusedAtEval)
{
    // The recorded command buffer refers to the destroyed buffer: submitting
    // it would be use-after-free on the device.
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensor({ 3.0f, 4.0f });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ a })->record<kp::OpCopy>({ a, b });
    b->destroy();
    EXPECT_THROW(sequence->eval(), kp::DestroyedError);
    EXPECT_FALSE(sequence->isRunning());
    EXPECT_THROW(sequence->evalAsync(), kp::DestroyedError);
    EXPECT_FALSE(sequence->isRunning());
    // Recording anew makes the sequence usable again.
    auto c = mgr().tensor({ 0.0f, 0.0f });
    sequence->eval<kp::OpSyncDevice>({ a }); // the failed evaluations never ran
    sequence->eval<kp::OpCopy>({ a, c });
    EXPECT_EQ(c->vector(), (std::vector<float>{ 1.0f, 2.0f }));
}

TEST_F(ErrorsTest, DestroyedSequenceIsRefused)
{
    auto tensor = mgr().tensor({ 1.0f });
    auto sequence = mgr().sequence();
    sequence->destroy();
    EXPECT_TRUE(throwsWith<kp::DestroyedError>(
      [&] { sequence->record<kp::OpSyncDevice>({ tensor }); }, { "destroyed" }));
    EXPECT_THROW(sequence->eval(), kp::DestroyedError);
    EXPECT_THROW(sequence->evalAsync(), kp::DestroyedError);
    EXPECT_THROW(sequence->evalAwait(), kp::DestroyedError);
    EXPECT_THROW(sequence->begin(), kp::DestroyedError);
    EXPECT_THROW(sequence->rerecord(), kp::DestroyedError);
    EXPECT_THROW(sequence->getTimestamps(), kp::DestroyedError);
}

TEST_F(ErrorsTest, ObjectsUsedAfterTheirManagerWasDestroyedThrow)
{
    auto manager = makeManager();
    auto tensor = manager->tensor({ 1.0f, 2.0f });
    auto storage = manager->tensorT<uint8_t>({ 1, 2 }, MemoryTypes::eStorage);
    auto sequence = manager->sequence(0, 2);
    sequence->record<kp::OpSyncDevice>({ tensor });
    manager->destroy();

    EXPECT_FALSE(tensor->isInit());
    EXPECT_TRUE(throwsWith<kp::DestroyedError>([&] { tensor->vector(); }, { "destroyed" }));
    EXPECT_THROW(tensor->setData(std::vector<float>{ 3.0f, 4.0f }), kp::DestroyedError);
    EXPECT_THROW(tensor->data(), kp::DestroyedError);
    EXPECT_THROW(storage->rawData(), kp::DestroyedError);
    EXPECT_THROW(kp::OpSyncDevice({ tensor }), kp::DestroyedError);
    EXPECT_THROW(sequence->eval(), kp::DestroyedError);
    EXPECT_THROW(sequence->record<kp::OpSyncLocal>({ tensor }), kp::DestroyedError);
    EXPECT_THROW(sequence->evalAwait(), kp::DestroyedError);
    EXPECT_THROW(sequence->getTimestamps(), kp::DestroyedError);

    // The manager itself refuses to make anything new.
    EXPECT_TRUE(throwsWith<kp::DestroyedError>([&] { manager->tensor({ 1.0f }); },
                                               { "Manager was destroyed" }));
    EXPECT_THROW(manager->tensorT<int32_t>(size_t{ 4 }), kp::DestroyedError);
    EXPECT_THROW(manager->tensor(4u, 4u, DataTypes::eFloat), kp::DestroyedError);
    EXPECT_THROW(manager->sequence(), kp::DestroyedError);
    EXPECT_THROW(manager->memoryStats(), kp::DestroyedError);
    EXPECT_THROW(manager->getDeviceProperties(), kp::DestroyedError);
    EXPECT_THROW(manager->listDevices(), kp::DestroyedError);

    // Destroying or releasing the inert objects is always safe.
    EXPECT_NO_THROW(tensor->destroy());
    EXPECT_NO_THROW(sequence->destroy());
    manager.reset();
    tensor.reset();
    storage.reset();
    sequence.reset();
}

TEST_F(ErrorsTest, ObjectsOutlivingTheManagerObjectThrow)
{
    std::shared_ptr<kp::TensorT<float>> tensor;
    std::shared_ptr<kp::Sequence> sequence;
    {
        kp::Manager manager;
        tensor = manager.tensor({ 1.0f });
        sequence = manager.sequence();
    }
    EXPECT_THROW(tensor->vector(), kp::DestroyedError);
    EXPECT_THROW(sequence->eval<kp::OpSyncDevice>({ tensor }), kp::DestroyedError);
}

TEST_F(ErrorsTest, StandaloneObjectsOnAManagersDeviceAreInertAfterItIsDestroyed)
{
    // Objects built with the upstream constructors on a Manager's device
    // outlive it here. Run in a child process: if they are not made inert,
    // their use or release touches the destroyed device and may crash.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
      {
          std::shared_ptr<kp::TensorT<float>> tensor;
          std::shared_ptr<kp::Sequence> sequence;
          {
              auto manager = makeManager();
              tensor = std::make_shared<kp::TensorT<float>>(
                manager->getVkPhysicalDevice(), manager->getVkDevice(), std::vector<float>{ 1.0f });
              uint32_t family = manager->queueFamilyIndex(0);
              sequence = std::make_shared<kp::Sequence>(
                manager->getVkPhysicalDevice(),
                manager->getVkDevice(),
                std::make_shared<vk::Queue>(manager->getVkDevice()->getQueue(family, 0)),
                family);
          }
          bool inert = !tensor->isInit() && !sequence->isInit();
          bool refused = false;
          try {
              tensor->vector();
          } catch (const kp::DestroyedError&) {
              refused = true;
          }
          tensor.reset();
          sequence.reset();
          size_t errors = validationErrorCount();
          std::fprintf(
            stderr, "inert=%d refused=%d validation errors=%zu\n", inert, refused, errors);
          std::_Exit(inert && refused && errors == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "");
}

// --- Manager construction --------------------------------------------------------------

TEST_F(ErrorsTest, DeviceIndexOutOfRangeThrows)
{
    EXPECT_TRUE(throwsWith([] { kp::Manager manager(99); }, { "Device index 99", "out of range" }));
    EXPECT_THROW(kp::Manager(0xFFFFFFFFu), kp::Error);
}

TEST_F(ErrorsTest, QueueFamilyOutOfRangeThrows)
{
    auto families = mgr().getVkPhysicalDevice()->getQueueFamilyProperties();
    uint32_t beyond = static_cast<uint32_t>(families.size());
    EXPECT_TRUE(throwsWith([&] { kp::Manager manager(0, { beyond }); },
                           { "Queue family", "does not exist" }));
    EXPECT_THROW(kp::Manager(0, { 0, 1000 }), kp::Error);
}

TEST_F(ErrorsTest, QueueFamilyWithoutComputeThrows)
{
    auto families = mgr().getVkPhysicalDevice()->getQueueFamilyProperties();
    bool tested = false;
    for (uint32_t family = 0; family < families.size(); ++family) {
        if (!(families[family].queueFlags & vk::QueueFlagBits::eCompute)) {
            EXPECT_TRUE(throwsWith([&] { kp::Manager manager(0, { family }); },
                                   { "does not support compute" }));
            tested = true;
        }
    }
    if (!tested) {
        GTEST_SKIP() << "every queue family of this device supports compute (lavapipe has one "
                        "family)";
    }
}

TEST_F(ErrorsTest, MoreQueuesThanTheFamilyHasThrows)
{
    uint32_t family = mgr().queueFamilyIndex(0);
    uint32_t available = mgr().getVkPhysicalDevice()->getQueueFamilyProperties()[family].queueCount;
    // lavapipe's family 0 has one queue, so this asks for {0, 0}.
    std::vector<uint32_t> request(available + 1, family);
    EXPECT_TRUE(throwsWith([&] { kp::Manager manager(0, request); }, { "queue(s)", "requested" }));
    // Exactly as many as it has is fine.
    kp::Manager manager(0, std::vector<uint32_t>(available, family));
    EXPECT_EQ(manager.queueCount(), available);
}

TEST_F(ErrorsTest, ByovManagerQueueRequestsAreValidated)
{
    uint32_t family = mgr().queueFamilyIndex(0);
    uint32_t available = mgr().getVkPhysicalDevice()->getQueueFamilyProperties()[family].queueCount;
    EXPECT_THROW(kp::Manager(mgr().getVkInstance(),
                             mgr().getVkPhysicalDevice(),
                             mgr().getVkDevice(),
                             std::vector<uint32_t>(available + 1, family)),
                 kp::Error);
    EXPECT_THROW(kp::Manager(mgr().getVkInstance(), mgr().getVkPhysicalDevice(), nullptr),
                 kp::Error);
}

// --- Sequences -------------------------------------------------------------------------

TEST_F(ErrorsTest, SequenceQueueIndexOutOfRangeThrows)
{
    EXPECT_TRUE(throwsWith([&] { mgr().sequence(1); }, { "Queue index 1", "out of range" }));
    EXPECT_THROW(mgr().sequence(0xFFFFFFFFu), kp::Error);
    EXPECT_NO_THROW(mgr().sequence(0));
}

TEST_F(ErrorsTest, RecordingMoreTimestampedOperationsThanAskedThrows)
{
    auto a = mgr().tensor({ 1.0f });
    auto b = mgr().tensor({ 2.0f });
    auto sequence = mgr().sequence(0, 2);
    sequence->record<kp::OpCopy>({ a, b })->record<kp::OpCopy>({ b, a });
    EXPECT_TRUE(throwsWith(
      [&] {
          sequence->record<kp::OpCopy>({ a, b });
      },
      { "2 timestamped operation(s)" }));
    // The two recorded operations still run and are timed.
    sequence->eval();
    EXPECT_EQ(sequence->getTimestamps().size(), 3u);
}

TEST_F(ErrorsTest, TimestampsWithoutAskingForThemThrow)
{
    auto sequence = mgr().sequence();
    sequence->eval<kp::OpSyncDevice>({ mgr().tensor({ 1.0f }) });
    EXPECT_TRUE(throwsWith([&] { sequence->getTimestamps(); }, { "Timestamps were not enabled" }));
    EXPECT_THROW(sequence->getTimestampsNs(), kp::Error);
}

TEST_F(ErrorsTest, EvalAwaitWithNothingPendingIsNotAnError)
{
    auto sequence = mgr().sequence();
    auto start = std::chrono::steady_clock::now();
    EXPECT_NO_THROW(sequence->evalAwait());
    EXPECT_NO_THROW(sequence->evalAwait(1000));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_FALSE(sequence->isRunning());
}

TEST_F(ErrorsTest, EvalAsyncTwiceWithoutAwaitThrows)
{
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensor({ 0.0f, 0.0f });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ a })->record<kp::OpCopy>({ a, b })->evalAsync();
    EXPECT_TRUE(throwsWith([&] { sequence->evalAsync(); }, { "running", "evalAwait" }));
    EXPECT_THROW(sequence->evalAsync<kp::OpCopy>({ a, b }), kp::Error);
    EXPECT_TRUE(sequence->isRunning());
    sequence->evalAwait();
    EXPECT_FALSE(sequence->isRunning());
    EXPECT_EQ(b->vector(), (std::vector<float>{ 1.0f, 2.0f }));
}
