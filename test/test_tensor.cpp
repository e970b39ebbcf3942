// SPDX-License-Identifier: Apache-2.0
// kp::Tensor and kp::TensorT<T>: every data type in every memory type.
// eDevice tensors have a host view of their own (staging memory) on every
// device, unified-memory ones included; eHost and eDeviceAndHost views are
// the memory itself. Device data is read back
// through OpCopy chains (see deviceValues in TestSupport.hpp), never through
// the tensor's own host view, so each test checks what the device holds.
#include "TestSupport.hpp"

#include <cmath>
#include <thread>

using namespace kp_test;

namespace {

// Odd, so that sizes are not multiples of any alignment.
constexpr size_t kCount = 37;

using TensorParam = MemoryTypes;

std::string
paramName(const ::testing::TestParamInfo<TensorParam>& info)
{
    return kp::Memory::toString(info.param);
}

// Every memory type, or those that have a host view (all but eStorage).
auto
allParams()
{
    return ::testing::ValuesIn(allMemoryTypes());
}

auto
hostVisibleParams()
{
    return ::testing::Values(MemoryTypes::eDevice, MemoryTypes::eHost, MemoryTypes::eDeviceAndHost);
}

} // namespace

class TensorTest : public KomputeParamTest<TensorParam>
{
  protected:
    MemoryTypes memoryType() const { return GetParam(); }
    bool hasHostView() const { return memoryType() != MemoryTypes::eStorage; }

    void syncToDevice(const std::shared_ptr<kp::Tensor>& tensor)
    {
        mgr().sequence()->eval<kp::OpSyncDevice>({ tensor });
    }
};

INSTANTIATE_TEST_SUITE_P(AllMemoryTypes, TensorTest, allParams(), paramName);

// The tests that read or write a host view, which eStorage lacks.
class HostViewTensorTest : public TensorTest
{};

INSTANTIATE_TEST_SUITE_P(HostVisibleMemoryTypes,
                         HostViewTensorTest,
                         hostVisibleParams(),
                         paramName);

TEST_P(TensorTest, PropertiesDescribeTheTensor)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto tensor = mgr().tensorT<T>(sampleValues<T>(kCount), memoryType());

        EXPECT_TRUE(tensor->isInit());
        EXPECT_EQ(tensor->size(), kCount);
        EXPECT_EQ(tensor->getX(), kCount);
        EXPECT_EQ(tensor->getY(), 1u);
        EXPECT_EQ(tensor->dataType(), kp::Memory::dataType<T>());
        EXPECT_EQ(static_cast<kp::Memory&>(*tensor).dataType(), kp::Memory::dataType<T>());
        EXPECT_EQ(tensor->dataTypeMemorySize(), sizeof(T));
        EXPECT_EQ(tensor->memorySize(), kCount * sizeof(T));
        EXPECT_EQ(tensor->memoryType(), memoryType());
        EXPECT_EQ(tensor->type(), kp::Memory::Type::eTensor);
        EXPECT_EQ(tensor->getDescriptorType(), vk::DescriptorType::eStorageBuffer);
        ASSERT_TRUE(tensor->getPrimaryBuffer());
        EXPECT_TRUE(*tensor->getPrimaryBuffer());

        // Only eDevice tensors on a staging device have a separate host copy.
        bool staged = memoryType() == MemoryTypes::eDevice;
        EXPECT_EQ(tensor->getStagingBuffer() != nullptr, staged);
        EXPECT_EQ(tensor->isHostViewDirect(), hasHostView() && !staged);
        EXPECT_EQ(tensor->rawData() != nullptr, hasHostView());
        EXPECT_EQ(static_cast<void*>(tensor->data()), tensor->rawData());
    });
}

TEST_P(HostViewTensorTest, HostViewHoldsTheCreationData)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto values = sampleValues<T>(kCount, 1);
        auto tensor = mgr().tensorT<T>(values, memoryType());
        EXPECT_TRUE(sameElements(tensor->vector(), values));
        EXPECT_TRUE(sameElements(static_cast<kp::Memory&>(*tensor).vector<T>(), values));
        EXPECT_TRUE(sameElements(hostBytes(tensor), toBytes(values)));
        std::vector<T> indexed;
        for (size_t i = 0; i < kCount; ++i) {
            indexed.push_back((*tensor)[i]);
        }
        EXPECT_TRUE(sameElements(indexed, values));
    });
}

TEST_P(TensorTest, CreationDataReachesTheDevice)
{
    // eDevice needs OpSyncDevice (upstream semantics; a no-op without a
    // staging buffer); eStorage receives its data at creation (ours).
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto values = sampleValues<T>(kCount, 2);
        auto tensor = mgr().tensorT<T>(values, memoryType());
        if (memoryType() != MemoryTypes::eStorage) {
            syncToDevice(tensor);
        }
        EXPECT_TRUE(sameElements(deviceValues<T>(mgr(), tensor), values));
    });
}

TEST_P(HostViewTensorTest, SetDataThenSyncDeviceUpdatesTheDevice)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto tensor = mgr().tensorT<T>(sampleValues<T>(kCount, 3), memoryType());
        syncToDevice(tensor);
        auto replacement = sampleValues<T>(kCount, 4);
        tensor->setData(replacement);
        EXPECT_TRUE(sameElements(tensor->vector(), replacement));
        syncToDevice(tensor);
        EXPECT_TRUE(sameElements(deviceValues<T>(mgr(), tensor), replacement));

        // The untyped form takes bytes.
        auto bytes = toBytes(sampleValues<T>(kCount, 5));
        tensor->setData(bytes.data(), bytes.size());
        syncToDevice(tensor);
        EXPECT_TRUE(sameElements(deviceBytes(mgr(), tensor), bytes));
    });
}

// Copies of 16 MiB and more into a host view are split over several
// threads (internal/HostCopy): an odd size and an unaligned source check
// that the pieces cover every byte, and two threads copying at once that
// the one-parallel-copy-at-a-time rule loses nothing.
TEST_P(HostViewTensorTest, LargeCopiesIntoTheHostViewReachTheDeviceWhole)
{
    const size_t bytes = (20u << 20) + 13;
    std::vector<uint8_t> storage(bytes + 1);
    for (size_t i = 0; i < storage.size(); ++i) {
        storage[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
    }
    std::vector<uint8_t> expected(storage.begin() + 1, storage.end());

    auto created = mgr().tensorT<uint8_t>(expected, memoryType());
    syncToDevice(created);
    EXPECT_TRUE(deviceBytes(mgr(), created) == expected);

    auto first = mgr().tensorT<uint8_t>(bytes, memoryType());
    auto second = mgr().tensorT<uint8_t>(bytes, memoryType());
    std::vector<uint8_t> reversed(expected.rbegin(), expected.rend());
    std::thread other([&] { second->setData(reversed.data(), bytes); });
    first->setData(storage.data() + 1, bytes); // unaligned source
    other.join();
    syncToDevice(first);
    syncToDevice(second);
    EXPECT_TRUE(deviceBytes(mgr(), first) == expected);
    EXPECT_TRUE(deviceBytes(mgr(), second) == reversed);
}

// upload() and download() (ours): setData + OpSyncDevice and OpSyncLocal
// + a copy out, in 64 MiB chunks with the host copies overlapping the
// transfers. An eDevice tensor of 64 MiB + 13 bytes takes two chunks, the
// second a few bytes, when it has a staging buffer.
TEST_P(HostViewTensorTest, UploadAndDownloadMoveWholeTensors)
{
    const size_t bytes = memoryType() == MemoryTypes::eDevice ? (64u << 20) + 13 : 4099;
    std::vector<uint8_t> values(bytes);
    std::vector<uint8_t> others(bytes);
    for (size_t i = 0; i < bytes; ++i) {
        values[i] = static_cast<uint8_t>((i * 2654435761u) >> 9);
        others[i] = static_cast<uint8_t>(values[i] ^ 0xa5u);
    }
    auto tensor = mgr().tensorT<uint8_t>(bytes, memoryType());
    tensor->upload(values);
    EXPECT_TRUE(hostBytes(tensor) == values);
    EXPECT_TRUE(deviceBytes(mgr(), tensor) == values);

    // New device data, from elsewhere: download() must bring it back.
    auto source = mgr().tensorT<uint8_t>(others, MemoryTypes::eStorage);
    mgr().sequence()->eval<kp::OpCopy>({ source, tensor });
    std::vector<uint8_t> back(bytes);
    tensor->download(back.data(), back.size());
    EXPECT_TRUE(back == others);
    EXPECT_TRUE(hostBytes(tensor) == others);

    // The typed forms.
    auto floats = mgr().tensorT<float>(kCount, memoryType());
    auto sample = sampleValues<float>(kCount, 9);
    floats->upload(sample);
    EXPECT_TRUE(sameElements(deviceValues<float>(mgr(), floats), sample));
    EXPECT_TRUE(sameElements(floats->download(), sample));

    EXPECT_THROW(tensor->upload(values.data(), bytes - 1), kp::Error);
    EXPECT_THROW(tensor->download(back.data(), bytes + 1), kp::Error);
    EXPECT_THROW(tensor->upload(nullptr, bytes), kp::Error);
    EXPECT_TRUE(deviceBytes(mgr(), tensor) == others); // refused calls changed nothing

    // eStorage tensors have no host view to go through; destroyed ones
    // nothing at all.
    auto storage = mgr().tensorT<float>(kCount, MemoryTypes::eStorage);
    EXPECT_THROW(storage->upload(sample), kp::Error);
    EXPECT_THROW(storage->download(), kp::Error);
    floats->destroy();
    EXPECT_THROW(floats->upload(sample), kp::DestroyedError);
    EXPECT_THROW(floats->download(), kp::DestroyedError);
}

TEST_P(HostViewTensorTest, WritesThroughTheDataPointerAreSynced)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto tensor = mgr().template tensorT<T>(kCount, memoryType());
        auto values = sampleValues<T>(kCount, 6);
        T* data = tensor->data();
        for (size_t i = 0; i < kCount; ++i) {
            data[i] = values[i];
        }
        syncToDevice(tensor);
        EXPECT_TRUE(sameElements(deviceValues<T>(mgr(), tensor), values));
    });
}

TEST_P(TensorTest, SyncLocalBringsDeviceWritesToTheHostView)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto deviceData = sampleValues<T>(kCount, 7);
        auto source = mgr().tensorT<T>(deviceData, MemoryTypes::eStorage);
        auto tensor = mgr().tensorT<T>(sampleValues<T>(kCount, 8), memoryType());
        // RawDeviceCopy writes the device buffer only: the host view of a
        // staged tensor only changes with OpSyncLocal.
        std::shared_ptr<kp::OpBase> deviceWrite = std::make_shared<RawDeviceCopy>(source, tensor);
        std::shared_ptr<kp::Tensor> target = tensor;
        mgr().sequence()->record(deviceWrite)->record<kp::OpSyncLocal>({ target })->eval();
        if (hasHostView()) {
            EXPECT_TRUE(sameElements(tensor->vector(), deviceData));
        }
        EXPECT_TRUE(sameElements(deviceValues<T>(mgr(), tensor), deviceData));
    });
}

TEST_P(HostViewTensorTest, WithoutSyncLocalOnlyAStagedHostViewKeepsItsOldData)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto hostData = sampleValues<T>(kCount, 9);
        auto deviceData = sampleValues<T>(kCount, 10);
        auto source = mgr().tensorT<T>(deviceData, MemoryTypes::eStorage);
        auto tensor = mgr().tensorT<T>(hostData, memoryType());
        std::shared_ptr<kp::OpBase> deviceWrite = std::make_shared<RawDeviceCopy>(source, tensor);
        mgr().sequence()->eval(deviceWrite);
        // An eHost or eDeviceAndHost view is the device memory; an eDevice
        // one is a copy of its own, on every device.
        bool direct = memoryType() != MemoryTypes::eDevice;
        EXPECT_EQ(tensor->isHostViewDirect(), direct);
        EXPECT_TRUE(sameElements(tensor->vector(), direct ? deviceData : hostData));
    });
}

TEST_P(TensorTest, TensorOfAGivenSizeIsUsable)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto tensor = mgr().template tensorT<T>(kCount, memoryType());
        EXPECT_EQ(tensor->size(), kCount);
        EXPECT_EQ(tensor->memorySize(), kCount * sizeof(T));
        // Fill it on the device from another tensor, then read it back.
        auto values = sampleValues<T>(kCount, 11);
        auto source = mgr().tensorT<T>(values, MemoryTypes::eStorage);
        mgr().sequence()->eval<kp::OpCopy>({ source, tensor });
        EXPECT_TRUE(sameElements(deviceValues<T>(mgr(), tensor), values));
    });
}

TEST_P(TensorTest, RawFormHoldsEveryDataType)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto bytes = toBytes(sampleValues<T>(kCount, 12));
        auto tensor = mgr().tensor(bytes.data(),
                                   static_cast<uint32_t>(kCount),
                                   static_cast<uint32_t>(sizeof(T)),
                                   kp::Memory::dataType<T>(),
                                   memoryType());
        EXPECT_EQ(tensor->dataType(), kp::Memory::dataType<T>());
        EXPECT_EQ(tensor->size(), kCount);
        EXPECT_EQ(tensor->dataTypeMemorySize(), sizeof(T));
        if (hasHostView()) {
            EXPECT_TRUE(sameElements(hostBytes(tensor), bytes));
            syncToDevice(tensor);
        }
        EXPECT_TRUE(sameElements(deviceBytes(mgr(), tensor), bytes));

        auto empty = mgr().tensor(static_cast<uint32_t>(kCount),
                                  static_cast<uint32_t>(sizeof(T)),
                                  kp::Memory::dataType<T>(),
                                  memoryType());
        EXPECT_EQ(empty->memorySize(), bytes.size());
    });
}

namespace {
// An eCustom element: 12 bytes with no padding.
struct Particle
{
    float position;
    int32_t charge;
    uint16_t kind;
    uint16_t flags;
};
static_assert(sizeof(Particle) == 12, "Particle must have no padding");
}

TEST_P(TensorTest, CustomElementsRoundTrip)
{
    std::vector<Particle> particles;
    for (int i = 0; i < static_cast<int>(kCount); ++i) {
        particles.push_back({ i * 0.5f - 3.0f,
                              -i * 1000,
                              static_cast<uint16_t>(i * 7),
                              static_cast<uint16_t>(0xFFFF - i) });
    }
    auto tensor = mgr().tensor(particles.data(),
                               static_cast<uint32_t>(kCount),
                               sizeof(Particle),
                               DataTypes::eCustom,
                               memoryType());
    EXPECT_EQ(tensor->dataType(), DataTypes::eCustom);
    EXPECT_EQ(tensor->dataTypeMemorySize(), sizeof(Particle));
    EXPECT_EQ(tensor->memorySize(), kCount * sizeof(Particle));

    std::vector<uint8_t> expected(kCount * sizeof(Particle));
    std::memcpy(expected.data(), particles.data(), expected.size());
    if (hasHostView()) {
        auto host = tensor->vector<Particle>();
        ASSERT_EQ(host.size(), kCount);
        EXPECT_EQ(host[5].charge, -5000);
        EXPECT_EQ(host[5].flags, 0xFFFF - 5);
        syncToDevice(tensor);
    }
    EXPECT_TRUE(sameElements(deviceBytes(mgr(), tensor), expected));
}

TEST_P(TensorTest, DestroyFreesTheMemoryAndIsIdempotent)
{
    uint64_t usedBefore = mgr().memoryStats().usedBytes();
    auto tensor = mgr().tensorT<double>(sampleValues<double>(kCount), memoryType());
    uint64_t usedWhileAlive = mgr().memoryStats().usedBytes();
    EXPECT_GE(usedWhileAlive, usedBefore + tensor->memorySize());

    tensor->destroy();
    EXPECT_FALSE(tensor->isInit());
    EXPECT_EQ(mgr().memoryStats().usedBytes(), usedBefore);
    EXPECT_NO_THROW(tensor->destroy());
    tensor.reset();
    EXPECT_EQ(mgr().memoryStats().usedBytes(), usedBefore);
}

TEST_P(TensorTest, ReleasingTheLastReferenceFreesTheMemory)
{
    uint64_t usedBefore = mgr().memoryStats().usedBytes();
    {
        auto tensor = mgr().tensorT<int16_t>(sampleValues<int16_t>(kCount), memoryType());
        EXPECT_GT(mgr().memoryStats().usedBytes(), usedBefore);
    }
    EXPECT_EQ(mgr().memoryStats().usedBytes(), usedBefore);
}

TEST_P(TensorTest, VectorOfBoolIsStoredOneBytePerElement)
{
    // std::vector<bool> is bit-packed on the host; the tensor is not.
    std::vector<bool> values = { true, false, false, true, true, false, true };
    auto tensor = mgr().tensorT<bool>(values, memoryType());
    EXPECT_EQ(tensor->memorySize(), values.size());
    if (hasHostView()) {
        EXPECT_EQ(hostBytes(tensor), (std::vector<uint8_t>{ 1, 0, 0, 1, 1, 0, 1 }));
        std::vector<bool> flipped(values.size());
        for (size_t i = 0; i < values.size(); ++i) {
            flipped[i] = !values[i];
        }
        tensor->setData(flipped);
        syncToDevice(tensor);
        EXPECT_EQ(deviceValues<bool>(mgr(), tensor), flipped);
    } else {
        EXPECT_EQ(deviceValues<bool>(mgr(), tensor), values);
    }
}

// --- Standalone (upstream) constructors --------------------------------------

class StandaloneTensorTest : public TensorTest
{};

INSTANTIATE_TEST_SUITE_P(AllMemoryTypes, StandaloneTensorTest, allParams(), paramName);

TEST_P(StandaloneTensorTest, TensorBuiltOnAManagersDeviceBelongsToThatManager)
{
    // Built by hand on the manager's device, the tensor shares the
    // manager's memory and queue: even an eStorage tensor receives its
    // creation data, and its data moves with the manager's sequences.
    auto values = sampleValues<float>(kCount, 13);
    uint64_t usedBefore = mgr().memoryStats().usedBytes();
    auto tensor = std::make_shared<kp::TensorT<float>>(
      mgr().getVkPhysicalDevice(), mgr().getVkDevice(), values, memoryType());
    EXPECT_TRUE(tensor->isInit());
    EXPECT_EQ(tensor->size(), kCount);
    EXPECT_EQ(tensor->dataType(), DataTypes::eFloat);
    EXPECT_EQ(tensor->memoryType(), memoryType());
    EXPECT_GE(mgr().memoryStats().usedBytes(), usedBefore + tensor->memorySize());
    if (hasHostView()) {
        EXPECT_TRUE(sameElements(tensor->vector(), values));
        syncToDevice(tensor);
    }
    EXPECT_TRUE(sameElements(deviceValues<float>(mgr(), tensor), values));

    // Device writes come back to the host view with OpSyncLocal.
    auto written = sampleValues<float>(kCount, 14);
    auto source = mgr().tensorT<float>(written, MemoryTypes::eStorage);
    mgr()
      .sequence()
      ->record<kp::OpCopy>({ source, tensor })
      ->record<kp::OpSyncLocal>({ tensor })
      ->eval();
    if (hasHostView()) {
        EXPECT_TRUE(sameElements(tensor->vector(), written));
    }
    EXPECT_TRUE(sameElements(deviceValues<float>(mgr(), tensor), written));

    auto sized = std::make_shared<kp::TensorT<float>>(
      mgr().getVkPhysicalDevice(), mgr().getVkDevice(), kCount, memoryType());
    EXPECT_EQ(sized->size(), kCount);
}

class StandaloneHostViewTensorTest : public TensorTest
{};

INSTANTIATE_TEST_SUITE_P(HostVisibleMemoryTypes,
                         StandaloneHostViewTensorTest,
                         hostVisibleParams(),
                         paramName);

TEST_P(StandaloneHostViewTensorTest, ConstructorsWithDataFillTheHostView)
{
    auto values = sampleValues<int32_t>(kCount, 14);
    auto typed = std::make_shared<kp::TensorT<int32_t>>(
      mgr().getVkPhysicalDevice(), mgr().getVkDevice(), values, memoryType());
    EXPECT_TRUE(sameElements(typed->vector(), values));

    auto raw = std::make_shared<kp::Tensor>(mgr().getVkPhysicalDevice(),
                                            mgr().getVkDevice(),
                                            values.data(),
                                            static_cast<uint32_t>(kCount),
                                            static_cast<uint32_t>(sizeof(int32_t)),
                                            DataTypes::eInt,
                                            memoryType());
    EXPECT_TRUE(sameElements(raw->vector<int32_t>(), values));
    auto rawEmpty = std::make_shared<kp::Tensor>(mgr().getVkPhysicalDevice(),
                                                 mgr().getVkDevice(),
                                                 static_cast<uint32_t>(kCount),
                                                 static_cast<uint32_t>(sizeof(int32_t)),
                                                 DataTypes::eInt,
                                                 memoryType());
    EXPECT_EQ(rawEmpty->size(), kCount);

    // The standalone tensor's data reaches the device through a manager's
    // sequence like any other tensor's.
    mgr().sequence()->eval<kp::OpSyncDevice>({ raw });
    EXPECT_TRUE(sameElements(deviceValues<int32_t>(mgr(), raw), values));
    typed->destroy();
    EXPECT_FALSE(typed->isInit());
}

TEST_P(StandaloneTensorTest, TensorsOnADeviceWithoutManagerWorkWithAStandaloneSequence)
{
    // An application's own device, unknown to any Manager: the upstream
    // constructors of Tensor and Sequence make everything work on it.
    RawVulkanDevice raw;
    auto values = sampleValues<uint16_t>(kCount, 15);
    auto bytes = toBytes(values);
    std::shared_ptr<kp::Tensor> tensor;
    if (memoryType() == MemoryTypes::eStorage) {
        // No Manager means no queue to upload creation data with.
        EXPECT_THROW(kp::Tensor(raw.physicalDevice,
                                raw.device,
                                bytes.data(),
                                static_cast<uint32_t>(kCount),
                                2,
                                DataTypes::eUnsignedShort,
                                memoryType()),
                     kp::Error);
        tensor = std::make_shared<kp::Tensor>(raw.physicalDevice,
                                              raw.device,
                                              static_cast<uint32_t>(kCount),
                                              2,
                                              DataTypes::eUnsignedShort,
                                              memoryType());
    } else {
        tensor = std::make_shared<kp::Tensor>(raw.physicalDevice,
                                              raw.device,
                                              bytes.data(),
                                              static_cast<uint32_t>(kCount),
                                              2,
                                              DataTypes::eUnsignedShort,
                                              memoryType());
        EXPECT_TRUE(sameElements(hostBytes(tensor), bytes));
    }
    auto source = std::make_shared<kp::TensorT<uint16_t>>(raw.physicalDevice, raw.device, values);
    auto storage = std::make_shared<kp::TensorT<uint16_t>>(
      raw.physicalDevice, raw.device, kCount, MemoryTypes::eStorage);
    auto result = std::make_shared<kp::TensorT<uint16_t>>(raw.physicalDevice, raw.device, kCount);
    auto sequence =
      std::make_shared<kp::Sequence>(raw.physicalDevice, raw.device, raw.queue, raw.computeFamily);
    sequence->record<kp::OpSyncDevice>({ source })
      ->record<kp::OpCopy>({ source, tensor })
      ->record<kp::OpCopy>({ tensor, storage })
      ->record<kp::OpCopy>({ storage, result })
      ->record<kp::OpSyncLocal>({ result })
      ->eval();
    EXPECT_TRUE(sameElements(result->vector(), values));
    // Everything goes before the application destroys its device.
    sequence.reset();
    tensor.reset();
    source.reset();
    storage.reset();
    result.reset();
}

// --- Static parts of kp::Memory ------------------------------------------------

using MemoryStaticTest = KomputeTest;

TEST_F(MemoryStaticTest, ToStringNamesEveryEnumerator)
{
    EXPECT_EQ(kp::Memory::toString(MemoryTypes::eDevice), "eDevice");
    EXPECT_EQ(kp::Memory::toString(MemoryTypes::eHost), "eHost");
    EXPECT_EQ(kp::Memory::toString(MemoryTypes::eStorage), "eStorage");
    EXPECT_EQ(kp::Memory::toString(MemoryTypes::eDeviceAndHost), "eDeviceAndHost");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eBool), "eBool");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eInt), "eInt");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eUnsignedInt), "eUnsignedInt");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eFloat), "eFloat");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eDouble), "eDouble");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eCustom), "eCustom");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eShort), "eShort");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eUnsignedShort), "eUnsignedShort");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eChar), "eChar");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eUnsignedChar), "eUnsignedChar");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eLong), "eLong");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eUnsignedLong), "eUnsignedLong");
    EXPECT_EQ(kp::Memory::toString(DataTypes::eHalf), "eHalf");
}

TEST_F(MemoryStaticTest, EnumeratorsKeepUpstreamValues)
{
    EXPECT_EQ(static_cast<int>(MemoryTypes::eDevice), 0);
    EXPECT_EQ(static_cast<int>(MemoryTypes::eHost), 1);
    EXPECT_EQ(static_cast<int>(MemoryTypes::eStorage), 2);
    EXPECT_EQ(static_cast<int>(MemoryTypes::eDeviceAndHost), 3);
    EXPECT_EQ(static_cast<int>(DataTypes::eBool), 0);
    EXPECT_EQ(static_cast<int>(DataTypes::eInt), 1);
    EXPECT_EQ(static_cast<int>(DataTypes::eUnsignedInt), 2);
    EXPECT_EQ(static_cast<int>(DataTypes::eFloat), 3);
    EXPECT_EQ(static_cast<int>(DataTypes::eDouble), 4);
    EXPECT_EQ(static_cast<int>(DataTypes::eCustom), 5);
    EXPECT_EQ(static_cast<int>(DataTypes::eShort), 6);
    EXPECT_EQ(static_cast<int>(DataTypes::eUnsignedShort), 7);
    EXPECT_EQ(static_cast<int>(DataTypes::eChar), 8);
    EXPECT_EQ(static_cast<int>(DataTypes::eUnsignedChar), 9);
    EXPECT_EQ(static_cast<int>(DataTypes::eLong), 10);
    EXPECT_EQ(static_cast<int>(DataTypes::eUnsignedLong), 11);
    EXPECT_EQ(static_cast<int>(DataTypes::eHalf), 12);
    EXPECT_EQ(static_cast<int>(kp::Memory::Type::eTensor), 0);
    EXPECT_EQ(static_cast<int>(kp::Memory::Type::eImage), 1);
}

TEST_F(MemoryStaticTest, DataTypeOfEachCppTypeAndItsSize)
{
    static_assert(kp::Memory::dataType<bool>() == DataTypes::eBool);
    static_assert(kp::Memory::dataType<int8_t>() == DataTypes::eChar);
    static_assert(kp::Memory::dataType<uint8_t>() == DataTypes::eUnsignedChar);
    static_assert(kp::Memory::dataType<int16_t>() == DataTypes::eShort);
    static_assert(kp::Memory::dataType<uint16_t>() == DataTypes::eUnsignedShort);
    static_assert(kp::Memory::dataType<int32_t>() == DataTypes::eInt);
    static_assert(kp::Memory::dataType<uint32_t>() == DataTypes::eUnsignedInt);
    static_assert(kp::Memory::dataType<int64_t>() == DataTypes::eLong);
    static_assert(kp::Memory::dataType<uint64_t>() == DataTypes::eUnsignedLong);
    static_assert(kp::Memory::dataType<float>() == DataTypes::eFloat);
    static_assert(kp::Memory::dataType<double>() == DataTypes::eDouble);
    static_assert(kp::Memory::dataType<kp::float16_t>() == DataTypes::eHalf);
    forEachElementType([](auto tag) {
        using T = typename decltype(tag)::type;
        EXPECT_EQ(kp::Memory::dataTypeMemorySize(kp::Memory::dataType<T>()), sizeof(T))
          << typeName<T>();
    });
    // eCustom elements are as large as the caller says.
    EXPECT_EQ(kp::Memory::dataTypeMemorySize(DataTypes::eCustom), 0u);
}

// --- kp::float16_t -----------------------------------------------------------------

using Float16Test = KomputeTest;

TEST_F(Float16Test, ExactValuesConvertBothWays)
{
    EXPECT_EQ(kp::float16_t(1.0f).bits, 0x3C00);
    EXPECT_EQ(kp::float16_t(-2.0f).bits, 0xC000);
    EXPECT_EQ(kp::float16_t(0.5f).bits, 0x3800);
    EXPECT_EQ(kp::float16_t(65504.0f).bits, 0x7BFF);
    EXPECT_EQ(kp::float16_t(0.0f).bits, 0x0000);
    EXPECT_EQ(kp::float16_t(-0.0f).bits, 0x8000);
    for (float value : { 1.0f, -2.0f, 0.5f, 0.333251953125f, 1024.0f, -65504.0f }) {
        EXPECT_EQ(static_cast<float>(kp::float16_t(value)), value);
    }
}

TEST_F(Float16Test, RoundsToNearestEven)
{
    // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10).
    EXPECT_EQ(kp::float16_t(1.0f + 1.0f / 2048.0f).bits, 0x3C00);
    // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9: to even.
    EXPECT_EQ(kp::float16_t(1.0f + 3.0f / 2048.0f).bits, 0x3C02);
    EXPECT_EQ(kp::float16_t(1.0f + 1.5f / 2048.0f).bits, 0x3C01);
}

TEST_F(Float16Test, SpecialValues)
{
    EXPECT_EQ(kp::float16_t(1e6f).bits, 0x7C00); // overflow: +infinity
    EXPECT_EQ(kp::float16_t(-1e6f).bits, 0xFC00);
    EXPECT_EQ(kp::float16_t(std::numeric_limits<float>::infinity()).bits, 0x7C00);
    kp::float16_t nan(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan.bits & 0x7C00, 0x7C00);
    EXPECT_NE(nan.bits & 0x03FF, 0);
    EXPECT_TRUE(std::isnan(static_cast<float>(nan)));
    // Subnormals: the smallest half is 2^-24.
    EXPECT_EQ(kp::float16_t(std::ldexp(1.0f, -24)).bits, 0x0001);
    EXPECT_EQ(static_cast<float>(kp::float16_t::fromBits(0x0001)), std::ldexp(1.0f, -24));
    EXPECT_EQ(static_cast<float>(kp::float16_t::fromBits(0x03FF)), std::ldexp(1023.0f, -24));
    EXPECT_EQ(kp::float16_t(std::ldexp(1.0f, -26)).bits, 0x0000); // underflow to zero
    EXPECT_TRUE(kp::float16_t(2.0f) == kp::float16_t(2.0f));
    EXPECT_TRUE(kp::float16_t(2.0f) != kp::float16_t(3.0f));
}

TEST_F(Float16Test, EveryHalfSurvivesAFloatRoundTrip)
{
    for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
        auto half = kp::float16_t::fromBits(static_cast<uint16_t>(bits));
        float value = half;
        if (std::isnan(value)) {
            continue;
        }
        ASSERT_EQ(kp::float16_t(value).bits, bits) << "half bits " << bits;
    }
}
