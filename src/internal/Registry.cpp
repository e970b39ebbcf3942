// SPDX-License-Identifier: Apache-2.0
#include "internal/Registry.hpp"

#include <vector>

#include "kompute/Algorithm.hpp"
#include "kompute/Memory.hpp"
#include "kompute/Sequence.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

void
Registry::add(Kind kind, void* object, void (*destroyMemory)(Memory&))
{
    auto node = std::make_shared<Node>();
    node->kind = kind;
    node->object = object;
    node->destroyMemory = destroyMemory;
    std::lock_guard<std::mutex> lock(mMutex);
    mNodes[object] = std::move(node);
}

void
Registry::add(Sequence* sequence)
{
    add(Kind::eSequence, sequence);
}

void
Registry::add(Algorithm* algorithm)
{
    add(Kind::eAlgorithm, algorithm);
}

void
Registry::add(Memory* memory, void (*destroy)(Memory&))
{
    add(Kind::eMemory, memory, destroy);
}

Registry::Removal::Removal(Registry& registry, const void* object)
  : mRegistry(registry)
  , mObject(object)
{
    std::unique_lock<std::mutex> lock(registry.mMutex);
    auto found = registry.mNodes.find(object);
    if (found == registry.mNodes.end()) {
        mObject = nullptr;
        return;
    }
    std::shared_ptr<Node> node = found->second;
    // destroyAll may be destroying it on another thread right now.
    registry.mChanged.wait(lock, [&] { return !node->busy; });
    node->busy = true;
}

Registry::Removal::~Removal()
{
    if (mObject == nullptr) {
        return;
    }
    std::lock_guard<std::mutex> lock(mRegistry.mMutex);
    auto found = mRegistry.mNodes.find(mObject);
    if (found != mRegistry.mNodes.end()) {
        found->second->busy = false;
        found->second->removed = true;
        mRegistry.mNodes.erase(found);
    }
    mRegistry.mChanged.notify_all();
}

void
Registry::destroyNode(const std::shared_ptr<Node>& node)
{
    {
        std::lock_guard<std::mutex> lock(mMutex);
        if (node->removed || node->busy) {
            return; // gone, or its destructor is destroying it
        }
        node->busy = true;
    }
    // A sequence's operations are dropped once the node is free again: the
    // last reference of an operation made in Python takes the GIL to go,
    // which a thread waiting for this node (in the sequence's destructor,
    // see Removal) may hold.
    std::vector<std::shared_ptr<OpBase>> operations;
    // Each object is destroyed even if another one fails to: a failure is
    // logged, and the device is destroyed after this either way.
    try {
        switch (node->kind) {
            case Kind::eSequence:
                operations = static_cast<Sequence*>(node->object)->detachForDestroy();
                break;
            case Kind::eAlgorithm: static_cast<Algorithm*>(node->object)->destroy(); break;
            case Kind::eMemory: node->destroyMemory(*static_cast<Memory*>(node->object)); break;
        }
    } catch (const std::exception& error) {
        KP_LOG_ERROR("Destroying an object with its Manager failed: {}", error.what());
    }
    {
        std::lock_guard<std::mutex> lock(mMutex);
        node->busy = false;
        mChanged.notify_all();
    }
    operations.clear();
}

void
Registry::destroyAll()
{
    // Collected under the lock, destroyed without it. Sequences go first:
    // they hold the operations that use the algorithms and memory.
    std::vector<std::shared_ptr<Node>> nodes;
    {
        std::lock_guard<std::mutex> lock(mMutex);
        nodes.reserve(mNodes.size());
        for (const auto& entry : mNodes) {
            nodes.push_back(entry.second);
        }
    }
    for (Kind kind : { Kind::eSequence, Kind::eAlgorithm, Kind::eMemory }) {
        for (const auto& node : nodes) {
            if (node->kind == kind) {
                destroyNode(node);
            }
        }
    }
    // Destructors running on other threads finish before the device goes.
    std::unique_lock<std::mutex> lock(mMutex);
    mChanged.wait(lock, [&] {
        for (const auto& node : nodes) {
            if (node->busy) {
                return false;
            }
        }
        return true;
    });
}

} // namespace internal
} // namespace kp
