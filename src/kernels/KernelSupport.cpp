// SPDX-License-Identifier: Apache-2.0
#include "kernels/KernelSupport.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "internal/Environment.hpp"
#include "kernels/BuiltinShaderTable.hpp"
#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace kernels {

using logger::format;

const char*
typeName(StorageType type)
{
    switch (type) {
        case StorageType::eF32: return "f32";
        case StorageType::eF16: return "f16";
        case StorageType::eBF16: return "bf16";
    }
    return "f32";
}

std::vector<uint32_t>
builtinSpirv(const std::string& name)
{
    for (const auto& shader : kBuiltinShaders) {
        if (name == shader.name) {
            return std::vector<uint32_t>(shader.words, shader.words + shader.count);
        }
    }
    throw Error("Internal error: the kernel library has no built-in shader '" + name + "'");
}

const std::vector<std::string>&
kernelPathNames()
{
    static const std::vector<std::string> names = { "subgroup",     "matvec",      "staged",
                                                    "matvec-qx",    "matvec-float", "coopmat-nv",
                                                    "coopmat-khr",  "coopmat-quant-words", "matvec-norm",
                                                    "attention-coopmat", "attention-decode-flash", "attention-decode-ahead",
                                                    "grouped-blocks", "matvec-x-pass", "matvec-rope", "matvec-attention",
                                                    "gemm-swiglu", "matvec-glu", "tuning-tables" };
    return names;
}

bool
DeviceCaps::isDisabled(const std::string& path) const
{
    return std::find(disabled.begin(), disabled.end(), path) != disabled.end();
}

uint32_t
DeviceCaps::localSize(uint32_t preferred) const
{
    uint32_t size = 1;
    while (size * 2 <= preferred && size * 2 <= maxInvocations) {
        size *= 2;
    }
    return size;
}

namespace {

std::vector<std::string>
disabledPaths()
{
    return internal::environmentList("KOMPUTE_ENV_DISABLE");
}

} // namespace

// From the Manager's capability table, already reduced by the
// KOMPUTE_ENV_DISABLE given when the Manager was created; the variable is
// read again here, so that paths can also be turned off for operations
// built later.
DeviceCaps
deviceCaps(const internal::Device& device)
{
    return deviceCaps(device.capabilities().view(), device.properties().limits);
}

DeviceCaps
deviceCaps(const DeviceCapabilities& table, const vk::PhysicalDeviceLimits& limits)
{
    DeviceCaps caps;
    caps.deviceName = table.deviceName;
    caps.maxSharedBytes = limits.maxComputeSharedMemorySize;
    caps.maxInvocations = std::min(limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]);
    caps.maxGroupCountX = limits.maxComputeWorkGroupCount[0];
    caps.maxGroupCountY = limits.maxComputeWorkGroupCount[1];
    caps.storage16Bit = table.storageBuffer16Bit;
    // The table lists the operations shaders may use in compute.
    caps.subgroupSize = std::max(table.subgroup.size, 1u);
    const auto operations = table.subgroup.operations;
    caps.subgroupArithmetic = static_cast<bool>(operations & vk::SubgroupFeatureFlagBits::eArithmetic) &&
                              static_cast<bool>(operations & vk::SubgroupFeatureFlagBits::eBasic);
    caps.subgroupBallot = static_cast<bool>(operations & vk::SubgroupFeatureFlagBits::eBallot);
    caps.subgroupShuffle = static_cast<bool>(operations & vk::SubgroupFeatureFlagBits::eShuffle);
    caps.disabled = table.disabledGroups;
    for (const auto& path : disabledPaths()) {
        if (!caps.isDisabled(path)) {
            caps.disabled.push_back(path);
        }
    }
    return caps;
}

Checker::Checker(const char* opName,
                 const std::vector<std::shared_ptr<Memory>>& tensors,
                 const std::vector<const char*>& operandNames)
  : mOpName(opName)
  , mTensors(tensors)
  , mNames(operandNames.begin(), operandNames.end())
{
    if (tensors.size() != mNames.size()) {
        std::string list;
        for (const auto& name : mNames) {
            list += (list.empty() ? "" : ", ") + name;
        }
        fail(format("needs {} tensors {{{}}}, {} given", mNames.size(), list, tensors.size()));
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (!tensors[i]) {
            fail(format("tensor '{}' (operand {}) is null", mNames[i], i));
        }
        tensors[i]->checkInit(mOpName.c_str());
        if (tensors[i]->type() != Memory::Type::eTensor) {
            fail(format("operand '{}' is an image; the kernels work on tensors", mNames[i]));
        }
        auto device = internal::deviceOf(*tensors[i]);
        if (!mDevice) {
            mDevice = device;
        } else if (device.get() != mDevice.get()) {
            fail(format("tensor '{}' belongs to another Manager than tensor '{}': all tensors of "
                        "an operation must come from one Manager",
                        mNames[i],
                        mNames[0]));
        }
    }
    mDevice->checkAlive(mOpName.c_str());
    mCaps = deviceCaps(*mDevice);
}

void
Checker::fail(const std::string& message) const
{
    throw Error(mOpName + ": " + message);
}

void
Checker::require(bool condition, const std::string& message) const
{
    if (!condition) {
        fail(message);
    }
}

void
Checker::dataType(size_t index, std::initializer_list<DataTypes> allowed) const
{
    DataTypes type = mTensors[index]->dataType();
    if (std::find(allowed.begin(), allowed.end(), type) != allowed.end()) {
        return;
    }
    std::string list;
    for (DataTypes t : allowed) {
        list += (list.empty() ? "" : ", ") + Memory::toString(t);
    }
    fail(format("tensor '{}' holds {} elements; it must hold {}", mNames[index], Memory::toString(type), list));
}

void
Checker::sameDataType(size_t a, size_t b) const
{
    if (mTensors[a]->dataType() != mTensors[b]->dataType()) {
        fail(format("tensors '{}' ({}) and '{}' ({}) must hold the same data type",
                    mNames[a],
                    Memory::toString(mTensors[a]->dataType()),
                    mNames[b],
                    Memory::toString(mTensors[b]->dataType())));
    }
}

void
Checker::covers(size_t index, uint64_t offset, uint64_t extent, const std::string& what) const
{
    uint64_t size = mTensors[index]->size();
    if (offset + extent > size) {
        fail(format("tensor '{}' has {} elements, but {} needs {} elements from offset {} "
                    "(up to element {}): give a larger tensor or a smaller shape",
                    mNames[index],
                    size,
                    what,
                    extent,
                    offset,
                    offset + extent));
    }
}

void
Checker::aliasing(size_t a,
                  uint64_t aOffset,
                  uint64_t aExtent,
                  size_t b,
                  uint64_t bOffset,
                  uint64_t bExtent,
                  bool allowSame) const
{
    if (mTensors[a].get() != mTensors[b].get()) {
        return;
    }
    bool same = aOffset == bOffset && aExtent == bExtent;
    bool disjoint = aOffset + aExtent <= bOffset || bOffset + bExtent <= aOffset;
    if (disjoint || (same && allowSame)) {
        return;
    }
    fail(format("tensors '{}' and '{}' are one tensor whose ranges [{}, {}) and [{}, {}) overlap{}: "
                "give {}disjoint ranges or separate tensors",
                mNames[a],
                mNames[b],
                aOffset,
                aOffset + aExtent,
                bOffset,
                bOffset + bExtent,
                allowSame ? " without being the same" : "",
                allowSame ? "the same range (in place), " : ""));
}

uint32_t
Checker::offset32(uint64_t offset, const char* name) const
{
    if (offset > UINT32_MAX) {
        fail(format("{} = {} exceeds 2^32 - 1 (tensors hold at most 2^32 - 1 elements)", name, offset));
    }
    return static_cast<uint32_t>(offset);
}

StorageType
Checker::storageType(size_t index) const
{
    switch (mTensors[index]->dataType()) {
        case DataTypes::eFloat: return StorageType::eF32;
        case DataTypes::eHalf:
        case DataTypes::eBFloat16:
            if (!mCaps.storage16Bit) {
                fail(format("tensor '{}' holds {} elements, but '{}' does not support 16-bit "
                            "values in storage buffers (storageBuffer16BitAccess)",
                            mNames[index],
                            Memory::toString(mTensors[index]->dataType()),
                            mCaps.deviceName));
            }
            return mTensors[index]->dataType() == DataTypes::eHalf ? StorageType::eF16 : StorageType::eBF16;
        default:
            fail(format("tensor '{}' holds {} elements; it must hold eFloat, eHalf or eBFloat16",
                        mNames[index],
                        Memory::toString(mTensors[index]->dataType())));
    }
}

uint32_t
rowLocalSize(const DeviceCaps& caps, uint32_t cols, uint32_t largest)
{
    uint32_t wanted = 32;
    while (wanted < cols && wanted < largest) {
        wanted *= 2;
    }
    return caps.localSize(wanted);
}

ReductionPath
reductionPath(const DeviceCaps& caps)
{
    return caps.useSubgroups() ? ReductionPath{ "_sg", "subgroup" } : ReductionPath{ "_sh", "shared-memory" };
}

Workgroup
grid(uint64_t groups, const DeviceCaps& caps, const char* opName)
{
    groups = std::max<uint64_t>(groups, 1);
    uint64_t x = std::min<uint64_t>(groups, caps.maxGroupCountX);
    uint64_t y = (groups + x - 1) / x;
    if (y > caps.maxGroupCountY) {
        throw Error(format("{}: {} workgroups exceed what the device dispatches ({} x {})",
                           opName,
                           groups,
                           caps.maxGroupCountX,
                           caps.maxGroupCountY));
    }
    return Workgroup{ static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1 };
}

} // namespace kernels
} // namespace kp
