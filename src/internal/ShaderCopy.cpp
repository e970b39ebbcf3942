// SPDX-License-Identifier: Apache-2.0
#include "internal/ShaderCopy.hpp"

#include <algorithm>
#include <array>

#include "internal/Check.hpp"
#include "internal/ShaderCopyBuffer.hpp"

namespace kp {
namespace internal {

namespace {

constexpr uint32_t kLocalSize = 256;      // as in src/shaders/ShaderCopyBuffer.comp
constexpr uint32_t kMaxGroupsX = 65535;   // the smallest maxComputeWorkGroupCount[0]
constexpr uint32_t kNvidiaVendorId = 0x10de;

} // namespace

bool
shaderCopiesByDefault(const vk::PhysicalDeviceProperties& properties)
{
    return properties.vendorID == kNvidiaVendorId;
}

ShaderCopyPipeline::ShaderCopyPipeline(vk::Device device, vk::PipelineCache cache)
{
    struct Cleanup
    {
        ShaderCopyPipeline& pipeline;
        vk::Device device;
        vk::ShaderModule module;
        bool done = false;
        ~Cleanup()
        {
            if (module) {
                device.destroyShaderModule(module);
            }
            if (!done) {
                pipeline.destroy(device);
            }
        }
    } cleanup{ *this, device, {} };

    std::array<vk::DescriptorSetLayoutBinding, 2> bindings{
        vk::DescriptorSetLayoutBinding(0, vk::DescriptorType::eStorageBuffer, 1, vk::ShaderStageFlagBits::eCompute),
        vk::DescriptorSetLayoutBinding(1, vk::DescriptorType::eStorageBuffer, 1, vk::ShaderStageFlagBits::eCompute)
    };
    vk::DescriptorSetLayoutCreateInfo setInfo({}, static_cast<uint32_t>(bindings.size()), bindings.data());
    check(device.createDescriptorSetLayout(&setInfo, nullptr, &setLayout),
          "Creating the copy shader's descriptor set layout");
    vk::PushConstantRange pushRange(vk::ShaderStageFlagBits::eCompute, 0, sizeof(uint32_t));
    vk::PipelineLayoutCreateInfo layoutInfo({}, 1, &setLayout, 1, &pushRange);
    check(device.createPipelineLayout(&layoutInfo, nullptr, &layout),
          "Creating the copy shader's pipeline layout");
    vk::ShaderModuleCreateInfo moduleInfo(
      {}, SHADERCOPYBUFFER_COMP_SPV.size() * sizeof(uint32_t), SHADERCOPYBUFFER_COMP_SPV.data());
    check(device.createShaderModule(&moduleInfo, nullptr, &cleanup.module),
          "Creating the copy shader's module");
    vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, cleanup.module, "main");
    vk::ComputePipelineCreateInfo pipelineInfo({}, stage, layout);
    check(device.createComputePipelines(cache, 1, &pipelineInfo, nullptr, &pipeline),
          "Creating the copy shader's pipeline");
    cleanup.done = true;
}

void
ShaderCopyPipeline::destroy(vk::Device device)
{
    if (pipeline) {
        device.destroyPipeline(pipeline);
    }
    if (layout) {
        device.destroyPipelineLayout(layout);
    }
    if (setLayout) {
        device.destroyDescriptorSetLayout(setLayout);
    }
    pipeline = vk::Pipeline();
    layout = vk::PipelineLayout();
    setLayout = vk::DescriptorSetLayout();
}

void
recordShaderCopy(const vk::CommandBuffer& cmd,
                 const ShaderCopyPipeline& pipeline,
                 vk::DescriptorSet set,
                 vk::DeviceSize bytes)
{
    auto vectors = static_cast<uint32_t>(bytes / kShaderCopyVectorBytes);
    if (vectors == 0) {
        return;
    }
    uint32_t groups = (vectors + kLocalSize - 1) / kLocalSize;
    uint32_t x = std::min(groups, kMaxGroupsX);
    uint32_t y = (groups + x - 1) / x;
    cmd.bindPipeline(vk::PipelineBindPoint::eCompute, pipeline.pipeline);
    cmd.bindDescriptorSets(vk::PipelineBindPoint::eCompute, pipeline.layout, 0, 1, &set, 0, nullptr);
    cmd.pushConstants(pipeline.layout, vk::ShaderStageFlagBits::eCompute, 0, sizeof(vectors), &vectors);
    cmd.dispatch(x, y, 1);
}

} // namespace internal
} // namespace kp
