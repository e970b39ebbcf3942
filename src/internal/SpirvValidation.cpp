// SPDX-License-Identifier: Apache-2.0
#include "internal/SpirvValidation.hpp"

#include <string>

#include <spirv-tools/libspirv.hpp>
#include <vulkan/vulkan.h>

#include "kompute/Errors.hpp"

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

} // namespace internal
} // namespace kp
