// SPDX-License-Identifier: Apache-2.0
// Argument checks shared by the operations.
#pragma once

#include <memory>
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

} // namespace internal
} // namespace kp
