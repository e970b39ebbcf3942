// SPDX-License-Identifier: Apache-2.0
#include "internal/SpirvReflection.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>

#include <spirv/unified1/spirv.hpp>

#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

using logger::format;

namespace {

struct Type
{
    spv::Op op = spv::OpNop;
    std::vector<uint32_t> operands; // the words after the result id
};

struct Decorations
{
    std::optional<uint32_t> set;
    std::optional<uint32_t> binding;
    std::optional<uint32_t> specId;
    std::optional<uint32_t> arrayStride;
    std::optional<uint32_t> builtIn;
    bool block = false;
    bool bufferBlock = false;
    bool nonWritable = false;
    bool nonReadable = false;
};

struct MemberDecorations
{
    std::optional<uint32_t> offset;
    std::optional<uint32_t> matrixStride;
    bool builtIn = false;
    bool nonWritable = false;
    bool nonReadable = false;
};

/** A constant or specialization constant. */
struct Constant
{
    enum class Kind
    {
        eValue,          // OpConstant, OpConstantTrue/False, OpConstantNull
        eSpecValue,      // OpSpecConstant, OpSpecConstantTrue/False
        eComposite,      // OpConstantComposite, OpSpecConstantComposite
        eSpecOperation,  // OpSpecConstantOp
    };
    Kind kind = Kind::eValue;
    uint32_t typeId = 0;
    uint64_t value = 0;              // eValue, eSpecValue (the default)
    uint32_t opcode = 0;             // eSpecOperation
    std::vector<uint32_t> operands;  // eComposite: constituents; eSpecOperation: operands
};

struct Variable
{
    uint32_t id;
    uint32_t typeId;
    uint32_t storageClass;
};

std::string
literalString(const uint32_t* words, size_t count)
{
    std::string text;
    for (size_t i = 0; i < count; ++i) {
        for (int byte = 0; byte < 4; ++byte) {
            char c = static_cast<char>((words[i] >> (8 * byte)) & 0xFF);
            if (c == '\0') {
                return text;
            }
            text.push_back(c);
        }
    }
    return text;
}

uint64_t
literalValue(const uint32_t* words, uint32_t n)
{
    uint64_t value = n >= 1 ? words[0] : 0;
    if (n >= 2) {
        value |= static_cast<uint64_t>(words[1]) << 32;
    }
    return value;
}

} // namespace

/** Everything the reader keeps of a module for specialize(). */
struct ModuleTables
{
    std::unordered_map<uint32_t, Type> types;
    std::unordered_map<uint32_t, Decorations> decorations;
    std::unordered_map<uint32_t, std::map<uint32_t, MemberDecorations>> memberDecorations;
    std::unordered_map<uint32_t, Constant> constants;
    std::unordered_map<uint32_t, std::string> names;
    std::vector<Variable> variables;
    std::optional<std::array<uint32_t, 3>> localSize;   // LocalSize literals
    std::optional<std::array<uint32_t, 3>> localSizeIds; // LocalSizeId operands

    const Type& type(uint32_t id) const
    {
        auto it = types.find(id);
        if (it == types.end()) {
            throw Error(format("The SPIR-V module uses type %{} without declaring it", id));
        }
        return it->second;
    }

    std::string nameOf(uint32_t id) const
    {
        auto it = names.find(id);
        return it != names.end() && !it->second.empty() ? "'" + it->second + "'"
                                                         : "%" + std::to_string(id);
    }
};

namespace {

/** Evaluates constants and specialization constants with given values. */
class Evaluator
{
  public:
    Evaluator(const ModuleTables& tables, const SpecializationValues& values)
      : mTables(tables)
      , mValues(values)
    {
    }

    /** A scalar constant's value (bits, masked to its width), or nothing. */
    std::optional<uint64_t> scalar(uint32_t id, int depth = 0) const
    {
        auto components = evaluate(id, depth);
        if (!components || components->size() != 1) {
            return std::nullopt;
        }
        return components->front();
    }

    /** A constant's components (one for a scalar), or nothing. */
    std::optional<std::vector<uint64_t>> evaluate(uint32_t id, int depth = 0) const
    {
        if (depth > 64) {
            return std::nullopt;
        }
        auto it = mTables.constants.find(id);
        if (it == mTables.constants.end()) {
            return std::nullopt;
        }
        const Constant& c = it->second;
        switch (c.kind) {
            case Constant::Kind::eValue:
                return std::vector<uint64_t>{ c.value };
            case Constant::Kind::eSpecValue: {
                uint64_t value = c.value;
                auto decoration = mTables.decorations.find(id);
                if (decoration != mTables.decorations.end() && decoration->second.specId) {
                    auto given = mValues.find(*decoration->second.specId);
                    if (given != mValues.end()) {
                        value = given->second;
                    }
                }
                return std::vector<uint64_t>{ mask(c.typeId, value) };
            }
            case Constant::Kind::eComposite: {
                std::vector<uint64_t> components;
                for (uint32_t part : c.operands) {
                    auto value = evaluate(part, depth + 1);
                    if (!value) {
                        return std::nullopt;
                    }
                    components.insert(components.end(), value->begin(), value->end());
                }
                return components;
            }
            case Constant::Kind::eSpecOperation:
                return operation(c, depth);
        }
        return std::nullopt;
    }

  private:
    uint32_t width(uint32_t typeId) const
    {
        auto it = mTables.types.find(typeId);
        if (it == mTables.types.end()) {
            return 32;
        }
        if (it->second.op == spv::OpTypeBool) {
            return 1;
        }
        return it->second.operands.empty() ? 32 : it->second.operands[0];
    }

    uint64_t mask(uint32_t typeId, uint64_t value) const
    {
        uint32_t bits = width(typeId);
        if (bits == 1) {
            return value != 0 ? 1 : 0;
        }
        return bits >= 64 ? value : value & ((uint64_t{ 1 } << bits) - 1);
    }

    int64_t signedValue(uint32_t typeId, uint64_t value) const
    {
        uint32_t bits = width(typeId);
        if (bits >= 64 || bits <= 1) {
            return static_cast<int64_t>(value);
        }
        uint64_t sign = uint64_t{ 1 } << (bits - 1);
        return static_cast<int64_t>((value ^ sign) - sign);
    }

    std::optional<std::vector<uint64_t>> operation(const Constant& c, int depth) const
    {
        const auto& ops = c.operands;
        if (c.opcode == spv::OpCompositeExtract) {
            if (ops.size() < 2) {
                return std::nullopt;
            }
            auto composite = evaluate(ops[0], depth + 1);
            if (!composite || ops[1] >= composite->size() || ops.size() > 2) {
                return std::nullopt; // nested composites are not used for sizes
            }
            return std::vector<uint64_t>{ (*composite)[ops[1]] };
        }
        std::vector<uint64_t> in;
        std::vector<uint32_t> inTypes;
        for (uint32_t id : ops) {
            auto value = scalar(id, depth + 1);
            if (!value) {
                return std::nullopt;
            }
            in.push_back(*value);
            auto constant = mTables.constants.find(id);
            inTypes.push_back(constant != mTables.constants.end() ? constant->second.typeId : 0);
        }
        auto a = [&] { return in.at(0); };
        auto b = [&] { return in.at(1); };
        auto sa = [&] { return signedValue(inTypes.at(0), in.at(0)); };
        auto sb = [&] { return signedValue(inTypes.at(1), in.at(1)); };
        uint64_t result = 0;
        try {
            switch (c.opcode) {
                case spv::OpIAdd: result = a() + b(); break;
                case spv::OpISub: result = a() - b(); break;
                case spv::OpIMul: result = a() * b(); break;
                case spv::OpUDiv:
                    if (b() == 0) return std::nullopt;
                    result = a() / b();
                    break;
                case spv::OpSDiv:
                    if (sb() == 0) return std::nullopt;
                    result = static_cast<uint64_t>(sa() / sb());
                    break;
                case spv::OpUMod:
                    if (b() == 0) return std::nullopt;
                    result = a() % b();
                    break;
                case spv::OpSRem:
                case spv::OpSMod:
                    if (sb() == 0) return std::nullopt;
                    result = static_cast<uint64_t>(sa() % sb());
                    break;
                case spv::OpSNegate: result = static_cast<uint64_t>(-sa()); break;
                case spv::OpNot: result = ~a(); break;
                case spv::OpShiftLeftLogical: result = b() >= 64 ? 0 : a() << b(); break;
                case spv::OpShiftRightLogical: result = b() >= 64 ? 0 : a() >> b(); break;
                case spv::OpShiftRightArithmetic:
                    result = static_cast<uint64_t>(sa() >> std::min<uint64_t>(b(), 63));
                    break;
                case spv::OpBitwiseOr: result = a() | b(); break;
                case spv::OpBitwiseXor: result = a() ^ b(); break;
                case spv::OpBitwiseAnd: result = a() & b(); break;
                case spv::OpUConvert: result = a(); break;
                case spv::OpSConvert: result = static_cast<uint64_t>(sa()); break;
                case spv::OpSelect: result = a() != 0 ? b() : in.at(2); break;
                case spv::OpIEqual:
                case spv::OpLogicalEqual: result = a() == b(); break;
                case spv::OpINotEqual:
                case spv::OpLogicalNotEqual: result = a() != b(); break;
                case spv::OpUGreaterThan: result = a() > b(); break;
                case spv::OpSGreaterThan: result = sa() > sb(); break;
                case spv::OpUGreaterThanEqual: result = a() >= b(); break;
                case spv::OpSGreaterThanEqual: result = sa() >= sb(); break;
                case spv::OpULessThan: result = a() < b(); break;
                case spv::OpSLessThan: result = sa() < sb(); break;
                case spv::OpULessThanEqual: result = a() <= b(); break;
                case spv::OpSLessThanEqual: result = sa() <= sb(); break;
                case spv::OpLogicalOr: result = (a() != 0) || (b() != 0); break;
                case spv::OpLogicalAnd: result = (a() != 0) && (b() != 0); break;
                case spv::OpLogicalNot: result = a() == 0; break;
                default: return std::nullopt;
            }
        } catch (const std::out_of_range&) {
            return std::nullopt;
        }
        return std::vector<uint64_t>{ mask(c.typeId, result) };
    }

    const ModuleTables& mTables;
    const SpecializationValues& mValues;
};

/** Byte sizes of types, with array lengths evaluated for given values. */
class Sizes
{
  public:
    Sizes(const ModuleTables& tables, const Evaluator& evaluator)
      : mTables(tables)
      , mEvaluator(evaluator)
    {
    }

    /** Size of a type laid out with its explicit offsets and strides; for
     * types without them (Workgroup variables), the tightly packed size.
     * Nothing when an array length cannot be evaluated. */
    std::optional<uint64_t> of(uint32_t id, uint32_t depth = 0) const
    {
        if (depth > 64) {
            throw Error("The SPIR-V module's types nest too deeply");
        }
        const Type& t = mTables.type(id);
        switch (t.op) {
            case spv::OpTypeBool:
                return 4;
            case spv::OpTypeInt:
            case spv::OpTypeFloat:
                return t.operands.at(0) / 8;
            case spv::OpTypePointer:
                return 8; // physical storage buffer pointers
            case spv::OpTypeVector:
            case spv::OpTypeMatrix: {
                auto element = of(t.operands.at(0), depth + 1);
                return element ? std::optional<uint64_t>(*element * t.operands.at(1)) : std::nullopt;
            }
            case spv::OpTypeArray: {
                auto length = mEvaluator.scalar(t.operands.at(1));
                if (!length) {
                    return std::nullopt;
                }
                auto d = mTables.decorations.find(id);
                if (d != mTables.decorations.end() && d->second.arrayStride) {
                    return *d->second.arrayStride * *length;
                }
                auto element = of(t.operands.at(0), depth + 1);
                return element ? std::optional<uint64_t>(*element * *length) : std::nullopt;
            }
            case spv::OpTypeRuntimeArray:
                return 0;
            case spv::OpTypeStruct: {
                uint64_t size = 0;
                auto members = mTables.memberDecorations.find(id);
                for (uint32_t m = 0; m < t.operands.size(); ++m) {
                    auto memberSize = of(t.operands[m], depth + 1);
                    if (!memberSize) {
                        return std::nullopt;
                    }
                    std::optional<uint32_t> offset;
                    if (members != mTables.memberDecorations.end()) {
                        auto it = members->second.find(m);
                        if (it != members->second.end()) {
                            offset = it->second.offset;
                            const Type& member = mTables.type(t.operands[m]);
                            if (it->second.matrixStride && member.op == spv::OpTypeMatrix) {
                                memberSize = uint64_t{ *it->second.matrixStride } * member.operands.at(1);
                            }
                        }
                    }
                    // Explicit offsets place members; without them they follow
                    // each other.
                    size = offset ? std::max(size, *offset + *memberSize) : size + *memberSize;
                }
                return size;
            }
            default:
                throw Error(format("The SPIR-V module sizes a value of an unsupported type "
                                   "(opcode {})",
                                   static_cast<uint32_t>(t.op)));
        }
    }

  private:
    const ModuleTables& mTables;
    const Evaluator& mEvaluator;
};

class Reader
{
  public:
    explicit Reader(const std::vector<uint32_t>& words)
      : mWords(words)
      , mTables(std::make_shared<ModuleTables>())
    {
    }

    ReflectedModule run()
    {
        if (mWords.size() < 5 || mWords[0] != spv::MagicNumber) {
            throw Error("The SPIR-V module has no valid header (magic number 0x07230203)");
        }
        size_t position = 5;
        while (position < mWords.size()) {
            uint32_t first = mWords[position];
            uint32_t count = first >> 16;
            auto op = static_cast<spv::Op>(first & 0xFFFF);
            if (count == 0 || position + count > mWords.size()) {
                throw Error(format("The SPIR-V module has a malformed instruction at word {}",
                                   position));
            }
            visit(op, &mWords[position + 1], count - 1);
            position += count;
        }
        return finish();
    }

  private:
    void visit(spv::Op op, const uint32_t* operand, uint32_t n)
    {
        ModuleTables& t = *mTables;
        switch (op) {
            case spv::OpCapability:
                if (n >= 1) mModule.capabilities.push_back(operand[0]);
                break;
            case spv::OpExtension:
                mModule.extensions.push_back(literalString(operand, n));
                break;
            case spv::OpName:
                if (n >= 2) t.names[operand[0]] = literalString(operand + 1, n - 1);
                break;
            case spv::OpEntryPoint:
                if (n >= 3 && operand[0] == spv::ExecutionModelGLCompute) {
                    mModule.computeEntryPoints.push_back(literalString(operand + 2, n - 2));
                }
                break;
            case spv::OpExecutionMode:
            case spv::OpExecutionModeId:
                if (n >= 5 && operand[1] == spv::ExecutionModeLocalSize) {
                    t.localSize = std::array<uint32_t, 3>{ operand[2], operand[3], operand[4] };
                } else if (n >= 5 && operand[1] == spv::ExecutionModeLocalSizeId) {
                    t.localSizeIds = std::array<uint32_t, 3>{ operand[2], operand[3], operand[4] };
                    mModule.usesLocalSizeId = true;
                } else if (n >= 3 && (operand[1] == spv::ExecutionModeDenormPreserve ||
                                      operand[1] == spv::ExecutionModeDenormFlushToZero ||
                                      operand[1] == spv::ExecutionModeSignedZeroInfNanPreserve ||
                                      operand[1] == spv::ExecutionModeRoundingModeRTE ||
                                      operand[1] == spv::ExecutionModeRoundingModeRTZ)) {
                    mModule.floatControlModes.push_back({ operand[1], operand[2] });
                }
                break;
            case spv::OpDecorate:
                if (n >= 2) decorate(operand[0], static_cast<spv::Decoration>(operand[1]), operand + 2, n - 2);
                break;
            case spv::OpMemberDecorate:
                if (n >= 3) {
                    auto& member = t.memberDecorations[operand[0]][operand[1]];
                    auto decoration = static_cast<spv::Decoration>(operand[2]);
                    if (decoration == spv::DecorationOffset && n >= 4) member.offset = operand[3];
                    if (decoration == spv::DecorationMatrixStride && n >= 4) member.matrixStride = operand[3];
                    if (decoration == spv::DecorationBuiltIn) member.builtIn = true;
                    if (decoration == spv::DecorationNonWritable) member.nonWritable = true;
                    if (decoration == spv::DecorationNonReadable) member.nonReadable = true;
                }
                break;
            case spv::OpTypeVoid:
            case spv::OpTypeBool:
            case spv::OpTypeInt:
            case spv::OpTypeFloat:
            case spv::OpTypeVector:
            case spv::OpTypeMatrix:
            case spv::OpTypeImage:
            case spv::OpTypeSampler:
            case spv::OpTypeSampledImage:
            case spv::OpTypeArray:
            case spv::OpTypeRuntimeArray:
            case spv::OpTypeStruct:
                if (n >= 1) t.types[operand[0]] = Type{ op, std::vector<uint32_t>(operand + 1, operand + n) };
                break;
            case spv::OpTypePointer:
                if (n >= 1) t.types[operand[0]] = Type{ op, std::vector<uint32_t>(operand + 1, operand + n) };
                break;
            case spv::OpConstant:
                if (n >= 3) addConstant(operand[1], Constant::Kind::eValue, operand[0], literalValue(operand + 2, n - 2));
                break;
            case spv::OpConstantTrue:
            case spv::OpConstantFalse:
                if (n >= 2) addConstant(operand[1], Constant::Kind::eValue, operand[0], op == spv::OpConstantTrue);
                break;
            case spv::OpConstantNull:
                if (n >= 2) addConstant(operand[1], Constant::Kind::eValue, operand[0], 0);
                break;
            case spv::OpSpecConstant:
                if (n >= 3) {
                    addConstant(operand[1], Constant::Kind::eSpecValue, operand[0], literalValue(operand + 2, n - 2));
                    mSpecConstantTypes[operand[1]] = operand[0];
                }
                break;
            case spv::OpSpecConstantTrue:
            case spv::OpSpecConstantFalse:
                if (n >= 2) {
                    addConstant(operand[1], Constant::Kind::eSpecValue, operand[0], op == spv::OpSpecConstantTrue);
                    mSpecConstantTypes[operand[1]] = operand[0];
                }
                break;
            case spv::OpConstantComposite:
            case spv::OpSpecConstantComposite:
                if (n >= 2) {
                    Constant& c = addConstant(operand[1], Constant::Kind::eComposite, operand[0], 0);
                    c.operands.assign(operand + 2, operand + n);
                }
                break;
            case spv::OpSpecConstantOp:
                if (n >= 3) {
                    Constant& c = addConstant(operand[1], Constant::Kind::eSpecOperation, operand[0], 0);
                    c.opcode = operand[2];
                    c.operands.assign(operand + 3, operand + n);
                }
                break;
            case spv::OpVariable:
                if (n >= 3) t.variables.push_back({ operand[1], operand[0], operand[2] });
                break;
            default:
                break;
        }
    }

    Constant& addConstant(uint32_t id, Constant::Kind kind, uint32_t typeId, uint64_t value)
    {
        Constant& c = mTables->constants[id];
        c.kind = kind;
        c.typeId = typeId;
        c.value = value;
        return c;
    }

    void decorate(uint32_t target, spv::Decoration decoration, const uint32_t* literal, uint32_t n)
    {
        auto& d = mTables->decorations[target];
        switch (decoration) {
            case spv::DecorationDescriptorSet:
                if (n >= 1) d.set = literal[0];
                break;
            case spv::DecorationBinding:
                if (n >= 1) d.binding = literal[0];
                break;
            case spv::DecorationSpecId:
                if (n >= 1) d.specId = literal[0];
                break;
            case spv::DecorationArrayStride:
                if (n >= 1) d.arrayStride = literal[0];
                break;
            case spv::DecorationBuiltIn:
                if (n >= 1) d.builtIn = literal[0];
                break;
            case spv::DecorationBlock:
                d.block = true;
                break;
            case spv::DecorationBufferBlock:
                d.bufferBlock = true;
                break;
            case spv::DecorationNonWritable:
                d.nonWritable = true;
                break;
            case spv::DecorationNonReadable:
                d.nonReadable = true;
                break;
            default:
                break;
        }
    }

    ScalarType scalarType(uint32_t id) const
    {
        const Type& t = mTables->type(id);
        ScalarType scalar;
        if (t.op == spv::OpTypeBool) {
            scalar.kind = ScalarType::Kind::eBool;
            scalar.width = 32;
        } else if (t.op == spv::OpTypeInt) {
            scalar.width = t.operands.at(0);
            scalar.kind = t.operands.at(1) ? ScalarType::Kind::eInt : ScalarType::Kind::eUnsignedInt;
        } else if (t.op == spv::OpTypeFloat) {
            scalar.width = t.operands.at(0);
            scalar.kind = ScalarType::Kind::eFloat;
        }
        return scalar;
    }

    BindingKind bindingKind(uint32_t pointee, uint32_t storageClass, uint32_t* count,
                            const Evaluator& defaults) const
    {
        *count = 1;
        uint32_t id = pointee;
        const Type* t = &mTables->type(id);
        while (t->op == spv::OpTypeArray || t->op == spv::OpTypeRuntimeArray) {
            if (t->op == spv::OpTypeArray) {
                *count *= static_cast<uint32_t>(defaults.scalar(t->operands.at(1)).value_or(1));
            }
            id = t->operands.at(0);
            t = &mTables->type(id);
        }
        if (storageClass == spv::StorageClassStorageBuffer) {
            return BindingKind::eStorageBuffer;
        }
        if (storageClass == spv::StorageClassUniform) {
            auto d = mTables->decorations.find(id);
            bool bufferBlock = d != mTables->decorations.end() && d->second.bufferBlock;
            return bufferBlock ? BindingKind::eStorageBuffer : BindingKind::eUniformBuffer;
        }
        if (storageClass == spv::StorageClassUniformConstant) {
            switch (t->op) {
                case spv::OpTypeImage:
                    // Operand 5 (after the result id): Sampled, 2 = storage image.
                    return t->operands.at(5) == 2 ? BindingKind::eStorageImage
                                                  : BindingKind::eSampledImage;
                case spv::OpTypeSampler:
                    return BindingKind::eSampler;
                case spv::OpTypeSampledImage:
                    return BindingKind::eCombinedImageSampler;
                default:
                    return BindingKind::eOther;
            }
        }
        return BindingKind::eOther;
    }

    /** A variable whose type (or, for a block, each member) is a built-in. */
    bool isBuiltIn(const Variable& variable, uint32_t pointee) const
    {
        auto d = mTables->decorations.find(variable.id);
        if (d != mTables->decorations.end() && d->second.builtIn) {
            return true;
        }
        uint32_t id = pointee;
        const Type* t = &mTables->type(id);
        while (t->op == spv::OpTypeArray || t->op == spv::OpTypeRuntimeArray) {
            id = t->operands.at(0);
            t = &mTables->type(id);
        }
        if (t->op != spv::OpTypeStruct || t->operands.empty()) {
            return false;
        }
        auto members = mTables->memberDecorations.find(id);
        if (members == mTables->memberDecorations.end()) {
            return false;
        }
        for (uint32_t m = 0; m < t->operands.size(); ++m) {
            auto it = members->second.find(m);
            if (it == members->second.end() || !it->second.builtIn) {
                return false;
            }
        }
        return true;
    }

    // Whether every member of the block `structId` has `flag` (glslang puts
    // readonly / writeonly of a buffer block on each member).
    bool allMembers(uint32_t structId, bool MemberDecorations::*flag) const
    {
        auto t = mTables->types.find(structId);
        if (t == mTables->types.end() || t->second.op != spv::OpTypeStruct ||
            t->second.operands.empty()) {
            return false;
        }
        auto members = mTables->memberDecorations.find(structId);
        if (members == mTables->memberDecorations.end()) {
            return false;
        }
        for (uint32_t m = 0; m < t->second.operands.size(); ++m) {
            auto it = members->second.find(m);
            if (it == members->second.end() || !(it->second.*flag)) {
                return false;
            }
        }
        return true;
    }

    ReflectedModule finish()
    {
        SpecializationValues none;
        Evaluator defaults(*mTables, none);
        Sizes sizes(*mTables, defaults);
        for (const auto& variable : mTables->variables) {
            const Type& pointer = mTables->type(variable.typeId);
            if (pointer.op != spv::OpTypePointer) {
                continue;
            }
            uint32_t pointee = pointer.operands.at(1);
            if (variable.storageClass == spv::StorageClassPushConstant) {
                // Declared with the default values of any specialization
                // constants in it (push constants cannot be specialized).
                mModule.pushConstantBytes = static_cast<uint32_t>(sizes.of(pointee).value_or(0));
                continue;
            }
            if (variable.storageClass == spv::StorageClassInput ||
                variable.storageClass == spv::StorageClassOutput) {
                if (!isBuiltIn(variable, pointee)) {
                    mModule.userInterfaceVariables.push_back(
                      std::string(variable.storageClass == spv::StorageClassInput ? "Input" : "Output") +
                      " variable " + mTables->nameOf(variable.id));
                }
                continue;
            }
            auto d = mTables->decorations.find(variable.id);
            if (d == mTables->decorations.end() || !d->second.binding) {
                continue;
            }
            ReflectedBinding binding;
            binding.set = d->second.set.value_or(0);
            binding.binding = *d->second.binding;
            binding.kind = bindingKind(pointee, variable.storageClass, &binding.count, defaults);
            binding.nonWritable = d->second.nonWritable || allMembers(pointee, &MemberDecorations::nonWritable);
            binding.nonReadable = d->second.nonReadable || allMembers(pointee, &MemberDecorations::nonReadable);
            auto name = mTables->names.find(variable.id);
            if (name != mTables->names.end()) {
                binding.name = name->second;
            }
            mModule.bindings.push_back(binding);
        }
        std::sort(mModule.bindings.begin(), mModule.bindings.end(), [](const auto& a, const auto& b) {
            return a.set != b.set ? a.set < b.set : a.binding < b.binding;
        });
        for (const auto& [id, typeId] : mSpecConstantTypes) {
            auto d = mTables->decorations.find(id);
            if (d != mTables->decorations.end() && d->second.specId) {
                mModule.specConstants.push_back({ *d->second.specId, scalarType(typeId) });
            }
        }
        std::sort(mModule.specConstants.begin(),
                  mModule.specConstants.end(),
                  [](const auto& a, const auto& b) { return a.id < b.id; });
        mModule.tables = mTables;
        return std::move(mModule);
    }

    const std::vector<uint32_t>& mWords;
    ReflectedModule mModule;
    std::shared_ptr<ModuleTables> mTables;
    std::map<uint32_t, uint32_t> mSpecConstantTypes;
};

} // namespace

SpecializedSizes
ReflectedModule::specialize(const SpecializationValues& values) const
{
    SpecializedSizes result;
    if (!tables) {
        return result;
    }
    const ModuleTables& t = *tables;
    Evaluator evaluator(t, values);

    // The WorkgroupSize built-in overrides the execution modes; LocalSizeId
    // names constants that may be specialized; LocalSize is literal.
    std::optional<uint32_t> builtIn;
    for (const auto& [id, decoration] : t.decorations) {
        if (decoration.builtIn == spv::BuiltInWorkgroupSize && t.constants.count(id) != 0) {
            builtIn = id;
        }
    }
    if (builtIn) {
        result.localSizeSource = "the WorkgroupSize built-in";
        auto components = evaluator.evaluate(*builtIn);
        if (components && components->size() == 3) {
            result.localSize = std::array<uint32_t, 3>{ static_cast<uint32_t>((*components)[0]),
                                                        static_cast<uint32_t>((*components)[1]),
                                                        static_cast<uint32_t>((*components)[2]) };
        }
    } else if (t.localSizeIds) {
        result.localSizeSource = "LocalSizeId";
        std::array<uint32_t, 3> size{};
        bool known = true;
        for (int axis = 0; axis < 3; ++axis) {
            auto value = evaluator.scalar((*t.localSizeIds)[axis]);
            known = known && value.has_value();
            size[axis] = static_cast<uint32_t>(value.value_or(0));
        }
        if (known) {
            result.localSize = size;
        }
    } else if (t.localSize) {
        result.localSizeSource = "LocalSize";
        result.localSize = t.localSize;
    }

    // Shared memory: Workgroup variables (Block-decorated ones, with
    // explicit layouts, alias each other).
    Sizes sizes(t, evaluator);
    uint64_t separate = 0;
    uint64_t aliased = 0;
    bool known = true;
    for (const auto& variable : t.variables) {
        if (variable.storageClass != spv::StorageClassWorkgroup) {
            continue;
        }
        const Type& pointer = t.type(variable.typeId);
        uint32_t pointee = pointer.operands.at(1);
        auto size = sizes.of(pointee);
        if (!size) {
            known = false;
            continue;
        }
        auto d = t.decorations.find(pointee);
        bool block = d != t.decorations.end() && d->second.block;
        if (block) {
            aliased = std::max(aliased, *size);
        } else {
            separate += *size;
        }
    }
    if (known) {
        result.workgroupMemoryBytes = separate + aliased;
    }
    return result;
}

const char*
bindingKindName(BindingKind kind)
{
    switch (kind) {
        case BindingKind::eStorageBuffer: return "storage buffer";
        case BindingKind::eStorageImage: return "storage image";
        case BindingKind::eUniformBuffer: return "uniform buffer";
        case BindingKind::eSampledImage: return "sampled image";
        case BindingKind::eSampler: return "sampler";
        case BindingKind::eCombinedImageSampler: return "combined image sampler";
        case BindingKind::eOther: return "resource of another kind";
    }
    return "resource";
}

std::string
ScalarType::name() const
{
    switch (kind) {
        case Kind::eBool: return "bool";
        case Kind::eInt: return "int" + std::to_string(width);
        case Kind::eUnsignedInt: return "uint" + std::to_string(width);
        case Kind::eFloat: return "float" + std::to_string(width);
        case Kind::eOther: return "non-scalar";
    }
    return "unknown";
}

ReflectedModule
reflect(const std::vector<uint32_t>& words)
{
    try {
        return Reader(words).run();
    } catch (const std::out_of_range&) {
        throw Error("The SPIR-V module has an instruction with too few operands");
    }
}

} // namespace internal
} // namespace kp
