// SPDX-License-Identifier: Apache-2.0
// What an Algorithm checks before the driver sees its shader: descriptor
// limits, the local size and the shared memory the pipeline really gets once
// its specialization constants are applied, and stage inputs a compute
// shader cannot have. Each case is tried at the device's limit (it runs) and
// just beyond it (a clear kp::Error naming the limit).
#include "DispatchTestHelpers.hpp"

using namespace kp_test;

namespace {

// A shader with `count` storage buffers, each of whose first value is
// incremented.
std::string
manyBuffersShader(uint32_t count)
{
    std::string source = "#version 450\nlayout(local_size_x = 1) in;\n";
    std::string body;
    for (uint32_t i = 0; i < count; ++i) {
        source += "layout(set = 0, binding = " + std::to_string(i) + ") buffer B" +
                  std::to_string(i) + " { float v" + std::to_string(i) + "[]; };\n";
        body += "    v" + std::to_string(i) + "[0] += 1.0;\n";
    }
    return source + "void main() {\n" + body + "}\n";
}

std::string
manyImagesShader(uint32_t count)
{
    std::string source = "#version 450\nlayout(local_size_x = 1) in;\n";
    std::string body;
    for (uint32_t i = 0; i < count; ++i) {
        source += "layout(set = 0, binding = " + std::to_string(i) + ", r32f) uniform image2D i" +
                  std::to_string(i) + ";\n";
        body += "    imageStore(i" + std::to_string(i) + ", ivec2(0), vec4(1.0));\n";
    }
    return source + "void main() {\n" + body + "}\n";
}

// Local size x from specialization constant 0 (glslang makes it the
// WorkgroupSize built-in); each invocation writes its global index.
const char* kSpecializedLocalSize = R"(
#version 450
layout(local_size_x_id = 0, local_size_y = 2) in;
layout(set = 0, binding = 0) buffer Out { uint values[]; };
void main() {
    uint i = gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
    values[i] = i + 1;
}
)";

// Shared memory of N floats (specialization constant 1) times the local size.
const char* kSharedMemory = R"(
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 16;
shared float tile[N * gl_WorkGroupSize.x];
layout(set = 0, binding = 0) buffer Out { float values[]; };
void main() {
    uint i = gl_LocalInvocationID.x;
    tile[i * N] = float(i) + 0.5;
    barrier();
    values[gl_GlobalInvocationID.x] = tile[i * N];
}
)";

// The same as kSpecializedLocalSize's x only, through LocalSizeId.
const char* kLocalSizeIdAssembly = R"(
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionModeId %main LocalSizeId %x %one %one
               OpDecorate %x SpecId 0
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %rta ArrayStride 4
               OpMemberDecorate %Buf 0 Offset 0
               OpDecorate %Buf Block
               OpDecorate %buf DescriptorSet 0
               OpDecorate %buf Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
     %v3uint = OpTypeVector %uint 3
          %x = OpSpecConstant %uint 1
        %one = OpConstant %uint 1
       %zero = OpConstant %uint 0
        %rta = OpTypeRuntimeArray %uint
        %Buf = OpTypeStruct %rta
     %ptrBuf = OpTypePointer StorageBuffer %Buf
        %buf = OpVariable %ptrBuf StorageBuffer
      %ptrIn = OpTypePointer Input %v3uint
        %gid = OpVariable %ptrIn Input
    %ptrUint = OpTypePointer StorageBuffer %uint
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %g = OpLoad %v3uint %gid
         %gx = OpCompositeExtract %uint %g 0
          %p = OpAccessChain %ptrUint %buf %zero %gx
        %gx1 = OpIAdd %uint %gx %one
               OpStore %p %gx1
               OpReturn
               OpFunctionEnd
)";

// A compute shader with a stage input that is not a built-in.
const char* kUserInputAssembly = R"(
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %userInput
               OpExecutionMode %main LocalSize 1 1 1
               OpName %userInput "userInput"
               OpDecorate %userInput Location 0
               OpDecorate %rta ArrayStride 4
               OpMemberDecorate %Buf 0 Offset 0
               OpDecorate %Buf Block
               OpDecorate %buf DescriptorSet 0
               OpDecorate %buf Binding 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
       %zero = OpConstant %uint 0
        %rta = OpTypeRuntimeArray %float
        %Buf = OpTypeStruct %rta
     %ptrBuf = OpTypePointer StorageBuffer %Buf
        %buf = OpVariable %ptrBuf StorageBuffer
 %ptrInFloat = OpTypePointer Input %float
  %userInput = OpVariable %ptrInFloat Input
   %ptrFloat = OpTypePointer StorageBuffer %float
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %v = OpLoad %float %userInput
          %p = OpAccessChain %ptrFloat %buf %zero %zero
               OpStore %p %v
               OpReturn
               OpFunctionEnd
)";

std::vector<uint32_t>
runToVector(kp::Manager& mgr,
            const std::shared_ptr<kp::TensorT<uint32_t>>& out,
            const std::shared_ptr<kp::Algorithm>& algorithm)
{
    dispatchOnce(mgr, algorithm, { out }, { out });
    return out->vector();
}

std::vector<uint32_t>
oneToN(uint32_t n)
{
    std::vector<uint32_t> values(n);
    for (uint32_t i = 0; i < n; ++i) {
        values[i] = i + 1;
    }
    return values;
}

} // namespace

using ShaderChecksTest = KomputeTest;

// --- Descriptor limits ---------------------------------------------------------------------

TEST_F(ShaderChecksTest, StorageBuffersBeyondThePerStageLimitAreRefused)
{
    uint32_t limit = mgr().getDeviceProperties().limits.maxPerStageDescriptorStorageBuffers;
    if (limit > 200) {
        GTEST_SKIP() << "the device allows " << limit << " storage buffers per stage";
    }
    auto tensors = [&](uint32_t count) {
        std::vector<std::shared_ptr<kp::Memory>> objects;
        for (uint32_t i = 0; i < count; ++i) {
            objects.push_back(mgr().tensor({ float(i) }));
        }
        return objects;
    };
    auto atLimit = tensors(limit);
    auto algorithm = mgr().algorithm(atLimit, compile(manyBuffersShader(limit)));
    dispatchOnce(mgr(), algorithm, atLimit, atLimit);
    for (uint32_t i = 0; i < limit; ++i) {
        EXPECT_EQ(atLimit[i]->vector<float>(), (std::vector<float>{ float(i) + 1.0f }));
    }
    std::vector<uint32_t> beyond = compile(manyBuffersShader(limit + 1));
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm(tensors(limit + 1), beyond); },
                           { std::to_string(limit + 1) + " storage buffers",
                             "maxPerStageDescriptorStorageBuffers of " + std::to_string(limit) }));
}

TEST_F(ShaderChecksTest, StorageImagesBeyondThePerStageLimitAreRefused)
{
    uint32_t limit = mgr().getDeviceProperties().limits.maxPerStageDescriptorStorageImages;
    if (limit > 200) {
        GTEST_SKIP() << "the device allows " << limit << " storage images per stage";
    }
    std::vector<std::shared_ptr<kp::Memory>> images;
    for (uint32_t i = 0; i <= limit; ++i) {
        images.push_back(mgr().image({ 0.0f }, 1, 1, 1));
    }
    std::vector<std::shared_ptr<kp::Memory>> atLimit(images.begin(), images.end() - 1);
    EXPECT_NO_THROW(mgr().algorithm(atLimit, compile(manyImagesShader(limit))));
    std::vector<uint32_t> beyond = compile(manyImagesShader(limit + 1));
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm(images, beyond); },
                           { "storage images",
                             "maxPerStageDescriptorStorageImages of " + std::to_string(limit) }));
}

// --- The local size after specialization ---------------------------------------------------

TEST_F(ShaderChecksTest, LocalSizeFromSpecializationConstantsIsCheckedWithTheValuesGiven)
{
    const auto& limits = mgr().getDeviceProperties().limits;
    std::vector<uint32_t> spirv = compile(kSpecializedLocalSize);
    auto out = mgr().tensorT<uint32_t>(std::vector<uint32_t>(4 * 2 * 3, 0));
    // x = 4 (y = 2), three groups: every value written once.
    auto algorithm = mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 3, 1, 1 }, { 4 }, {});
    EXPECT_EQ(runToVector(mgr(), out, algorithm), oneToN(24));

    uint32_t tooWide = limits.maxComputeWorkGroupSize[0] + 1;
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, { tooWide }, {}); },
      { "local size x = " + std::to_string(tooWide), "WorkgroupSize built-in",
        "maxComputeWorkGroupSize[0]" }));
    // Within each dimension, but x * y beyond the invocations per group.
    uint32_t x = std::min(limits.maxComputeWorkGroupSize[0], limits.maxComputeWorkGroupInvocations / 2 + 1);
    if (x * 2 > limits.maxComputeWorkGroupInvocations) {
        EXPECT_TRUE(throwsWith(
          [&] { mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, { x }, {}); },
          { "maxComputeWorkGroupInvocations" }));
    }
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, { 0 }, {}); },
      { "local size x is 0" }));
    // Rebuilding with other constants is checked the same way.
    EXPECT_TRUE(throwsWith(
      [&] {
          algorithm->rebuild<uint32_t, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, { tooWide }, {});
      },
      { "maxComputeWorkGroupSize[0]" }));
}

TEST_F(ShaderChecksTest, LocalSizeIdIsCheckedWithTheValuesGiven)
{
    std::vector<uint32_t> spirv = assemble(kLocalSizeIdAssembly);
    if (!mgr().capabilities().enabled("maintenance4")) {
        EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 }) }, spirv); },
                               { "LocalSizeId", "maintenance4" }));
        return;
    }
    auto out = mgr().tensorT<uint32_t>(std::vector<uint32_t>(8, 0));
    auto algorithm = mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 2, 1, 1 }, { 4 }, {});
    EXPECT_EQ(runToVector(mgr(), out, algorithm), oneToN(8));
    uint32_t tooWide = mgr().getDeviceProperties().limits.maxComputeWorkGroupSize[0] + 1;
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, { tooWide }, {}); },
      { "local size x = " + std::to_string(tooWide), "LocalSizeId" }));

    DisablePaths env("maintenance4");
    kp::Manager without;
    EXPECT_TRUE(throwsWith([&] { without.algorithm({ without.tensorT<uint32_t>(std::vector<uint32_t>{ 0 }) }, spirv); },
                           { "LocalSizeId", "VkPhysicalDeviceVulkan13Features::maintenance4",
                             "KOMPUTE_ENV_DISABLE=maintenance4" }));
}

// --- Shared memory after specialization --------------------------------------------------

TEST_F(ShaderChecksTest, SharedMemoryIsCheckedWithTheValuesGiven)
{
    uint32_t limit = mgr().getDeviceProperties().limits.maxComputeSharedMemorySize;
    std::vector<uint32_t> spirv = compile(kSharedMemory);
    auto out = mgr().tensor(std::vector<float>(4, 0.0f));
    // 4 invocations of N floats each fill the limit exactly.
    uint32_t n = limit / (4 * 4);
    auto algorithm = mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, { 4, n }, {});
    dispatchOnce(mgr(), algorithm, {}, { out });
    EXPECT_EQ(out->vector(), (std::vector<float>{ 0.5f, 1.5f, 2.5f, 3.5f }));
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, { 4, n + 1 }, {}); },
      { std::to_string(4 * 4 * (n + 1)) + " bytes",
        "maxComputeSharedMemorySize of " + std::to_string(limit) }));
    // The local size scales it too.
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<uint32_t, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, { 8, n }, {}); },
      { "maxComputeSharedMemorySize" }));
}

// --- Stage inputs ------------------------------------------------------------------------

TEST_F(ShaderChecksTest, InputsThatAreNotBuiltInsAreRefused)
{
    std::vector<uint32_t> spirv = assemble(kUserInputAssembly);
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ mgr().tensor({ 0.0f }) }, spirv); },
                           { "Input variable 'userInput'", "not a built-in" }));
}
