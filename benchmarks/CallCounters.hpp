// SPDX-License-Identifier: Apache-2.0
// Process-wide counts of what the hot paths must not do once warm: heap
// allocations, Vulkan object creations (buffers, memory, pipelines,
// descriptor pools and sets, command pools and buffers, fences, semaphores,
// query pools, images and views) and descriptor-set writes. Counted from the
// start of the process; take differences (CallCounters.cpp).
#pragma once

#include <cstdint>

namespace bench {

struct CallCounts
{
    uint64_t allocations = 0;      ///< operator new, any form, on the calling thread
    uint64_t vulkanObjects = 0;    ///< vkCreate* / vkAllocate* calls
    uint64_t descriptorWrites = 0; ///< vkUpdateDescriptorSets calls

    CallCounts operator-(const CallCounts& earlier) const;
};

CallCounts callCounts();

/** Routes Kompute's counted Vulkan calls through the counters: libkompute
 * calls Vulkan through a table of its own, filled from the loader it
 * opens at run time, which the counting definitions of this executable do
 * not interpose. main() calls it before anything else (it opens the
 * loader; without one it counts nothing). */
void countKomputeVulkanCalls();

} // namespace bench
