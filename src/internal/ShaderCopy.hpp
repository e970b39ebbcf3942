// SPDX-License-Identifier: Apache-2.0
// OpCopy's tensor-to-tensor copies by compute shader.
//
// On NVIDIA GPUs vkCmdCopyBuffer runs on a copy engine: on the H200 it moves
// 850 GB/s (read + write) between device-local buffers, on any queue family,
// where a plain copy shader moves 4289 GB/s, as fast as CUDA's own
// device-to-device copy (kompute-bench case g, 2026-11-30). So there, large
// copies between device-local tensors are dispatched as a shader. Elsewhere
// the copy command is used: other drivers already copy with shaders or DMA
// engines that keep up, and a dispatch costs a bound pipeline.
#pragma once

#include "kompute/Vulkan.hpp"

#include "internal/Owners.hpp"

namespace kp {
namespace internal {

/** Copies of fewer bytes use the copy command: there the dispatch's fixed
 * cost outweighs the bandwidth. */
constexpr vk::DeviceSize kShaderCopyMinimumBytes = vk::DeviceSize(1) << 20;

/** Each invocation copies one 16-byte vector; a tail of fewer than 16
 * bytes goes to the copy command. */
constexpr vk::DeviceSize kShaderCopyVectorBytes = 16;

/** The leading part of a `bytes` copy that the shader does: whole vectors. */
constexpr vk::DeviceSize
shaderCopiedBytes(vk::DeviceSize bytes)
{
    return bytes / kShaderCopyVectorBytes * kShaderCopyVectorBytes;
}

/** Whether a device copies tensors by shader unless KOMPUTE_ENV_SHADER_COPY
 * (read by Device) says otherwise: NVIDIA devices do. */
bool shaderCopiesByDefault(const vk::PhysicalDeviceProperties& properties);

/** The pipeline of the copy shader, one per device, made on first use. */
struct ShaderCopyPipeline
{
    DescriptorSetLayoutOwner setLayout;
    PipelineLayoutOwner layout;
    PipelineOwner pipeline;

    ShaderCopyPipeline(const Device* context, vk::Device device, vk::PipelineCache cache);
};

/** Records the copy of the first `bytes` (a multiple of 16) of the buffers
 * bound to `set` (binding 0 the source, 1 the target). */
void recordShaderCopy(const vk::CommandBuffer& cmd,
                      const ShaderCopyPipeline& pipeline,
                      vk::DescriptorSet set,
                      vk::DeviceSize bytes);

} // namespace internal
} // namespace kp
