// SPDX-License-Identifier: Apache-2.0
// Basic types and macros shared by every public header.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kompute/Vulkan.hpp"

// The Vulkan API version the library asks for at instance creation. It is
// compiled into the library; defining it in a consumer changes nothing.
#ifndef KOMPUTE_VK_API_MAJOR_VERSION
#define KOMPUTE_VK_API_MAJOR_VERSION 1
#endif
#ifndef KOMPUTE_VK_API_MINOR_VERSION
#define KOMPUTE_VK_API_MINOR_VERSION 1
#endif
#ifndef KOMPUTE_VK_API_VERSION
#define KOMPUTE_VK_API_VERSION                                                 \
    VK_MAKE_VERSION(KOMPUTE_VK_API_MAJOR_VERSION,                              \
                    KOMPUTE_VK_API_MINOR_VERSION,                              \
                    0)
#endif

// Leftover of upstream's named-sequence API; kept so old code compiles.
#define KP_DEFAULT_SESSION "DEFAULT"

namespace kp {

/** Number of workgroups given to vkCmdDispatch (x, y, z): group counts, not
 * the shader's local size. x = 0 means "the first memory object's size". */
using Workgroup = std::array<uint32_t, 3>;

/** Legacy alias, unused by the current API. */
using Constants = std::vector<float>;

/**
 * How Sequence::eval(), evalAwait() and the one-liner wait for the device
 * (ours; Manager::setWaitStrategy, or KOMPUTE_ENV_WAIT=auto|spin|block).
 */
enum class WaitStrategy
{
    /** Polls for a short time adapted to the sequence's recent durations
     * (at most the Manager's spin limit), then blocks in the driver. Work
     * that recently took longer than the limit blocks at once. The
     * default; on CPU drivers (lavapipe) it blocks at once, since a polling
     * thread takes a core from the device itself. */
    eAuto = 0,
    /** Polls until the work is done (or the timeout): the lowest latency,
     * one CPU core busy for the whole wait. */
    eSpin = 1,
    /** Blocks in the driver at once: no CPU time while waiting, plus the
     * driver's wake-up latency. */
    eBlock = 2,
};

} // namespace kp
