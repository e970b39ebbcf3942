// SPDX-License-Identifier: Apache-2.0
// The built-in operations (OpSyncDevice, OpSyncLocal and their range forms,
// OpCopy, OpMemoryBarrier) and user-written operations, over every memory
// type: eDevice tensors have a host view of their own (staging memory) on
// every device, eHost and eDeviceAndHost ones a view of the memory itself.
// Also checks that the suite's validation-error detection works at all.
#include "TestSupport.hpp"

using namespace kp_test;

namespace {

constexpr uint32_t kCount = 16;

// Host view memory types (all but eStorage).
const std::vector<MemoryTypes> kHostVisibleTypes = { MemoryTypes::eDevice,
                                                     MemoryTypes::eHost,
                                                     MemoryTypes::eDeviceAndHost };

// `inside` on [offset, offset + count), `outside` elsewhere.
template<typename T>
std::vector<T>
spliced(const std::vector<T>& outside,
        const std::vector<T>& inside,
        uint32_t offset,
        uint32_t count)
{
    std::vector<T> result = outside;
    for (uint32_t i = offset; i < offset + count; ++i) {
        result[i] = inside[i];
    }
    return result;
}

/** An operation made of other operations, each recorded with
 * OpBase::recordNested; it throws instead of recording operation
 * `failAt` (none by default). */
class CompositeOp : public kp::OpBase
{
  public:
    explicit CompositeOp(std::vector<std::shared_ptr<kp::OpBase>> ops, size_t failAt = SIZE_MAX)
      : mOps(std::move(ops))
      , mFailAt(failAt)
    {
    }

    void record(const vk::CommandBuffer& cmd) override
    {
        for (size_t i = 0; i < mOps.size(); ++i) {
            if (i == mFailAt) {
                throw std::runtime_error("CompositeOp fails on purpose");
            }
            kp::OpBase::recordNested(*mOps[i], cmd);
        }
    }
    void preEval(const vk::CommandBuffer& cmd) override
    {
        for (auto& op : mOps) {
            op->preEval(cmd);
        }
    }
    void postEval(const vk::CommandBuffer& cmd) override
    {
        for (auto& op : mOps) {
            op->postEval(cmd);
        }
    }

  private:
    std::vector<std::shared_ptr<kp::OpBase>> mOps;
    size_t mFailAt;
};

/** An operation whose preEval throws while `fail` is set. */
class RefusingOp : public kp::OpBase
{
  public:
    explicit RefusingOp(std::shared_ptr<kp::Tensor> tensor)
      : mSync(std::make_shared<kp::OpSyncDevice>(std::vector<std::shared_ptr<kp::Memory>>{
          std::move(tensor) }))
    {
    }

    void record(const vk::CommandBuffer& cmd) override { kp::OpBase::recordNested(*mSync, cmd); }
    void preEval(const vk::CommandBuffer&) override
    {
        if (fail) {
            throw kp::Error("RefusingOp refuses on purpose");
        }
    }
    void postEval(const vk::CommandBuffer&) override {}

    bool fail = false;

  private:
    std::shared_ptr<kp::OpSyncDevice> mSync;
};

// values[i] = values[i] * 2 + 1
const char* const kTwicePlusOne = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    values[i] = values[i] * 2.0 + 1.0;
}
)";

} // namespace

using OperationsTest = KomputeTest;

// --- OpSyncDevice / OpSyncLocal ---------------------------------------------------

TEST_F(OperationsTest, OpSyncDeviceUploadsEveryObjectOfItsList)
{
    auto floats = mgr().tensorT<float>(sampleValues<float>(kCount, 1), MemoryTypes::eDevice);
    auto ints = mgr().tensorT<int32_t>(sampleValues<int32_t>(kCount, 2), MemoryTypes::eHost);
    auto doubles =
      mgr().tensorT<double>(sampleValues<double>(kCount, 3), MemoryTypes::eDeviceAndHost);
    // eStorage has no host view: syncing it is allowed and changes nothing.
    auto bytes = mgr().tensorT<uint8_t>(sampleValues<uint8_t>(kCount, 4), MemoryTypes::eStorage);

    auto sequence = mgr().sequence();
    EXPECT_EQ(sequence->eval<kp::OpSyncDevice>({ floats, ints, doubles, bytes }), sequence);

    EXPECT_TRUE(sameElements(deviceValues<float>(mgr(), floats), sampleValues<float>(kCount, 1)));
    EXPECT_TRUE(sameElements(deviceValues<int32_t>(mgr(), ints), sampleValues<int32_t>(kCount, 2)));
    EXPECT_TRUE(
      sameElements(deviceValues<double>(mgr(), doubles), sampleValues<double>(kCount, 3)));
    EXPECT_TRUE(
      sameElements(deviceValues<uint8_t>(mgr(), bytes), sampleValues<uint8_t>(kCount, 4)));
}

TEST_F(OperationsTest, OpSyncLocalDownloadsEveryObjectOfItsList)
{
    std::vector<std::shared_ptr<kp::TensorT<int64_t>>> tensors;
    auto sequence = mgr().sequence();
    auto deviceData = sampleValues<int64_t>(kCount, 5);
    auto source = mgr().tensorT<int64_t>(deviceData, MemoryTypes::eStorage);
    std::vector<std::shared_ptr<kp::Memory>> all;
    for (auto type : allMemoryTypes()) {
        auto tensor = mgr().tensorT<int64_t>(sampleValues<int64_t>(kCount, 6), type);
        sequence->record(std::make_shared<RawDeviceCopy>(source, tensor));
        tensors.push_back(tensor);
        all.push_back(tensor);
    }
    sequence->record<kp::OpSyncLocal>(all)->eval();
    for (auto& tensor : tensors) {
        SCOPED_TRACE(kp::Memory::toString(tensor->memoryType()));
        if (tensor->memoryType() != MemoryTypes::eStorage) {
            EXPECT_TRUE(sameElements(tensor->vector(), deviceData));
        }
        EXPECT_TRUE(sameElements(deviceValues<int64_t>(mgr(), tensor), deviceData));
    }
}

TEST_F(OperationsTest, OpSyncDeviceRangeUploadsOnlyThatRange)
{
    constexpr uint32_t offset = 4, count = 5;
    for (auto type : kHostVisibleTypes) {
        SCOPED_TRACE(kp::Memory::toString(type));
        auto before = sampleValues<float>(kCount, 7);
        auto after = sampleValues<float>(kCount, 8);
        auto tensor = mgr().tensorT<float>(before, type);
        auto other = mgr().tensorT<uint16_t>(sampleValues<uint16_t>(kCount, 9), type);
        mgr().sequence()->eval<kp::OpSyncDevice>({ tensor, other });

        tensor->setData(after);
        other->setData(sampleValues<uint16_t>(kCount, 10));
        mgr().sequence()->eval<kp::OpSyncDevice>({ tensor, other }, offset, count);

        // An eHost or eDeviceAndHost view is the device memory: the write
        // itself reached the device. An eDevice one (on every device) reaches
        // it only over the synced range.
        bool direct = type != MemoryTypes::eDevice;
        EXPECT_EQ(tensor->isHostViewDirect(), direct);
        EXPECT_TRUE(sameElements(deviceValues<float>(mgr(), tensor),
                                 direct ? after : spliced(before, after, offset, count)));
        EXPECT_TRUE(sameElements(deviceValues<uint16_t>(mgr(), other),
                                 direct ? sampleValues<uint16_t>(kCount, 10)
                                        : spliced(sampleValues<uint16_t>(kCount, 9),
                                                  sampleValues<uint16_t>(kCount, 10),
                                                  offset,
                                                  count)));
    }
}

TEST_F(OperationsTest, OpSyncLocalRangeDownloadsOnlyThatRange)
{
    constexpr uint32_t offset = 9, count = 7; // up to the last element
    for (auto type : kHostVisibleTypes) {
        SCOPED_TRACE(kp::Memory::toString(type));
        auto hostData = sampleValues<double>(kCount, 11);
        auto deviceData = sampleValues<double>(kCount, 12);
        auto source = mgr().tensorT<double>(deviceData, MemoryTypes::eStorage);
        auto tensor = mgr().tensorT<double>(hostData, type);
        mgr()
          .sequence()
          ->record(std::make_shared<RawDeviceCopy>(source, tensor))
          ->record<kp::OpSyncLocal>({ tensor }, offset, count)
          ->eval();
        bool direct = type != MemoryTypes::eDevice;
        EXPECT_TRUE(sameElements(tensor->vector(),
                                 direct ? deviceData : spliced(hostData, deviceData, offset, count)));
    }
}

TEST_F(OperationsTest, RangeSyncsAtTheEdgesOfTheTensor)
{
    auto first = sampleValues<int8_t>(kCount, 13);
    auto second = sampleValues<int8_t>(kCount, 14);
    auto tensor = mgr().tensorT<int8_t>(first);
    mgr().sequence()->eval<kp::OpSyncDevice>({ tensor });
    tensor->setData(second);
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ tensor }, 0, 1)
      ->record<kp::OpSyncDevice>({ tensor }, kCount - 1, 1)
      ->eval();
    // An eDevice tensor: only the synced elements reach the device.
    auto expected = first;
    expected[0] = second[0];
    expected[kCount - 1] = second[kCount - 1];
    EXPECT_TRUE(sameElements(deviceValues<int8_t>(mgr(), tensor), expected));

    // The whole tensor as a range is the same as the plain form.
    sequence->eval<kp::OpSyncDevice>({ tensor }, 0, kCount);
    EXPECT_TRUE(sameElements(deviceValues<int8_t>(mgr(), tensor), second));
}

TEST_F(OperationsTest, SyncOfStorageTensorsChangesNothing)
{
    auto values = sampleValues<uint32_t>(kCount, 15);
    auto storage = mgr().tensorT<uint32_t>(values, MemoryTypes::eStorage);
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ storage })
      ->record<kp::OpSyncLocal>({ storage })
      ->record<kp::OpSyncDevice>({ storage }, 2, 3)
      ->record<kp::OpSyncLocal>({ storage }, 2, 3)
      ->eval();
    EXPECT_TRUE(sameElements(deviceValues<uint32_t>(mgr(), storage), values));
}

// --- OpCopy ------------------------------------------------------------------------

TEST_F(OperationsTest, OpCopyOneToManyFillsEveryMemoryTypeForEveryDataType)
{
    forEachElementType([&](auto tag) {
        using T = typename decltype(tag)::type;
        SCOPED_TRACE(typeName<T>());
        auto values = sampleValues<T>(kCount, 16);
        auto source = mgr().tensorT<T>(values);
        std::vector<std::shared_ptr<kp::Memory>> objects = { source };
        std::vector<std::shared_ptr<kp::TensorT<T>>> targets;
        for (auto type : allMemoryTypes()) {
            targets.push_back(mgr().template tensorT<T>(kCount, type));
        }
        targets.push_back(mgr().template tensorT<T>(kCount, MemoryTypes::eDevice));
        objects.insert(objects.end(), targets.begin(), targets.end());

        std::shared_ptr<kp::Tensor> sourceTensor = source;
        mgr()
          .sequence()
          ->record<kp::OpSyncDevice>({ sourceTensor })
          ->record<kp::OpCopy>(objects)
          ->eval();
        for (auto& target : targets) {
            SCOPED_TRACE(kp::Memory::toString(target->memoryType()));
            // No OpSyncLocal: OpCopy gives the targets' host views the data.
            if (target->memoryType() != MemoryTypes::eStorage) {
                EXPECT_TRUE(sameElements(target->vector(), values));
            }
            EXPECT_TRUE(sameElements(deviceValues<T>(mgr(), target), values));
        }
    });
}

TEST_F(OperationsTest, OpCopyCopiesTheDeviceDataNotTheSourceHostView)
{
    // Upstream copied the source's host view into the targets' host views
    // after the run, which was stale when only the device data had changed.
    auto synced = sampleValues<float>(kCount, 17);
    auto unsynced = sampleValues<float>(kCount, 18);
    auto source = mgr().tensorT<float>(synced);
    mgr().sequence()->eval<kp::OpSyncDevice>({ source });
    source->setData(unsynced);
    auto target = mgr().tensorT<float>(kCount);
    mgr().sequence()->eval<kp::OpCopy>({ source, target });
    // The source is an eDevice tensor: its device data is what was synced,
    // on every device.
    EXPECT_TRUE(sameElements(target->vector(), synced));
}

TEST_F(OperationsTest, OpCopyChainsThroughStorageAndBackWithoutUserBarriers)
{
    for (auto type : kHostVisibleTypes) {
        SCOPED_TRACE(kp::Memory::toString(type));
        auto values = sampleValues<uint64_t>(kCount, 19);
        auto a = mgr().tensorT<uint64_t>(values, type);
        auto storage = mgr().tensorT<uint64_t>(kCount, MemoryTypes::eStorage);
        auto b = mgr().tensorT<uint64_t>(kCount, type);
        auto c = mgr().tensorT<uint64_t>(kCount, MemoryTypes::eDevice);
        // Each operation depends on the one before; the built-in operations
        // order themselves (synchronization validation checks it).
        mgr()
          .sequence()
          ->record<kp::OpSyncDevice>({ a })
          ->record<kp::OpCopy>({ a, storage })
          ->record<kp::OpCopy>({ storage, b })
          ->record<kp::OpCopy>({ b, c })
          ->record<kp::OpSyncLocal>({ b, c })
          ->eval();
        EXPECT_TRUE(sameElements(b->vector(), values));
        EXPECT_TRUE(sameElements(c->vector(), values));
    }
}

// Large copies between device tensors are compute dispatches on NVIDIA
// (internal/ShaderCopy.hpp); KOMPUTE_ENV_SHADER_COPY=1 turns that on here.
// The copy must land whole, a tail of under 16 bytes included, in every
// memory type, and the staging copies and barriers around it must hold
// (synchronization validation watches). Results are read without OpCopy:
// through host views, and for eStorage through a plain vkCmdCopyBuffer.
TEST_F(OperationsTest, OpCopyByShaderCopiesLargeTensorsWhole)
{
    ScopedEnv shaderCopies("KOMPUTE_ENV_SHADER_COPY", "1");
    auto manager = makeManager();
    kp::logger::Level previousLevel = kp::logger::getLogLevel();
    kp::logger::setLogLevel(kp::logger::Level::Debug);
    for (uint32_t count : { 1u << 20, (1u << 20) + 13 }) {
        SCOPED_TRACE(count);
        std::vector<uint8_t> values(count);
        for (uint32_t i = 0; i < count; ++i) {
            values[i] = static_cast<uint8_t>((i * 2654435761u) >> 11);
        }
        auto source = manager->tensorT<uint8_t>(values, MemoryTypes::eDevice);
        auto device = manager->tensorT<uint8_t>(count, MemoryTypes::eDevice);
        auto storage = manager->tensorT<uint8_t>(count, MemoryTypes::eStorage);
        auto shared = manager->tensorT<uint8_t>(count, MemoryTypes::eDeviceAndHost);
        auto host = manager->tensorT<uint8_t>(count, MemoryTypes::eHost);
        auto readBack = manager->tensorT<uint8_t>(count, MemoryTypes::eDeviceAndHost);
        LogCapture log;
        manager->sequence()
          ->record<kp::OpSyncDevice>({ source })
          ->record<kp::OpCopy>({ source, device, storage, shared, host })
          ->record(std::make_shared<RawDeviceCopy>(storage, readBack))
          ->eval();
        EXPECT_TRUE(device->vector() == values);
        EXPECT_TRUE(shared->vector() == values);
        EXPECT_TRUE(host->vector() == values);
        EXPECT_TRUE(readBack->vector() == values);
        // Destinations 1 to 3 by shader; the eHost one by the copy command.
        for (int index = 1; index <= 4; ++index) {
            EXPECT_EQ(log.contains(kp::logger::Level::Debug,
                                   "into destination " + std::to_string(index) + " by the copy shader"),
                      index != 4)
              << "destination " << index;
        }
    }
    kp::logger::setLogLevel(previousLevel);
}

TEST_F(OperationsTest, OpCopyUsesTheCopyCommandWhenShaderCopiesAreOff)
{
    ScopedEnv shaderCopies("KOMPUTE_ENV_SHADER_COPY", "0");
    auto manager = makeManager();
    kp::logger::Level previousLevel = kp::logger::getLogLevel();
    kp::logger::setLogLevel(kp::logger::Level::Debug);
    std::vector<float> values = sampleValues<float>(1u << 18, 22);
    auto source = manager->tensorT<float>(values, MemoryTypes::eDeviceAndHost);
    auto target = manager->tensorT<float>(values.size(), MemoryTypes::eDeviceAndHost);
    LogCapture log;
    manager->sequence()->eval<kp::OpCopy>({ source, target });
    EXPECT_TRUE(sameElements(target->vector(), values));
    EXPECT_FALSE(log.contains(kp::logger::Level::Debug, "by the copy shader"));
    kp::logger::setLogLevel(previousLevel);
}

TEST_F(OperationsTest, OpCopyOverwritesATargetWrittenEarlierInTheBatch)
{
    auto first = mgr().tensorT<int16_t>(sampleValues<int16_t>(kCount, 20));
    auto second = mgr().tensorT<int16_t>(sampleValues<int16_t>(kCount, 21));
    auto target = mgr().tensorT<int16_t>(kCount);
    // Write-after-write and write-after-read on `target` within one batch.
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ first, second })
      ->record<kp::OpCopy>({ first, target })
      ->record<kp::OpCopy>({ target, first })
      ->record<kp::OpCopy>({ second, target })
      ->eval();
    EXPECT_TRUE(sameElements(target->vector(), sampleValues<int16_t>(kCount, 21)));
    EXPECT_TRUE(
      sameElements(deviceValues<int16_t>(mgr(), first), sampleValues<int16_t>(kCount, 20)));
}

TEST_F(OperationsTest, RepeatedObjectsInAnOperationAreHandledOnce)
{
    // Upstream code may name an object twice; copying into it twice in one
    // operation, with no barrier in between, would be a write-after-write
    // hazard that synchronization validation reports.
    auto values = sampleValues<float>(kCount, 27);
    auto a = mgr().tensorT<float>(values);
    auto b = mgr().tensorT<float>(kCount);
    auto c = mgr().tensorT<float>(kCount, MemoryTypes::eStorage);
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ a, a })
      ->record<kp::OpSyncDevice>({ a, a }, 1, 2)
      ->record<kp::OpCopy>({ a, b, b, c, b, c })
      ->record<kp::OpSyncLocal>({ b, b })
      ->record<kp::OpSyncLocal>({ b, b }, 3, 4)
      ->eval();
    EXPECT_TRUE(sameElements(b->vector(), values));
    EXPECT_TRUE(sameElements(deviceValues<float>(mgr(), c), values));
}

// --- OpMemoryBarrier ---------------------------------------------------------------

TEST_F(OperationsTest, OpMemoryBarrierOrdersUserOperations)
{
    // Two user copies that depend on each other and record no barrier: the
    // OpMemoryBarrier between them is the only thing ordering them. Without
    // it the validation layer reports a hazard (see the test below).
    auto values = sampleValues<float>(kCount, 22);
    auto a = mgr().tensorT<float>(values, MemoryTypes::eHost);
    auto b = mgr().tensorT<float>(kCount, MemoryTypes::eStorage);
    auto c = mgr().tensorT<float>(kCount, MemoryTypes::eStorage);
    mgr()
      .sequence()
      ->record(std::make_shared<RawDeviceCopy>(a, b, false))
      ->record<kp::OpMemoryBarrier>({ b },
                                    vk::AccessFlagBits::eTransferWrite,
                                    vk::AccessFlagBits::eTransferRead,
                                    vk::PipelineStageFlagBits::eTransfer,
                                    vk::PipelineStageFlagBits::eTransfer)
      ->record(std::make_shared<RawDeviceCopy>(b, c, false))
      ->eval();
    EXPECT_TRUE(sameElements(deviceValues<float>(mgr(), c), values));
}

TEST_F(OperationsTest, OpMemoryBarrierOnStagingAndOnSeveralObjects)
{
    auto values = sampleValues<uint32_t>(kCount, 23);
    auto a = mgr().tensorT<uint32_t>(values);
    auto b = mgr().tensorT<uint32_t>(kCount);
    auto c = mgr().tensorT<uint32_t>(kCount, MemoryTypes::eHost);
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ a })
      ->record<kp::OpMemoryBarrier>({ a, b, c },
                                    vk::AccessFlagBits::eTransferWrite,
                                    vk::AccessFlagBits::eTransferRead |
                                      vk::AccessFlagBits::eTransferWrite,
                                    vk::PipelineStageFlagBits::eTransfer,
                                    vk::PipelineStageFlagBits::eTransfer)
      ->record<kp::OpCopy>({ a, b, c })
      ->record<kp::OpSyncLocal>({ b })
      // On the staging buffers (tensors without one get no barrier).
      ->record<kp::OpMemoryBarrier>({ b, c },
                                    vk::AccessFlagBits::eTransferWrite,
                                    vk::AccessFlagBits::eHostRead,
                                    vk::PipelineStageFlagBits::eTransfer,
                                    vk::PipelineStageFlagBits::eHost,
                                    false)
      ->eval();
    EXPECT_TRUE(sameElements(b->vector(), values));
    EXPECT_TRUE(sameElements(c->vector(), values));
}

// --- User-written operations ----------------------------------------------------

TEST_F(OperationsTest, CustomOperationWritesTheDevice)
{
    auto tensor = mgr().tensorT<uint32_t>(sampleValues<uint32_t>(kCount, 24));
    auto bytes = mgr().tensorT<uint8_t>(sampleValues<uint8_t>(kCount * 4, 25), MemoryTypes::eHost);
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ tensor })
      ->record(std::make_shared<FillOp>(tensor, 0xDEADBEEFu))
      ->record(std::make_shared<FillOp>(bytes, 0x04030201u))
      ->record<kp::OpSyncLocal>({ tensor, bytes })
      ->eval();
    EXPECT_EQ(tensor->vector(), std::vector<uint32_t>(kCount, 0xDEADBEEFu));
    std::vector<uint8_t> expected;
    for (uint32_t i = 0; i < kCount; ++i) {
        expected.insert(expected.end(), { 1, 2, 3, 4 }); // little-endian words
    }
    EXPECT_EQ(bytes->vector(), expected);
}

TEST_F(OperationsTest, CustomOperationHooksAreCalledAtRecordSubmitAndCompletion)
{
    auto a = mgr().tensorT<float>(sampleValues<float>(kCount, 26), MemoryTypes::eHost);
    auto b = mgr().tensorT<float>(kCount, MemoryTypes::eHost);
    auto op = std::make_shared<RawDeviceCopy>(a, b);
    auto sequence = mgr().sequence();

    sequence->record(op);
    EXPECT_EQ(op->recordCount, 1);
    EXPECT_EQ(op->preEvalCount, 0);
    EXPECT_EQ(op->postEvalCount, 0);

    sequence->eval();
    EXPECT_EQ(op->preEvalCount, 1);
    EXPECT_EQ(op->postEvalCount, 1);
    EXPECT_TRUE(sameElements(b->vector(), a->vector()));

    sequence->evalAsync();
    EXPECT_EQ(op->preEvalCount, 2);
    sequence->evalAwait();
    EXPECT_EQ(op->postEvalCount, 2);

    sequence->rerecord();
    EXPECT_EQ(op->recordCount, 2);
    sequence->eval();
    EXPECT_EQ(op->recordCount, 2); // evaluating does not record again
    EXPECT_EQ(op->preEvalCount, 3);
    EXPECT_EQ(op->postEvalCount, 3);
}

TEST_F(OperationsTest, NestedOperationsRecordInsideAnotherWithTheirBarriers)
{
    auto x = mgr().tensorT<float>({ 1, 2, 3 });
    auto y = mgr().tensorT<float>({ 10, 20, 30 });
    auto spirv = kp::Shader::compileSource(kTwicePlusOne);
    auto composite = std::make_shared<CompositeOp>(std::vector<std::shared_ptr<kp::OpBase>>{
      std::make_shared<kp::OpSyncDevice>(std::vector<std::shared_ptr<kp::Memory>>{ x, y }),
      std::make_shared<kp::OpAlgoDispatch>(mgr().algorithm({ x }, spirv)),
      std::make_shared<kp::OpAlgoDispatch>(mgr().algorithm({ x }, spirv)),
      std::make_shared<kp::OpCopy>(std::vector<std::shared_ptr<kp::Memory>>{ x, y }),
      std::make_shared<kp::OpSyncLocal>(std::vector<std::shared_ptr<kp::Memory>>{ x }) });
    mgr().sequence()->record(composite)->record<kp::OpSyncLocal>({ y })->eval();
    // Dependent steps in one operation: the validation layer sees no hazard.
    EXPECT_EQ(x->vector(), (std::vector<float>{ 7, 11, 15 }));
    EXPECT_EQ(y->vector(), (std::vector<float>{ 7, 11, 15 }));
}

TEST_F(OperationsTest, NestedOperationsOfAnotherManagerAreRefusedBeforeRecording)
{
    kp::Manager other;
    auto foreign = other.tensorT<float>({ 1, 2 });
    auto x = mgr().tensorT<float>({ 1, 2 });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ x });
    auto mixed = std::make_shared<CompositeOp>(std::vector<std::shared_ptr<kp::OpBase>>{
      std::make_shared<kp::OpSyncDevice>(std::vector<std::shared_ptr<kp::Memory>>{ foreign }) });
    EXPECT_THROW(sequence->record(mixed), kp::Error);
    sequence->record<kp::OpAlgoDispatch>(
      mgr().algorithm({ x }, kp::Shader::compileSource(kTwicePlusOne)));
    sequence->record<kp::OpSyncLocal>({ x })->eval();
    EXPECT_EQ(x->vector(), (std::vector<float>{ 3, 5 }));
}

TEST_F(OperationsTest, AnOperationThatThrowsInRecordLeavesTheSequenceAsItWas)
{
    auto x = mgr().tensorT<float>({ 1, 2 });
    auto spirv = kp::Shader::compileSource(kTwicePlusOne);
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ x });
    sequence->record<kp::OpAlgoDispatch>(mgr().algorithm({ x }, spirv));
    // It records a dispatch, then throws: that dispatch must never run.
    auto failing = std::make_shared<CompositeOp>(
      std::vector<std::shared_ptr<kp::OpBase>>{
        std::make_shared<kp::OpAlgoDispatch>(mgr().algorithm({ x }, spirv)),
        std::make_shared<kp::OpSyncLocal>(std::vector<std::shared_ptr<kp::Memory>>{ x }) },
      1);
    EXPECT_THROW(sequence->record(failing), std::runtime_error);
    EXPECT_TRUE(sequence->isRecording());
    sequence->record<kp::OpSyncLocal>({ x })->eval();
    EXPECT_EQ(x->vector(), (std::vector<float>{ 3, 5 }));
    sequence->eval(); // once more, from the host view: the failed dispatch still never runs
    EXPECT_EQ(x->vector(), (std::vector<float>{ 7, 11 }));
    EXPECT_THROW(mgr().sequence()->eval(failing), std::runtime_error);
}

TEST_F(OperationsTest, ABatchRefusedByPreEvalIsRecordedAnewOnceAccepted)
{
    auto x = mgr().tensorT<float>({ 1, 2 });
    auto op = std::make_shared<RefusingOp>(x);
    auto sequence = mgr().sequence()->record(op);
    op->fail = true;
    EXPECT_THROW(sequence->eval(), kp::Error);
    EXPECT_THROW(sequence->eval(), kp::Error);
    op->fail = false;
    x->setData(std::vector<float>{ 5, 6 });
    sequence->eval(); // the operation is still there: 5, 6 reach the device
    x->setData(std::vector<float>{ 0, 0 });
    mgr().sequence()->eval<kp::OpSyncLocal>({ x });
    EXPECT_EQ(x->vector(), (std::vector<float>{ 5, 6 }));
}

// --- The suite's validation check ---------------------------------------------------

using ValidationMechanismTest = KomputeTest;

TEST_F(ValidationMechanismTest, HazardOfUserOperationsWithoutBarrierIsCaught)
{
    // The same two copies as OpMemoryBarrierOrdersUserOperations, without the
    // barrier: the second reads what the first wrote (read-after-write).
    LogCapture log;
    auto a = mgr().tensorT<float>(sampleValues<float>(kCount), MemoryTypes::eHost);
    auto b = mgr().tensorT<float>(kCount, MemoryTypes::eStorage);
    auto c = mgr().tensorT<float>(kCount, MemoryTypes::eStorage);
    mgr()
      .sequence()
      ->record(std::make_shared<RawDeviceCopy>(a, b, false))
      ->record(std::make_shared<RawDeviceCopy>(b, c, false))
      ->eval();

    auto errors = validationErrors();
    ASSERT_FALSE(errors.empty()) << "synchronization validation did not report the hazard: is "
                                    "VK_LAYER_KHRONOS_validation installed and enabled?";
    bool hazard = false;
    for (const auto& error : errors) {
        hazard = hazard || isHazard(error, "READ_AFTER_WRITE");
    }
    EXPECT_TRUE(hazard) << errors[0];
    // Reported through the Kompute log at Error level with the prefix.
    EXPECT_TRUE(log.contains(kp::logger::Level::Error, "[validation]"));
    // Expected here: clear them so that the fixture's check passes.
    resetValidationErrors();
}
