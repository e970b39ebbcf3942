// SPDX-License-Identifier: Apache-2.0
#include "internal/HostCopy.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace kp {
namespace internal {

namespace {

constexpr size_t kParallelFrom = 16u << 20; // below this, threads cost more than they give
constexpr size_t kBytesPerThread = 4u << 20;
// On the H200 machine's 16-core host, a 1 GiB copy into pinned memory ran
// at 10.2 GB/s on 1 thread, 32.7 on 4, 31.7 on 8 and 38.5 on 16.
constexpr size_t kMaxThreads = 16;
constexpr size_t kChunkAlignment = 4096;    // threads never share a page or cache line

std::atomic<bool> parallelCopyRunning{ false };

size_t
threadsFor(size_t bytes)
{
    size_t hardware = std::max<size_t>(1, std::thread::hardware_concurrency());
    return std::min({ kMaxThreads, hardware, bytes / kBytesPerThread });
}

} // namespace

void
copyHostBytes(void* target, const void* source, size_t bytes)
{
    size_t threads = bytes >= kParallelFrom ? threadsFor(bytes) : 1;
    bool expected = false;
    if (threads < 2 || !parallelCopyRunning.compare_exchange_strong(expected, true)) {
        std::memcpy(target, source, bytes);
        return;
    }
    auto* to = static_cast<unsigned char*>(target);
    const auto* from = static_cast<const unsigned char*>(source);
    size_t chunk = (bytes / threads + kChunkAlignment - 1) / kChunkAlignment * kChunkAlignment;

    std::vector<std::thread> helpers;
    helpers.reserve(threads - 1);
    size_t offset = chunk; // the first chunk is the caller's
    for (; offset < bytes && helpers.size() + 1 < threads; offset += chunk) {
        size_t length = std::min(chunk, bytes - offset);
        try {
            helpers.emplace_back([=] { std::memcpy(to + offset, from + offset, length); });
        } catch (...) {
            break; // no thread to be had: the caller copies the rest itself
        }
    }
    std::memcpy(to, from, std::min(chunk, bytes));
    if (offset < bytes) {
        std::memcpy(to + offset, from + offset, bytes - offset);
    }
    for (auto& helper : helpers) {
        helper.join();
    }
    parallelCopyRunning.store(false);
}

} // namespace internal
} // namespace kp
