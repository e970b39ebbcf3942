// SPDX-License-Identifier: Apache-2.0
// The live objects of a device context. Every Sequence, Algorithm and
// memory object joins the registry of its context when constructed and
// leaves it when destructed, whether a Manager made it or the user built it
// on the Manager's device with upstream's public constructors. So
// Manager::destroy() can destroy all that are still alive, in the order
// sequences, algorithms, memory, before the device goes.
//
// No lock is held while an object is destroyed: destroying a sequence drops
// its operations, which may hold the last reference of a tensor, whose
// destructor comes back here (on this thread, or on another one that drops
// its own references at the same time).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>

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
    /** `destroy` destroys the object without a virtual call: the object's
     * destructor may have begun on another thread (and changed its vtable
     * pointer) while destroyAll() reaches it. */
    void add(Memory* memory, void (*destroy)(Memory&));

    /**
     * Held by an object's destructor while it destroys itself: the object
     * leaves the registry, and destroyAll() neither destroys it at the same
     * time nor returns before it is done. Does nothing for an object that
     * never joined.
     */
    class Removal
    {
      public:
        Removal(Registry& registry, const void* object);
        ~Removal();
        Removal(const Removal&) = delete;
        Removal& operator=(const Removal&) = delete;

      private:
        Registry& mRegistry;
        const void* mObject;
    };

    /** Destroys every live object (sequences, then algorithms, then memory)
     * and returns once objects that other threads were destructing at the
     * same time are done too. */
    void destroyAll();

  private:
    enum class Kind
    {
        eSequence,
        eAlgorithm,
        eMemory,
    };

    struct Node
    {
        Kind kind;
        void* object;
        void (*destroyMemory)(Memory&) = nullptr;
        bool busy = false;    // being destroyed, by destroyAll or a destructor
        bool removed = false; // its destructor has run: never touch `object`
    };

    void add(Kind kind, void* object, void (*destroyMemory)(Memory&) = nullptr);
    /** Destroys the object of `node` unless it is removed or busy. */
    void destroyNode(const std::shared_ptr<Node>& node);

    std::mutex mMutex;
    std::condition_variable mChanged;
    std::unordered_map<const void*, std::shared_ptr<Node>> mNodes;
};

} // namespace internal
} // namespace kp
