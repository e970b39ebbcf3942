// SPDX-License-Identifier: Apache-2.0
/** \file
 * Basic types and macros shared by every public header: kp::Workgroup,
 * kp::WaitStrategy, and the lowest Vulkan version Kompute needs.
 */
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kompute/Vulkan.hpp"

// The lowest Vulkan version Kompute needs. It is compiled into the library;
// defining it in a consumer changes nothing.
#ifndef KOMPUTE_VK_API_MAJOR_VERSION
/** Major part of KOMPUTE_VK_API_VERSION (1). */
#define KOMPUTE_VK_API_MAJOR_VERSION 1
#endif
#ifndef KOMPUTE_VK_API_MINOR_VERSION
/** Minor part of KOMPUTE_VK_API_VERSION (1). */
#define KOMPUTE_VK_API_MINOR_VERSION 1
#endif
#ifndef KOMPUTE_VK_API_VERSION
/** The lowest Vulkan version Kompute needs from the loader (1.1): creating
 * a Manager throws kp::Error where the loader supports less. The instance
 * asks for the newest version both the loader and Kompute know (up to 1.3),
 * and each device is used at the lower of that and its own version. The
 * value is compiled into the library: defining it in a program that uses
 * Kompute changes nothing. */
#define KOMPUTE_VK_API_VERSION                                                 \
    VK_MAKE_VERSION(KOMPUTE_VK_API_MAJOR_VERSION,                              \
                    KOMPUTE_VK_API_MINOR_VERSION,                              \
                    0)
#endif

/** Leftover of upstream's named-sequence API (the name of its default
 * sequence); nothing reads it, it is kept so that old code compiles. */
#define KP_DEFAULT_SESSION "DEFAULT"

/**
 * Kompute's C++ API (`#include <kompute/Kompute.hpp>`): kp::Manager owns the
 * device, kp::Tensor and kp::Image own data, kp::Algorithm wraps a compute
 * shader, and kp::Sequence records operations (kp::OpBase and its
 * subclasses, the kernel library's kp::KernelOp) and submits them as one
 * batch. See @ref concepts; the Python module is python::kp.
 */
namespace kp {

/** Number of workgroups given to vkCmdDispatch (x, y, z): group counts, not
 * the shader's local size. x = 0 means "the first memory object's size". */
using Workgroup = std::array<uint32_t, 3>;

/** Upstream's legacy alias for a list of float constants; no function of
 * the current API takes it. */
using Constants = std::vector<float>;

/**
 * How Sequence::eval(), evalAwait() and the one-liner wait for the device
 * (set per Manager with Manager::setWaitStrategy, or for every Manager with
 * KOMPUTE_ENV_WAIT=auto|spin|block; see the README's "Waiting for the
 * device").
 */
enum class WaitStrategy
{
    /** Polls for a short time adapted to the sequence's recent durations
     * (at most the Manager's spin limit), then blocks in the driver. Work
     * that recently took longer than twice the limit sleeps in the driver
     * until the limit before its shortest recent duration, then polls its
     * end (up to twice the limit) before it blocks. The
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
