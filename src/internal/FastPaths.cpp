// SPDX-License-Identifier: Apache-2.0
#include "internal/FastPaths.hpp"

#include "kernels/KernelSupport.hpp"

namespace kp {
namespace internal {

JsonValue
fastPaths(const DeviceCapabilities& caps, const vk::PhysicalDeviceLimits& limits, bool shaderCopies)
{
    JsonValue paths = JsonValue::object();
    // OpCopy of device-local tensors of 1 MiB or more (internal/ShaderCopy).
    paths.set("copy", shaderCopies ? "shader" : "copy command");
    // The kernel library's row reductions (softmax, norms, reduce).
    kernels::DeviceCaps kernelCaps = kernels::deviceCaps(caps, limits);
    paths.set("reductions", kernels::reductionPath(kernelCaps).name);
    // Kernel paths the library chooses by device go here, each as the name
    // of the path it takes.
    return paths;
}

} // namespace internal
} // namespace kp
