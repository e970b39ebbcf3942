// SPDX-License-Identifier: Apache-2.0
// The barriers the built-in operations record.
//
// Every built-in operation starts with one global memory barrier that makes
// the writes of everything submitted before it on the queue (copies and
// dispatches, in this command buffer or earlier ones) visible to its own
// accesses, and orders it after earlier reads. This makes any chain of
// operations correct without the user adding barriers, at the price of
// serialising consecutive operations, which is what dependent operations
// need anyway. A batch ends with a barrier that makes device writes visible
// to the host.
#pragma once

#include "kompute/Vulkan.hpp"

namespace kp {
namespace internal {

/** Stages a queue of these capabilities can execute that touch memory. */
inline vk::PipelineStageFlags
memoryStages(vk::QueueFlags queueFlags)
{
    vk::PipelineStageFlags stages = vk::PipelineStageFlagBits::eTransfer;
    if (queueFlags & vk::QueueFlagBits::eCompute) {
        stages |= vk::PipelineStageFlagBits::eComputeShader;
    }
    return stages;
}

inline vk::AccessFlags
memoryWrites(vk::QueueFlags queueFlags)
{
    vk::AccessFlags access = vk::AccessFlagBits::eTransferWrite;
    if (queueFlags & vk::QueueFlagBits::eCompute) {
        access |= vk::AccessFlagBits::eShaderWrite;
    }
    return access;
}

/** Orders `dstStage`/`dstAccess` after all earlier transfer and compute
 * work on a compute-capable queue. */
inline void
recordBarrierBefore(const vk::CommandBuffer& cmd,
                    vk::PipelineStageFlags dstStage,
                    vk::AccessFlags dstAccess)
{
    const vk::QueueFlags compute = vk::QueueFlagBits::eCompute;
    vk::MemoryBarrier barrier(memoryWrites(compute), dstAccess);
    cmd.pipelineBarrier(memoryStages(compute), dstStage, {}, 1, &barrier, 0, nullptr, 0, nullptr);
}

/** Makes the batch's device writes visible to host reads after the fence. */
inline void
recordHostReadBarrier(const vk::CommandBuffer& cmd, vk::QueueFlags queueFlags)
{
    vk::MemoryBarrier barrier(memoryWrites(queueFlags), vk::AccessFlagBits::eHostRead);
    cmd.pipelineBarrier(memoryStages(queueFlags),
                        vk::PipelineStageFlagBits::eHost,
                        {},
                        1,
                        &barrier,
                        0,
                        nullptr,
                        0,
                        nullptr);
}

} // namespace internal
} // namespace kp
