// SPDX-License-Identifier: Apache-2.0
// The live objects of a device context. Every Sequence, Algorithm and
// memory object joins the registry of its context when constructed and
// leaves it when destructed, whether a Manager made it or the user built it
// on the Manager's device with upstream's public constructors. So
// Manager::destroy() can destroy all that are still alive, in the order
// sequences, algorithms, memory, before the device goes.
#pragma once

#include <mutex>
#include <unordered_set>

namespace kp {

class Sequence;
class Algorithm;
class Memory;

namespace internal {

class Registry
{
  public:
    void add(Sequence* sequence);
    void add(Algorithm* algorithm);
    void add(Memory* memory);
    void remove(Sequence* sequence);
    void remove(Algorithm* algorithm);
    void remove(Memory* memory);

    /** Destroys every live object. The lock is held throughout, so an
     * object being destructed on another thread waits until this is done
     * before it leaves. */
    void destroyAll();

  private:
    std::mutex mMutex;
    std::unordered_set<Sequence*> mSequences;
    std::unordered_set<Algorithm*> mAlgorithms;
    std::unordered_set<Memory*> mMemory;
};

} // namespace internal
} // namespace kp
