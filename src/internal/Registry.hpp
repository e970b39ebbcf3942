// SPDX-License-Identifier: Apache-2.0
// Weak references to the objects a Manager made, so that Manager::destroy()
// can destroy those still alive, in the order sequences, algorithms, memory.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

namespace kp {

class Sequence;
class Algorithm;
class Memory;

namespace internal {

class Registry
{
  public:
    void add(const std::shared_ptr<Sequence>& sequence);
    void add(const std::shared_ptr<Algorithm>& algorithm);
    void add(const std::shared_ptr<Memory>& memory);

    /** Destroys every live object and forgets them all. */
    void destroyAll();

  private:
    // Each list drops its expired entries whenever it has doubled since the
    // last pruning, so it stays proportional to the live objects.
    template<typename T>
    struct List
    {
        std::vector<std::weak_ptr<T>> entries;
        size_t pruneAt = 64;
        void add(const std::shared_ptr<T>& object);
        std::vector<std::shared_ptr<T>> takeLive();
    };

    std::mutex mMutex;
    List<Sequence> mSequences;
    List<Algorithm> mAlgorithms;
    List<Memory> mMemory;
};

} // namespace internal
} // namespace kp
