// SPDX-License-Identifier: Apache-2.0
// Argument checks shared by the operations.
#pragma once

#include <memory>
#include <unordered_set>
#include <vector>

#include "internal/Device.hpp"
#include "kompute/Memory.hpp"
#include "kompute/operations/OpBase.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

/** What operations may ask of a memory object beyond its public API. */
struct MemoryInternals
{
    static const std::shared_ptr<Device>& device(const Memory& memory) { return memory.mDevice; }
};

/** Throws unless every object is on the device of `objects[0]`: one
 * operation cannot reach memory of two Managers (two Vulkan devices). */
inline void
checkOneDevice(const std::vector<std::shared_ptr<Memory>>& objects, const char* opName)
{
    if (objects.empty() || !objects[0]) {
        return;
    }
    vk::Device first = MemoryInternals::device(*objects[0])->device();
    for (size_t i = 1; i < objects.size(); ++i) {
        if (objects[i] && MemoryInternals::device(*objects[i])->device() != first) {
            throw Error(logger::format("{}: memory object {} belongs to another Manager than "
                                       "memory object 0 (another Vulkan device); the objects of "
                                       "one operation must all come from the same Manager",
                                       opName,
                                       i));
        }
    }
}

/** Throws unless `objects` holds at least `minimum` objects, none null or
 * destroyed, all on one device. */
inline void
checkMemObjects(const std::vector<std::shared_ptr<Memory>>& objects,
                size_t minimum,
                const char* opName)
{
    if (objects.size() < minimum) {
        throw Error(logger::format("{} needs at least {} memory object(s), {} given",
                                   opName,
                                   minimum,
                                   objects.size()));
    }
    for (size_t i = 0; i < objects.size(); ++i) {
        if (!objects[i]) {
            throw Error(logger::format("{}: memory object {} is null", opName, i));
        }
        objects[i]->checkInit(opName);
    }
    checkOneDevice(objects, opName);
}

/** Throws unless every memory object in `accesses` (an operation's
 * declared accesses) is on `device`, the device of the sequence recording
 * the operation. `action` names the call, e.g. "Sequence::record". */
inline void
checkRecordedDevice(vk::Device device,
                    const std::vector<MemoryAccess>& accesses,
                    const char* action)
{
    for (const auto& access : accesses) {
        // Objects built by hand on a Manager's device have contexts of
        // their own: the Vulkan device is what must match.
        if (access.memory == nullptr) {
            continue;
        }
        std::shared_ptr<Device> owner = deviceOf(*access.memory);
        if (owner && owner->device() != device) {
            throw Error(logger::format("{}: the operation uses a tensor or image of another "
                                       "Manager than the sequence's; objects of two Managers "
                                       "cannot be mixed in one sequence (create them, and the "
                                       "algorithm, with the sequence's Manager)",
                                       action));
        }
    }
}

/** `objects` without repeats, in first-seen order. An operation that
 * copied into the same buffer twice without a barrier in between would race
 * with itself (a write-after-write hazard), so each object is handled once. */
inline std::vector<std::shared_ptr<Memory>>
withoutRepeats(const std::vector<std::shared_ptr<Memory>>& objects)
{
    std::vector<std::shared_ptr<Memory>> unique;
    unique.reserve(objects.size());
    std::unordered_set<const Memory*> seen;
    for (const auto& object : objects) {
        if (seen.insert(object.get()).second) {
            unique.push_back(object);
        }
    }
    return unique;
}

} // namespace internal
} // namespace kp
