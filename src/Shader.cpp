// SPDX-License-Identifier: Apache-2.0
#include "kompute/Shader.hpp"

#include <cstring>
#include <fstream>
#include <iterator>

#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

#ifdef KOMPUTE_SHADER_COMPILER
#include <shaderc/shaderc.hpp>
#endif

namespace kp {

namespace {
constexpr uint32_t kSpirvMagic = 0x07230203;
}

bool
Shader::hasCompiler()
{
#ifdef KOMPUTE_SHADER_COMPILER
    return true;
#else
    return false;
#endif
}

std::vector<uint32_t>
Shader::compileSource(const std::string& source,
                      const std::map<std::string, std::string>& defines,
                      const std::string& entryPoint)
{
    if (source.find_first_not_of(" \t\r\n") == std::string::npos) {
        throw Error("The GLSL source is empty: give the text of a compute shader");
    }
    if (entryPoint != "main") {
        // GLSL always enters at main(), and Algorithm runs the entry point
        // "main": any other name would only fail later.
        throw Error("GLSL compute shaders enter at main(); entry point '" + entryPoint +
                    "' is not supported");
    }
#ifdef KOMPUTE_SHADER_COMPILER
    // One compiler for the process: creating one initialises glslang and
    // parses its built-in symbol tables, which costs far more than a small
    // compilation, and releasing the last one throws them away. shaderc
    // documents compiling with one compiler from several threads at once as
    // safe.
    static const shaderc::Compiler compiler;
    shaderc::CompileOptions options;
    options.SetTargetEnvironment(shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    options.SetSourceLanguage(shaderc_source_language_glsl);
    // No SPIR-V optimisation, as glslangValidator -V (upstream's compiler)
    // does: the optimiser strips declared but unused bindings, push-constant
    // blocks and specialization constants, and the Algorithm's checks would
    // then reject the objects and constants the source declares. Drivers
    // optimise the module themselves.
    options.SetOptimizationLevel(shaderc_optimization_level_zero);
    for (const auto& [name, value] : defines) {
        options.AddMacroDefinition(name, value);
    }
    shaderc::SpvCompilationResult result = compiler.CompileGlslToSpv(
      source, shaderc_compute_shader, "shader.comp", entryPoint.c_str(), options);
    if (result.GetCompilationStatus() != shaderc_compilation_status_success) {
        throw Error("The GLSL shader does not compile:\n" + result.GetErrorMessage());
    }
    if (result.GetNumWarnings() > 0) {
        KP_LOG_WARN("Shader compiler warnings:\n{}", result.GetErrorMessage());
    }
    return std::vector<uint32_t>(result.cbegin(), result.cend());
#else
    (void)source;
    (void)defines;
    (void)entryPoint;
    throw Error("This Kompute was built without the shader compiler "
                "(KOMPUTE_OPT_SHADER_COMPILER=OFF): compile shaders ahead of time and load them "
                "with kp::Shader::loadSpirv");
#endif
}

std::vector<uint32_t>
Shader::loadSpirv(const std::string& path)
{
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        throw Error("Cannot open SPIR-V file '" + path + "'");
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (bytes.empty() || bytes.size() % 4 != 0) {
        throw Error(logger::format("'{}' is {} bytes, not a whole number of 32-bit SPIR-V words",
                                   path,
                                   bytes.size()));
    }
    std::vector<uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    if (words[0] != kSpirvMagic) {
        throw Error("'" + path + "' is not SPIR-V (its first word is not the magic number 0x07230203)");
    }
    return words;
}

} // namespace kp
