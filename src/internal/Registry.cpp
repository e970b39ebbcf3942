// SPDX-License-Identifier: Apache-2.0
#include "internal/Registry.hpp"

#include "kompute/Algorithm.hpp"
#include "kompute/Memory.hpp"
#include "kompute/Sequence.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

template<typename T>
void
Registry::List<T>::add(const std::shared_ptr<T>& object)
{
    if (entries.size() >= pruneAt) {
        std::vector<std::weak_ptr<T>> live;
        live.reserve(entries.size());
        for (auto& entry : entries) {
            if (!entry.expired()) {
                live.push_back(std::move(entry));
            }
        }
        entries.swap(live);
        pruneAt = std::max<size_t>(64, entries.size() * 2);
    }
    entries.push_back(object);
}

template<typename T>
std::vector<std::shared_ptr<T>>
Registry::List<T>::takeLive()
{
    std::vector<std::shared_ptr<T>> live;
    for (auto& entry : entries) {
        if (auto object = entry.lock()) {
            live.push_back(std::move(object));
        }
    }
    entries.clear();
    pruneAt = 64;
    return live;
}

void
Registry::add(const std::shared_ptr<Sequence>& sequence)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mSequences.add(sequence);
}

void
Registry::add(const std::shared_ptr<Algorithm>& algorithm)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mAlgorithms.add(algorithm);
}

void
Registry::add(const std::shared_ptr<Memory>& memory)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mMemory.add(memory);
}

void
Registry::destroyAll()
{
    std::vector<std::shared_ptr<Sequence>> sequences;
    std::vector<std::shared_ptr<Algorithm>> algorithms;
    std::vector<std::shared_ptr<Memory>> memory;
    {
        std::lock_guard<std::mutex> lock(mMutex);
        sequences = mSequences.takeLive();
        algorithms = mAlgorithms.takeLive();
        memory = mMemory.takeLive();
    }
    // Sequences first: they wait for their own work and hold the operations
    // that reference memory.
    // Each object is destroyed even if another one fails to: a failure is
    // logged, and the device is destroyed after this either way.
    auto destroyEach = [](auto& objects, const char* kind) {
        for (auto& object : objects) {
            try {
                object->destroy();
            } catch (const std::exception& error) {
                KP_LOG_ERROR("Destroying a {} with its Manager failed: {}", kind, error.what());
            }
        }
    };
    destroyEach(sequences, "sequence");
    destroyEach(algorithms, "algorithm");
    destroyEach(memory, "memory object");
}

} // namespace internal
} // namespace kp
