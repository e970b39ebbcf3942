// SPDX-License-Identifier: Apache-2.0
// kp::Shader: getting SPIR-V for an Algorithm, from GLSL source compiled in
// the process or from a .spv file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kp {

/** Getting SPIR-V for an Algorithm: GLSL compiled in the process (with
 * shaderc), or a .spv file. Static functions only; all may be called from
 * any thread. See @ref readme_shaders. */
class Shader
{
  public:
    /**
     * Compiles GLSL compute-shader source to SPIR-V (for Vulkan 1.1, which
     * every device Kompute supports accepts) with shaderc, in the process.
     * `defines` are added as preprocessor macros (an empty value defines the
     * name alone). `entryPoint` must be "main" (GLSL's only entry point;
     * kept for source compatibility). Throws kp::Error with the compiler's
     * messages, which carry
     * line numbers, when the source does not compile, and when the library
     * was built without the compiler (KOMPUTE_OPT_SHADER_COMPILER=OFF).
     */
    static std::vector<uint32_t> compileSource(
      const std::string& source,
      const std::map<std::string, std::string>& defines = {},
      const std::string& entryPoint = "main");

    /** Reads a SPIR-V binary file; throws if it cannot be read or is not
     * SPIR-V (wrong size or magic number). */
    static std::vector<uint32_t> loadSpirv(const std::string& path);

    /** Whether compileSource is available in this build. */
    static bool hasCompiler();
};

} // namespace kp
