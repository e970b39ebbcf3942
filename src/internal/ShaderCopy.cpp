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

ShaderCopyPipeline::ShaderCopyPipeline(const Device* context,
                                       vk::Device device,
                                       vk::PipelineCache cache)
{
    std::array<vk::DescriptorSetLayoutBinding, 2> bindings{
        vk::DescriptorSetLayoutBinding(0, vk::DescriptorType::eStorageBuffer, 1, vk::ShaderStageFlagBits::eCompute),
        vk::DescriptorSetLayoutBinding(1, vk::DescriptorType::eStorageBuffer, 1, vk::ShaderStageFlagBits::eCompute)
    };
    vk::DescriptorSetLayoutCreateInfo setInfo({}, static_cast<uint32_t>(bindings.size()), bindings.data());
    vk::DescriptorSetLayout createdSetLayout;
    check(device.createDescriptorSetLayout(&setInfo, nullptr, &createdSetLayout),
          "Creating the copy shader's descriptor set layout");
    setLayout = DescriptorSetLayoutOwner(context, createdSetLayout);
    vk::PushConstantRange pushRange(vk::ShaderStageFlagBits::eCompute, 0, sizeof(uint32_t));
    vk::PipelineLayoutCreateInfo layoutInfo({}, 1, setLayout.address(), 1, &pushRange);
    vk::PipelineLayout createdLayout;
    check(device.createPipelineLayout(&layoutInfo, nullptr, &createdLayout),
          "Creating the copy shader's pipeline layout");
    layout = PipelineLayoutOwner(context, createdLayout);
    vk::ShaderModuleCreateInfo moduleInfo(
      {}, SHADERCOPYBUFFER_COMP_SPV.size() * sizeof(uint32_t), SHADERCOPYBUFFER_COMP_SPV.data());
    vk::ShaderModule createdModule;
    check(device.createShaderModule(&moduleInfo, nullptr, &createdModule),
          "Creating the copy shader's module");
    ShaderModuleOwner module(context, createdModule); // only needed to build the pipeline
    vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, module.get(), "main");
    vk::ComputePipelineCreateInfo pipelineInfo({}, stage, layout.get());
    vk::Pipeline createdPipeline;
    check(device.createComputePipelines(cache, 1, &pipelineInfo, nullptr, &createdPipeline),
          "Creating the copy shader's pipeline");
    pipeline = PipelineOwner(context, createdPipeline);
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
    cmd.bindPipeline(vk::PipelineBindPoint::eCompute, pipeline.pipeline.get());
    cmd.bindDescriptorSets(vk::PipelineBindPoint::eCompute, pipeline.layout.get(), 0, 1, &set, 0, nullptr);
    cmd.pushConstants(pipeline.layout.get(), vk::ShaderStageFlagBits::eCompute, 0, sizeof(vectors), &vectors);
    cmd.dispatch(x, y, 1);
}

} // namespace internal
} // namespace kp
