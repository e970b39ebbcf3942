// SPDX-License-Identifier: Apache-2.0
#include "internal/Wait.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "kompute/Errors.hpp"
#include "kompute/Manager.hpp"

namespace kp {
namespace internal {

namespace {

// The margin over the recent durations that eAuto polls for: the duration
// varies a little from one submission to the next.
constexpr uint64_t kSpinMarginNs = 5'000;

/** The upper quartile of a history's recent durations (count > 0): one
 * slow submission does not turn polling off for the next ones. */
uint64_t
typicalNs(const WaitHistory& history)
{
    std::array<uint64_t, WaitHistory::kSize> recent = history.recentNs;
    auto end = recent.begin() + static_cast<std::ptrdiff_t>(history.count);
    auto quartile = recent.begin() + static_cast<std::ptrdiff_t>(history.count * 3 / 4);
    std::nth_element(recent.begin(), quartile, end);
    return *quartile;
}

} // namespace

WaitStrategy
waitStrategyFromEnvironment()
{
    const char* value = std::getenv("KOMPUTE_ENV_WAIT");
    if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) {
        return WaitStrategy::eAuto;
    }
    if (std::strcmp(value, "spin") == 0) {
        return WaitStrategy::eSpin;
    }
    if (std::strcmp(value, "block") == 0) {
        return WaitStrategy::eBlock;
    }
    throw Error(std::string("KOMPUTE_ENV_WAIT is \"") + value +
                "\": use auto (the default), spin or block");
}

WaitSettings::WaitSettings(bool cpuDevice, bool fences)
  : mStrategy(waitStrategyFromEnvironment())
  , mSpinLimitNs(Manager::kDefaultAutoSpinLimitNs)
  , mCpuDevice(cpuDevice)
  , mFences(fences)
{
}

void
WaitSettings::set(WaitStrategy strategy, uint64_t spinLimitNs)
{
    if (strategy != WaitStrategy::eAuto && strategy != WaitStrategy::eSpin &&
        strategy != WaitStrategy::eBlock) {
        throw Error("setWaitStrategy: unknown kp::WaitStrategy value " +
                    std::to_string(static_cast<int>(strategy)));
    }
    mStrategy.store(strategy, std::memory_order_relaxed);
    mSpinLimitNs.store(spinLimitNs, std::memory_order_relaxed);
}

uint64_t
elapsedNs(WaitClock::time_point from, WaitClock::time_point to)
{
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
    return ns > 0 ? static_cast<uint64_t>(ns) : 0;
}

void
pauseInPollingLoop()
{
    // Lets the sibling hyper-thread run and saves power while polling.
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

uint64_t
spinBudgetNs(const WaitHistory& history, const WaitSettings& settings, uint64_t timeoutNs)
{
    uint64_t budget = 0;
    switch (settings.strategy()) {
        case WaitStrategy::eBlock:
            budget = 0;
            break;
        case WaitStrategy::eSpin:
            budget = UINT64_MAX;
            break;
        case WaitStrategy::eAuto: {
            if (settings.cpuDevice()) {
                break; // a polling thread would take a core from the device
            }
            uint64_t limit = settings.spinLimitNs();
            if (history.count == 0) {
                budget = limit;
                break;
            }
            uint64_t typical = typicalNs(history);
            budget = typical > limit ? 0 : std::min(limit, typical + typical / 2 + kSpinMarginNs);
            break;
        }
    }
    return std::min(budget, timeoutNs);
}

uint64_t
pollFromNs(const WaitHistory& history, const WaitSettings& settings)
{
    if (settings.strategy() != WaitStrategy::eAuto || settings.cpuDevice() || history.count == 0) {
        return 0;
    }
    // Long work as spinBudgetNs judges it (it polls nothing then); the
    // shortest duration sets the wake-up, so that a submission faster than
    // the typical one is still polled.
    uint64_t limit = settings.spinLimitNs();
    if (typicalNs(history) <= limit) {
        return 0;
    }
    auto recent = history.recentNs.begin();
    uint64_t shortest = *std::min_element(recent, recent + static_cast<std::ptrdiff_t>(history.count));
    return shortest > 2 * limit ? shortest - limit : 0;
}

void
learn(WaitHistory& history, WaitClock::time_point completedAt)
{
    history.recentNs[history.next] = elapsedNs(history.submittedAt, completedAt);
    history.next = (history.next + 1) % WaitHistory::kSize;
    history.count = std::min(history.count + 1, WaitHistory::kSize);
}

} // namespace internal
} // namespace kp
