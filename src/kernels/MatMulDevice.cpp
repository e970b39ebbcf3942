// SPDX-License-Identifier: Apache-2.0
#include "kernels/MatMulDevice.hpp"

#include "internal/Capabilities.hpp"
#include "internal/DeviceDescription.hpp"

namespace kp {
namespace kernels {
namespace matmul {

namespace {

// The f16 x f16 -> f32 (or bf16 x bf16 -> f32) subgroup shapes of a list.
std::vector<CoopmatShape>
shapesOf(const std::vector<CooperativeMatrixShape>& shapes, ComponentType operands)
{
    std::vector<CoopmatShape> out;
    for (const auto& s : shapes) {
        if (s.a == operands && s.b == operands && s.c == ComponentType::eFloat32 &&
            s.result == ComponentType::eFloat32 && s.scope == MatrixScope::eSubgroup) {
            out.push_back({ s.m, s.n, s.k });
        }
    }
    return out;
}

} // namespace

DeviceView
matMulDevice(const internal::Device& device, const DeviceCaps& caps)
{
    return matMulDevice(device.capabilities().view(), device.properties(), caps);
}

DeviceView
matMulDevice(const DeviceCapabilities& table, const vk::PhysicalDeviceProperties& properties, const DeviceCaps& caps)
{
    DeviceView view;
    view.name = caps.deviceName;
    view.driver = internal::driverVersionText(properties.vendorID, properties.driverVersion);
    view.vendorID = properties.vendorID;
    view.type = properties.deviceType;
    view.maxSharedBytes = caps.maxSharedBytes;
    view.maxInvocations = caps.maxInvocations;
    for (int axis = 0; axis < 3; ++axis) {
        view.maxGroupCount[axis] = properties.limits.maxComputeWorkGroupCount[axis];
    }
    view.maxStorageRange = properties.limits.maxStorageBufferRange;
    view.storage16Bit = caps.storage16Bit;
    view.subgroupSize = caps.subgroupSize;
    view.subgroupArithmetic = caps.useSubgroups();
    view.smCount = table.shaderSMCount;

    // Usable by shaders: supported, enabled and not turned off (the table's
    // view is already reduced by KOMPUTE_ENV_DISABLE). The kernels also need
    // float16 arithmetic (the matrices' components) and the Vulkan memory
    // model that the cooperative-matrix extensions require.
    const auto& coopmat = table.cooperativeMatrix;
    bool base = table.float16 && table.vulkanMemoryModel && table.storageBuffer16Bit;
    view.coopmatKHR = base && coopmat.khr && static_cast<bool>(coopmat.khrStages & vk::ShaderStageFlagBits::eCompute);
    view.coopmatNV = base && coopmat.nv && static_cast<bool>(coopmat.nvStages & vk::ShaderStageFlagBits::eCompute);
    view.khrF16Shapes = shapesOf(coopmat.khrShapes, ComponentType::eFloat16);
    view.nvF16Shapes = shapesOf(coopmat.nvShapes, ComponentType::eFloat16);
    if (coopmat.bfloat16 && table.bfloat16) {
        view.khrBf16Shapes = shapesOf(coopmat.khrShapes, ComponentType::eBFloat16);
    }
    const auto& dot = table.integerDotProduct;
    view.intDot = dot.supported && dot.accelerated4x8BitPacked && dot.accelerated4x8BitPackedMixed;
    view.intDotSupported = dot.supported;
    return view;
}

bool
matVecIntDot(const DeviceView& view, const DeviceCaps& caps)
{
    return !caps.isDisabled("int-dot") && (view.intDot || (view.intDotSupported && caps.isDisabled("matvec-float")));
}

} // namespace matmul
} // namespace kernels
} // namespace kp
