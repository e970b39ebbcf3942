// SPDX-License-Identifier: Apache-2.0
// kp::Algorithm: creation, getters, rebuild and destroy; the checks made on
// a shader before the driver sees it (bad SPIR-V, bindings that do not match
// the objects given, destroyed objects); and the built-in logistic
// regression shader learning a small dataset.
#include "DispatchTestHelpers.hpp"

#include <cmath>
#include <random>

using namespace kp_test;

namespace {

// out[i] = in[i] * spec + push
const char* kAffineShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const float scale = 1.0;
layout(push_constant) uniform Push { float offset; } push;
layout(set = 0, binding = 0) readonly buffer In { float values[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float results[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    results[i] = values[i] * scale + push.offset;
}
)";

// b[i] = a[i] * FACTOR; bindings 0 and 1 only.
const char* kTwoBindingShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    b[i] = a[i] * FACTOR;
}
)";

const char* kThreeBindingShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    c[i] = a[i] + b[i];
}
)";

std::vector<uint32_t>
affineSpirv()
{
    static const std::vector<uint32_t> spirv = compile(kAffineShader);
    return spirv;
}

std::vector<uint32_t>
scaleSpirv(float factor)
{
    return compile(kTwoBindingShader, { { "FACTOR", std::to_string(factor) } });
}

std::vector<float>
dispatchAndRead(kp::Manager& mgr,
                const std::shared_ptr<kp::Algorithm>& algorithm,
                const std::shared_ptr<kp::TensorT<float>>& out)
{
    std::vector<std::shared_ptr<kp::Memory>> objects = algorithm->getMemObjects();
    mgr.sequence()
      ->record<kp::OpSyncDevice>(objects)
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    return out->vector();
}

} // namespace

using AlgorithmTest = KomputeTest;

// --- Creation and getters ---------------------------------------------------

TEST_F(AlgorithmTest, CreatedWithObjectsAndSpirvIsInitAndRuns)
{
    auto in = mgr().tensor({ 1.0f, 2.0f, 3.0f });
    auto out = mgr().tensor({ 0.0f, 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, affineSpirv(), {}, { 2.0f }, { 0.5f });

    EXPECT_TRUE(algorithm->isInit());
    ASSERT_EQ(algorithm->getMemObjects().size(), 2u);
    EXPECT_EQ(algorithm->getMemObjects()[0], in);
    EXPECT_EQ(algorithm->getMemObjects()[1], out);
    // Workgroup x = 0: the first object's size.
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 3, 1, 1 }));
    EXPECT_EQ(algorithm->getSpecializationConstants<float>(), (std::vector<float>{ 2.0f }));
    EXPECT_EQ(algorithm->getPushConstants<float>(), (std::vector<float>{ 0.5f }));
    EXPECT_TRUE(algorithm->getPipeline());
    EXPECT_TRUE(algorithm->getPipelineLayout());
    EXPECT_TRUE(algorithm->getDescriptorSet());

    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out), (std::vector<float>{ 2.5f, 4.5f, 6.5f }));
}

TEST_F(AlgorithmTest, UpstreamConstructorOnTheManagersDevice)
{
    auto in = mgr().tensor({ 1.0f, -1.0f });
    auto out = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = std::make_shared<kp::Algorithm>(mgr().getVkDevice(),
                                                     std::vector<std::shared_ptr<kp::Memory>>{ in, out },
                                                     affineSpirv(),
                                                     kp::Workgroup{ 2, 1, 1 },
                                                     std::vector<float>{ 3.0f },
                                                     std::vector<float>{ 1.0f });
    EXPECT_TRUE(algorithm->isInit());
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out), (std::vector<float>{ 4.0f, -2.0f }));
}

TEST_F(AlgorithmTest, EmptyAlgorithmIsNotInitUntilRebuilt)
{
    auto algorithm = mgr().algorithm();
    EXPECT_FALSE(algorithm->isInit());
    EXPECT_TRUE(algorithm->getMemObjects().empty());

    auto in = mgr().tensor({ 2.0f, 4.0f });
    auto out = mgr().tensor({ 0.0f, 0.0f });
    // Objects without SPIR-V: still nothing built (upstream).
    auto noSpirv = mgr().algorithm({ in, out });
    EXPECT_FALSE(noSpirv->isInit());

    // Dispatching an unbuilt algorithm is a clear error, not a crash.
    EXPECT_TRUE(throwsWith<kp::DestroyedError>(
      [&] { mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm); }, { "not built" }));
    EXPECT_TRUE(throwsWith<kp::DestroyedError>(
      [&] { mgr().sequence()->record<kp::OpAlgoDispatch>(noSpirv); }, { "not built" }));

    algorithm->rebuild<float, float>({ in, out }, affineSpirv(), {}, { 0.5f }, { 1.0f });
    EXPECT_TRUE(algorithm->isInit());
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out), (std::vector<float>{ 2.0f, 3.0f }));
}

TEST_F(AlgorithmTest, RebuildWithEmptyConstantsKeepsThePreviousOnes)
{
    auto in = mgr().tensor({ 1.0f, 2.0f });
    auto out = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, affineSpirv(), {}, { 10.0f }, { 1.0f });
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out), (std::vector<float>{ 11.0f, 21.0f }));

    auto in3 = mgr().tensor({ 1.0f, 2.0f, 3.0f });
    auto out3 = mgr().tensor({ 0.0f, 0.0f, 0.0f });
    algorithm->rebuild({ in3, out3 }, affineSpirv());
    EXPECT_EQ(algorithm->getSpecializationConstants<float>(), (std::vector<float>{ 10.0f }));
    EXPECT_EQ(algorithm->getPushConstants<float>(), (std::vector<float>{ 1.0f }));
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ 3, 1, 1 }));
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out3), (std::vector<float>{ 11.0f, 21.0f, 31.0f }));

    algorithm->rebuild<float, float>({ in3, out3 }, affineSpirv(), { 1, 1, 1 }, { -1.0f }, {});
    EXPECT_EQ(algorithm->getSpecializationConstants<float>(), (std::vector<float>{ -1.0f }));
    EXPECT_EQ(algorithm->getPushConstants<float>(), (std::vector<float>{ 1.0f }));
    out3->setData(std::vector<float>{ 9.0f, 9.0f, 9.0f });
    // Workgroup {1,1,1}: only element 0 is computed.
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out3), (std::vector<float>{ 0.0f, 9.0f, 9.0f }));
}

TEST_F(AlgorithmTest, SetPushConstantsChecksTheSize)
{
    auto in = mgr().tensor({ 1.0f });
    auto out = mgr().tensor({ 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, affineSpirv(), {}, { 1.0f }, { 0.0f });
    algorithm->setPushConstants(std::vector<float>{ 7.0f });
    EXPECT_EQ(algorithm->getPushConstants<float>(), (std::vector<float>{ 7.0f }));
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out), (std::vector<float>{ 8.0f }));

    float raw = 3.0f;
    algorithm->setPushConstants(&raw, 1, sizeof(float));
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out), (std::vector<float>{ 4.0f }));

    EXPECT_TRUE(throwsWith([&] { algorithm->setPushConstants(std::vector<float>{ 1.0f, 2.0f }); },
                           { "8 bytes", "4 bytes" }));
    EXPECT_TRUE(throwsWith([&] { algorithm->setPushConstants(std::vector<double>{ 1.0 }); },
                           { "8 bytes", "float64", "4 bytes" }));
    // The failed calls changed nothing.
    EXPECT_EQ(algorithm->getPushConstants<float>(), (std::vector<float>{ 3.0f }));
}

TEST_F(AlgorithmTest, DestroyIsIdempotentAndLeavesAnInertObject)
{
    auto in = mgr().tensor({ 1.0f });
    auto out = mgr().tensor({ 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, affineSpirv(), {}, { 1.0f }, { 0.0f });
    algorithm->destroy();
    EXPECT_FALSE(algorithm->isInit());
    EXPECT_FALSE(algorithm->getPipeline());
    algorithm->destroy();
    EXPECT_TRUE(throwsWith<kp::DestroyedError>(
      [&] { mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm); }, { "OpAlgoDispatch" }));
    // It can be built again.
    algorithm->rebuild({ in, out }, affineSpirv());
    EXPECT_TRUE(algorithm->isInit());
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out), (std::vector<float>{ 1.0f }));
}

TEST_F(AlgorithmTest, ManagerDestroyLeavesTheAlgorithmInert)
{
    auto in = mgr().tensor({ 1.0f });
    auto out = mgr().tensor({ 0.0f });
    auto algorithm = mgr().algorithm({ in, out }, affineSpirv(), {}, { 1.0f }, { 0.0f });
    auto sequence = mgr().sequence();
    mgr().destroy();
    EXPECT_FALSE(algorithm->isInit());
    EXPECT_THROW(sequence->record<kp::OpAlgoDispatch>(algorithm), kp::DestroyedError);
    EXPECT_THROW(algorithm->rebuild({ in, out }, affineSpirv()), kp::DestroyedError);
    algorithm->destroy(); // harmless
}

TEST_F(AlgorithmTest, AlgorithmsOfOneShaderShareTheManagersPipelineCache)
{
    // Many algorithms of one shader: each builds (from the shared cache) and
    // computes its own result.
    std::vector<std::shared_ptr<kp::TensorT<float>>> outs;
    std::vector<std::shared_ptr<kp::Algorithm>> algorithms;
    auto in = mgr().tensor({ 1.0f, 2.0f });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ in });
    for (int i = 0; i < 20; ++i) {
        outs.push_back(mgr().tensor({ 0.0f, 0.0f }));
        algorithms.push_back(mgr().algorithm<float, float>(
          { in, outs.back() }, affineSpirv(), {}, { 1.0f }, { static_cast<float>(i) }));
        sequence->record<kp::OpAlgoDispatch>(algorithms.back());
    }
    std::vector<std::shared_ptr<kp::Memory>> all(outs.begin(), outs.end());
    sequence->record<kp::OpSyncLocal>(all)->eval();
    for (int i = 0; i < 20; ++i) {
        EXPECT_EQ(outs[i]->vector(),
                  (std::vector<float>{ 1.0f + static_cast<float>(i), 2.0f + static_cast<float>(i) }))
          << "algorithm " << i;
    }
}

// --- Bad SPIR-V ---------------------------------------------------------------

TEST_F(AlgorithmTest, EmptySpirvOnRebuildThrows)
{
    auto in = mgr().tensor({ 1.0f });
    auto out = mgr().tensor({ 0.0f });
    auto algorithm = mgr().algorithm();
    EXPECT_TRUE(throwsWith([&] { algorithm->rebuild({ in, out }, {}); }, { "SPIR-V", "empty" }));
    EXPECT_FALSE(algorithm->isInit());

    // A built algorithm stays as it was when a rebuild is refused.
    auto built = mgr().algorithm({ in, out }, affineSpirv(), {}, { 2.0f }, { 0.0f });
    EXPECT_THROW(built->rebuild({ in, out }, {}), kp::Error);
    EXPECT_TRUE(built->isInit());
    EXPECT_EQ(dispatchAndRead(mgr(), built, out), (std::vector<float>{ 2.0f }));
}

TEST_F(AlgorithmTest, RandomWordsAreRejected)
{
    auto in = mgr().tensor({ 1.0f });
    auto out = mgr().tensor({ 0.0f });
    std::mt19937 random(1234);
    std::vector<uint32_t> words(64);
    for (auto& word : words) {
        word = random();
    }
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ in, out }, words); }, { "SPIR-V", "not valid" }));

    // With a valid header but garbage after it.
    words[0] = 0x07230203;
    words[1] = 0x00010000;
    words[2] = 0;
    words[3] = 100;
    words[4] = 0;
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ in, out }, words); }, { "SPIR-V", "not valid" }));

    // Upstream's crash case: a 5-word module that is only a header.
    std::vector<uint32_t> header = { 0x07230203, 0x00010000, 0, 1, 0 };
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ in, out }, header); }, { "SPIR-V" }));

    // A valid module with one word cut off.
    auto truncated = affineSpirv();
    truncated.pop_back();
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ in, out }, truncated, {}, { 1.0f }, { 0.0f }); },
                           { "SPIR-V" }));
}

TEST_F(AlgorithmTest, SpirvWithoutAMainEntryPointIsRejected)
{
    auto in = mgr().tensor({ 1.0f });
    auto out = mgr().tensor({ 0.0f });
    // GLSL's entry point is always "main": rename it in the module
    // ("main" -> "mxin"), which leaves the module valid.
    auto spirv = scaleSpirv(1.0f);
    bool renamed = false;
    for (size_t i = 5; i < spirv.size() && !renamed; i += spirv[i] >> 16) {
        if ((spirv[i] & 0xFFFF) == 15 /* OpEntryPoint */) {
            ASSERT_EQ(spirv[i + 3], 0x6E69616Du); // "main"
            spirv[i + 3] = 0x6E69786Du;           // "mxin"
            renamed = true;
        }
        ASSERT_NE(spirv[i] >> 16, 0u);
    }
    ASSERT_TRUE(renamed);
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ in, out }, spirv); }, { "entry point", "main" }));
}

// --- Bindings -------------------------------------------------------------------

TEST_F(AlgorithmTest, MoreBindingsThanObjectsNamesTheMissingBinding)
{
    auto a = mgr().tensor({ 1.0f });
    auto b = mgr().tensor({ 2.0f });
    auto spirv = compile(kThreeBindingShader);
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ a, b }, spirv); },
                           { "binding 2", "2 memory object(s)" }));
}

TEST_F(AlgorithmTest, FewerBindingsThanObjectsNamesTheExtraObject)
{
    auto a = mgr().tensor({ 1.0f });
    auto b = mgr().tensor({ 2.0f });
    auto c = mgr().tensor({ 3.0f });
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ a, b, c }, scaleSpirv(2.0f)); },
                           { "Memory object 2", "no binding 2", "2 binding(s)" }));
}

TEST_F(AlgorithmTest, ImageBindingGivenATensorIsRejected)
{
    const char* source = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, r32f) uniform image2D img;
void main()
{
    imageStore(img, ivec2(gl_GlobalInvocationID.xy), vec4(1.0));
}
)";
    auto tensor = mgr().tensor({ 1.0f, 2.0f });
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ tensor }, compile(source)); },
                           { "Binding 0", "storage image", "tensor" }));
}

TEST_F(AlgorithmTest, UniformBufferBindingIsRejected)
{
    const char* source = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform Params { float scale; } params;
layout(set = 0, binding = 1) buffer Out { float v[]; };
void main() { v[gl_GlobalInvocationID.x] = params.scale; }
)";
    auto a = mgr().tensor({ 1.0f });
    auto b = mgr().tensor({ 1.0f });
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ a, b }, compile(source)); },
                           { "Binding 0", "uniform buffer" }));
}

TEST_F(AlgorithmTest, BindingOutsideSetZeroIsRejected)
{
    const char* source = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 1, binding = 0) buffer Out { float v[]; };
void main() { v[gl_GlobalInvocationID.x] = 1.0; }
)";
    auto a = mgr().tensor({ 1.0f });
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ a }, compile(source)); },
                           { "descriptor set 1", "set 0" }));
}

TEST_F(AlgorithmTest, NullObjectIsRejected)
{
    auto a = mgr().tensor({ 1.0f });
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ a, nullptr }, scaleSpirv(1.0f)); },
                           { "memory object 1 is null" }));
}

TEST_F(AlgorithmTest, ObjectsOfAnotherManagerAreRejected)
{
    auto other = makeManager();
    auto a = mgr().tensor({ 1.0f });
    auto b = other->tensor({ 1.0f });
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ a, b }, scaleSpirv(1.0f)); },
                           { "memory object 1", "another Manager" }));
}

// --- Destroyed objects -------------------------------------------------------------

TEST_F(AlgorithmTest, DestroyedTensorAtCreationThrows)
{
    auto a = mgr().tensor({ 1.0f });
    auto b = mgr().tensor({ 1.0f });
    b->destroy();
    EXPECT_THROW(mgr().algorithm({ a, b }, scaleSpirv(1.0f)), kp::DestroyedError);
}

TEST_F(AlgorithmTest, TensorDestroyedBeforeRecordThrowsDestroyedError)
{
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ a, b }, scaleSpirv(2.0f));
    b->destroy();
    EXPECT_TRUE(throwsWith<kp::DestroyedError>(
      [&] { mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm); },
      { "memory object 1", "destroyed" }));
}

TEST_F(AlgorithmTest, TensorDestroyedAfterRecordThrowsAtEval)
{
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ a, b }, scaleSpirv(2.0f));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpAlgoDispatch>(algorithm);
    sequence->eval();
    a->destroy();
    EXPECT_TRUE(throwsWith<kp::DestroyedError>([&] { sequence->eval(); },
                                               { "memory object 0", "destroyed" }));
    EXPECT_FALSE(sequence->isRunning());
    // The sequence is still usable for other work.
    auto c = mgr().tensor({ 5.0f });
    sequence->eval<kp::OpSyncDevice>({ c })->eval<kp::OpSyncLocal>({ c });
    EXPECT_EQ(c->vector(), (std::vector<float>{ 5.0f }));
}

TEST_F(AlgorithmTest, AlgorithmDestroyedAfterRecordThrowsAtEval)
{
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ a, b }, scaleSpirv(2.0f));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ a })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ b })
      ->eval();
    EXPECT_EQ(b->vector(), (std::vector<float>{ 2.0f, 4.0f }));
    algorithm->destroy();
    EXPECT_TRUE(throwsWith<kp::DestroyedError>([&] { sequence->eval(); }, { "OpAlgoDispatch" }));
    EXPECT_FALSE(sequence->isRunning());
}

// A failed re-recording keeps every operation, so that once the cause is
// fixed the next evaluation records and runs the whole batch.
TEST_F(AlgorithmTest, RecordedSequenceRunsAgainAfterAFailedEvalAndARebuild)
{
    auto a = mgr().tensor({ 1.0f, 2.0f });
    auto b = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ a, b }, scaleSpirv(2.0f));
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ a })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ b })
      ->eval();
    algorithm->destroy();
    EXPECT_THROW(sequence->eval(), kp::DestroyedError);
    algorithm->rebuild({ a, b }, scaleSpirv(3.0f));
    sequence->eval();
    EXPECT_EQ(b->vector(), (std::vector<float>{ 3.0f, 6.0f }));
}

TEST_F(AlgorithmTest, TensorReleasedByTheUserKeepsTheAlgorithmWorking)
{
    // The algorithm holds its objects: dropping the user's handles is fine.
    auto out = mgr().tensor({ 0.0f, 0.0f });
    std::shared_ptr<kp::Algorithm> algorithm;
    {
        auto in = mgr().tensor({ 3.0f, 4.0f });
        algorithm = mgr().algorithm({ in, out }, scaleSpirv(2.0f));
    }
    EXPECT_EQ(dispatchAndRead(mgr(), algorithm, out), (std::vector<float>{ 6.0f, 8.0f }));
}

// --- Logistic regression (upstream's example) ------------------------------------

namespace {

struct Dataset
{
    std::vector<float> xi, xj, y;
};

// Two features; label 1 when xi + xj > 1. Linearly separable with a margin.
Dataset
separableDataset()
{
    Dataset data;
    std::mt19937 random(7);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    while (data.y.size() < 32) {
        float a = uniform(random);
        float b = uniform(random);
        float s = a + b;
        if (std::fabs(s - 1.0f) < 0.25f) {
            continue;
        }
        data.xi.push_back(a);
        data.xj.push_back(b);
        data.y.push_back(s > 1.0f ? 1.0f : 0.0f);
    }
    return data;
}

} // namespace

class LogisticRegressionTest : public KomputeTest
{};

TEST_F(LogisticRegressionTest, ConvergesOnASeparableDataset)
{
    Dataset data = separableDataset();
    const uint32_t m = static_cast<uint32_t>(data.y.size());
    const float learningRate = 2.0f;
    const int iterations = 300;

    auto xi = mgr().tensor(data.xi);
    auto xj = mgr().tensor(data.xj);
    auto y = mgr().tensor(data.y);
    auto weights = mgr().tensor({ 0.0f, 0.0f });
    auto gradientI = mgr().tensor(std::vector<float>(m, 0.0f));
    auto gradientJ = mgr().tensor(std::vector<float>(m, 0.0f));
    auto bias = mgr().tensor({ 0.0f });
    auto gradientBias = mgr().tensor(std::vector<float>(m, 0.0f));
    auto loss = mgr().tensor(std::vector<float>(m, 0.0f));

    std::vector<std::shared_ptr<kp::Memory>> params = { xi, xj, y, weights, gradientI,
                                                        gradientJ, bias, gradientBias, loss };
    std::vector<uint32_t> spirv(kp::SHADERLOGISTICREGRESSION_COMP_SPV.begin(),
                                kp::SHADERLOGISTICREGRESSION_COMP_SPV.end());
    auto algorithm =
      mgr().algorithm<float, float>(params, spirv, {}, { static_cast<float>(m) }, {});
    EXPECT_EQ(algorithm->getWorkgroup(), (kp::Workgroup{ m, 1, 1 }));

    mgr().sequence()->eval<kp::OpSyncDevice>({ xi, xj, y });
    auto step = mgr().sequence();
    step->record<kp::OpSyncDevice>({ weights, bias })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ gradientI, gradientJ, gradientBias, loss });

    // The same training on the host, to check the device's gradients.
    double hostW0 = 0.0, hostW1 = 0.0, hostB = 0.0;
    std::vector<float> losses;
    for (int iteration = 0; iteration < iterations; ++iteration) {
        step->eval();

        float totalLoss = 0.0f;
        float w0 = weights->data()[0], w1 = weights->data()[1], b = bias->data()[0];
        double hostG0 = 0.0, hostG1 = 0.0, hostGb = 0.0;
        for (uint32_t k = 0; k < m; ++k) {
            w0 -= learningRate * gradientI->data()[k];
            w1 -= learningRate * gradientJ->data()[k];
            b -= learningRate * gradientBias->data()[k];
            totalLoss += loss->data()[k];

            double z = hostW0 * data.xi[k] + hostW1 * data.xj[k] + hostB;
            double error = 1.0 / (1.0 + std::exp(-z)) - data.y[k];
            hostG0 += error * data.xi[k] / m;
            hostG1 += error * data.xj[k] / m;
            hostGb += error / m;
        }
        weights->data()[0] = w0;
        weights->data()[1] = w1;
        bias->data()[0] = b;
        hostW0 -= learningRate * hostG0;
        hostW1 -= learningRate * hostG1;
        hostB -= learningRate * hostGb;
        losses.push_back(totalLoss);
    }

    // The loss goes down, steadily.
    ASSERT_EQ(losses.size(), static_cast<size_t>(iterations));
    EXPECT_NEAR(losses.front(), std::log(2.0f), 1e-4f); // all predictions 0.5 at first
    for (size_t i = 1; i < losses.size(); ++i) {
        ASSERT_LE(losses[i], losses[i - 1] + 1e-6f) << "iteration " << i;
    }
    EXPECT_LT(losses.back(), losses.front() * 0.5f);

    // The weights are those the host computes (up to float rounding).
    float w0 = weights->data()[0], w1 = weights->data()[1], b = bias->data()[0];
    EXPECT_NEAR(w0, hostW0, 1e-2 * (1.0 + std::fabs(hostW0)));
    EXPECT_NEAR(w1, hostW1, 1e-2 * (1.0 + std::fabs(hostW1)));
    EXPECT_NEAR(b, hostB, 1e-2 * (1.0 + std::fabs(hostB)));
    // Both features matter equally; the boundary is xi + xj = 1.
    EXPECT_GT(w0, 0.0f);
    EXPECT_GT(w1, 0.0f);
    EXPECT_LT(b, 0.0f);

    // Every sample is classified correctly.
    uint32_t correct = 0;
    for (uint32_t k = 0; k < m; ++k) {
        float z = w0 * data.xi[k] + w1 * data.xj[k] + b;
        float prediction = 1.0f / (1.0f + std::exp(-z));
        correct += (prediction > 0.5f) == (data.y[k] > 0.5f) ? 1 : 0;
    }
    EXPECT_EQ(correct, m) << "weights " << w0 << ", " << w1 << ", bias " << b;
}

