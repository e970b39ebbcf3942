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

namespace {

using logger::format;

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
    bool block = false;
    bool bufferBlock = false;
    bool nonWritable = false;
    bool nonReadable = false;
};

struct MemberDecorations
{
    std::optional<uint32_t> offset;
    std::optional<uint32_t> matrixStride;
    bool nonWritable = false;
    bool nonReadable = false;
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

class Reader
{
  public:
    explicit Reader(const std::vector<uint32_t>& words) : mWords(words) {}

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
        switch (op) {
            case spv::OpCapability:
                if (n >= 1) mModule.capabilities.push_back(operand[0]);
                break;
            case spv::OpExtension:
                mModule.extensions.push_back(literalString(operand, n));
                break;
            case spv::OpEntryPoint:
                if (n >= 3 && operand[0] == spv::ExecutionModelGLCompute) {
                    mModule.computeEntryPoints.push_back(literalString(operand + 2, n - 2));
                }
                break;
            case spv::OpExecutionMode:
                if (n >= 5 && operand[1] == spv::ExecutionModeLocalSize) {
                    mModule.localSize = std::array<uint32_t, 3>{ operand[2], operand[3], operand[4] };
                }
                break;
            case spv::OpDecorate:
                if (n >= 2) decorate(operand[0], static_cast<spv::Decoration>(operand[1]), operand + 2, n - 2);
                break;
            case spv::OpMemberDecorate:
                if (n >= 3) {
                    auto& member = mMemberDecorations[operand[0]][operand[1]];
                    auto decoration = static_cast<spv::Decoration>(operand[2]);
                    if (decoration == spv::DecorationOffset && n >= 4) member.offset = operand[3];
                    if (decoration == spv::DecorationMatrixStride && n >= 4) member.matrixStride = operand[3];
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
            case spv::OpTypePointer:
                if (n >= 1) mTypes[operand[0]] = Type{ op, std::vector<uint32_t>(operand + 1, operand + n) };
                break;
            case spv::OpConstant:
                if (n >= 3) mConstants[operand[1]] = operand[2];
                break;
            case spv::OpSpecConstant:
            case spv::OpSpecConstantTrue:
            case spv::OpSpecConstantFalse:
                if (n >= 2) mSpecConstantTypes[operand[1]] = operand[0];
                break;
            case spv::OpVariable:
                if (n >= 3) mVariables.push_back({ operand[1], operand[0], operand[2] });
                break;
            default:
                break;
        }
    }

    void decorate(uint32_t target, spv::Decoration decoration, const uint32_t* literal, uint32_t n)
    {
        auto& d = mDecorations[target];
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

    const Type& type(uint32_t id) const
    {
        auto it = mTypes.find(id);
        if (it == mTypes.end()) {
            throw Error(format("The SPIR-V module uses type %{} without declaring it", id));
        }
        return it->second;
    }

    // Size in bytes of a type laid out with its explicit offsets/strides.
    uint32_t sizeOf(uint32_t id, uint32_t depth = 0) const
    {
        if (depth > 64) {
            throw Error("The SPIR-V module's types nest too deeply");
        }
        const Type& t = type(id);
        switch (t.op) {
            case spv::OpTypeBool:
                return 4;
            case spv::OpTypeInt:
            case spv::OpTypeFloat:
                return t.operands.at(0) / 8;
            case spv::OpTypeVector:
                return sizeOf(t.operands.at(0), depth + 1) * t.operands.at(1);
            case spv::OpTypeMatrix:
                return sizeOf(t.operands.at(0), depth + 1) * t.operands.at(1);
            case spv::OpTypeArray: {
                uint32_t length = constantValue(t.operands.at(1));
                auto d = mDecorations.find(id);
                uint32_t stride = d != mDecorations.end() && d->second.arrayStride
                                    ? *d->second.arrayStride
                                    : sizeOf(t.operands.at(0), depth + 1);
                return stride * length;
            }
            case spv::OpTypeRuntimeArray:
                return 0;
            case spv::OpTypeStruct: {
                uint32_t size = 0;
                auto members = mMemberDecorations.find(id);
                for (uint32_t m = 0; m < t.operands.size(); ++m) {
                    uint32_t offset = 0;
                    uint32_t memberSize = sizeOf(t.operands[m], depth + 1);
                    if (members != mMemberDecorations.end()) {
                        auto it = members->second.find(m);
                        if (it != members->second.end()) {
                            offset = it->second.offset.value_or(0);
                            if (it->second.matrixStride && type(t.operands[m]).op == spv::OpTypeMatrix) {
                                memberSize = *it->second.matrixStride * type(t.operands[m]).operands.at(1);
                            }
                        }
                    }
                    size = std::max(size, offset + memberSize);
                }
                return size;
            }
            default:
                throw Error(format("The SPIR-V module has a push-constant member of an "
                                   "unsupported type (opcode {})",
                                   static_cast<uint32_t>(t.op)));
        }
    }

    uint32_t constantValue(uint32_t id) const
    {
        auto it = mConstants.find(id);
        if (it == mConstants.end()) {
            // Array lengths given by specialization constants: count the
            // default, which is what the pipeline gets unless overridden.
            return 1;
        }
        return it->second;
    }

    ScalarType scalarType(uint32_t id) const
    {
        const Type& t = type(id);
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

    BindingKind bindingKind(uint32_t pointee, uint32_t storageClass, uint32_t* count) const
    {
        *count = 1;
        uint32_t id = pointee;
        const Type* t = &type(id);
        while (t->op == spv::OpTypeArray || t->op == spv::OpTypeRuntimeArray) {
            if (t->op == spv::OpTypeArray) {
                *count *= constantValue(t->operands.at(1));
            }
            id = t->operands.at(0);
            t = &type(id);
        }
        if (storageClass == spv::StorageClassStorageBuffer) {
            return BindingKind::eStorageBuffer;
        }
        if (storageClass == spv::StorageClassUniform) {
            auto d = mDecorations.find(id);
            bool bufferBlock = d != mDecorations.end() && d->second.bufferBlock;
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

    std::string nameOf(uint32_t) const { return {}; }

    // Whether every member of the block `structId` has `flag` (glslang puts
    // readonly / writeonly of a buffer block on each member).
    bool allMembers(uint32_t structId, bool MemberDecorations::*flag) const
    {
        auto t = mTypes.find(structId);
        if (t == mTypes.end() || t->second.op != spv::OpTypeStruct || t->second.operands.empty()) {
            return false;
        }
        auto members = mMemberDecorations.find(structId);
        if (members == mMemberDecorations.end()) {
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
        for (const auto& variable : mVariables) {
            const Type& pointer = type(variable.typeId);
            if (pointer.op != spv::OpTypePointer) {
                continue;
            }
            uint32_t pointee = pointer.operands.at(1);
            if (variable.storageClass == spv::StorageClassPushConstant) {
                mModule.pushConstantBytes = sizeOf(pointee);
                continue;
            }
            auto d = mDecorations.find(variable.id);
            if (d == mDecorations.end() || !d->second.binding) {
                continue;
            }
            ReflectedBinding binding;
            binding.set = d->second.set.value_or(0);
            binding.binding = *d->second.binding;
            binding.kind = bindingKind(pointee, variable.storageClass, &binding.count);
            binding.nonWritable = d->second.nonWritable || allMembers(pointee, &MemberDecorations::nonWritable);
            binding.nonReadable = d->second.nonReadable || allMembers(pointee, &MemberDecorations::nonReadable);
            mModule.bindings.push_back(binding);
        }
        std::sort(mModule.bindings.begin(), mModule.bindings.end(), [](const auto& a, const auto& b) {
            return a.set != b.set ? a.set < b.set : a.binding < b.binding;
        });
        for (const auto& [id, typeId] : mSpecConstantTypes) {
            auto d = mDecorations.find(id);
            if (d != mDecorations.end() && d->second.specId) {
                mModule.specConstants.push_back({ *d->second.specId, scalarType(typeId) });
            }
        }
        std::sort(mModule.specConstants.begin(),
                  mModule.specConstants.end(),
                  [](const auto& a, const auto& b) { return a.id < b.id; });
        return std::move(mModule);
    }

    struct Variable
    {
        uint32_t id;
        uint32_t typeId;
        uint32_t storageClass;
    };

    const std::vector<uint32_t>& mWords;
    ReflectedModule mModule;
    std::unordered_map<uint32_t, Type> mTypes;
    std::unordered_map<uint32_t, Decorations> mDecorations;
    std::unordered_map<uint32_t, std::map<uint32_t, MemberDecorations>> mMemberDecorations;
    std::unordered_map<uint32_t, uint32_t> mConstants;
    std::map<uint32_t, uint32_t> mSpecConstantTypes;
    std::vector<Variable> mVariables;
};

} // namespace

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

std::string
capabilityName(uint32_t capability)
{
    switch (capability) {
        case spv::CapabilityFloat64: return "Float64";
        case spv::CapabilityInt64: return "Int64";
        case spv::CapabilityInt16: return "Int16";
        case spv::CapabilityInt8: return "Int8";
        case spv::CapabilityFloat16: return "Float16";
        case spv::CapabilityStorageBuffer16BitAccess: return "StorageBuffer16BitAccess";
        case spv::CapabilityUniformAndStorageBuffer16BitAccess:
            return "UniformAndStorageBuffer16BitAccess";
        case spv::CapabilityStoragePushConstant16: return "StoragePushConstant16";
        case spv::CapabilityStorageBuffer8BitAccess: return "StorageBuffer8BitAccess";
        case spv::CapabilityUniformAndStorageBuffer8BitAccess:
            return "UniformAndStorageBuffer8BitAccess";
        case spv::CapabilityStoragePushConstant8: return "StoragePushConstant8";
        case spv::CapabilityVulkanMemoryModel: return "VulkanMemoryModel";
        case spv::CapabilityVulkanMemoryModelDeviceScope: return "VulkanMemoryModelDeviceScope";
        case spv::CapabilityVariablePointers: return "VariablePointers";
        case spv::CapabilityVariablePointersStorageBuffer: return "VariablePointersStorageBuffer";
        default: return "capability " + std::to_string(capability);
    }
}

} // namespace internal
} // namespace kp
