// SPDX-License-Identifier: Apache-2.0
// Every data type through a shader: out[i] = a[i] * 2 + b[i] computed on the
// device in the type itself (8/16/64-bit types and float16 need device
// features that the Manager enables), compared with the host's result. bool
// tensors are bytes of 0/1, so the shader sees them as uint8_t and computes
// a XOR b. Each type runs in both staging modes.
#include "DispatchTestHelpers.hpp"

#include <type_traits>

using namespace kp_test;

namespace {

template<typename T>
struct Glsl;
template<>
struct Glsl<bool>
{
    static constexpr const char* type = "uint8_t";
};
template<>
struct Glsl<int8_t>
{
    static constexpr const char* type = "int8_t";
};
template<>
struct Glsl<uint8_t>
{
    static constexpr const char* type = "uint8_t";
};
template<>
struct Glsl<int16_t>
{
    static constexpr const char* type = "int16_t";
};
template<>
struct Glsl<uint16_t>
{
    static constexpr const char* type = "uint16_t";
};
template<>
struct Glsl<int32_t>
{
    static constexpr const char* type = "int";
};
template<>
struct Glsl<uint32_t>
{
    static constexpr const char* type = "uint";
};
template<>
struct Glsl<int64_t>
{
    static constexpr const char* type = "int64_t";
};
template<>
struct Glsl<uint64_t>
{
    static constexpr const char* type = "uint64_t";
};
template<>
struct Glsl<kp::float16_t>
{
    static constexpr const char* type = "float16_t";
};
template<>
struct Glsl<float>
{
    static constexpr const char* type = "float";
};
template<>
struct Glsl<double>
{
    static constexpr const char* type = "double";
};

const char* kShader = R"(
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer A { TYPE a[]; };
layout(set = 0, binding = 1) readonly buffer B { TYPE b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { TYPE result[]; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
#ifdef IS_BOOL
    result[i] = ((a[i] != TYPE(0)) ^^ (b[i] != TYPE(0))) ? TYPE(1) : TYPE(0);
#else
    result[i] = a[i] * TYPE(2) + b[i];
#endif
}
)";

constexpr size_t kCount = 96;

// Inputs that exercise the type: extremes and wrap-around for integers,
// exactly representable results for floating types (so the device's result
// must equal the host's bit for bit).
template<typename T>
std::vector<T>
inputs(uint32_t seed)
{
    if constexpr (std::is_same_v<T, bool> || std::is_integral_v<T>) {
        return sampleValues<T>(kCount, seed);
    } else if constexpr (std::is_same_v<T, kp::float16_t>) {
        std::vector<T> values;
        for (size_t i = 0; i < kCount; ++i) {
            // Multiples of 1/4 in [-128, 128): a * 2 + b stays exact.
            float v = static_cast<float>(static_cast<int>((i * 37 + seed * 11) % 1024) - 512) * 0.25f;
            values.push_back(kp::float16_t(v));
        }
        return values;
    } else {
        std::vector<T> values = { T(1.0e30), T(-3.5e-20), T(0.1), T(-0.0), T(12345.678) };
        if constexpr (std::is_same_v<T, double>) {
            values.push_back(1.0e300);
            values.push_back(-2.0e-300);
        }
        for (size_t i = values.size(); i < kCount; ++i) {
            values.push_back(static_cast<T>(static_cast<double>(i) * 0.75 - 100.0 +
                                            static_cast<double>(seed) * 1.0625));
        }
        return values;
    }
}

template<typename T>
T
hostResult(T a, T b)
{
    if constexpr (std::is_same_v<T, bool>) {
        return a != b;
    } else if constexpr (std::is_integral_v<T>) {
        // In the unsigned type: wraps like the device, without C++'s
        // undefined signed overflow.
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(static_cast<U>(static_cast<U>(a) * U(2)) + static_cast<U>(b)));
    } else if constexpr (std::is_same_v<T, kp::float16_t>) {
        return kp::float16_t(static_cast<float>(a) * 2.0f + static_cast<float>(b));
    } else {
        return a * T(2) + b;
    }
}

} // namespace

template<typename T>
class DataTypesShaderTest : public KomputeTest
{};

using AllTypes = ::testing::Types<bool,
                                  int8_t,
                                  uint8_t,
                                  int16_t,
                                  uint16_t,
                                  int32_t,
                                  uint32_t,
                                  int64_t,
                                  uint64_t,
                                  kp::float16_t,
                                  float,
                                  double>;

class TypeNames
{
  public:
    template<typename T>
    static std::string GetName(int)
    {
        return typeName<T>();
    }
};

TYPED_TEST_SUITE(DataTypesShaderTest, AllTypes, TypeNames);

TYPED_TEST(DataTypesShaderTest, MultiplyAddMatchesTheHost)
{
    using T = TypeParam;
    std::map<std::string, std::string> defines = { { "TYPE", Glsl<T>::type } };
    if constexpr (std::is_same_v<T, bool>) {
        defines["IS_BOOL"] = "";
    }
    auto spirv = compile(kShader, defines);

    std::vector<T> a = inputs<T>(1);
    std::vector<T> b = inputs<T>(2);
    std::vector<T> expected(kCount);
    for (size_t i = 0; i < kCount; ++i) {
        expected[i] = hostResult<T>(a[i], b[i]);
    }

    {
        auto manager = makeManager();
        // Inputs in two memory types; the result read back through a sync.
        auto tensorA = manager->tensorT<T>(a, kp::Memory::MemoryTypes::eDevice);
        auto tensorB = manager->tensorT<T>(b, kp::Memory::MemoryTypes::eHost);
        auto out = manager->tensorT<T>(std::vector<T>(kCount, T{}));
        EXPECT_EQ(out->dataType(), kp::Memory::dataType<T>());

        std::vector<std::shared_ptr<kp::Memory>> all = { tensorA, tensorB, out };
        std::vector<std::shared_ptr<kp::Memory>> result = { out };
        auto algorithm = manager->algorithm(all, spirv);
        manager->sequence()
          ->record<kp::OpSyncDevice>(all)
          ->record<kp::OpAlgoDispatch>(algorithm)
          ->record<kp::OpSyncLocal>(result)
          ->eval();
        EXPECT_TRUE(sameElements(out->vector(), expected));
        // The inputs are as they were.
        EXPECT_TRUE(sameElements(tensorA->vector(), a));
        EXPECT_TRUE(sameElements(tensorB->vector(), b));
    }
}

TYPED_TEST(DataTypesShaderTest, ResultInDeviceOnlyMemoryMatchesTheHost)
{
    // The result goes into an eStorage tensor (no host view) and is read
    // back by copying, so the shader's write is checked without OpSyncLocal.
    using T = TypeParam;
    std::map<std::string, std::string> defines = { { "TYPE", Glsl<T>::type } };
    if constexpr (std::is_same_v<T, bool>) {
        defines["IS_BOOL"] = "";
    }
    std::vector<T> a = inputs<T>(3);
    std::vector<T> b = inputs<T>(4);
    std::vector<T> expected(kCount);
    for (size_t i = 0; i < kCount; ++i) {
        expected[i] = hostResult<T>(a[i], b[i]);
    }
    auto tensorA = this->mgr().template tensorT<T>(a, kp::Memory::MemoryTypes::eDeviceAndHost);
    auto tensorB = this->mgr().template tensorT<T>(b, kp::Memory::MemoryTypes::eStorage);
    auto out = this->mgr().template tensorT<T>(kCount, kp::Memory::MemoryTypes::eStorage);
    auto algorithm = this->mgr().algorithm({ tensorA, tensorB, out }, compile(kShader, defines));
    this->mgr().sequence()->template eval<kp::OpAlgoDispatch>(algorithm);
    EXPECT_TRUE(sameElements(deviceValues<T>(this->mgr(), out), expected));
}
