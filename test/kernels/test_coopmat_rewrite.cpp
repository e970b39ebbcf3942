// SPDX-License-Identifier: Apache-2.0
// The NV -> KHR cooperative-matrix SPIR-V rewrite (src/kernels/CoopmatRewrite):
// the structure of its output, an exact round trip back to the input, the
// bf16 form, and its errors. No device is needed: our SPIRV-Tools predates
// the KHR forms, so these tests are what checks the pass here; the
// cooperative-matrix tests in test_kernels_matmul run its output on devices
// that have it.
#include <map>
#include <set>

#include "../DispatchTestHelpers.hpp"
#include "kernels/CoopmatRewrite.hpp"
#include "kernels/KernelSupport.hpp"

namespace kp_test {
namespace {

struct Inst
{
    uint32_t opcode;
    std::vector<uint32_t> words; // operands
};

std::vector<Inst>
parse(const std::vector<uint32_t>& module)
{
    std::vector<Inst> out;
    for (size_t at = 5; at < module.size();) {
        uint32_t count = module[at] >> 16;
        out.push_back({ module[at] & 0xFFFF, { module.begin() + at + 1, module.begin() + at + count } });
        at += count;
    }
    return out;
}

std::string
text(const std::vector<uint32_t>& words)
{
    std::string s;
    for (uint32_t w : words) {
        for (int b = 0; b < 4; ++b) {
            char c = static_cast<char>((w >> (8 * b)) & 0xFF);
            if (!c) {
                return s;
            }
            s += c;
        }
    }
    return s;
}

std::vector<uint32_t>
stringWords(const std::string& s)
{
    std::vector<uint32_t> w(s.size() / 4 + 1, 0);
    std::memcpy(w.data(), s.data(), s.size());
    return w;
}

constexpr uint32_t OpExtension = 10, OpCapability = 17, OpTypeInt = 21, OpTypeFloat = 22, OpConstantTrue = 41,
                   OpConstantFalse = 42, OpConstant = 43, OpSpecConstantOp = 52, OpDecorate = 71;
constexpr uint32_t NvType = 5358, NvLoad = 5359, NvStore = 5360, NvMulAdd = 5361, NvLength = 5362;
constexpr uint32_t KhrType = 4456, KhrLoad = 4457, KhrStore = 4458, KhrMulAdd = 4459, KhrLength = 4460;

std::vector<uint32_t>
nvModule()
{
    return kp::kernels::builtinSpirv("matmul_coopmat_4x4");
}

std::vector<uint32_t>
words(const std::vector<uint32_t>& header, const std::vector<Inst>& instructions)
{
    std::vector<uint32_t> out(header.begin(), header.begin() + 5);
    for (const auto& i : instructions) {
        out.push_back(static_cast<uint32_t>((i.words.size() + 1) << 16) | i.opcode);
        out.insert(out.end(), i.words.begin(), i.words.end());
    }
    return out;
}

/** The test's own inverse of the pass: KHR forms back to NV ones, the
 * declarations it added dropped. */
std::vector<uint32_t>
backToNv(const std::vector<uint32_t>& khr, uint32_t originalBound)
{
    auto instructions = parse(khr);
    std::map<uint32_t, uint32_t> constantValue; // new constants: id -> value
    uint32_t trueId = 0, falseId = 0;
    for (const auto& i : instructions) {
        if (i.opcode == OpConstant && i.words[1] >= originalBound) {
            constantValue[i.words[1]] = i.words[2];
        }
        trueId = i.opcode == OpConstantTrue ? i.words[1] : trueId;
        falseId = i.opcode == OpConstantFalse ? i.words[1] : falseId;
    }
    std::vector<Inst> out;
    for (auto i : instructions) {
        auto& w = i.words;
        bool added = (i.opcode == OpConstant || i.opcode == OpTypeInt || i.opcode == OpTypeFloat) &&
                     w[i.opcode == OpConstant ? 1 : 0] >= originalBound;
        if (added) {
            continue;
        }
        switch (i.opcode) {
            case OpCapability:
                if (w[0] == 6022) {
                    w[0] = 5357;
                }
                break;
            case OpExtension:
                if (text(w) == "SPV_KHR_cooperative_matrix") {
                    w = stringWords("SPV_NV_cooperative_matrix");
                }
                break;
            case KhrType: i.opcode = NvType; w.pop_back(); break;
            case KhrLoad: { // type, result, pointer, layout, stride, [memory]
                uint32_t columnMajor = constantValue.at(w[3]) ? trueId : falseId;
                std::vector<uint32_t> nv = { w[0], w[1], w[2], w[4], columnMajor };
                nv.insert(nv.end(), w.begin() + 5, w.end());
                i = { NvLoad, nv };
                break;
            }
            case KhrStore: { // pointer, object, layout, stride, [memory]
                uint32_t columnMajor = constantValue.at(w[2]) ? trueId : falseId;
                std::vector<uint32_t> nv = { w[0], w[1], w[3], columnMajor };
                nv.insert(nv.end(), w.begin() + 4, w.end());
                i = { NvStore, nv };
                break;
            }
            case KhrMulAdd: i = { NvMulAdd, { w[0], w[1], w[2], w[3], w[4] } }; break;
            case KhrLength: i.opcode = NvLength; break;
            case OpSpecConstantOp:
                if (w[2] == KhrLength) {
                    w[2] = NvLength;
                }
                break;
            default: break;
        }
        out.push_back(i);
    }
    std::vector<uint32_t> result = words(khr, out);
    result[3] = originalBound;
    return result;
}

TEST(CoopmatRewrite, GemmModuleHasOnlyKhrFormsWithUsesByRole)
{
    auto nv = nvModule();
    auto khr = kp::internal::coopmatNvToKhr(nv);
    auto instructions = parse(khr);
    std::map<uint32_t, uint32_t> specIdOf, constantValue, opcodeOf;
    std::set<uint32_t> capabilities;
    std::set<std::string> extensions;
    std::map<uint32_t, uint32_t> floatWidth;
    for (const auto& i : instructions) {
        EXPECT_FALSE(i.opcode >= NvType && i.opcode <= NvLength) << "NV opcode " << i.opcode << " left";
        if (i.opcode == OpCapability) {
            capabilities.insert(i.words[0]);
        } else if (i.opcode == OpExtension) {
            extensions.insert(text(i.words));
        } else if (i.opcode == OpDecorate && i.words[1] == 1 /* SpecId */) {
            specIdOf[i.words[0]] = i.words[2];
        } else if (i.opcode == OpConstant) {
            constantValue[i.words[1]] = i.words[2];
        } else if (i.opcode == OpTypeFloat) {
            floatWidth[i.words[0]] = i.words[1];
        }
    }
    EXPECT_EQ(capabilities.count(5357), 0u);
    EXPECT_EQ(capabilities.count(6022), 1u);
    EXPECT_EQ(capabilities.count(5345), 1u) << "VulkanMemoryModel stays";
    EXPECT_EQ(extensions.count("SPV_NV_cooperative_matrix"), 0u);
    EXPECT_EQ(extensions.count("SPV_KHR_cooperative_matrix"), 1u);

    // A = lM x lK (spec ids 6, 8), B = lK x lN (8, 7), accumulator lM x lN
    // (6, 7) in f32.
    int types = 0;
    for (const auto& i : instructions) {
        if (i.opcode != KhrType) {
            continue;
        }
        ++types;
        uint32_t rows = specIdOf.at(i.words[3]), cols = specIdOf.at(i.words[4]);
        uint32_t use = constantValue.at(i.words[5]);
        uint32_t width = floatWidth.at(i.words[1]);
        if (rows == 6 && cols == 8) {
            EXPECT_EQ(use, 0u);
            EXPECT_EQ(width, 16u);
        } else if (rows == 8 && cols == 7) {
            EXPECT_EQ(use, 1u);
            EXPECT_EQ(width, 16u);
        } else {
            EXPECT_EQ(rows, 6u);
            EXPECT_EQ(cols, 7u);
            EXPECT_EQ(use, 2u);
            EXPECT_EQ(width, 32u);
        }
    }
    EXPECT_EQ(types, 3);
    for (const auto& i : instructions) {
        if (i.opcode == KhrLoad) {
            EXPECT_LE(constantValue.at(i.words[3]), 1u) << "layout is RowMajor or ColumnMajor";
        } else if (i.opcode == KhrStore) {
            EXPECT_LE(constantValue.at(i.words[2]), 1u);
        }
    }
}

TEST(CoopmatRewrite, RoundTripRestoresEveryInputWord)
{
    auto nv = nvModule();
    auto khr = kp::internal::coopmatNvToKhr(nv);
    EXPECT_GT(khr[3], nv[3]) << "new ids come after the old bound";
    EXPECT_EQ(backToNv(khr, nv[3]), nv);

    // Every id is defined once, below the new bound.
    std::set<uint32_t> defined;
    for (const auto& i : parse(khr)) {
        if (i.opcode == OpConstant || i.opcode == KhrType || i.opcode == OpTypeInt || i.opcode == OpTypeFloat) {
            uint32_t id = i.words[i.opcode == OpConstant ? 1 : 0];
            EXPECT_TRUE(defined.insert(id).second) << "id " << id << " defined twice";
            EXPECT_LT(id, khr[3]);
        }
    }
}

// The cooperative-matrix prefill attention (AttentionCoopmat.comp): Q and
// P are A (lM x lK: spec ids 4, 6), K^T and V B (lK x lN: 6, 5), scores and
// the output accumulators (lM x lN: 4, 5), whose element count it reads.
TEST(CoopmatRewrite, AttentionModulesHaveOnlyKhrFormsAndRoundTrip)
{
    for (const char* name : { "attention_coopmat_d64_c32", "attention_coopmat_d64_c64", "attention_coopmat_d128_c32",
                              "attention_coopmat_d128_c64" }) {
        SCOPED_TRACE(name);
        auto nv = kp::kernels::builtinSpirv(name);
        auto khr = kp::internal::coopmatNvToKhr(nv);
        std::map<uint32_t, uint32_t> specIdOf, constantValue;
        auto instructions = parse(khr);
        for (const auto& i : instructions) {
            EXPECT_FALSE(i.opcode >= NvType && i.opcode <= NvLength) << "NV opcode " << i.opcode << " left";
            if (i.opcode == OpDecorate && i.words[1] == 1 /* SpecId */) {
                specIdOf[i.words[0]] = i.words[2];
            } else if (i.opcode == OpConstant) {
                constantValue[i.words[1]] = i.words[2];
            }
        }
        std::map<std::pair<uint32_t, uint32_t>, uint32_t> useOf;
        for (const auto& i : instructions) {
            if (i.opcode == KhrType) {
                useOf[{ specIdOf.at(i.words[3]), specIdOf.at(i.words[4]) }] = constantValue.at(i.words[5]);
            }
        }
        std::map<std::pair<uint32_t, uint32_t>, uint32_t> expected = { { { 4, 6 }, 0u }, { { 6, 5 }, 1u }, { { 4, 5 }, 2u } };
        EXPECT_EQ(useOf, expected);
        EXPECT_EQ(backToNv(khr, nv[3]), nv);
    }
}

TEST(CoopmatRewrite, Bf16OperandsGetTheirOwnFloatType)
{
    auto nv = nvModule();
    auto khr = kp::internal::coopmatNvToKhr(nv, true);
    auto instructions = parse(khr);
    std::set<uint32_t> capabilities;
    std::set<std::string> extensions;
    uint32_t bf16 = 0, f16 = 0;
    for (const auto& i : instructions) {
        if (i.opcode == OpCapability) {
            capabilities.insert(i.words[0]);
        } else if (i.opcode == OpExtension) {
            extensions.insert(text(i.words));
        } else if (i.opcode == OpTypeFloat && i.words[1] == 16) {
            (i.words.size() == 3 && i.words[2] == 0 ? bf16 : f16) = i.words[0];
        }
    }
    EXPECT_EQ(capabilities.count(5116), 1u) << "BFloat16TypeKHR";
    EXPECT_EQ(capabilities.count(5118), 1u) << "BFloat16CooperativeMatrixKHR";
    EXPECT_EQ(extensions.count("SPV_KHR_bfloat16"), 1u);
    ASSERT_NE(bf16, 0u);
    ASSERT_NE(f16, 0u) << "the IEEE half type stays for the f16 output";
    int bf16Matrices = 0;
    for (const auto& i : instructions) {
        if (i.opcode == KhrType && i.words[1] == bf16) {
            ++bf16Matrices;
        }
        if (i.opcode == KhrType) {
            EXPECT_NE(i.words[1], f16) << "no f16 matrix is left in the bf16 form";
        }
    }
    EXPECT_EQ(bf16Matrices, 2) << "A and B";
}

const char* kSameTypeForAAndB = R"(
#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(binding = 0) buffer Data { float16_t h[]; float f[]; };
void main() {
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> x;
    coopMatLoadNV(x, h, 0, 16, false);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    acc = coopMatMulAddNV(x, x, acc);
    coopMatStoreNV(acc, f, 0, 16, false);
}
)";

TEST(CoopmatRewrite, OneTypeInTwoRolesIsAClearError)
{
    auto module = compile(kSameTypeForAAndB);
    EXPECT_TRUE(throwsWith([&] { kp::internal::coopmatNvToKhr(module); }, { "used both as A and as B" }));
}

TEST(CoopmatRewrite, RejectsModulesWithoutNvCooperativeMatrices)
{
    auto plain = compile("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n");
    EXPECT_TRUE(throwsWith([&] { kp::internal::coopmatNvToKhr(plain); }, { "CooperativeMatrixNV" }));
    EXPECT_TRUE(throwsWith([&] { kp::internal::coopmatNvToKhr({ 1, 2, 3 }); }, { "not a SPIR-V module" }));
}

TEST(CoopmatRewrite, IntegerMatricesGetSignednessAndLengthIsRewritten)
{
    auto module = compile(R"(
#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
layout(local_size_x = 32) in;
layout(constant_id = 0) const uint M = 16;
layout(constant_id = 1) const uint N = 8;
layout(constant_id = 2) const uint K = 32;
layout(binding = 0) buffer Data { int8_t q[]; int r[]; };
void main() {
    icoopmatNV<8, gl_ScopeSubgroup, M, K> a;
    icoopmatNV<8, gl_ScopeSubgroup, K, N> b;
    coopMatLoadNV(a, q, 0, K, false);
    coopMatLoadNV(b, q, 512, K, true);
    icoopmatNV<32, gl_ScopeSubgroup, M, N> acc = icoopmatNV<32, gl_ScopeSubgroup, M, N>(0);
    acc = coopMatMulAddNV(a, b, acc);
    for (int i = 0; i < acc.length(); ++i) { acc[i] += 1; }
    coopMatStoreNV(acc, r, 0, N, false);
}
)");
    auto khr = kp::internal::coopmatNvToKhr(module);
    bool mulAdd = false, length = false;
    for (const auto& i : parse(khr)) {
        if (i.opcode == KhrMulAdd) {
            mulAdd = true;
            ASSERT_EQ(i.words.size(), 6u);
            EXPECT_EQ(i.words[5], 0xFu) << "A, B, C and the result are signed";
        }
        if (i.opcode == OpSpecConstantOp) {
            EXPECT_NE(i.words[2], NvLength);
            length |= i.words[2] == KhrLength;
        }
        length |= i.opcode == KhrLength;
    }
    EXPECT_TRUE(mulAdd);
    EXPECT_TRUE(length);
    EXPECT_EQ(backToNv(khr, module[3]), module);
}

} // namespace
} // namespace kp_test
