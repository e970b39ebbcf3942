// SPDX-License-Identifier: Apache-2.0
#include "internal/SpirvValidation.hpp"

#include <map>
#include <optional>
#include <mutex>
#include <string>

#include <spirv-tools/libspirv.hpp>
#include <vulkan/vulkan.h>

#include "internal/Capabilities.hpp"
#include "internal/SpirvReflection.hpp"
#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

void
validateSpirv(const std::vector<uint32_t>& spirv, uint32_t vulkanApiVersion)
{
    if (spirv.empty()) {
        throw Error("The SPIR-V module is empty: pass the words of a compiled compute shader");
    }
    spv_target_env environment = SPV_ENV_VULKAN_1_1;
    if (vulkanApiVersion >= VK_API_VERSION_1_3) {
        environment = SPV_ENV_VULKAN_1_3;
    } else if (vulkanApiVersion >= VK_API_VERSION_1_2) {
        environment = SPV_ENV_VULKAN_1_2;
    } else if (vulkanApiVersion < VK_API_VERSION_1_1) {
        environment = SPV_ENV_VULKAN_1_0;
    }
    spvtools::SpirvTools tools(environment);
    std::string messages;
    tools.SetMessageConsumer([&messages](spv_message_level_t,
                                         const char*,
                                         const spv_position_t& position,
                                         const char* message) {
        if (!messages.empty()) {
            messages += "\n";
        }
        messages += "word " + std::to_string(position.index) + ": " + message;
    });
    spvtools::ValidatorOptions options;
    // Kompute's shaders commonly use std430/scalar layouts in storage
    // buffers; the driver, not the validator, is the judge of those.
    options.SetRelaxBlockLayout(true);
    if (!tools.Validate(spirv.data(), spirv.size(), options)) {
        throw Error("The SPIR-V module is not valid for Vulkan (" + std::string(spvTargetEnvDescription(environment)) +
                    "): " + (messages.empty() ? std::string("unknown error") : messages));
    }
}

// Reads and validates the module. What it needs of the device is checked
// first: "needs the device feature shaderFloat16" says more than the
// validator, which also refuses capabilities newer than itself (the
// capability table knows them; the driver and its validation layer are then
// the judges of the module).
ReflectedModule
checkedModule(const std::vector<uint32_t>& spirv, const Capabilities& capabilities)
{
    std::optional<ReflectedModule> module;
    try {
        module = reflect(spirv);
    } catch (const Error&) {
        // Malformed: the validator below says why.
    }
    std::vector<std::string> newer;
    if (module) {
        capabilities.checkShader(*module);
        for (uint32_t capability : module->capabilities) {
            if (!validatorKnowsCapability(capability)) {
                newer.push_back(Capabilities::capabilityName(capability));
            }
        }
    }
    if (newer.empty()) {
        validateSpirv(spirv, capabilities.apiVersion());
    } else {
        KP_LOG_INFO("The shader uses the SPIR-V capability {}, newer than the SPIRV-Tools Kompute "
                    "was built with: its validation is left to the driver (and the validation "
                    "layer, when enabled)",
                    newer.front());
    }
    return module ? std::move(*module) : reflect(spirv);
}

bool
validatorKnowsCapability(uint32_t capability)
{
    static std::mutex mutex;
    static std::map<uint32_t, bool> known;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = known.find(capability);
    if (it != known.end()) {
        return it->second;
    }
    // A module of one OpCapability: the disassembler refuses operand
    // values its grammar lacks.
    const uint32_t opCapability = 17;
    std::vector<uint32_t> words = { 0x07230203, 0x00010000, 0, 1, 0, (2u << 16) | opCapability,
                                    capability };
    spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_6);
    tools.SetMessageConsumer([](spv_message_level_t, const char*, const spv_position_t&, const char*) {});
    std::string text;
    bool result = tools.Disassemble(words, &text, SPV_BINARY_TO_TEXT_OPTION_NONE);
    known[capability] = result;
    return result;
}

} // namespace internal
} // namespace kp
