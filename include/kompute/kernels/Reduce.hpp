// SPDX-License-Identifier: Apache-2.0
// Reductions along the last axis of row-major matrices: sum, mean, max,
// argmax, and a numerically stable softmax.
#pragma once

#include <cstdint>

#include "kompute/kernels/KernelOp.hpp"

namespace kp {

enum class ReduceOp
{
    eSum = 0,
    eMean = 1,
    eMax = 2,
    eArgmax = 3, ///< index of the largest value (the first one on ties; NaN never wins)
};

/** y[yOffset + r] = reduce(x[xOffset + r * xRowStride + c] for c < cols)
 * for r < rows. x: f32, f16 or bf16; y: f32 (eUnsignedInt for eArgmax).
 * Sums accumulate in f32. */
struct ReduceParams
{
    ReduceOp op = ReduceOp::eSum;
    uint32_t rows = 1;
    uint32_t cols = 0;
    uint32_t xRowStride = 0; ///< elements between rows of x; 0: cols
    uint64_t xOffset = 0;
    uint64_t yOffset = 0;
};

/** OpReduce({x, y}, ReduceParams). */
class OpReduce : public KernelOp
{
  public:
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
    uint32_t rows = 1;
    uint32_t cols = 0;
    float scale = 1.0f;
    bool causal = false;
    uint32_t rowsPerMatrix = 0;
    uint32_t causalShift = 0;
    uint32_t xRowStride = 0; ///< 0: cols
    uint32_t yRowStride = 0; ///< 0: cols
    uint64_t xOffset = 0;
    uint64_t yOffset = 0;
};

/** OpSoftmax({x, y}, SoftmaxParams): y may be x. */
class OpSoftmax : public KernelOp
{
  public:
    OpSoftmax(const std::vector<std::shared_ptr<Memory>>& tensors, const SoftmaxParams& params);
};

} // namespace kp
