// SPDX-License-Identifier: Apache-2.0
// Programs written for the released Kompute 0.9.0 build and run unchanged:
// its names (OpTensorSyncDevice, OpTensorSyncLocal, OpTensorCopy,
// Tensor::TensorTypes, Tensor::TensorDataTypes, tensorType(),
// Algorithm::getTensors()) and its lists of kp::Tensor in Manager::algorithm
// and Sequence::record / eval / evalAsync are deprecated aliases of the
// current API. This file is compiled with -Wno-error=deprecated-declarations
// (the deprecation notes are expected here); a second CTest test compiles
// it again and checks that the compiler does print them. The current API is
// used next to them with deprecation warnings as errors, which proves that
// the aliases add no ambiguity to programs of the current generation.
#include "DispatchTestHelpers.hpp"

using namespace kp_test;


class LegacyTest : public KomputeTest
{};

// --- Kompute 0.9.0's names (deprecated) -----------------------------------

// Upstream 0.9.0's README example, as written for it.
TEST_F(LegacyTest, ArrayMultiplicationWrittenFor090RunsUnchanged)
{
    kp::Manager& manager = mgr();
    auto tensorInA = manager.tensor({ 2., 2., 2. });
    auto tensorInB = manager.tensor({ 1., 2., 3. });
    auto tensorOutA = manager.tensorT<uint32_t>({ 0, 0, 0 });
    auto tensorOutB = manager.tensorT<uint32_t>({ 0, 0, 0 });
    std::vector<std::shared_ptr<kp::Tensor>> params = { tensorInA, tensorInB, tensorOutA, tensorOutB };

    kp::Workgroup workgroup({ 3, 1, 1 });
    std::vector<float> specConsts({ 2 });
    std::vector<float> pushConstsA({ 2.0 });
    std::vector<float> pushConstsB({ 3.0 });
    auto algorithm = manager.algorithm(params,
                                       compile(kArrayMultiplicationShader),
                                       workgroup,
                                       specConsts,
                                       pushConstsA);

    manager.sequence()
      ->record<kp::OpTensorSyncDevice>(params)
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->eval()
      ->record<kp::OpAlgoDispatch>(algorithm, pushConstsB)
      ->eval();

    auto sq = manager.sequence();
    sq->evalAsync<kp::OpTensorSyncLocal>(params);
    sq->evalAwait();

    EXPECT_EQ(tensorOutA->vector(), (std::vector<uint32_t>{ 4, 8, 12 }));
    EXPECT_EQ(tensorOutB->vector(), (std::vector<uint32_t>{ 10, 10, 10 }));
}

TEST_F(LegacyTest, TypedAlgorithmEvalAndGetTensorsTakeListsOfTensors)
{
    kp::Manager& manager = mgr();
    auto a = manager.tensor({ 2., 2., 2. });
    auto b = manager.tensor({ 1., 2., 3. });
    auto outA = manager.tensorT<uint32_t>({ 0, 0, 0 });
    auto outB = manager.tensorT<uint32_t>({ 0, 0, 0 });
    std::vector<std::shared_ptr<kp::Tensor>> params = { a, b, outA, outB };
    auto algorithm = manager.algorithm<float, float>(params,
                                                     compile(kArrayMultiplicationShader),
                                                     kp::Workgroup({ 3, 1, 1 }),
                                                     std::vector<float>{ 5 },
                                                     std::vector<float>{ 1 });

    auto sq = manager.sequence();
    sq->eval<kp::OpTensorSyncDevice>(params);
    sq->eval<kp::OpAlgoDispatch>(algorithm);
    sq->eval<kp::OpTensorSyncLocal>(params);

    EXPECT_EQ(outA->vector(), (std::vector<uint32_t>{ 2, 4, 6 }));
    EXPECT_EQ(outB->vector(), (std::vector<uint32_t>{ 5, 5, 5 }));
    // The tensors in binding order, as 0.9.0 returned them.
    const std::vector<std::shared_ptr<kp::Tensor>>& tensors = algorithm->getTensors();
    EXPECT_EQ(tensors, params);
}

TEST_F(LegacyTest, GetTensorsRefusesAnAlgorithmThatBindsAnImage)
{
    kp::Manager& manager = mgr();
    auto tensor = manager.tensor({ 1, 2, 3, 4 });
    auto image = manager.image(std::vector<float>{ 1, 2, 3, 4 }, 2, 2, 1);
    auto algorithm = manager.algorithm({ tensor, image }, kp::Shader::compileSource(R"(
#version 450
layout (local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
layout(set = 0, binding = 1, r32f) uniform image2D picture;
void main() { values[0] = imageLoad(picture, ivec2(0, 0)).x; }
)"));
    try {
        (void)algorithm->getTensors();
        FAIL() << "getTensors() of an algorithm with an image did not throw";
    } catch (const kp::Error& error) {
        EXPECT_NE(std::string(error.what()).find("binding 1 is an image"), std::string::npos)
          << error.what();
    }
}

TEST_F(LegacyTest, TensorTypesAndDataTypesAreTheCurrentEnums)
{
    kp::Manager& manager = mgr();
    auto host = manager.tensor({ 1, 2, 3 }, kp::Tensor::TensorTypes::eHost);
    EXPECT_EQ(host->tensorType(), kp::Tensor::TensorTypes::eHost);
    EXPECT_EQ(host->memoryType(), kp::Memory::MemoryTypes::eHost);

    std::vector<double> values = { 0.5, 1.5 };
    std::shared_ptr<kp::Tensor> raw = manager.tensor(
      values.data(), 2, sizeof(double), kp::Tensor::TensorDataTypes::eDouble, kp::Tensor::TensorTypes::eDevice);
    EXPECT_EQ(raw->dataType(), kp::Tensor::TensorDataTypes::eDouble);
    EXPECT_EQ(raw->tensorType(), kp::Tensor::TensorTypes::eDevice);
    EXPECT_EQ(raw->vector<double>(), values);
    // 0.9.0's enumerators keep their numbers.
    EXPECT_EQ(static_cast<int>(kp::Tensor::TensorTypes::eStorage), 2);
    EXPECT_EQ(static_cast<int>(kp::Tensor::TensorDataTypes::eDouble), 4);
    EXPECT_EQ(kp::Memory::toString(kp::Tensor::TensorTypes::eHost), "eHost");
}

TEST_F(LegacyTest, OpTensorCopyCopiesFromBracedListsAndTensorLists)
{
    kp::Manager& manager = mgr();
    auto source = manager.tensor({ 1, 2, 3 });
    auto first = manager.tensor({ 0, 0, 0 });
    auto second = manager.tensor({ 0, 0, 0 });
    auto sq = manager.sequence();
    sq->eval<kp::OpTensorSyncDevice>({ source });
    sq->eval<kp::OpTensorCopy>({ source, first });
    EXPECT_EQ(first->vector(), (std::vector<float>{ 1, 2, 3 }));

    std::vector<std::shared_ptr<kp::Tensor>> copy = { source, second };
    sq->eval(std::make_shared<kp::OpTensorCopy>(copy));
    EXPECT_EQ(second->vector(), (std::vector<float>{ 1, 2, 3 }));
}

TEST_F(LegacyTest, OpMultRecordsOverAListOfTensors)
{
    kp::Manager& manager = mgr();
    auto a = manager.tensor({ 2, 3, 4 });
    auto b = manager.tensor({ 5, 6, 7 });
    auto out = manager.tensor({ 0, 0, 0 });
    std::vector<std::shared_ptr<kp::Tensor>> params = { a, b, out };
    manager.sequence()
      ->record<kp::OpTensorSyncDevice>(params)
      ->record<kp::OpMult>(params, manager.algorithm())
      ->record<kp::OpTensorSyncLocal>(params)
      ->eval();
    EXPECT_EQ(out->vector(), (std::vector<float>{ 10, 18, 28 }));
}

// --- The current names, next to them (deprecation warnings are errors) -----

#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wdeprecated-declarations"

TEST_F(LegacyTest, CurrentProgramsSeeNoAmbiguityAndNoDeprecation)
{
    kp::Manager& manager = mgr();
    auto tensorInA = manager.tensor({ 2., 2., 2. });
    auto tensorInB = manager.tensor({ 1., 2., 3. });
    auto tensorOutA = manager.tensorT<uint32_t>({ 0, 0, 0 });
    auto tensorOutB = manager.tensorT<uint32_t>({ 0, 0, 0 });
    std::vector<std::shared_ptr<kp::Memory>> params = { tensorInA, tensorInB, tensorOutA, tensorOutB };
    // Braced lists of tensors pick the current overloads.
    auto algorithm = manager.algorithm({ tensorInA, tensorInB, tensorOutA, tensorOutB },
                                       compile(kArrayMultiplicationShader),
                                       kp::Workgroup({ 3, 1, 1 }),
                                       std::vector<float>{ 2 },
                                       std::vector<float>{ 2 });
    manager.sequence()
      ->record<kp::OpSyncDevice>({ tensorInA, tensorInB, tensorOutA, tensorOutB })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->eval()
      ->record<kp::OpAlgoDispatch>(algorithm, std::vector<float>{ 3 })
      ->eval();
    manager.sequence()->eval<kp::OpSyncLocal>(params);
    EXPECT_EQ(tensorOutA->vector(), (std::vector<uint32_t>{ 4, 8, 12 }));
    EXPECT_EQ(tensorOutB->vector(), (std::vector<uint32_t>{ 10, 10, 10 }));
    EXPECT_EQ(algorithm->getMemObjects(), params);
    EXPECT_EQ(tensorInA->memoryType(), kp::Memory::MemoryTypes::eDevice);
}

#pragma GCC diagnostic pop
