// SPDX-License-Identifier: Apache-2.0
// Copies between the program's memory and host views, spread over several
// CPU threads when the copy is large.
#pragma once

#include <cstddef>

namespace kp {
namespace internal {

/** memcpy(target, source, bytes), split over up to 16 threads (4 MiB or
 * more each) for copies of 16 MiB and more. One thread copying into pinned
 * memory moves about 10 GB/s on a server, several times below what PCIe
 * and the DMA engines carry, so a single-threaded copy would make every setData() the
 * bottleneck of an upload. Only one large copy is parallel at a time in a
 * process (others run on their caller's thread), so that many threads
 * calling setData() at once do not multiply the helpers. */
void copyHostBytes(void* target, const void* source, size_t bytes);

} // namespace internal
} // namespace kp
