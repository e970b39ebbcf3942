// SPDX-License-Identifier: Apache-2.0
#include "kernels/CoopmatRewrite.hpp"

#include <cstring>
#include <map>
#include <string>

#define SPV_ENABLE_UTILITY_CODE
#include <spirv/unified1/spirv.hpp>

#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

namespace {

// SPV_KHR_cooperative_matrix and SPV_KHR_bfloat16, newer than our headers.
constexpr uint32_t kOpTypeCooperativeMatrixKHR = 4456;
constexpr uint32_t kOpCooperativeMatrixLoadKHR = 4457;
constexpr uint32_t kOpCooperativeMatrixStoreKHR = 4458;
constexpr uint32_t kOpCooperativeMatrixMulAddKHR = 4459;
constexpr uint32_t kOpCooperativeMatrixLengthKHR = 4460;
constexpr uint32_t kCapabilityCooperativeMatrixKHR = 6022;
constexpr uint32_t kCapabilityBFloat16TypeKHR = 5116;
constexpr uint32_t kCapabilityBFloat16CooperativeMatrixKHR = 5118;
constexpr uint32_t kFPEncodingBFloat16KHR = 0;
constexpr uint32_t kUseA = 0, kUseB = 1, kUseAccumulator = 2;
constexpr uint32_t kLayoutRowMajor = 0, kLayoutColumnMajor = 1;
// Cooperative Matrix Operands: signed components of A, B, C, Result.
constexpr uint32_t kSignedA = 0x1, kSignedB = 0x2, kSignedC = 0x4, kSignedResult = 0x8;

[[noreturn]] void
fail(const std::string& message)
{
    throw Error("Rewriting a cooperative-matrix module to VK_KHR_cooperative_matrix: " + message);
}

struct Instruction
{
    uint32_t opcode;
    std::vector<uint32_t> operands; // the words after the first
};

std::vector<uint32_t>
stringWords(const char* text)
{
    std::vector<uint32_t> words((std::strlen(text) + 4) / 4, 0);
    std::memcpy(words.data(), text, std::strlen(text));
    return words;
}

std::string
literalString(const std::vector<uint32_t>& operands, size_t first)
{
    std::string text;
    for (size_t i = first; i < operands.size(); ++i) {
        for (int byte = 0; byte < 4; ++byte) {
            char c = static_cast<char>((operands[i] >> (8 * byte)) & 0xFF);
            if (c == 0) {
                return text;
            }
            text += c;
        }
    }
    return text;
}

} // namespace

std::vector<uint32_t>
coopmatNvToKhr(const std::vector<uint32_t>& module, bool bf16Operands)
{
    if (module.size() < 5 || module[0] != spv::MagicNumber) {
        fail("the input is not a SPIR-V module");
    }
    std::vector<Instruction> instructions;
    for (size_t at = 5; at < module.size();) {
        uint32_t count = module[at] >> 16;
        if (count == 0 || at + count > module.size()) {
            fail(logger::format("a malformed instruction at word {}", at));
        }
        instructions.push_back({ module[at] & 0xFFFF, { module.begin() + at + 1, module.begin() + at + count } });
        at += count;
    }

    // Value types, cooperative-matrix types, constants and scalar types.
    std::map<uint32_t, uint32_t> valueType;
    std::map<uint32_t, const Instruction*> definition;
    std::map<uint32_t, uint32_t> role; // matrix type -> Use
    bool hasNvCapability = false;
    for (const auto& instruction : instructions) {
        bool hasResult = false, hasResultType = false;
        spv::HasResultAndType(static_cast<spv::Op>(instruction.opcode), &hasResult, &hasResultType);
        if (hasResult) {
            uint32_t id = instruction.operands.at(hasResultType ? 1 : 0);
            definition[id] = &instruction;
            if (hasResultType) {
                valueType[id] = instruction.operands.at(0);
            }
        }
        if (instruction.opcode == spv::OpCapability && instruction.operands.at(0) == spv::CapabilityCooperativeMatrixNV) {
            hasNvCapability = true;
        }
        if (instruction.opcode == kOpTypeCooperativeMatrixKHR || instruction.opcode == kOpCooperativeMatrixLoadKHR) {
            fail("the module already uses SPV_KHR_cooperative_matrix");
        }
    }
    if (!hasNvCapability) {
        fail("the module does not declare the CooperativeMatrixNV capability");
    }
    auto assign = [&](uint32_t type, uint32_t use, const char* what) {
        auto d = definition.find(type);
        if (d == definition.end() || d->second->opcode != spv::OpTypeCooperativeMatrixNV) {
            fail(logger::format("the {} of a multiply-add (type %{}) is not a cooperative matrix type", what, type));
        }
        auto [it, added] = role.emplace(type, use);
        if (!added && it->second != use) {
            fail(logger::format("cooperative matrix type %{} is used both as {} and as {} of "
                                "multiply-adds; KHR matrices have one use each (declare the types "
                                "with distinct dimension constants)",
                                type,
                                it->second == kUseA ? "A" : it->second == kUseB ? "B" : "accumulator",
                                use == kUseA ? "A" : use == kUseB ? "B" : "accumulator"));
        }
    };
    auto typeOf = [&](uint32_t value) {
        auto t = valueType.find(value);
        if (t == valueType.end()) {
            fail(logger::format("value %{} has no type", value));
        }
        return t->second;
    };
    for (const auto& instruction : instructions) {
        if (instruction.opcode == spv::OpCooperativeMatrixMulAddNV) {
            const auto& o = instruction.operands; // result type, result, A, B, C
            assign(typeOf(o.at(2)), kUseA, "A");
            assign(typeOf(o.at(3)), kUseB, "B");
            assign(typeOf(o.at(4)), kUseAccumulator, "C");
            assign(o.at(0), kUseAccumulator, "result");
        }
    }

    // New ids from the old bound: a 32-bit unsigned type (an existing one if
    // there is one), its constants 0, 1, 2 (uses, layouts), the bf16 type.
    uint32_t bound = module[3];
    uint32_t uintType = 0;
    for (const auto& instruction : instructions) {
        if (instruction.opcode == spv::OpTypeInt && instruction.operands.at(1) == 32 &&
            instruction.operands.at(2) == 0) {
            uintType = instruction.operands.at(0);
            break;
        }
    }
    std::vector<Instruction> declarations;
    if (uintType == 0) {
        uintType = bound++;
        declarations.push_back({ spv::OpTypeInt, { uintType, 32, 0 } });
    }
    uint32_t constant[3];
    for (uint32_t value = 0; value < 3; ++value) {
        constant[value] = bound++;
        declarations.push_back({ spv::OpConstant, { uintType, constant[value], value } });
    }
    uint32_t bf16Type = 0;
    if (bf16Operands) {
        bf16Type = bound++;
        declarations.push_back({ spv::OpTypeFloat, { bf16Type, 16, kFPEncodingBFloat16KHR } });
    }
    auto layout = [&](uint32_t columnMajor) {
        auto d = definition.find(columnMajor);
        if (d != definition.end() && d->second->opcode == spv::OpConstantTrue) {
            return constant[kLayoutColumnMajor];
        }
        if (d != definition.end() && d->second->opcode == spv::OpConstantFalse) {
            return constant[kLayoutRowMajor];
        }
        fail(logger::format("the column-major operand %{} of a load or store is not a constant "
                            "true or false",
                            columnMajor));
    };
    auto componentSign = [&](uint32_t matrixType, uint32_t flag) -> uint32_t {
        const Instruction* type = definition.at(matrixType);
        const Instruction* component = definition.at(type->operands.at(1));
        return component->opcode == spv::OpTypeInt && component->operands.at(2) == 1 ? flag : 0;
    };

    std::vector<uint32_t> out(module.begin(), module.begin() + 5);
    auto emit = [&](uint32_t opcode, const std::vector<uint32_t>& operands) {
        out.push_back(static_cast<uint32_t>((operands.size() + 1) << 16) | opcode);
        out.insert(out.end(), operands.begin(), operands.end());
    };
    bool declared = false;
    for (const auto& instruction : instructions) {
        const auto& o = instruction.operands;
        switch (instruction.opcode) {
            case spv::OpCapability:
                if (o.at(0) == spv::CapabilityCooperativeMatrixNV) {
                    emit(spv::OpCapability, { kCapabilityCooperativeMatrixKHR });
                    if (bf16Operands) {
                        emit(spv::OpCapability, { kCapabilityBFloat16TypeKHR });
                        emit(spv::OpCapability, { kCapabilityBFloat16CooperativeMatrixKHR });
                    }
                    continue;
                }
                break;
            case spv::OpExtension:
                if (literalString(o, 0) == "SPV_NV_cooperative_matrix") {
                    emit(spv::OpExtension, stringWords("SPV_KHR_cooperative_matrix"));
                    if (bf16Operands) {
                        emit(spv::OpExtension, stringWords("SPV_KHR_bfloat16"));
                    }
                    continue;
                }
                break;
            case spv::OpTypeCooperativeMatrixNV: { // result, component, scope, rows, columns
                if (!declared) {
                    for (const auto& d : declarations) {
                        emit(d.opcode, d.operands);
                    }
                    declared = true;
                }
                auto r = role.find(o.at(0));
                uint32_t use = r == role.end() ? kUseAccumulator : r->second;
                uint32_t component = o.at(1);
                if (bf16Operands && use != kUseAccumulator) {
                    const Instruction* c = definition.at(component);
                    if (c->opcode != spv::OpTypeFloat || c->operands.at(1) != 16) {
                        fail(logger::format("bf16 operands need 16-bit float A and B matrices; type "
                                            "%{} has another component type",
                                            o.at(0)));
                    }
                    component = bf16Type;
                }
                emit(kOpTypeCooperativeMatrixKHR, { o.at(0), component, o.at(2), o.at(3), o.at(4), constant[use] });
                continue;
            }
            case spv::OpCooperativeMatrixLoadNV: { // type, result, pointer, stride, column major, [memory]
                std::vector<uint32_t> operands = { o.at(0), o.at(1), o.at(2), layout(o.at(4)), o.at(3) };
                operands.insert(operands.end(), o.begin() + 5, o.end());
                emit(kOpCooperativeMatrixLoadKHR, operands);
                continue;
            }
            case spv::OpCooperativeMatrixStoreNV: { // pointer, object, stride, column major, [memory]
                std::vector<uint32_t> operands = { o.at(0), o.at(1), layout(o.at(3)), o.at(2) };
                operands.insert(operands.end(), o.begin() + 4, o.end());
                emit(kOpCooperativeMatrixStoreKHR, operands);
                continue;
            }
            case spv::OpCooperativeMatrixMulAddNV: { // type, result, A, B, C
                uint32_t signedness = componentSign(typeOf(o.at(2)), kSignedA) |
                                      componentSign(typeOf(o.at(3)), kSignedB) |
                                      componentSign(typeOf(o.at(4)), kSignedC) |
                                      componentSign(o.at(0), kSignedResult);
                std::vector<uint32_t> operands = { o.at(0), o.at(1), o.at(2), o.at(3), o.at(4) };
                if (signedness) {
                    operands.push_back(signedness);
                }
                emit(kOpCooperativeMatrixMulAddKHR, operands);
                continue;
            }
            case spv::OpCooperativeMatrixLengthNV:
                emit(kOpCooperativeMatrixLengthKHR, o);
                continue;
            case spv::OpSpecConstantOp:
                if (o.at(2) == spv::OpCooperativeMatrixLengthNV) {
                    std::vector<uint32_t> operands = o;
                    operands[2] = kOpCooperativeMatrixLengthKHR;
                    emit(spv::OpSpecConstantOp, operands);
                    continue;
                }
                break;
            default: break;
        }
        emit(instruction.opcode, o);
    }
    out[3] = bound;
    return out;
}

} // namespace internal
} // namespace kp
