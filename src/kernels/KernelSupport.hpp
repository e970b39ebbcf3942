// SPDX-License-Identifier: Apache-2.0
// What the kernel library's operations share (not public): argument checks
// that throw kp::Error naming the operation and operand before anything is
// built or recorded, the device facts that choose a path, and building an
// operation's algorithm from built-in SPIR-V.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "internal/Device.hpp"
#include "kompute/Algorithm.hpp"
#include "kompute/Memory.hpp"

namespace kp {
namespace kernels {

using DataTypes = Memory::DataTypes;

/** Storage type codes the shaders are compiled for (their *_TYPE defines). */
enum class StorageType : uint32_t
{
    eF32 = 0,
    eF16 = 1,
    eBF16 = 2,
};

/** "f32", "f16" or "bf16": the type part of shader variant names. */
const char*
typeName(StorageType type);

/** The SPIR-V of built-in shader variant `name` (e.g. "unary_f16_f32", see
 * src/kernels/Shaders.cmake). */
std::vector<uint32_t>
builtinSpirv(const std::string& name);

/** What the kernels need to know about a device to choose their path,
 * filled by deviceCaps from the Manager's capability table
 * (internal/Capabilities.hpp: device.capabilities().view() has everything
 * else, e.g. cooperative-matrix shapes and integer dot-product support). */
struct DeviceCaps
{
    uint32_t subgroupSize = 1;
    bool subgroupArithmetic = false; ///< subgroupAdd/Max etc. in compute shaders
    bool subgroupBallot = false;
    bool subgroupShuffle = false;    ///< subgroupShuffle/ShuffleXor in compute shaders
    bool storage16Bit = false;       ///< 16-bit values in storage buffers (f16, bf16 tensors)
    uint32_t maxSharedBytes = 16384;
    uint32_t maxInvocations = 128;
    uint32_t maxGroupCountX = 65535;
    uint32_t maxGroupCountY = 65535;
    std::string deviceName;
    /** Paths turned off with KOMPUTE_ENV_DISABLE (comma separated, e.g.
     * "subgroup,coopmat"). */
    std::vector<std::string> disabled;

    bool isDisabled(const std::string& path) const;
    /** Subgroup arithmetic available and not disabled ("subgroup"). */
    bool useSubgroups() const { return subgroupArithmetic && !isDisabled("subgroup"); }
    /** The largest power of two <= `preferred` that the device runs as one
     * workgroup. */
    uint32_t localSize(uint32_t preferred) const;
};

/** The kernel library's own KOMPUTE_ENV_DISABLE names: the names of its
 * paths that DeviceCaps::isDisabled is asked about beside the Manager's
 * capability names ("coopmat", "int-dot"), so that the Manager does not
 * warn about them as unknown. A new path name goes here too. */
const std::vector<std::string>&
kernelPathNames();

DeviceCaps
deviceCaps(const internal::Device& device);
/** The same from a device's capability view and limits (kompute-info
 * describes devices without creating them). */
DeviceCaps
deviceCaps(const DeviceCapabilities& table, const vk::PhysicalDeviceLimits& limits);

/** Checks of one operation's arguments; every message starts with the
 * operation's name and names the operand. */
class Checker
{
  public:
    Checker(const char* opName,
            const std::vector<std::shared_ptr<Memory>>& tensors,
            const std::vector<const char*>& operandNames);

    /** The tensors' device context (all checked to be one Manager's). */
    const std::shared_ptr<internal::Device>& device() const { return mDevice; }
    const DeviceCaps& caps() const { return mCaps; }
    Memory& operand(size_t index) const { return *mTensors[index]; }

    /** Throws unless operand `index` holds one of `allowed`. */
    void dataType(size_t index, std::initializer_list<DataTypes> allowed) const;
    /** Throws unless operands `a` and `b` hold the same data type. */
    void sameDataType(size_t a, size_t b) const;
    /** Throws unless operand `index` holds at least `offset + extent`
     * elements, where `extent` is what the shape and strides address. */
    void covers(size_t index, uint64_t offset, uint64_t extent, const std::string& what) const;
    /** Where operands `a` and `b` are one tensor, throws unless the
     * ranges [aOffset, aOffset + aExtent) and [bOffset, ...) are the same
     * (in place: each element is read and written by one invocation) or
     * disjoint (allowSame = false: only disjoint). */
    void aliasing(size_t a,
                  uint64_t aOffset,
                  uint64_t aExtent,
                  size_t b,
                  uint64_t bOffset,
                  uint64_t bExtent,
                  bool allowSame = true) const;
    /** Throws unless `condition`; message after the operation's name. */
    void require(bool condition, const std::string& message) const;
    /** Throws if an offset does not fit the shaders' 32-bit indices. */
    uint32_t offset32(uint64_t offset, const char* name) const;
    /** The shader type code of operand `index` (f32, f16 or bf16), after
     * checking that 16-bit types are usable on the device. */
    StorageType storageType(size_t index) const;

    [[noreturn]] void fail(const std::string& message) const;

  private:
    std::string mOpName;
    std::vector<std::shared_ptr<Memory>> mTensors;
    std::vector<std::string> mNames;
    std::shared_ptr<internal::Device> mDevice;
    DeviceCaps mCaps;
};

/** The local size of a kernel with one workgroup per row of `cols`
 * elements: a power of two from 32 up to `largest` (256 unless the kernel
 * keeps rows in registers), no larger than the row needs nor the device
 * allows. */
uint32_t
rowLocalSize(const DeviceCaps& caps, uint32_t cols, uint32_t largest = 256);

/** The suffix of a row kernel's variant ("_sg" with subgroup reductions,
 * "_sh" with shared memory only) and the path name it reports. */
struct ReductionPath
{
    const char* suffix;
    const char* name;
};
ReductionPath
reductionPath(const DeviceCaps& caps);

/** Elements addressed by `rows` rows of `cols` elements, `stride` apart. */
inline uint64_t
rowsExtent(uint64_t rows, uint64_t cols, uint64_t stride)
{
    return rows == 0 ? 0 : (rows - 1) * stride + cols;
}

/** A 2-D grid of `groups` workgroups within the device's limits (shaders
 * flatten it as gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x and
 * skip the excess). */
Workgroup
grid(uint64_t groups, const DeviceCaps& caps, const char* opName);

/** An algorithm over `tensors` on their device, from built-in SPIR-V, with
 * uint32 specialization constants (constant_id 0, 1, ...) and push
 * constants (a struct of 4-byte fields mirroring the shader's block). */
template<typename Push>
std::shared_ptr<Algorithm>
buildAlgorithm(const std::shared_ptr<internal::Device>& device,
               const std::vector<std::shared_ptr<Memory>>& tensors,
               std::vector<uint32_t> spirvWords,
               const Workgroup& workgroup,
               const std::vector<uint32_t>& specialization,
               const Push& push)
{
    static_assert(sizeof(Push) % 4 == 0, "push constants are 4-byte fields");
    return std::make_shared<Algorithm>(device,
                                       tensors,
                                       spirvWords,
                                       workgroup,
                                       ConstantBytes::from(specialization),
                                       ConstantBytes::from(std::vector<Push>{ push }));
}

} // namespace kernels
} // namespace kp
