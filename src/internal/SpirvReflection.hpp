// SPDX-License-Identifier: Apache-2.0
// A small SPIR-V reader: what an Algorithm must know about a compute shader
// before it reaches the driver (its bindings, push-constant block,
// specialization constants, capabilities and extensions, interface
// variables), and what the pipeline will really get once its
// specialization constants are applied (local size, shared memory).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kp {
namespace internal {

enum class BindingKind
{
    eStorageBuffer,
    eStorageImage,
    eUniformBuffer,     // not supported by Kompute: reported as an error
    eSampledImage,      // not supported by Kompute
    eSampler,           // not supported by Kompute
    eCombinedImageSampler,
    eOther,
};

const char* bindingKindName(BindingKind kind);

struct ReflectedBinding
{
    uint32_t set = 0;
    uint32_t binding = 0;
    BindingKind kind = BindingKind::eOther;
    /** Number of descriptors (arrays of resources have more than one). */
    uint32_t count = 1;
    std::string name;
    /** Decorated NonWritable (GLSL readonly): the shader only reads it. */
    bool nonWritable = false;
    /** Decorated NonReadable (GLSL writeonly): the shader only writes it. */
    bool nonReadable = false;
};

/** A scalar type as SPIR-V declares it. */
struct ScalarType
{
    enum class Kind
    {
        eBool,
        eInt,
        eUnsignedInt,
        eFloat,
        eOther,
    };
    Kind kind = Kind::eOther;
    uint32_t width = 0; // bits

    std::string name() const;
};

struct ReflectedSpecConstant
{
    uint32_t id = 0;
    ScalarType type;
};

/** Values of specialization constants by constant_id, as raw bits (the
 * low bytes of each value hold the constant). */
using SpecializationValues = std::map<uint32_t, uint64_t>;

/** What a pipeline of the module gets with given specialization values. */
struct SpecializedSizes
{
    /** The local size, or nothing when the module computes it in a way this
     * reader cannot evaluate. */
    std::optional<std::array<uint32_t, 3>> localSize;
    /** Where the local size comes from, for messages. */
    std::string localSizeSource;
    /** Bytes of Workgroup (shared) variables; nothing if not computable. */
    std::optional<uint64_t> workgroupMemoryBytes;
};

struct ModuleTables;

struct ReflectedModule
{
    std::vector<ReflectedBinding> bindings;      // sorted by (set, binding)
    std::optional<uint32_t> pushConstantBytes;   // size of the push block
    std::vector<ReflectedSpecConstant> specConstants; // sorted by id
    std::vector<uint32_t> capabilities;
    std::vector<std::string> extensions;
    std::vector<std::string> computeEntryPoints;

    /** Float-controls execution modes (DenormPreserve, ...) and the float
     * width each applies to. */
    struct FloatControlMode
    {
        uint32_t mode = 0;
        uint32_t width = 0;
    };
    std::vector<FloatControlMode> floatControlModes;

    /** The local size is given by LocalSizeId (ids of constants). */
    bool usesLocalSizeId = false;

    /** Input or Output variables that are not built-ins (a compute shader
     * has no stage inputs or outputs): their names, or "%id". */
    std::vector<std::string> userInterfaceVariables;

    /** Local size, shared memory. */
    SpecializedSizes specialize(const SpecializationValues& values) const;

    /** The parsed types, constants and decorations, for specialize(). */
    std::shared_ptr<const ModuleTables> tables;
};

/** Parses a module; throws kp::Error on a malformed one (the caller has
 * run SPIRV-Tools' validator first, so this only guards our own reads). */
ReflectedModule
reflect(const std::vector<uint32_t>& words);

} // namespace internal
} // namespace kp
