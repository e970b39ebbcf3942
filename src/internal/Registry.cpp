// SPDX-License-Identifier: Apache-2.0
#include "internal/Registry.hpp"

#include "kompute/Algorithm.hpp"
#include "kompute/Memory.hpp"
#include "kompute/Sequence.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

void
Registry::add(Sequence* sequence)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mSequences.insert(sequence);
}

void
Registry::add(Algorithm* algorithm)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mAlgorithms.insert(algorithm);
}

void
Registry::add(Memory* memory)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mMemory.insert(memory);
}

void
Registry::remove(Sequence* sequence)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mSequences.erase(sequence);
}

void
Registry::remove(Algorithm* algorithm)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mAlgorithms.erase(algorithm);
}

void
Registry::remove(Memory* memory)
{
    std::lock_guard<std::mutex> lock(mMutex);
    mMemory.erase(memory);
}

void
Registry::destroyAll()
{
    std::lock_guard<std::mutex> lock(mMutex);
    // Each object is destroyed even if another one fails to: a failure is
    // logged, and the device is destroyed after this either way. Sequences
    // go first: they wait for their own work and hold the operations that
    // use the algorithms and memory.
    auto destroyEach = [](auto& objects, const char* kind) {
        for (auto* object : objects) {
            try {
                object->destroy();
            } catch (const std::exception& error) {
                KP_LOG_ERROR("Destroying a {} with its Manager failed: {}", kind, error.what());
            }
        }
    };
    destroyEach(mSequences, "sequence");
    destroyEach(mAlgorithms, "algorithm");
    destroyEach(mMemory, "memory object");
}

} // namespace internal
} // namespace kp
