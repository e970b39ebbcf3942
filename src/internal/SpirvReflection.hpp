// SPDX-License-Identifier: Apache-2.0
// A small SPIR-V reader: what an Algorithm must know about a compute shader
// before it reaches the driver (its bindings, push-constant block,
// specialization constants, local size and capabilities).
#pragma once

#include <cstdint>
#include <map>
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

struct ReflectedModule
{
    std::vector<ReflectedBinding> bindings;      // sorted by (set, binding)
    std::optional<uint32_t> pushConstantBytes;   // size of the push block
    std::vector<ReflectedSpecConstant> specConstants; // sorted by id
    /** Local size, when given as literals (LocalSize execution mode). */
    std::optional<std::array<uint32_t, 3>> localSize;
    std::vector<uint32_t> capabilities;
    std::vector<std::string> extensions;
    std::vector<std::string> computeEntryPoints;
};

/** Parses a module; throws kp::Error on a malformed one (the caller has
 * run SPIRV-Tools' validator first, so this only guards our own reads). */
ReflectedModule
reflect(const std::vector<uint32_t>& words);

/** Name of a SPIR-V capability for messages ("Float64", ...). */
std::string
capabilityName(uint32_t capability);

} // namespace internal
} // namespace kp
