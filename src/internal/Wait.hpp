// SPDX-License-Identifier: Apache-2.0
// How a sequence waits for its submission (kp::WaitStrategy).
//
// A blocking wait (vkWaitForFences, vkWaitSemaphores) sleeps in the kernel
// and is woken by the driver's interrupt: on the H200 that adds about 20 us
// to a round trip of 14 us (docs/performance.md). Polling the completion
// primitive sees the end sooner but keeps a core busy. The auto strategy
// polls only as long as the sequence's recent submissions lasted (with a
// margin, and never beyond a limit), so short work returns at the polling
// figure. Long work (an LLM's decode step: milliseconds) sleeps in the driver
// until a limit before the shortest recent duration, then polls its end, so
// it too returns at the polling figure while the core sleeps through most of
// the wait (H100, kompute-llm tg128 Q4_0: 345 t/s blocking, 351 polling).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "kompute/Vulkan.hpp"

#include "kompute/Core.hpp"
#include "kompute/Sequence.hpp"

namespace kp {
namespace internal {

/** The wait settings of a device context, changed by
 * Manager::setWaitStrategy and read by every wait. */
class WaitSettings
{
  public:
    /** From KOMPUTE_ENV_WAIT (auto, spin or block; unset: auto). Throws
     * kp::Error on any other value. On a `cpuDevice`, eAuto blocks at once.
     * `fences`: submissions complete through fences even where timeline
     * semaphores would do (KOMPUTE_ENV_FENCES). */
    WaitSettings(bool cpuDevice, bool fences);

    void set(WaitStrategy strategy, uint64_t spinLimitNs);
    WaitStrategy strategy() const { return mStrategy.load(std::memory_order_relaxed); }
    uint64_t spinLimitNs() const { return mSpinLimitNs.load(std::memory_order_relaxed); }
    bool cpuDevice() const { return mCpuDevice; }
    bool fences() const { return mFences; }

  private:
    std::atomic<WaitStrategy> mStrategy;
    std::atomic<uint64_t> mSpinLimitNs;
    bool mCpuDevice = false;
    bool mFences = false;
};

/** The strategy named by KOMPUTE_ENV_WAIT, or eAuto when unset. */
WaitStrategy
waitStrategyFromEnvironment();

using WaitClock = std::chrono::steady_clock;

inline void
noteSubmitted(WaitHistory& history)
{
    history.submittedAt = WaitClock::now();
}

/** How long a wait with this history polls before it blocks. */
uint64_t
spinBudgetNs(const WaitHistory& history, const WaitSettings& settings, uint64_t timeoutNs);

/** For long work under eAuto on a GPU (the upper quartile of its recent
 * durations past the spin limit, the shortest past twice it): how long
 * after its submission a wait stops sleeping and polls, the shortest
 * recent duration less the limit; 0 where the wait does not sleep first
 * (other strategies, shorter work, nothing learnt yet, CPU drivers). */
uint64_t
pollFromNs(const WaitHistory& history, const WaitSettings& settings);

/** Adds the duration of a submission that completed at `completedAt`. */
void
learn(WaitHistory& history, WaitClock::time_point completedAt);

uint64_t
elapsedNs(WaitClock::time_point from, WaitClock::time_point to);

/** Tells the core that this is a polling loop (no system call). */
void
pauseInPollingLoop();

/**
 * Waits up to `timeoutNs` for a submission: polls, then blocks. `poll()`
 * returns true once it has completed (and throws on device loss);
 * `block(ns)` waits in the driver up to ns nanoseconds and returns eSuccess
 * or eTimeout. Returns eSuccess or eTimeout.
 */
template<typename Poll, typename Block>
vk::Result
waitForSubmission(WaitHistory& history,
                  const WaitSettings& settings,
                  uint64_t timeoutNs,
                  Poll&& poll,
                  Block&& block)
{
    if (poll()) {
        return vk::Result::eSuccess; // already done: nothing learnt
    }
    WaitClock::time_point start = WaitClock::now();
    uint64_t spin = spinBudgetNs(history, settings, timeoutNs);
    uint64_t pollFrom = pollFromNs(history, settings);
    if (pollFrom != 0) {
        // Long work: sleep in the driver until shortly before the shortest
        // recent duration (the limit covers the wake-up's lateness), then
        // poll the end for up to twice the limit.
        uint64_t sinceSubmission = elapsedNs(history.submittedAt, start);
        if (sinceSubmission < pollFrom) {
            uint64_t sleep = std::min(pollFrom - sinceSubmission, timeoutNs);
            vk::Result result = block(sleep);
            if (result == vk::Result::eSuccess) {
                learn(history, WaitClock::now());
                return result;
            }
            if (result != vk::Result::eTimeout || sleep == timeoutNs) {
                return result;
            }
        }
        uint64_t waited = elapsedNs(start, WaitClock::now());
        spin = waited >= timeoutNs ? 0 : std::min(2 * settings.spinLimitNs(), timeoutNs - waited) + waited;
    }
    uint64_t waited = elapsedNs(start, WaitClock::now());
    while (waited < spin) {
        pauseInPollingLoop();
        if (poll()) {
            learn(history, WaitClock::now());
            return vk::Result::eSuccess;
        }
        waited = elapsedNs(start, WaitClock::now());
    }
    if (waited >= timeoutNs) {
        return vk::Result::eTimeout;
    }
    vk::Result result = block(timeoutNs == UINT64_MAX ? UINT64_MAX : timeoutNs - waited);
    if (result == vk::Result::eSuccess) {
        learn(history, WaitClock::now());
    }
    return result;
}

} // namespace internal
} // namespace kp
