// SPDX-License-Identifier: Apache-2.0
// Row scatter with a cast: the KV-cache write of a transformer, with the
// destination rows read from a positions tensor at run time.
#pragma once

#include <cstdint>

#include "kompute/kernels/KernelOp.hpp"

namespace kp {

/**
 * dst[dstOffset + positions[r] * dstRowStride + c] =
 * cast(src[srcOffset + r * srcRowStride + c]) for r < rows, c < cols.
 * src: f32 or f16; dst: f32, f16 or bf16; positions uint32. A position whose
 * row would not fit in dst (from dstOffset) is skipped: nothing outside the
 * tensor is ever written.
 */
struct SetRowsParams
{
    uint32_t rows = 1; ///< rows of src written
    uint32_t cols = 0; ///< elements per row
    uint32_t dstRowStride = 0; ///< 0: cols
    uint64_t dstOffset = 0; ///< first element of dst (row 0)
    uint32_t srcRowStride = 0; ///< 0: cols
    uint64_t srcOffset = 0; ///< first element of src
    uint64_t positionsOffset = 0; ///< first element of positions
};

/** OpSetRows({src, dst, positions}, SetRowsParams). */
class OpSetRows : public KernelOp
{
  public:
    /** Checks the tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpSetRows(const std::vector<std::shared_ptr<Memory>>& tensors, const SetRowsParams& params);
};

} // namespace kp
