// SPDX-License-Identifier: Apache-2.0
// kp::Shader: GLSL compiled in the process (compileSource) and SPIR-V read
// from files (loadSpirv), including what happens with bad input.
#include "DispatchTestHelpers.hpp"

using namespace kp_test;

namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;

// out[i] = in[i] * FACTOR (+ OFFSET when ADD_OFFSET is defined).
const char* kScaleShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer In { float values[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float results[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
#ifdef ADD_OFFSET
    results[i] = values[i] * FACTOR + OFFSET;
#else
    results[i] = values[i] * FACTOR;
#endif
}
)";

// Line 7 uses an identifier that does not exist.
const char* kBrokenShader = "#version 450\n"                                   // 1
                            "layout(local_size_x = 1) in;\n"                   // 2
                            "layout(binding = 0) buffer B { float v[]; };\n"   // 3
                            "void main()\n"                                    // 4
                            "{\n"                                              // 5
                            "    uint i = gl_GlobalInvocationID.x;\n"          // 6
                            "    v[i] = v[i] * undeclared_factor;\n"           // 7
                            "}\n";                                             // 8

std::vector<float>
runScale(kp::Manager& mgr, const std::vector<uint32_t>& spirv, const std::vector<float>& input)
{
    auto in = mgr.tensor(input);
    auto out = mgr.tensor(std::vector<float>(input.size(), 0.0f));
    auto algorithm = mgr.algorithm({ in, out }, spirv);
    mgr.sequence()
      ->record<kp::OpSyncDevice>({ in })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    return out->vector();
}

} // namespace

using ShaderTest = KomputeTest;

TEST_F(ShaderTest, CompilerIsAvailable)
{
    EXPECT_TRUE(kp::Shader::hasCompiler());
}

TEST_F(ShaderTest, CompileSourceGivesSpirvThatRuns)
{
    auto spirv = compile(kScaleShader, { { "FACTOR", "3.0" } });
    ASSERT_GT(spirv.size(), 5u);
    EXPECT_EQ(spirv[0], kSpirvMagic);

    std::vector<float> input = { 1.0f, -2.0f, 0.5f, 10.0f };
    std::vector<float> expected;
    for (float v : input) {
        expected.push_back(v * 3.0f);
    }
    EXPECT_EQ(runScale(mgr(), spirv, input), expected);
}

TEST_F(ShaderTest, DefinesWithAndWithoutValuesReachThePreprocessor)
{
    // ADD_OFFSET is defined with an empty value, i.e. by name alone.
    auto spirv =
      compile(kScaleShader, { { "FACTOR", "2.0" }, { "OFFSET", "0.25" }, { "ADD_OFFSET", "" } });
    std::vector<float> input = { 1.0f, 2.0f, -4.0f };
    std::vector<float> expected;
    for (float v : input) {
        expected.push_back(v * 2.0f + 0.25f);
    }
    EXPECT_EQ(runScale(mgr(), spirv, input), expected);

    // The same source with other defines gives another program.
    auto other = compile(kScaleShader, { { "FACTOR", "-1.0" } });
    EXPECT_NE(spirv, other);
    EXPECT_EQ(runScale(mgr(), other, input), (std::vector<float>{ -1.0f, -2.0f, 4.0f }));
}

TEST_F(ShaderTest, DeclaredButUnusedResourcesAndConstantsAreKept)
{
    // As with glslangValidator, what the source declares stays in the module
    // even where main() does not use it, so the objects and constants that
    // match the declarations are accepted.
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const float unusedSpec = 0.0;
layout(push_constant) uniform Push { float unusedPush; } push;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 1) buffer B { float b[]; };
void main() { a[gl_GlobalInvocationID.x] *= 2.0; }
)");
    auto a = mgr().tensor({ 1.0f, 2.5f });
    auto b = mgr().tensor({ 7.0f, 7.0f });
    auto algorithm = mgr().algorithm({ a, b }, spirv, {}, { 3.0f }, { 4.0f });
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ a, b })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ a, b })
      ->eval();
    EXPECT_EQ(a->vector(), (std::vector<float>{ 2.0f, 5.0f }));
    EXPECT_EQ(b->vector(), (std::vector<float>{ 7.0f, 7.0f }));
}

TEST_F(ShaderTest, MissingDefineIsACompileErrorNamingIt)
{
    EXPECT_TRUE(throwsWith([] { compile(kScaleShader); }, { "FACTOR" }));
}

TEST_F(ShaderTest, CompileErrorShowsTheLineNumber)
{
    EXPECT_TRUE(throwsWith([] { compile(kBrokenShader); },
                           { "does not compile", ":7:", "undeclared_factor" }));
}

TEST_F(ShaderTest, SyntaxErrorShowsTheLineNumber)
{
    std::string source = "#version 450\n"
                         "layout(local_size_x = 1) in;\n"
                         "void main()\n"
                         "{\n"
                         "    float x = 1.0\n" // 5: missing semicolon, reported at line 6
                         "    x += 2.0;\n"
                         "}\n";
    auto result = throwsWith([&] { compile(source); }, { "does not compile", "error" });
    EXPECT_TRUE(result);
    std::string message = result.message();
    EXPECT_TRUE(message.find(":5:") != std::string::npos ||
                message.find(":6:") != std::string::npos)
      << message;
}

TEST_F(ShaderTest, NonComputeSourceDoesNotCompileAsACompute)
{
    // A vertex shader's built-ins do not exist in a compute shader.
    std::string source = "#version 450\n"
                         "void main() { gl_Position = vec4(0.0); }\n";
    EXPECT_TRUE(throwsWith([&] { compile(source); }, { "gl_Position" }));
}

TEST_F(ShaderTest, EmptySourceIsAnError)
{
    EXPECT_TRUE(throwsWith([] { compile(""); }, { "empty" }));
    EXPECT_TRUE(throwsWith([] { compile(" \n\t "); }, { "empty" }));
}

TEST_F(ShaderTest, LoadSpirvReadsAGoodFile)
{
    auto spirv = compile(kScaleShader, { { "FACTOR", "4.0" } });
    TempFile file("good.spv");
    file.write(spirv);
    auto loaded = kp::Shader::loadSpirv(file.path());
    EXPECT_EQ(loaded, spirv);
    EXPECT_EQ(runScale(mgr(), loaded, { 1.0f, 2.0f }), (std::vector<float>{ 4.0f, 8.0f }));
}

TEST_F(ShaderTest, LoadSpirvReadsTheBuiltInShader)
{
    std::vector<uint32_t> builtIn(kp::SHADEROPMULT_COMP_SPV.begin(), kp::SHADEROPMULT_COMP_SPV.end());
    TempFile file("opmult.spv");
    file.write(builtIn);
    EXPECT_EQ(kp::Shader::loadSpirv(file.path()), builtIn);
}

TEST_F(ShaderTest, LoadSpirvRejectsASizeThatIsNotAMultipleOfFour)
{
    auto spirv = compile(kScaleShader, { { "FACTOR", "1.0" } });
    TempFile file("odd.spv");
    size_t bytes = spirv.size() * 4 - 2;
    file.write(spirv.data(), bytes);
    EXPECT_TRUE(throwsWith([&] { kp::Shader::loadSpirv(file.path()); },
                           { file.path(), std::to_string(bytes) + " bytes", "32-bit" }));
}

TEST_F(ShaderTest, LoadSpirvRejectsAFileThatIsNotSpirv)
{
    TempFile file("text.spv");
    file.write(std::string("#version 450\nvoid main() {}\n    ")); // 32 bytes of GLSL
    ASSERT_EQ(file.size() % 4, 0u);
    EXPECT_TRUE(throwsWith([&] { kp::Shader::loadSpirv(file.path()); },
                           { file.path(), "not SPIR-V", "0x07230203" }));
}

TEST_F(ShaderTest, LoadSpirvRejectsAByteSwappedModule)
{
    auto spirv = compile(kScaleShader, { { "FACTOR", "1.0" } });
    for (auto& word : spirv) {
        word = (word >> 24) | ((word >> 8) & 0xFF00u) | ((word << 8) & 0xFF0000u) | (word << 24);
    }
    TempFile file("swapped.spv");
    file.write(spirv);
    EXPECT_TRUE(throwsWith([&] { kp::Shader::loadSpirv(file.path()); }, { "not SPIR-V" }));
}

TEST_F(ShaderTest, LoadSpirvRejectsAnEmptyFile)
{
    TempFile file("empty.spv");
    file.write(std::string());
    EXPECT_TRUE(throwsWith([&] { kp::Shader::loadSpirv(file.path()); }, { "0 bytes" }));
}

TEST_F(ShaderTest, LoadSpirvOfAMissingFileNamesIt)
{
    TempFile file("missing.spv");
    EXPECT_TRUE(throwsWith([&] { kp::Shader::loadSpirv(file.path()); },
                           { "Cannot open", file.path() }));
}

TEST_F(ShaderTest, EntryPointOtherThanMainIsRejected)
{
    EXPECT_TRUE(throwsWith([] { kp::Shader::compileSource(kScaleShader, {}, "compute"); },
                           { "entry point 'compute'" }));
}
