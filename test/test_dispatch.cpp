// SPDX-License-Identifier: Apache-2.0
// Dispatching algorithms: OpAlgoDispatch and OpMult, chains of syncs and
// dispatches that need no user barriers (synchronization validation is on),
// long sequences, algorithms sharing tensors, rebuilding and rebinding an
// algorithm under a recorded sequence, the pipeline cache file, and a custom
// operation that records a dispatch itself.
#include "DispatchTestHelpers.hpp"

#include <random>

using namespace kp_test;

namespace {

using Objects = std::vector<std::shared_ptr<kp::Memory>>;

// b[i] = a[i] * FACTOR + OFFSET
const char* kScaleShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    b[i] = a[i] * FACTOR + OFFSET;
}
)";

// v[i] = v[i] * 2 + 1, in place.
const char* kInPlaceShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer V { float v[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    v[i] = v[i] * 2.0 + 1.0;
}
)";

// c[i] = a[i] OP b[i]
const char* kBinaryShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    c[i] = a[i] OP b[i];
}
)";

std::vector<uint32_t>
scaleSpirv(float factor, float offset = 0.0f)
{
    return compile(kScaleShader,
                   { { "FACTOR", std::to_string(factor) }, { "OFFSET", std::to_string(offset) } });
}

std::vector<uint32_t>
binarySpirv(const char* op)
{
    return compile(kBinaryShader, { { "OP", op } });
}

std::vector<float>
affine(const std::vector<float>& values, float factor, float offset)
{
    std::vector<float> result;
    for (float v : values) {
        result.push_back(v * factor + offset);
    }
    return result;
}

} // namespace

// --- OpAlgoDispatch ---------------------------------------------------------------

class DispatchTest : public KomputeTest
{};

TEST_F(DispatchTest, ArrayMultiplicationExample)
{
    // The seed's example: spec constant 2, push constants 2 then 3.
    auto shader = compile(kArrayMultiplicationShader);
    auto tensorInA = mgr().tensor({ 2., 2., 2. });
    auto tensorInB = mgr().tensor({ 1., 2., 3. });
    auto tensorOutA = mgr().tensorT<uint32_t>({ 0, 0, 0 });
    auto tensorOutB = mgr().tensorT<uint32_t>({ 0, 0, 0 });
    Objects params = { tensorInA, tensorInB, tensorOutA, tensorOutB };

    auto algorithm = mgr().algorithm(params, shader, kp::Workgroup({ 3, 1, 1 }), { 2 }, { 2.0 });
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>(params)
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->eval()
      ->record<kp::OpAlgoDispatch>(algorithm, std::vector<float>{ 3.0 })
      ->eval();
    auto sq = mgr().sequence();
    sq->evalAsync<kp::OpSyncLocal>(params);
    sq->evalAwait();

    EXPECT_EQ(tensorOutA->vector(), (std::vector<uint32_t>{ 4, 8, 12 }));
    EXPECT_EQ(tensorOutB->vector(), (std::vector<uint32_t>{ 10, 10, 10 }));
}

TEST_F(DispatchTest, ChainOfSyncDispatchDispatchSyncNeedsNoBarriers)
{
    std::vector<float> input = { 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f };
    auto a = mgr().tensor(input);
    auto b = mgr().tensor(std::vector<float>(input.size(), 0.0f));
    auto c = mgr().tensor(std::vector<float>(input.size(), 0.0f));
    // b = a * 2 (reads what OpSyncDevice wrote), c = b * 3 + 1 (reads what
    // the first dispatch wrote), then the same in place on c twice.
    auto first = mgr().algorithm({ a, b }, scaleSpirv(2.0f));
    auto second = mgr().algorithm({ b, c }, scaleSpirv(3.0f, 1.0f));
    auto inPlace = mgr().algorithm({ c }, compile(kInPlaceShader));
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ a })
      ->record<kp::OpAlgoDispatch>(first)
      ->record<kp::OpAlgoDispatch>(second)
      ->record<kp::OpAlgoDispatch>(inPlace)
      ->record<kp::OpAlgoDispatch>(inPlace)
      ->record<kp::OpSyncLocal>({ b, c })
      ->eval();
    auto expectedB = affine(input, 2.0f, 0.0f);
    auto expectedC = affine(affine(affine(expectedB, 3.0f, 1.0f), 2.0f, 1.0f), 2.0f, 1.0f);
    EXPECT_EQ(b->vector(), expectedB);
    EXPECT_EQ(c->vector(), expectedC);
}

TEST_F(DispatchTest, ChainAcrossSequencesAndThroughDeviceOnlyMemory)
{
    std::vector<float> input = { -1.0f, 0.5f, 8.0f };
    auto a = mgr().tensor(input);
    auto scratch = mgr().tensor(3, sizeof(float), kp::Memory::DataTypes::eFloat, kp::Memory::MemoryTypes::eStorage);
    auto copy = mgr().tensor(3, sizeof(float), kp::Memory::DataTypes::eFloat, kp::Memory::MemoryTypes::eStorage);
    auto out = mgr().tensor({ 0.0f, 0.0f, 0.0f });
    auto toScratch = mgr().algorithm({ a, scratch }, scaleSpirv(4.0f));
    auto fromCopy = mgr().algorithm({ copy, out }, scaleSpirv(1.0f, -1.0f));

    // Dispatch, copy, dispatch, in separate submissions of separate sequences.
    mgr().sequence()->record<kp::OpSyncDevice>({ a })->record<kp::OpAlgoDispatch>(toScratch)->eval();
    mgr().sequence()->eval<kp::OpCopy>({ scratch, copy });
    mgr().sequence()->record<kp::OpAlgoDispatch>(fromCopy)->record<kp::OpSyncLocal>({ out })->eval();
    EXPECT_EQ(out->vector(), affine(input, 4.0f, -1.0f));
}

TEST_F(DispatchTest, ThousandDispatchesInOneSequence)
{
    auto counters = mgr().tensorT<uint32_t>(std::vector<uint32_t>(16, 5));
    auto algorithm = mgr().algorithm({ counters }, compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Counters { uint counters[]; };
void main() { counters[gl_GlobalInvocationID.x] += gl_GlobalInvocationID.x + 1u; }
)"));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ counters });
    for (int i = 0; i < 1000; ++i) {
        sequence->record<kp::OpAlgoDispatch>(algorithm);
    }
    sequence->record<kp::OpSyncLocal>({ counters })->eval();
    std::vector<uint32_t> expected;
    for (uint32_t i = 0; i < 16; ++i) {
        expected.push_back(5 + 1000 * (i + 1));
    }
    EXPECT_EQ(counters->vector(), expected);

    // Evaluating again re-submits the same 1000 dispatches.
    sequence->eval();
    for (uint32_t i = 0; i < 16; ++i) {
        expected[i] += 1000 * (i + 1);
    }
    EXPECT_EQ(counters->vector(), expected);
}

TEST_F(DispatchTest, SeveralAlgorithmsShareTensors)
{
    std::vector<float> hostA = { 1.0f, 2.0f, 3.0f, 4.0f };
    std::vector<float> hostB = { 0.5f, -1.0f, 2.0f, 0.25f };
    auto a = mgr().tensor(hostA);
    auto b = mgr().tensor(hostB);
    auto sum = mgr().tensor(std::vector<float>(4, 0.0f));
    auto product = mgr().tensor(std::vector<float>(4, 0.0f));
    // sum = a + b and product = a * b read a and b; then a = sum - product
    // overwrites a, which both read before (a write-after-read hazard).
    auto adder = mgr().algorithm({ a, b, sum }, binarySpirv("+"));
    auto multiplier = mgr().algorithm({ a, b, product }, binarySpirv("*"));
    auto combiner = mgr().algorithm({ sum, product, a }, binarySpirv("-"));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ a, b })
      ->record<kp::OpAlgoDispatch>(adder)
      ->record<kp::OpAlgoDispatch>(multiplier)
      ->record<kp::OpAlgoDispatch>(combiner)
      ->record<kp::OpSyncLocal>({ a, sum, product });

    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(round);
        sequence->eval();
        std::vector<float> expectedSum, expectedProduct;
        for (size_t i = 0; i < hostA.size(); ++i) {
            expectedSum.push_back(hostA[i] + hostB[i]);
            expectedProduct.push_back(hostA[i] * hostB[i]);
            hostA[i] = expectedSum[i] - expectedProduct[i];
        }
        EXPECT_EQ(sum->vector(), expectedSum);
        EXPECT_EQ(product->vector(), expectedProduct);
        EXPECT_EQ(a->vector(), hostA);
    }
}

TEST_F(DispatchTest, RecordedSequenceFollowsARebuild)
{
    std::vector<float> input = { 1.0f, 2.0f, 3.0f };
    std::vector<float> input2 = { 10.0f, 20.0f, 30.0f, 40.0f };
    auto in = mgr().tensor(input);
    auto out = mgr().tensor({ 0.0f, 0.0f, 0.0f });
    auto in2 = mgr().tensor(input2);
    auto out2 = mgr().tensor({ 0.0f, 0.0f, 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, scaleSpirv(2.0f));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ in, in2 })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out, out2 })
      ->eval();
    EXPECT_EQ(out->vector(), affine(input, 2.0f, 0.0f));

    // Another shader: the sequence records itself again at its next eval.
    algorithm->rebuild({ in, out }, scaleSpirv(3.0f, 0.5f));
    sequence->eval();
    EXPECT_EQ(out->vector(), affine(input, 3.0f, 0.5f));

    // Other tensors (of another size: the workgroup follows).
    algorithm->rebuild({ in2, out2 }, scaleSpirv(-1.0f));
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 4, 1, 1 }));
    sequence->eval();
    EXPECT_EQ(out2->vector(), affine(input2, -1.0f, 0.0f));
    EXPECT_EQ(out->vector(), affine(input, 3.0f, 0.5f));

    // Re-evaluating without a change re-submits as it is.
    in2->setData(std::vector<float>{ 1.0f, 1.0f, 1.0f, 1.0f });
    sequence->eval();
    EXPECT_EQ(out2->vector(), (std::vector<float>{ -1.0f, -1.0f, -1.0f, -1.0f }));
}

TEST_F(DispatchTest, RecordedSequenceFollowsSetMemObjects)
{
    std::vector<float> input1 = { 1.0f, 2.0f };
    std::vector<float> input2 = { 5.0f, 7.0f };
    auto in1 = mgr().tensor(input1);
    auto out1 = mgr().tensor({ 0.0f, 0.0f });
    auto in2 = mgr().tensor(input2);
    auto out2 = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ in1, out1 }, scaleSpirv(10.0f));
    vk::Pipeline pipeline = algorithm->getPipeline();

    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ in1, in2, out1, out2 })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out1, out2 })
      ->eval();
    EXPECT_EQ(out1->vector(), affine(input1, 10.0f, 0.0f));
    EXPECT_EQ(out2->vector(), (std::vector<float>{ 0.0f, 0.0f }));

    // Rebind: same pipeline, other tensors; the recorded sequence follows.
    out1->setData(std::vector<float>{ -1.0f, -1.0f });
    algorithm->setMemObjects({ in2, out2 });
    EXPECT_EQ(algorithm->getPipeline(), pipeline);
    ASSERT_EQ(algorithm->getMemObjects().size(), 2u);
    EXPECT_EQ(algorithm->getMemObjects()[0], in2);
    sequence->eval();
    EXPECT_EQ(out2->vector(), affine(input2, 10.0f, 0.0f));
    EXPECT_EQ(out1->vector(), (std::vector<float>{ -1.0f, -1.0f })); // not written any more

    // Cross-wired: reads in1, writes out2.
    algorithm->setMemObjects({ in1, out2 });
    sequence->eval();
    EXPECT_EQ(out2->vector(), affine(input1, 10.0f, 0.0f));
}

TEST_F(DispatchTest, RebindAndRebuildWaitForASubmissionInFlight)
{
    // The descriptor set and pipeline of a submitted batch must not change
    // under it: setMemObjects and rebuild wait for it first.
    std::vector<float> input(4096);
    for (size_t i = 0; i < input.size(); ++i) {
        input[i] = static_cast<float>(i % 97);
    }
    auto in = mgr().tensor(input);
    auto out = mgr().tensor(std::vector<float>(input.size(), 0.0f));
    auto out2 = mgr().tensor(std::vector<float>(input.size(), 0.0f));
    auto algorithm = mgr().algorithm({ in, out }, scaleSpirv(2.0f));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ in })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out, out2 });

    sequence->evalAsync();
    algorithm->setMemObjects({ in, out2 });
    sequence->evalAwait();
    EXPECT_EQ(out->vector(), affine(input, 2.0f, 0.0f));
    EXPECT_EQ(out2->vector(), std::vector<float>(input.size(), 0.0f));

    sequence->evalAsync();
    algorithm->rebuild({ in, out }, scaleSpirv(5.0f));
    sequence->evalAwait();
    EXPECT_EQ(out2->vector(), affine(input, 2.0f, 0.0f));

    sequence->eval();
    EXPECT_EQ(out->vector(), affine(input, 5.0f, 0.0f));
}

TEST_F(DispatchTest, SetMemObjectsRejectsAnotherLayout)
{
    auto in = mgr().tensor({ 1.0f });
    auto out = mgr().tensor({ 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, scaleSpirv(1.0f));
    EXPECT_TRUE(throwsWith([&] { algorithm->setMemObjects({ in }); },
                           { "2 binding(s)", "1 memory object(s)" }));
    EXPECT_TRUE(throwsWith([&] { algorithm->setMemObjects({ in, nullptr }); }, { "null" }));
    auto other = makeManager();
    auto foreign = other->tensor({ 0.0f });
    EXPECT_TRUE(throwsWith([&] { algorithm->setMemObjects({ in, foreign }); }, { "another Manager" }));
    auto destroyed = mgr().tensor({ 0.0f });
    destroyed->destroy();
    EXPECT_THROW(algorithm->setMemObjects({ in, destroyed }), kp::DestroyedError);
    // Still bound as before.
    EXPECT_EQ(algorithm->getMemObjects()[1], out);
}

TEST_F(DispatchTest, SetWorkgroupWithoutRebuild)
{
    auto in = mgr().tensor({ 1.0f, 2.0f, 3.0f, 4.0f });
    auto out = mgr().tensor({ 0.0f, 0.0f, 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, scaleSpirv(2.0f), { 2, 1, 1 });
    vk::Pipeline pipeline = algorithm->getPipeline();
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ in, out })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_EQ(out->vector(), (std::vector<float>{ 2.0f, 4.0f, 0.0f, 0.0f }));

    algorithm->setWorkgroup({ 4, 1, 1 });
    EXPECT_EQ(algorithm->getPipeline(), pipeline);
    mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ out })->eval();
    EXPECT_EQ(out->vector(), (std::vector<float>{ 2.0f, 4.0f, 6.0f, 8.0f }));
}

TEST_F(DispatchTest, EvalAsyncAndAwait)
{
    std::vector<float> input(256);
    for (size_t i = 0; i < input.size(); ++i) {
        input[i] = static_cast<float>(i);
    }
    auto in = mgr().tensor(input);
    auto out = mgr().tensor(std::vector<float>(input.size(), 0.0f));
    auto algorithm = mgr().algorithm({ in, out }, scaleSpirv(0.5f, 1.0f));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ in })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out });
    sequence->evalAsync();
    sequence->evalAwait();
    EXPECT_FALSE(sequence->isRunning());
    EXPECT_EQ(out->vector(), affine(input, 0.5f, 1.0f));
}


// --- OpMult ------------------------------------------------------------------------

class OpMultTest : public KomputeTest
{};

TEST_F(OpMultTest, MultipliesElementWise)
{
    auto a = mgr().tensor({ 2.0f, 4.0f, 6.0f });
    auto b = mgr().tensor({ 0.0f, 1.0f, 2.0f });
    auto out = mgr().tensor({ 0.0f, 0.0f, 0.0f });
    auto algorithm = mgr().algorithm();
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ a, b })
      ->record<kp::OpMult>({ a, b, out }, algorithm)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_EQ(out->vector(), (std::vector<float>{ 0.0f, 4.0f, 12.0f }));
    // OpMult rebuilt the algorithm with its shader and the three tensors.
    EXPECT_TRUE(algorithm->isInit());
    EXPECT_EQ(algorithm->getMemObjects().size(), 3u);
}

TEST_F(OpMultTest, SizeThatIsNotAMultipleOfTheLocalSize)
{
    const size_t n = 1000;
    std::mt19937 random(99);
    std::uniform_real_distribution<float> uniform(-10.0f, 10.0f);
    std::vector<float> hostA(n), hostB(n), expected(n);
    for (size_t i = 0; i < n; ++i) {
        hostA[i] = uniform(random);
        hostB[i] = uniform(random);
        expected[i] = hostA[i] * hostB[i];
    }
    auto a = mgr().tensor(hostA);
    auto b = mgr().tensor(hostB);
    auto out = mgr().tensor(std::vector<float>(n, 0.0f));
    // Upstream's form: the algorithm made from the tensors (OpMult rebuilds it).
    auto algorithm = mgr().algorithm({ a, b, out }, std::vector<uint32_t>(kp::SHADEROPMULT_COMP_SPV.begin(), kp::SHADEROPMULT_COMP_SPV.end()));
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ a, b })
      ->record<kp::OpMult>({ a, b, out }, algorithm)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_EQ(out->vector(), expected);
}

TEST_F(OpMultTest, ChainedMultiplications)
{
    auto a = mgr().tensor({ 1.0f, 2.0f, 3.0f });
    auto b = mgr().tensor({ 4.0f, 5.0f, 6.0f });
    auto ab = mgr().tensor({ 0.0f, 0.0f, 0.0f });
    auto abb = mgr().tensor({ 0.0f, 0.0f, 0.0f });
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ a, b })
      ->record<kp::OpMult>({ a, b, ab }, mgr().algorithm())
      ->record<kp::OpMult>({ ab, b, abb }, mgr().algorithm())
      ->record<kp::OpSyncLocal>({ ab, abb })
      ->eval();
    EXPECT_EQ(ab->vector(), (std::vector<float>{ 4.0f, 10.0f, 18.0f }));
    EXPECT_EQ(abb->vector(), (std::vector<float>{ 16.0f, 50.0f, 108.0f }));
}


using OpMultErrorTest = KomputeTest;

TEST_F(OpMultErrorTest, OtherThanThreeTensorsIsRejected)
{
    auto a = mgr().tensor({ 1.0f });
    auto b = mgr().tensor({ 1.0f });
    auto c = mgr().tensor({ 1.0f });
    auto d = mgr().tensor({ 1.0f });
    auto sequence = mgr().sequence();
    EXPECT_TRUE(throwsWith([&] { sequence->record<kp::OpMult>({ a, b }, mgr().algorithm()); },
                           { "exactly 3", "2 given" }));
    EXPECT_TRUE(throwsWith([&] { sequence->record<kp::OpMult>({ a, b, c, d }, mgr().algorithm()); },
                           { "exactly 3", "4 given" }));
    EXPECT_TRUE(throwsWith([&] { sequence->record<kp::OpMult>(Objects{}, mgr().algorithm()); },
                           { "exactly 3", "0 given" }));
}

TEST_F(OpMultErrorTest, NonFloatTensorsAreRejected)
{
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensorT<uint32_t>({ 1, 2 });
    auto out = mgr().tensor({ 0.0f, 0.0f });
    auto doubles = mgr().tensorT<double>({ 0.0, 0.0 });
    EXPECT_TRUE(throwsWith([&] { kp::OpMult({ a, b, out }, mgr().algorithm()); },
                           { "memory object 1", "not a float tensor" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMult({ a, a, doubles }, mgr().algorithm()); },
                           { "memory object 2", "not a float tensor" }));
}

TEST_F(OpMultErrorTest, TensorsOfDifferentSizesOrNullAreRejected)
{
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensor({ 1.0f, 2.0f, 3.0f });
    auto out = mgr().tensor({ 0.0f, 0.0f });
    EXPECT_TRUE(throwsWith([&] { kp::OpMult({ a, b, out }, mgr().algorithm()); }, { "differ in size" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMult({ a, nullptr, out }, mgr().algorithm()); }, { "null" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMult({ a, a, out }, nullptr); }, { "null algorithm" }));
    auto destroyed = mgr().tensor({ 0.0f, 0.0f });
    destroyed->destroy();
    EXPECT_THROW(kp::OpMult({ a, a, destroyed }, mgr().algorithm()), kp::DestroyedError);
}

// --- A custom operation -------------------------------------------------------------

namespace {

/** A user operation that dispatches an algorithm `times` times, with its own
 * barriers (as a custom operation must). */
class RepeatedDispatch : public kp::OpBase
{
  public:
    RepeatedDispatch(std::shared_ptr<kp::Algorithm> algorithm, uint32_t times, bool barriers = true)
      : mAlgorithm(std::move(algorithm))
      , mTimes(times)
      , mBarriers(barriers)
    {
    }

    void record(const vk::CommandBuffer& commandBuffer) override
    {
        ++recordCount;
        for (uint32_t i = 0; i < mTimes; ++i) {
            if (!mBarriers) {
                mAlgorithm->recordBindCore(commandBuffer);
                mAlgorithm->recordBindPush(commandBuffer);
                mAlgorithm->recordDispatch(commandBuffer);
                continue;
            }
            // Earlier copies and dispatches before this dispatch's reads and writes.
            vk::MemoryBarrier barrier(vk::AccessFlagBits::eTransferWrite | vk::AccessFlagBits::eShaderWrite,
                                      vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
            commandBuffer.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer |
                                            vk::PipelineStageFlagBits::eComputeShader,
                                          vk::PipelineStageFlagBits::eComputeShader,
                                          {},
                                          1,
                                          &barrier,
                                          0,
                                          nullptr,
                                          0,
                                          nullptr);
            mAlgorithm->recordBindCore(commandBuffer);
            mAlgorithm->recordBindPush(commandBuffer);
            mAlgorithm->recordDispatch(commandBuffer);
        }
    }
    void preEval(const vk::CommandBuffer&) override { ++preEvalCount; }
    void postEval(const vk::CommandBuffer&) override { ++postEvalCount; }
    // Without barriers of its own it also claims to touch nothing, so that
    // a sequence adds none (on purpose, for the validation test below).
    bool declareAccesses(std::vector<kp::MemoryAccess>&) const override { return !mBarriers; }

    int recordCount = 0;
    int preEvalCount = 0;
    int postEvalCount = 0;

  private:
    std::shared_ptr<kp::Algorithm> mAlgorithm;
    uint32_t mTimes;
    bool mBarriers;
};

} // namespace

class CustomOperationTest : public KomputeTest
{};

TEST_F(CustomOperationTest, SubclassOfOpBaseRecordsADispatch)
{
    std::vector<float> input = { 0.0f, 1.0f, -2.0f, 3.5f };
    auto v = mgr().tensor(input);
    auto algorithm = mgr().algorithm({ v }, compile(kInPlaceShader));
    auto op = std::make_shared<RepeatedDispatch>(algorithm, 3);
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ v })->record(op)->record<kp::OpSyncLocal>({ v })->eval();
    auto expected = affine(affine(affine(input, 2.0f, 1.0f), 2.0f, 1.0f), 2.0f, 1.0f);
    EXPECT_EQ(v->vector(), expected);
    EXPECT_EQ(op->recordCount, 1);
    EXPECT_EQ(op->preEvalCount, 1);
    EXPECT_EQ(op->postEvalCount, 1);

    // Re-evaluating runs its hooks again without recording it again.
    sequence->eval();
    expected = affine(affine(affine(expected, 2.0f, 1.0f), 2.0f, 1.0f), 2.0f, 1.0f);
    EXPECT_EQ(v->vector(), expected);
    EXPECT_EQ(op->recordCount, 1);
    EXPECT_EQ(op->preEvalCount, 2);
    EXPECT_EQ(op->postEvalCount, 2);

    // Mixed with the built-in dispatch in one batch.
    sequence->record<kp::OpSyncDevice>({ v })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record(std::make_shared<RepeatedDispatch>(algorithm, 1))
      ->record<kp::OpSyncLocal>({ v })
      ->eval();
    expected = affine(affine(expected, 2.0f, 1.0f), 2.0f, 1.0f);
    EXPECT_EQ(v->vector(), expected);
}

TEST_F(CustomOperationTest, MissingBarrierAfterADispatchIsReportedBySynchronizationValidation)
{
    // Proves that synchronization validation sees the dispatches of these
    // suites: a copy that reads what a dispatch wrote, with no barrier
    // between them, is a read-after-write hazard. (The layer in use does not
    // report dispatch-after-dispatch hazards, so those cannot be shown.)
    // Layers before 1.4 name the earlier access by its stage, newer ones by
    // its command.
    auto v = mgr().tensor({ 1.0f, 2.0f });
    auto w = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ v }, compile(kInPlaceShader));
    resetValidationErrors();
    mgr()
      .sequence()
      ->record(std::make_shared<RepeatedDispatch>(algorithm, 1, false))
      ->record(std::make_shared<RawDeviceCopy>(v, w, false))
      ->eval();
    auto errors = validationErrors();
    bool hazard = false;
    for (const auto& error : errors) {
        hazard = hazard || (isHazard(error, "READ_AFTER_WRITE") &&
                            (error.find("COMPUTE_SHADER") != std::string::npos ||
                             error.find("vkCmdDispatch") != std::string::npos));
    }
    EXPECT_TRUE(hazard) << errors.size() << " validation error(s), none the expected hazard";
    // Expected here: cleared so that the fixture's check passes.
    resetValidationErrors();
}


// --- Pipeline cache ----------------------------------------------------------------------

using PipelineCacheTest = KomputeTest;

TEST_F(PipelineCacheTest, SavedCacheLoadsIntoAnotherManager)
{
    TempFile file("pipeline.cache");
    auto spirv = scaleSpirv(2.0f, 1.0f);
    {
        auto in = mgr().tensor({ 1.0f, 2.0f });
        auto out = mgr().tensor({ 0.0f, 0.0f });
        auto algorithm = mgr().algorithm({ in, out }, spirv);
        mgr().savePipelineCache(file.path());
    }
    // At least the header VkPipelineCacheHeaderVersionOne (32 bytes).
    ASSERT_GE(file.size(), 32u);

    auto other = makeManager();
    EXPECT_TRUE(other->loadPipelineCache(file.path()));
    auto in = other->tensor({ 3.0f, 4.0f });
    auto out = other->tensor({ 0.0f, 0.0f });
    auto algorithm = other->algorithm({ in, out }, spirv);
    other->sequence()
      ->record<kp::OpSyncDevice>({ in })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_EQ(out->vector(), (std::vector<float>{ 7.0f, 9.0f }));

    // And saved again from there.
    TempFile again("pipeline2.cache");
    other->savePipelineCache(again.path());
    EXPECT_GE(again.size(), 32u);
}

TEST_F(PipelineCacheTest, GarbageCacheFileIsIgnored)
{
    TempFile file("garbage.cache");
    std::vector<uint32_t> garbage(64);
    std::mt19937 random(5);
    for (auto& word : garbage) {
        word = random();
    }
    file.write(garbage);
    {
        LogCapture log;
        EXPECT_FALSE(mgr().loadPipelineCache(file.path()));
        EXPECT_TRUE(log.contains(kp::logger::Level::Warn, file.path()));
    }

    TempFile shortFile("short.cache");
    shortFile.write(std::string("not a cache"));
    EXPECT_FALSE(mgr().loadPipelineCache(shortFile.path()));

    TempFile missing("missing.cache");
    EXPECT_FALSE(mgr().loadPipelineCache(missing.path()));

    // A real cache whose device UUID was changed: from "another device".
    TempFile real("real.cache");
    mgr().savePipelineCache(real.path());
    std::vector<uint8_t> bytes(real.size());
    {
        std::ifstream in(real.path(), std::ios::binary);
        in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    ASSERT_GE(bytes.size(), 32u);
    bytes[16] ^= 0xFF;
    TempFile foreign("foreign.cache");
    foreign.write(bytes.data(), bytes.size());
    EXPECT_FALSE(mgr().loadPipelineCache(foreign.path()));

    // The manager works as before.
    auto in = mgr().tensor({ 1.0f });
    auto out = mgr().tensor({ 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, scaleSpirv(5.0f));
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ in })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_EQ(out->vector(), (std::vector<float>{ 5.0f }));
}
