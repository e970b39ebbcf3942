// SPDX-License-Identifier: Apache-2.0
// Reductions along the last axis of row-major matrices: sum, mean, max,
// argmax, and a numerically stable softmax.
#pragma once

#include <cstdint>

#include "kompute/kernels/KernelOp.hpp"

namespace kp {

/** The reduction OpReduce computes. */
enum class ReduceOp
{
    eSum = 0,  ///< sum of the row
    eMean = 1, ///< mean of the row
    eMax = 2,  ///< largest value of the row
    eArgmax = 3, ///< index of the largest value (the first one on ties; NaN never wins)
};

/** y[yOffset + r] = reduce(x[xOffset + r * xRowStride + c] for c < cols)
 * for r < rows. x: f32, f16 or bf16; y: f32 (eUnsignedInt for eArgmax).
 * Sums accumulate in f32. One workgroup reduces each row, except the argmax
 * of a single row longer than 4 x the local size (a decode step's logits)
 * on a GPU (see argmaxGroups): many workgroups take a chunk each and the
 * last to finish merges their results (path "split-subgroup" or
 * "split-shared-memory"), with the same rule (the first of equals, NaN
 * never wins) and so the same index. That path keeps a count in a buffer
 * of its own between evaluations: an operation on it must not run in two
 * submissions at once (as OpAttention). */
struct ReduceParams
{
    ReduceOp op = ReduceOp::eSum; ///< the reduction
    uint32_t rows = 1; ///< rows reduced (elements of y)
    uint32_t cols = 0; ///< elements per row
    uint32_t xRowStride = 0; ///< elements between rows of x; 0: cols
    uint64_t xOffset = 0; ///< first element of x
    uint64_t yOffset = 0; ///< first element of y
    /** The argmax of one row (rows 1): at most this many workgroups, each
     * taking at least 4 values per invocation (1: one workgroup; at most
     * 1024). 0: the device's choice: up to 1024 on GPUs, one on CPU
     * devices, where a workgroup costs more than its share of the row
     * saves (lavapipe: 5.1 ms split, 0.3 ms in one for 128256 values). */
    uint32_t argmaxGroups = 0;
};

/** OpReduce({x, y}, ReduceParams). */
class OpReduce : public KernelOp
{
  public:
    /** Checks the two tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpReduce(const std::vector<std::shared_ptr<Memory>>& tensors, const ReduceParams& params);
};

/**
 * y[r, c] = exp(s x[r, c] - m) / sum_c' exp(s x[r, c'] - m), with s = scale
 * and m the row's maximum of s x (so large inputs do not overflow). With
 * `causal`, row r keeps only the columns c <= (r % rowsPerMatrix) +
 * causalShift, and the masked entries of y are 0: rows are the queries of
 * batched score matrices of rowsPerMatrix rows each (0: all rows form one
 * matrix), and causalShift is the number of earlier positions every query
 * sees (a KV cache's past length). x and y: f32, f16 or bf16 (one type).
 */
struct SoftmaxParams
{
    uint32_t rows = 1; ///< rows
    uint32_t cols = 0; ///< elements per row
    float scale = 1.0f; ///< s: x is scaled before the exponential
    bool causal = false; ///< mask the columns past each row's position
    uint32_t rowsPerMatrix = 0; ///< rows of each score matrix; 0: all rows
    uint32_t causalShift = 0; ///< earlier positions every row sees
    uint32_t xRowStride = 0; ///< 0: cols
    uint32_t yRowStride = 0; ///< 0: cols
    uint64_t xOffset = 0; ///< first element of x
    uint64_t yOffset = 0; ///< first element of y
};

/** OpSoftmax({x, y}, SoftmaxParams): y may be x. */
class OpSoftmax : public KernelOp
{
  public:
    /** Checks the two tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpSoftmax(const std::vector<std::shared_ptr<Memory>>& tensors, const SoftmaxParams& params);
};

} // namespace kp
