// SPDX-License-Identifier: Apache-2.0
// Pipelines shared between algorithms: algorithms of the same SPIR-V,
// specialization constants and layout share one shader module, pipeline
// layout and pipeline (Manager::pipelineStats counts them), so creating one
// more costs only its descriptor set; rebinding (setMemObjects) makes no
// pipeline at all.
#include "DispatchTestHelpers.hpp"

#include <thread>

using namespace kp_test;

namespace {

// values[i] = values[i] * scale + push.offset, scale a specialization
// constant.
const char* kScaleAndOffset = R"(
#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const float scale = 1.0;
layout(set = 0, binding = 0) buffer Values { float values[]; };
layout(push_constant) uniform Push { float offset; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    values[i] = values[i] * scale + offset;
}
)";

const std::vector<uint32_t>&
scaleAndOffsetSpirv()
{
    static const std::vector<uint32_t> spirv = compile(kScaleAndOffset);
    return spirv;
}

class PipelineSharingTest : public KomputeTest
{
  protected:
    std::shared_ptr<kp::Algorithm> make(const std::shared_ptr<kp::Memory>& tensor,
                                        float scale,
                                        float offset)
    {
        return mgr().algorithm<float, float>(
          { tensor }, scaleAndOffsetSpirv(), { tensor->size(), 1, 1 }, { scale }, { offset });
    }

    std::vector<float> run(const std::shared_ptr<kp::Algorithm>& algorithm,
                           const std::shared_ptr<kp::TensorT<float>>& tensor)
    {
        mgr()
          .sequence()
          ->record<kp::OpSyncDevice>({ tensor })
          ->record<kp::OpAlgoDispatch>(algorithm)
          ->record<kp::OpSyncLocal>({ tensor })
          ->eval();
        return tensor->vector();
    }
};

TEST_F(PipelineSharingTest, TheSameInputsShareOneShaderModuleLayoutAndPipeline)
{
    auto a = mgr().tensor({ 1.f, 2.f });
    auto b = mgr().tensor({ 10.f, 20.f, 30.f });
    kp::PipelineStats before = mgr().pipelineStats();
    auto first = make(a, 2.f, 1.f);
    kp::PipelineStats afterFirst = mgr().pipelineStats();
    auto second = make(b, 2.f, 5.f); // push constant values are not part of the pipeline
    kp::PipelineStats afterSecond = mgr().pipelineStats();

    EXPECT_EQ(afterFirst.pipelinesCreated - before.pipelinesCreated, 1u);
    EXPECT_EQ(afterFirst.shaderModulesCreated - before.shaderModulesCreated, 1u);
    // The second algorithm made no pipeline object at all.
    EXPECT_EQ(afterSecond.pipelinesCreated, afterFirst.pipelinesCreated);
    EXPECT_EQ(afterSecond.shaderModulesCreated, afterFirst.shaderModulesCreated);
    EXPECT_EQ(afterSecond.livePipelines, afterFirst.livePipelines);
    EXPECT_EQ(first->getPipeline(), second->getPipeline());
    EXPECT_EQ(first->getPipelineLayout(), second->getPipelineLayout());
    // Each has its own descriptor set, so each runs on its own tensors.
    EXPECT_NE(first->getDescriptorSet(), second->getDescriptorSet());
    EXPECT_EQ(run(first, a), (std::vector<float>{ 3.f, 5.f }));
    EXPECT_EQ(run(second, b), (std::vector<float>{ 25.f, 45.f, 65.f }));
}

TEST_F(PipelineSharingTest, OtherConstantsOrLayoutsGetTheirOwnPipeline)
{
    auto a = mgr().tensor({ 1.f, 2.f });
    kp::PipelineStats before = mgr().pipelineStats();
    auto base = make(a, 2.f, 0.f);
    auto otherScale = make(a, 3.f, 0.f); // other specialization constants
    EXPECT_NE(base->getPipeline(), otherScale->getPipeline());
    kp::PipelineStats after = mgr().pipelineStats();
    EXPECT_EQ(after.pipelinesCreated - before.pipelinesCreated, 2u);
    // One shader module for both.
    EXPECT_EQ(after.shaderModulesCreated - before.shaderModulesCreated, 1u);
    EXPECT_EQ(run(otherScale, a), (std::vector<float>{ 3.f, 6.f }));

    // Another binding layout: an image where the tensor was.
    const char* imageShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, r32f) uniform image2D pixels;
void main() { imageStore(pixels, ivec2(0, 0), vec4(7.0)); }
)";
    const char* bufferShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
void main() { values[0] = 7.0; }
)";
    auto image = mgr().image(std::vector<float>{ 0.f }, 1, 1, 1);
    auto onImage = mgr().algorithm({ image }, compile(imageShader));
    auto onBuffer = mgr().algorithm({ a }, compile(bufferShader));
    EXPECT_NE(onImage->getPipeline(), onBuffer->getPipeline());
    EXPECT_NE(onImage->getPipelineLayout(), onBuffer->getPipelineLayout());
}

TEST_F(PipelineSharingTest, ThePipelineGoesWithTheLastAlgorithmThatUsesIt)
{
    auto a = mgr().tensor({ 1.f, 2.f });
    uint32_t live = mgr().pipelineStats().livePipelines;
    auto first = make(a, 2.f, 1.f);
    auto second = make(a, 2.f, 1.f);
    EXPECT_EQ(mgr().pipelineStats().livePipelines, live + 1);
    first->destroy();
    EXPECT_EQ(mgr().pipelineStats().livePipelines, live + 1);
    EXPECT_EQ(run(second, a), (std::vector<float>{ 3.f, 5.f })); // still works
    second.reset();
    EXPECT_EQ(mgr().pipelineStats().livePipelines, live);
    // A new one builds it again.
    uint64_t created = mgr().pipelineStats().pipelinesCreated;
    auto third = make(a, 2.f, 1.f);
    EXPECT_EQ(mgr().pipelineStats().pipelinesCreated, created + 1);
}

TEST_F(PipelineSharingTest, RebuildingMovesToAnotherPipeline)
{
    auto a = mgr().tensor({ 1.f, 2.f });
    auto first = make(a, 2.f, 0.f);
    auto second = make(a, 2.f, 0.f);
    second->rebuild<float, float>({ a }, scaleAndOffsetSpirv(), { 2, 1, 1 }, { 4.f }, { 0.f });
    EXPECT_NE(first->getPipeline(), second->getPipeline());
    EXPECT_EQ(run(second, a), (std::vector<float>{ 4.f, 8.f }));
    EXPECT_EQ(run(first, a), (std::vector<float>{ 8.f, 16.f }));
}

TEST_F(PipelineSharingTest, SetMemObjectsMakesNoPipelineWork)
{
    auto a = mgr().tensor({ 1.f, 2.f });
    auto b = mgr().tensor({ 5.f, 6.f });
    auto algorithm = make(a, 1.f, 1.f);
    vk::Pipeline pipeline = algorithm->getPipeline();
    vk::DescriptorSet oldSet = algorithm->getDescriptorSet();
    kp::PipelineStats before = mgr().pipelineStats();
    algorithm->setMemObjects({ b });
    kp::PipelineStats after = mgr().pipelineStats();
    EXPECT_EQ(after.pipelinesCreated, before.pipelinesCreated);
    EXPECT_EQ(after.shaderModulesCreated, before.shaderModulesCreated);
    EXPECT_EQ(algorithm->getPipeline(), pipeline);
    // A fresh descriptor set: the old one may still be in use by the GPU.
    EXPECT_NE(algorithm->getDescriptorSet(), oldSet);
    EXPECT_EQ(run(algorithm, b), (std::vector<float>{ 6.f, 7.f }));
}

TEST_F(PipelineSharingTest, AlgorithmsOfOneShaderCreatedOnSeveralThreads)
{
    constexpr int kThreads = 4;
    constexpr int kPerThread = 8;
    auto keep = make(mgr().tensor({ 0.f }), 2.f, 0.f); // holds the pipeline
    uint32_t live = mgr().pipelineStats().livePipelines;
    std::vector<std::thread> threads;
    std::vector<std::vector<float>> results(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                auto tensor = mgr().tensor({ float(t), float(i) });
                auto algorithm = make(tensor, 2.f, 1.f);
                auto sequence = mgr().sequence();
                sequence->record<kp::OpSyncDevice>({ tensor })
                  ->record<kp::OpAlgoDispatch>(algorithm)
                  ->record<kp::OpSyncLocal>({ tensor })
                  ->eval();
                auto values = tensor->vector();
                results[t].insert(results[t].end(), values.begin(), values.end());
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    EXPECT_EQ(mgr().pipelineStats().livePipelines, live);
    for (int t = 0; t < kThreads; ++t) {
        for (int i = 0; i < kPerThread; ++i) {
            EXPECT_EQ(results[t][2 * i], 2.f * t + 1.f);
            EXPECT_EQ(results[t][2 * i + 1], 2.f * i + 1.f);
        }
    }
}

TEST_F(PipelineSharingTest, InvalidSpirvIsRefusedEveryTime)
{
    auto a = mgr().tensor({ 1.f });
    std::vector<uint32_t> garbage = { 0x07230203, 0x00010000, 0, 5, 0 };
    EXPECT_THROW(mgr().algorithm({ a }, garbage), kp::Error);
    EXPECT_THROW(mgr().algorithm({ a }, garbage), kp::Error); // nothing cached
}

} // namespace
