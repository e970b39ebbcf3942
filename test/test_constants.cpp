// SPDX-License-Identifier: Apache-2.0
// Specialization and push constants: every scalar type a shader can declare,
// bool specialization constants, a push-constant struct of mixed types, the
// getters, upstream's persistent push override in OpAlgoDispatch, and the
// errors for constants that do not match the shader or the device.
#include "DispatchTestHelpers.hpp"

#include <limits>

using namespace kp_test;

namespace {

// Each scalar type: its GLSL name and two sets of values that exercise it.
template<typename T>
struct Scalar;

template<>
struct Scalar<float>
{
    static constexpr const char* glsl = "float";
    static std::vector<float> first() { return { 1.5f, -2.25f, 3.0e38f, 1.0e-30f }; }
    static std::vector<float> second() { return { -0.125f, 65504.5f, -1.0e20f, 0.0f }; }
};
template<>
struct Scalar<double>
{
    static constexpr const char* glsl = "double";
    static std::vector<double> first() { return { 1.0 / 3.0, -1.0e300, 2.5e-300, 12345.6789 }; }
    static std::vector<double> second() { return { -2.0 / 7.0, 1.0e200, 0.0, -1.0 }; }
};
template<>
struct Scalar<int32_t>
{
    static constexpr const char* glsl = "int";
    static std::vector<int32_t> first()
    {
        return { std::numeric_limits<int32_t>::min(), 123456789, -1, 0 };
    }
    static std::vector<int32_t> second()
    {
        return { std::numeric_limits<int32_t>::max(), -987654321, 7, -7 };
    }
};
template<>
struct Scalar<uint32_t>
{
    static constexpr const char* glsl = "uint";
    static std::vector<uint32_t> first() { return { 0xFFFFFFFFu, 2147483650u, 0u, 1u }; }
    static std::vector<uint32_t> second() { return { 0x12345678u, 0x80000000u, 42u, 0xFFFFFFFEu }; }
};
template<>
struct Scalar<int64_t>
{
    static constexpr const char* glsl = "int64_t";
    static std::vector<int64_t> first()
    {
        return { std::numeric_limits<int64_t>::min() + 5, 0x123456789ABCDEF0ll, -1, 5000000000ll };
    }
    static std::vector<int64_t> second()
    {
        return { std::numeric_limits<int64_t>::max(), -5000000000ll, 0, -0x0FEDCBA987654321ll };
    }
};
template<>
struct Scalar<uint64_t>
{
    static constexpr const char* glsl = "uint64_t";
    static std::vector<uint64_t> first()
    {
        return { 0xFFFFFFFFFFFFFFFFull, 0x8000000000000001ull, 0ull, 4294967296ull };
    }
    static std::vector<uint64_t> second()
    {
        return { 0x0123456789ABCDEFull, 1ull, 0xFEDCBA9876543210ull, 4294967295ull };
    }
};
template<>
struct Scalar<int16_t>
{
    static constexpr const char* glsl = "int16_t";
    static std::vector<int16_t> first() { return { -32768, 12345, -1, 0 }; }
    static std::vector<int16_t> second() { return { 32767, -12345, 256, -256 }; }
};
template<>
struct Scalar<uint16_t>
{
    static constexpr const char* glsl = "uint16_t";
    static std::vector<uint16_t> first() { return { 65535, 40000, 0, 1 }; }
    static std::vector<uint16_t> second() { return { 32768, 12345, 65534, 255 }; }
};
template<>
struct Scalar<kp::float16_t>
{
    static constexpr const char* glsl = "float16_t";
    static std::vector<kp::float16_t> first()
    {
        return { kp::float16_t(1.5f), kp::float16_t(-2.25f), kp::float16_t(65504.0f),
                 kp::float16_t(0.0009765625f) };
    }
    static std::vector<kp::float16_t> second()
    {
        return { kp::float16_t(-0.125f), kp::float16_t(1024.0f), kp::float16_t(-3.0f),
                 kp::float16_t(0.0f) };
    }
};

// Writes the four specialization constants (ids 0..3) to the buffer.
const char* kSpecShader = R"(
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(constant_id = 0) const TYPE c0 = TYPE(0);
layout(constant_id = 1) const TYPE c1 = TYPE(0);
layout(constant_id = 2) const TYPE c2 = TYPE(0);
layout(constant_id = 3) const TYPE c3 = TYPE(0);
layout(set = 0, binding = 0) writeonly buffer Out { TYPE values[]; };
void main()
{
    values[0] = c0;
    values[1] = c1;
    values[2] = c2;
    values[3] = c3;
}
)";

// Writes the four push constants to the buffer.
const char* kPushShader = R"(
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(push_constant) uniform Push { TYPE p0; TYPE p1; TYPE p2; TYPE p3; } push;
layout(set = 0, binding = 0) writeonly buffer Out { TYPE values[]; };
void main()
{
    values[0] = push.p0;
    values[1] = push.p1;
    values[2] = push.p2;
    values[3] = push.p3;
}
)";

// One float push constant and one float specialization constant.
const char* kFloatShader = R"(
#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const float scale = 1.0;
layout(push_constant) uniform Push { float offset; } push;
layout(set = 0, binding = 0) buffer Out { float values[]; };
void main() { values[gl_GlobalInvocationID.x] = scale + push.offset; }
)";

std::vector<uint32_t>
typedShader(const char* source, const char* glslType)
{
    return compile(source, { { "TYPE", glslType } });
}

} // namespace

// --- Every scalar type ----------------------------------------------------------

template<typename T>
class ScalarConstantsTest : public KomputeTest
{};

using ScalarTypes = ::testing::
  Types<float, double, int32_t, uint32_t, int64_t, uint64_t, int16_t, uint16_t, kp::float16_t>;

class ScalarTypeNames
{
  public:
    template<typename T>
    static std::string GetName(int)
    {
        return typeName<T>();
    }
};

TYPED_TEST_SUITE(ScalarConstantsTest, ScalarTypes, ScalarTypeNames);

TYPED_TEST(ScalarConstantsTest, SpecializationConstantsReachTheShader)
{
    using T = TypeParam;
    auto spirv = typedShader(kSpecShader, Scalar<T>::glsl);
    auto out = this->mgr().template tensorT<T>(std::vector<T>(4, T(0)));
    auto algorithm = this->mgr().template algorithm<T, float>(
      { out }, spirv, kp::Workgroup{ 1, 1, 1 }, Scalar<T>::first(), {});
    EXPECT_TRUE(sameElements(algorithm->template getSpecializationConstants<T>(), Scalar<T>::first()));
    this->mgr()
      .sequence()
      ->template record<kp::OpAlgoDispatch>(algorithm)
      ->template record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_TRUE(sameElements(out->vector(), Scalar<T>::first()));

    // A rebuild with other values specialises the pipeline again.
    algorithm->template rebuild<T, float>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, Scalar<T>::second(), {});
    this->mgr()
      .sequence()
      ->template record<kp::OpAlgoDispatch>(algorithm)
      ->template record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_TRUE(sameElements(out->vector(), Scalar<T>::second()));
}

TYPED_TEST(ScalarConstantsTest, PushConstantsReachTheShaderAndTheOverridePersists)
{
    using T = TypeParam;
    auto spirv = typedShader(kPushShader, Scalar<T>::glsl);
    auto out = this->mgr().template tensorT<T>(std::vector<T>(4, T(0)));
    auto algorithm = this->mgr().template algorithm<float, T>(
      { out }, spirv, kp::Workgroup{ 1, 1, 1 }, {}, Scalar<T>::first());
    EXPECT_TRUE(sameElements(algorithm->template getPushConstants<T>(), Scalar<T>::first()));

    auto sequence = this->mgr().sequence();
    // The algorithm's own values.
    sequence->template record<kp::OpAlgoDispatch>(algorithm)
      ->template record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_TRUE(sameElements(out->vector(), Scalar<T>::first()));

    // An override given to the operation.
    sequence->template record<kp::OpAlgoDispatch>(algorithm, Scalar<T>::second())
      ->template record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_TRUE(sameElements(out->vector(), Scalar<T>::second()));

    // Upstream semantics: the override is written into the algorithm, so a
    // later dispatch without one uses it too.
    EXPECT_TRUE(sameElements(algorithm->template getPushConstants<T>(), Scalar<T>::second()));
    out->setData(std::vector<T>(4, T(0)));
    sequence->template record<kp::OpSyncDevice>({ out })
      ->template record<kp::OpAlgoDispatch>(algorithm)
      ->template record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_TRUE(sameElements(out->vector(), Scalar<T>::second()));

    // setPushConstants replaces them for the next recorded dispatch.
    algorithm->setPushConstants(Scalar<T>::first());
    sequence->template record<kp::OpAlgoDispatch>(algorithm)
      ->template record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_TRUE(sameElements(out->vector(), Scalar<T>::first()));
}

TYPED_TEST(ScalarConstantsTest, PushConstantsOfTheWrongSizeAreRejected)
{
    using T = TypeParam;
    auto spirv = typedShader(kPushShader, Scalar<T>::glsl);
    auto out = this->mgr().template tensorT<T>(std::vector<T>(4, T(0)));
    // Three values instead of four: the size is wrong whatever the type.
    std::vector<T> three = Scalar<T>::first();
    three.pop_back();
    uint32_t declared = static_cast<uint32_t>(4 * sizeof(T));
    EXPECT_TRUE(throwsWith(
      [&] {
          this->mgr().template algorithm<float, T>({ out }, spirv, kp::Workgroup{ 1, 1, 1 }, {}, three);
      },
      { "push-constant block is " + std::to_string(declared) + " bytes",
        std::to_string(3 * sizeof(T)) + " bytes were given" }));
}

// --- bool -----------------------------------------------------------------------

using ConstantsTest = KomputeTest;

TEST_F(ConstantsTest, BoolSpecializationConstants)
{
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const bool flagA = false;
layout(constant_id = 1) const bool flagB = true;
layout(set = 0, binding = 0) writeonly buffer Out { uint values[]; };
void main()
{
    values[0] = flagA ? 7u : 3u;
    values[1] = flagB ? 7u : 3u;
}
)");
    auto out = mgr().tensorT<uint32_t>({ 0, 0 });
    auto run = [&](const std::shared_ptr<kp::Algorithm>& algorithm) {
        mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ out })->eval();
        return out->vector();
    };

    // The shader's defaults.
    auto defaults = mgr().algorithm({ out }, spirv, { 1, 1, 1 });
    EXPECT_EQ(run(defaults), (std::vector<uint32_t>{ 3, 7 }));

    auto flipped = mgr().algorithm<bool, float>({ out }, spirv, { 1, 1, 1 }, { true, false }, {});
    EXPECT_EQ(run(flipped), (std::vector<uint32_t>{ 7, 3 }));
    // Stored as 32-bit VkBool32 values, as Vulkan wants them.
    EXPECT_EQ(flipped->getSpecializationConstants<uint32_t>(), (std::vector<uint32_t>{ 1, 0 }));

    auto both = mgr().algorithm<bool, float>({ out }, spirv, { 1, 1, 1 }, { true, true }, {});
    EXPECT_EQ(run(both), (std::vector<uint32_t>{ 7, 7 }));

    // Only the first given: the second keeps its default.
    auto first = mgr().algorithm<bool, float>({ out }, spirv, { 1, 1, 1 }, { true }, {});
    EXPECT_EQ(run(first), (std::vector<uint32_t>{ 7, 7 }));
}

TEST_F(ConstantsTest, BoolPushConstants)
{
    // GLSL bools in a push-constant block are 32 bits, as the host's are
    // stored (VkBool32).
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(push_constant) uniform Push { bool first; bool second; } push;
layout(set = 0, binding = 0) writeonly buffer Out { uint values[]; };
void main()
{
    values[0] = push.first ? 7u : 3u;
    values[1] = push.second ? 7u : 3u;
}
)");
    auto out = mgr().tensorT<uint32_t>({ 0, 0 });
    auto algorithm = mgr().algorithm<float, bool>({ out }, spirv, { 1, 1, 1 }, {}, { true, false });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ out })->eval();
    EXPECT_EQ(out->vector(), (std::vector<uint32_t>{ 7, 3 }));
    sequence->record<kp::OpAlgoDispatch>(algorithm, std::vector<bool>{ false, true })
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    EXPECT_EQ(out->vector(), (std::vector<uint32_t>{ 3, 7 }));
    EXPECT_EQ(algorithm->getPushConstants<uint32_t>(), (std::vector<uint32_t>{ 0, 1 }));
}

// --- Mixed-type push-constant struct ------------------------------------------------

// Upstream's TestConstantsMixedTypes, unchanged but for the expected sum,
// which is computed in float as the device does.
TEST_F(ConstantsTest, MixedTypesStructAsUpstream)
{
    std::string shader(R"(
      #version 450
      layout(push_constant) uniform PushConstants {
        float x;
        uint y;
        int z;
      } pcs;
      layout (local_size_x = 1) in;
      layout(set = 0, binding = 0) buffer a { float pa[]; };
      void main() {
          pa[0] += pcs.x;
          pa[1] += pcs.y - 2147483000;
          pa[2] += pcs.z;
      })");

    struct TestConsts
    {
        float x;
        uint32_t y;
        int32_t z;
    };

    std::vector<uint32_t> spirv = compile(shader);
    std::shared_ptr<kp::TensorT<float>> tensor = mgr().tensorT<float>({ 0, 0, 0 });
    std::shared_ptr<kp::Algorithm> algo = mgr().algorithm<float, TestConsts>(
      { tensor }, spirv, kp::Workgroup({ 1 }), {}, { { 0, 0, 0 } });
    std::shared_ptr<kp::Sequence> sq = mgr().sequence()->eval<kp::OpSyncDevice>({ tensor });
    sq->eval<kp::OpAlgoDispatch>(algo, std::vector<TestConsts>{ { 15.32f, 2147483650u, 10 } });
    sq->eval<kp::OpAlgoDispatch>(algo, std::vector<TestConsts>{ { 30.32f, 2147483650u, -3 } });
    sq->eval<kp::OpSyncLocal>({ tensor });
    EXPECT_EQ(tensor->vector(), std::vector<float>({ 0.0f + 15.32f + 30.32f, 1300, 7 }));

    auto stored = algo->getPushConstants<TestConsts>();
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].x, 30.32f);
    EXPECT_EQ(stored[0].y, 2147483650u);
    EXPECT_EQ(stored[0].z, -3);
}

TEST_F(ConstantsTest, MixedTypesStructIntoTypedOutputs)
{
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(push_constant) uniform Push { float f; uint u; int i; } push;
layout(set = 0, binding = 0) buffer F { float fs[]; };
layout(set = 0, binding = 1) buffer U { uint us[]; };
layout(set = 0, binding = 2) buffer I { int is[]; };
void main()
{
    fs[0] += push.f;
    us[0] += push.u;
    is[0] += push.i;
}
)");
    struct Mixed
    {
        float f;
        uint32_t u;
        int32_t i;
    };
    static_assert(sizeof(Mixed) == 12, "no padding");
    auto fs = mgr().tensorT<float>(std::vector<float>{ 1.0f });
    auto us = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 10u });
    auto is = mgr().tensorT<int32_t>(std::vector<int32_t>{ -10 });
    auto algorithm = mgr().algorithm<float, Mixed>(
      { fs, us, is }, spirv, { 1, 1, 1 }, {}, { { 0.5f, 4000000000u, -2000000000 } });
    mgr()
      .sequence()
      ->record<kp::OpSyncDevice>({ fs, us, is })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpAlgoDispatch>(algorithm, std::vector<Mixed>{ { 0.25f, 1u, 5 } })
      ->record<kp::OpSyncLocal>({ fs, us, is })
      ->eval();
    EXPECT_EQ(fs->vector(), (std::vector<float>{ 1.75f }));
    EXPECT_EQ(us->vector(), (std::vector<uint32_t>{ 4000000011u }));
    EXPECT_EQ(is->vector(), (std::vector<int32_t>{ -2000000005 }));
}

// --- Default (float) constants ----------------------------------------------------------

TEST_F(ConstantsTest, PlainAlgorithmTakesFloatConstants)
{
    auto out = mgr().tensor({ 0.0f, 0.0f });
    auto algorithm = mgr().algorithm({ out }, compile(kFloatShader), {}, { 2 }, { 0.5 });
    EXPECT_EQ(algorithm->getSpecializationConstants<float>(), (std::vector<float>{ 2.0f }));
    EXPECT_EQ(algorithm->getPushConstants<float>(), (std::vector<float>{ 0.5f }));
    mgr().sequence()->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ out })->eval();
    EXPECT_EQ(out->vector(), (std::vector<float>{ 2.5f, 2.5f }));
    // Reinterpreting the stored bytes, as upstream's getters do.
    EXPECT_EQ(algorithm->getPushConstants<uint32_t>(), (std::vector<uint32_t>{ 0x3F000000u }));
}

// --- Errors -----------------------------------------------------------------------------

TEST_F(ConstantsTest, PushConstantsLargerThanDeclaredAreRejected)
{
    auto out = mgr().tensor({ 0.0f });
    auto spirv = compile(kFloatShader);
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out }, spirv, {}, { 1 }, { 1, 2 }); },
                           { "push-constant block is 4 bytes", "8 bytes were given" }));
    // Smaller than declared (none at all) is rejected too.
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out }, spirv, {}, { 1 }, {}); },
                           { "push-constant block is 4 bytes", "0 bytes were given" }));
}

TEST_F(ConstantsTest, PushConstantsForAShaderWithoutABlockAreRejected)
{
    auto out = mgr().tensor({ 0.0f });
    auto spirv = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Out { float values[]; };
void main() { values[0] = 1.0; }
)");
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out }, spirv, {}, {}, { 1 }); },
                           { "no push-constant block" }));
}

TEST_F(ConstantsTest, PushConstantsLargerThanTheDeviceAllowsAreRejected)
{
    uint32_t limit = mgr().getDeviceProperties().limits.maxPushConstantsSize;
    auto out = mgr().tensor({ 0.0f });
    std::vector<float> tooMany(limit / sizeof(float) + 1, 1.0f);
    std::string given = std::to_string(tooMany.size() * sizeof(float)) + " bytes";
    std::string limitText = "maxPushConstantsSize of " + std::to_string(limit);

    // Against a shader with a small block.
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out }, compile(kFloatShader), {}, { 1 }, tooMany); },
                           { given, limitText }));

    // Against a shader whose block itself is too large for the device.
    auto bigBlock = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(push_constant) uniform Push { float v[COUNT]; } push;
layout(set = 0, binding = 0) buffer Out { float values[]; };
void main() { values[0] = push.v[COUNT - 1]; }
)",
                            { { "COUNT", std::to_string(tooMany.size()) } });
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out }, bigBlock, {}, {}, tooMany); },
                           { given, limitText }));
}

TEST_F(ConstantsTest, PushOverrideOfTheWrongSizeThrowsAtRecord)
{
    auto out = mgr().tensor({ 0.0f });
    auto algorithm = mgr().algorithm({ out }, compile(kFloatShader), {}, { 1 }, { 1 });
    auto sequence = mgr().sequence();
    EXPECT_TRUE(throwsWith(
      [&] { sequence->record<kp::OpAlgoDispatch>(algorithm, std::vector<float>{ 1, 2 }); },
      { "8 bytes", "push-constant block is 4 bytes" }));
    EXPECT_TRUE(throwsWith(
      [&] { sequence->record<kp::OpAlgoDispatch>(algorithm, std::vector<double>{ 1.0 }); },
      { "float64", "push-constant block is 4 bytes" }));
    // The algorithm kept its values and the sequence still works.
    EXPECT_EQ(algorithm->getPushConstants<float>(), (std::vector<float>{ 1.0f }));
    sequence->clear();
    sequence->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ out })->eval();
    EXPECT_EQ(out->vector(), (std::vector<float>{ 2.0f }));
}

TEST_F(ConstantsTest, SpecializationConstantOfAnotherTypeIsRejected)
{
    auto out = mgr().tensor({ 0.0f });
    auto spirv = compile(kFloatShader);
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<uint32_t, float>({ out }, spirv, {}, { 2u }, { 0.0f }); },
      { "Specialization constant 0", "float32 in the shader", "uint32 was given" }));
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<double, float>({ out }, spirv, {}, { 2.0 }, { 0.0f }); },
      { "Specialization constant 0", "float32", "float64" }));
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<bool, float>({ out }, spirv, {}, { true }, { 0.0f }); },
      { "float32", "bool" }));

    auto intShader = typedShader(kSpecShader, "int");
    auto ints = mgr().tensorT<int32_t>({ 0, 0, 0, 0 });
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<int64_t, float>({ ints }, intShader, { 1, 1, 1 }, { 1, 2, 3, 4 }, {}); },
      { "int32 in the shader", "int64 was given" }));
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<uint32_t, float>({ ints }, intShader, { 1, 1, 1 }, { 1, 2, 3, 4 }, {}); },
      { "int32 in the shader", "uint32 was given" }));
}

TEST_F(ConstantsTest, SpecializationConstantIdTheShaderLacksIsRejected)
{
    auto out = mgr().tensor({ 0.0f });
    auto spirv = compile(kFloatShader); // declares constant_id 0 only
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out }, spirv, {}, { 1, 2 }, { 0 }); },
                           { "Specialization constant 1", "constant_id = 1" }));

    auto noSpec = compile(R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Out { float values[]; };
void main() { values[0] = 1.0; }
)");
    EXPECT_TRUE(throwsWith([&] { mgr().algorithm({ out }, noSpec, {}, { 1 }, {}); },
                           { "constant_id = 0" }));
}

TEST_F(ConstantsTest, StructSpecializationConstantsAreRejected)
{
    struct Pair
    {
        float a, b;
    };
    auto out = mgr().tensor({ 0.0f });
    EXPECT_TRUE(throwsWith(
      [&] { mgr().algorithm<Pair, float>({ out }, compile(kFloatShader), {}, { { 1, 2 } }, { 0 }); },
      { "must be scalars" }));
}
