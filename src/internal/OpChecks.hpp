// SPDX-License-Identifier: Apache-2.0
// Argument checks shared by the operations.
#pragma once

#include <memory>
#include <unordered_set>
#include <vector>

#include "kompute/Memory.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

/** Throws unless `objects` holds at least `minimum` objects, none null or
 * destroyed. */
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
