// SPDX-License-Identifier: Apache-2.0
// The barriers a Sequence records: only for read-after-write, write-after-
// read and write-after-write hazards between its operations, from what the
// operations declare (OpBase::declareAccesses), full barriers around
// operations that declare nothing, and an error for objects of another
// Manager. Synchronization validation is on in every test: a barrier that a
// hazard needs and the sequence left out fails the test.
#include "DispatchTestHelpers.hpp"

#include <numeric>

using namespace kp_test;

namespace {

constexpr uint32_t kCount = 64;

// Reads and writes its one buffer.
const char* kIncrement = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Values { uint values[]; };
void main() { values[gl_GlobalInvocationID.x] += 1u; }
)";

// Reads binding 0 only, writes binding 1 only.
const char* kPlusOne = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer Source { uint source[]; };
layout(set = 0, binding = 1) writeonly buffer Target { uint target[]; };
void main() { target[gl_GlobalInvocationID.x] = source[gl_GlobalInvocationID.x] + 1u; }
)";

// Writes its one buffer without reading it.
const char* kFillSeven = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer Target { uint target[]; };
void main() { target[gl_GlobalInvocationID.x] = 7u; }
)";

std::vector<uint32_t>
iota(uint32_t first)
{
    std::vector<uint32_t> values(kCount);
    std::iota(values.begin(), values.end(), first);
    return values;
}

// A user operation that copies `source` into `target` by vkCmdCopyBuffer and
// declares exactly that: the sequence orders it like a built-in copy.
class DeclaredCopy : public kp::OpBase
{
  public:
    DeclaredCopy(std::shared_ptr<kp::Tensor> source, std::shared_ptr<kp::Tensor> target)
      : mSource(std::move(source))
      , mTarget(std::move(target))
    {
    }
    void record(const vk::CommandBuffer& cmd) override
    {
        vk::BufferCopy region(0, 0, mSource->memorySize());
        cmd.copyBuffer(*mSource->getPrimaryBuffer(), *mTarget->getPrimaryBuffer(), 1, &region);
    }
    void preEval(const vk::CommandBuffer&) override {}
    void postEval(const vk::CommandBuffer&) override {}
    bool declareAccesses(std::vector<kp::MemoryAccess>& accesses) const override
    {
        accesses.push_back(kp::MemoryAccess::transferRead(*mSource));
        accesses.push_back(kp::MemoryAccess::transferWrite(*mTarget));
        return true;
    }

  private:
    std::shared_ptr<kp::Tensor> mSource;
    std::shared_ptr<kp::Tensor> mTarget;
};

} // namespace

class BarrierTest : public KomputeTest
{
  protected:
    std::shared_ptr<kp::TensorT<uint32_t>> tensor(const std::vector<uint32_t>& values,
                                                  MemoryTypes memoryType = MemoryTypes::eDevice)
    {
        return mgr().tensorT<uint32_t>(values, memoryType);
    }

    std::shared_ptr<kp::Algorithm> algorithm(const char* shader,
                                             const std::vector<std::shared_ptr<kp::Memory>>& objects)
    {
        return mgr().algorithm(objects, compile(shader), { kCount / 64, 1, 1 });
    }

    static std::vector<uint32_t> plus(std::vector<uint32_t> values, uint32_t n)
    {
        for (auto& value : values) {
            value += n;
        }
        return values;
    }

    /** Syncs `objects` back and returns their host views. */
    std::vector<std::vector<uint32_t>> read(const std::vector<std::shared_ptr<kp::TensorT<uint32_t>>>& tensors)
    {
        std::vector<std::shared_ptr<kp::Memory>> objects(tensors.begin(), tensors.end());
        mgr().sequence()->eval<kp::OpSyncLocal>(objects);
        std::vector<std::vector<uint32_t>> values;
        for (const auto& t : tensors) {
            values.push_back(t->vector());
        }
        return values;
    }
};

TEST_F(BarrierTest, IndependentDispatchesRecordNoBarrier)
{
    std::vector<std::shared_ptr<kp::TensorT<uint32_t>>> counters;
    auto sequence = mgr().sequence();
    std::vector<std::shared_ptr<kp::Memory>> all;
    for (uint32_t i = 0; i < 8; ++i) {
        counters.push_back(tensor(iota(100 * i)));
        all.push_back(counters.back());
    }
    sequence->record<kp::OpSyncDevice>(all);
    EXPECT_EQ(sequence->recordedBarrierCount(), 0u);
    for (auto& counter : counters) {
        sequence->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { counter }));
    }
    // Each dispatch reads what the upload (a copy from the staging memory)
    // wrote: one barrier orders all uploads before all dispatches.
    EXPECT_EQ(sequence->recordedBarrierCount(), 1u);

    // Without the upload, in a batch of their own: none at all.
    auto dispatches = mgr().sequence();
    for (auto& counter : counters) {
        dispatches->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { counter }));
    }
    EXPECT_EQ(dispatches->recordedBarrierCount(), 0u);

    sequence->eval();
    dispatches->eval();
    dispatches->eval();
    auto values = read(counters);
    for (uint32_t i = 0; i < counters.size(); ++i) {
        EXPECT_EQ(values[i], plus(iota(100 * i), 3)) << i;
    }
}

TEST_F(BarrierTest, DependentDispatchesRecordOneBarrierEach)
{
    auto counter = tensor(iota(0));
    auto increment = algorithm(kIncrement, { counter });
    auto sequence = mgr().sequence();
    for (int i = 0; i < 10; ++i) {
        sequence->record<kp::OpAlgoDispatch>(increment);
    }
    EXPECT_EQ(sequence->recordedBarrierCount(), 9u);
    mgr().sequence()->eval<kp::OpSyncDevice>({ counter });
    sequence->eval();
    sequence->eval();
    EXPECT_EQ(read({ counter })[0], plus(iota(0), 20));
}

TEST_F(BarrierTest, ReadOnlyAndWriteOnlyBindingsNarrowTheBarriers)
{
    auto x = tensor(iota(10));
    auto y = tensor(std::vector<uint32_t>(kCount, 0));
    auto z = tensor(std::vector<uint32_t>(kCount, 0));
    auto w = tensor(std::vector<uint32_t>(kCount, 0));
    auto v = tensor(std::vector<uint32_t>(kCount, 0));
    mgr().sequence()->eval<kp::OpSyncDevice>({ x, y, z, w, v });
    auto sequence = mgr().sequence();
    // Two readers of x: read after read needs nothing.
    sequence->record<kp::OpAlgoDispatch>(algorithm(kPlusOne, { x, y }));
    sequence->record<kp::OpAlgoDispatch>(algorithm(kPlusOne, { x, z }));
    EXPECT_EQ(sequence->recordedBarrierCount(), 0u);
    // Writes what both read: write after read, one barrier for both. It
    // covers all compute work before it, so the writes of y and z are
    // visible after it too.
    sequence->record<kp::OpAlgoDispatch>(algorithm(kFillSeven, { x }));
    EXPECT_EQ(sequence->recordedBarrierCount(), 1u);
    // Reads what the first wrote: already ordered by that barrier.
    sequence->record<kp::OpAlgoDispatch>(algorithm(kPlusOne, { y, w }));
    EXPECT_EQ(sequence->recordedBarrierCount(), 1u);
    // Reads what the second wrote into a fresh tensor: the same.
    sequence->record<kp::OpAlgoDispatch>(algorithm(kPlusOne, { z, v }));
    EXPECT_EQ(sequence->recordedBarrierCount(), 1u);
    // Writes what the fourth wrote after the barrier: write after write.
    sequence->record<kp::OpAlgoDispatch>(algorithm(kFillSeven, { w }));
    EXPECT_EQ(sequence->recordedBarrierCount(), 2u);
    sequence->eval();
    auto values = read({ x, y, z, w, v });
    EXPECT_EQ(values[0], std::vector<uint32_t>(kCount, 7));
    EXPECT_EQ(values[1], plus(iota(10), 1));
    EXPECT_EQ(values[2], plus(iota(10), 1));
    EXPECT_EQ(values[3], std::vector<uint32_t>(kCount, 7));
    EXPECT_EQ(values[4], plus(iota(10), 2));
}

TEST_F(BarrierTest, SyncDispatchSyncChainIsOrdered)
{
    // A device tensor: upload -> dispatch -> download, two hazards. A host
    // tensor: the sync operations copy nothing and there is nothing to order.
    for (auto [memoryType, barriers] : { std::pair{ MemoryTypes::eDevice, 2u },
                                         std::pair{ MemoryTypes::eHost, 0u } }) {
        SCOPED_TRACE(kp::Memory::toString(memoryType));
        auto values = tensor(iota(5), memoryType);
        auto sequence = mgr().sequence();
        sequence->record<kp::OpSyncDevice>({ values })
          ->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { values }))
          ->record<kp::OpSyncLocal>({ values });
        EXPECT_EQ(sequence->recordedBarrierCount(), barriers);
        for (uint32_t round = 1; round <= 3; ++round) {
            values->setData(iota(5));
            sequence->eval();
            EXPECT_EQ(values->vector(), plus(iota(5), 1)) << round;
        }
    }
}

TEST_F(BarrierTest, CopiesAndDispatchesAreOrdered)
{
    auto a = tensor(iota(1));
    auto b = tensor(std::vector<uint32_t>(kCount, 0));
    auto c = tensor(std::vector<uint32_t>(kCount, 0));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ a })
      ->record<kp::OpCopy>({ a, b })                              // reads a
      ->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { b }))  // b: after the copy
      ->record<kp::OpCopy>({ b, c })                              // b: after the dispatch
      ->record<kp::OpAlgoDispatch>(algorithm(kFillSeven, { a }))  // a: after the copy read it
      ->record(std::make_shared<DeclaredCopy>(c, b))              // b after its copy's read, c after its write
      ->record<kp::OpSyncLocal>({ a, b, c });
    sequence->eval();
    EXPECT_EQ(a->vector(), std::vector<uint32_t>(kCount, 7));
    EXPECT_EQ(b->vector(), plus(iota(1), 1));
    EXPECT_EQ(c->vector(), plus(iota(1), 1));
}

TEST_F(BarrierTest, OperationsThatDeclareNothingGetFullBarriers)
{
    auto a = tensor(iota(3));
    auto b = tensor(std::vector<uint32_t>(kCount, 0));
    mgr().sequence()->eval<kp::OpSyncDevice>({ a, b });
    auto sequence = mgr().sequence();
    // First in the batch: nothing before it to wait for; a barrier after.
    sequence->record(std::make_shared<RawDeviceCopy>(a, b));
    EXPECT_EQ(sequence->recordedBarrierCount(), 0u);
    sequence->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { b }));
    EXPECT_EQ(sequence->recordedBarrierCount(), 1u);
    // Between two declared operations: one barrier before and one after,
    // although b's dispatches alone would need only one.
    auto c = tensor(std::vector<uint32_t>(kCount, 0));
    sequence->record(std::make_shared<RawDeviceCopy>(a, c));
    sequence->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { b }));
    EXPECT_EQ(sequence->recordedBarrierCount(), 3u);
    sequence->eval();
    EXPECT_EQ(read({ b })[0], plus(iota(3), 2));
}

TEST_F(BarrierTest, OpMemoryBarrierRecordsWhatItIsAskedForAndNothingElse)
{
    auto a = tensor(iota(0));
    auto b = tensor(iota(0));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { a }))
      ->record<kp::OpMemoryBarrier>(std::vector<std::shared_ptr<kp::Memory>>{ a, b },
                                    vk::AccessFlagBits::eShaderWrite,
                                    vk::AccessFlagBits::eShaderRead,
                                    vk::PipelineStageFlagBits::eComputeShader,
                                    vk::PipelineStageFlagBits::eComputeShader)
      ->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { b }));
    // Its own barriers are not the sequence's: the two dispatches are
    // independent.
    EXPECT_EQ(sequence->recordedBarrierCount(), 0u);
    mgr().sequence()->eval<kp::OpSyncDevice>({ a, b });
    sequence->eval();
    auto values = read({ a, b });
    EXPECT_EQ(values[0], plus(iota(0), 1));
    EXPECT_EQ(values[1], plus(iota(0), 1));
}

TEST_F(BarrierTest, RerecordingRecomputesTheBarriers)
{
    auto a = tensor(iota(0));
    auto b = tensor(iota(50));
    mgr().sequence()->eval<kp::OpSyncDevice>({ a, b });
    auto first = algorithm(kIncrement, { a });
    auto second = algorithm(kIncrement, { b });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpAlgoDispatch>(first)->record<kp::OpAlgoDispatch>(second);
    EXPECT_EQ(sequence->recordedBarrierCount(), 0u);
    sequence->eval();
    // Bound to the same tensor, the dispatches now depend on each other:
    // the next evaluation records again, with a barrier.
    second->setMemObjects({ a });
    sequence->eval();
    EXPECT_EQ(sequence->recordedBarrierCount(), 1u);
    // And apart again, after an explicit rerecord.
    second->setMemObjects({ b });
    sequence->rerecord();
    EXPECT_EQ(sequence->recordedBarrierCount(), 0u);
    sequence->eval();
    auto values = read({ a, b });
    EXPECT_EQ(values[0], plus(iota(0), 4));
    EXPECT_EQ(values[1], plus(iota(50), 2));
}

TEST_F(BarrierTest, ImagesAreOrdered)
{
    std::vector<float> texels(16 * 16);
    std::iota(texels.begin(), texels.end(), 0.0f);
    auto image = mgr().imageT<float>(texels, 16, 16, 1);
    auto out = mgr().tensorT<float>(std::vector<float>(texels.size(), 0.0f));
    const char* doubleImage = R"(
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(set = 0, binding = 0, r32f) uniform image2D picture;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(picture, p, imageLoad(picture, p) * 2.0);
}
)";
    auto doubling = mgr().algorithm({ image }, compile(doubleImage), { 1, 1, 1 });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ image })
      ->record<kp::OpAlgoDispatch>(doubling)
      ->record<kp::OpAlgoDispatch>(doubling)
      ->record<kp::OpCopy>({ image, out })
      ->record<kp::OpSyncLocal>({ image, out });
    sequence->eval();
    for (size_t i = 0; i < texels.size(); ++i) {
        EXPECT_EQ(image->vector()[i], texels[i] * 4.0f) << i;
        EXPECT_EQ(out->vector()[i], texels[i] * 4.0f) << i;
    }
}

TEST_F(BarrierTest, SubmissionsOfSeveralSequencesOnOneQueueAreOrdered)
{
    // b's batch reads what a's batch, still running, writes: the sequences
    // order it after a's (a barrier in front of the submission).
    auto source = tensor(iota(9));
    auto middle = tensor(std::vector<uint32_t>(kCount, 0));
    auto target = tensor(std::vector<uint32_t>(kCount, 0));
    mgr().sequence()->eval<kp::OpSyncDevice>({ source, middle, target });
    auto a = mgr().sequence();
    auto b = mgr().sequence();
    a->record<kp::OpAlgoDispatch>(algorithm(kPlusOne, { source, middle }));
    b->record<kp::OpAlgoDispatch>(algorithm(kPlusOne, { middle, target }));
    for (int round = 0; round < 3; ++round) {
        a->evalAsync();
        b->evalAsync();
        b->evalAwait();
        a->evalAwait();
        EXPECT_EQ(read({ target })[0], plus(iota(9), 2)) << round;
    }
}

TEST_F(BarrierTest, ObjectsOfAnotherManagerAreRefusedBeforeAnythingIsRecorded)
{
    auto other = makeManager();
    auto mine = tensor(iota(0));
    auto theirs = other->tensorT<uint32_t>(iota(0));
    mgr().sequence()->eval<kp::OpSyncDevice>({ mine });
    auto sequence = mgr().sequence();
    EXPECT_TRUE(throwsWith([&] { sequence->eval<kp::OpCopy>({ theirs, mine }); },
                           { "another Manager" }));
    EXPECT_TRUE(throwsWith([&] { sequence->record<kp::OpSyncDevice>({ theirs }); },
                           { "another Manager" }));
    auto theirAlgorithm = other->algorithm({ theirs }, compile(kIncrement), { 1, 1, 1 });
    EXPECT_TRUE(throwsWith([&] { sequence->record<kp::OpAlgoDispatch>(theirAlgorithm); },
                           { "another Manager" }));
    EXPECT_FALSE(sequence->isRecording());
    // Nothing was recorded: the sequence works on.
    sequence->record<kp::OpAlgoDispatch>(algorithm(kIncrement, { mine }))->eval();
    EXPECT_EQ(read({ mine })[0], plus(iota(0), 1));
    EXPECT_EQ(theirs->vector(), iota(0));
}

// --- Proof that the suites would see a dropped barrier -----------------------------

using DroppedBarrierTest = KomputeTest;

TEST_F(DroppedBarrierTest, AnOperationThatDeclaresTooLittleRacesWithTheNextOne)
{
    // RawDeviceCopy without its barrier claims to touch no memory, so the
    // sequence records nothing before the OpCopy that reads what it wrote:
    // synchronization validation reports the read-after-write hazard, as it
    // would for any barrier the sequence failed to record. (Copies, whose
    // hazards every version of the layer reports.)
    auto source = mgr().tensorT<uint32_t>(iota(0), MemoryTypes::eHost);
    auto middle = mgr().tensorT<uint32_t>(kCount, MemoryTypes::eStorage);
    auto target = mgr().tensorT<uint32_t>(kCount, MemoryTypes::eStorage);
    resetValidationErrors();
    auto sequence = mgr().sequence();
    sequence->record(std::make_shared<RawDeviceCopy>(source, middle, false))
      ->record<kp::OpCopy>({ middle, target });
    EXPECT_EQ(sequence->recordedBarrierCount(), 0u);
    sequence->eval();
    auto errors = validationErrors();
    bool hazard = false;
    for (const auto& error : errors) {
        hazard = hazard || isHazard(error, "READ_AFTER_WRITE");
    }
    EXPECT_TRUE(hazard) << errors.size() << " validation error(s), none the expected hazard";
    resetValidationErrors();
}
