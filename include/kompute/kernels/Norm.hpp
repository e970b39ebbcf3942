// SPDX-License-Identifier: Apache-2.0
// Normalization over the last axis: RMSNorm (Llama) and LayerNorm.
#pragma once

#include <cstdint>

#include "kompute/kernels/KernelOp.hpp"

namespace kp {

/** y[r, c] = x[r, c] / sqrt(mean_c(x[r, :]^2) + eps) * weight[c]. x and y:
 * f32, f16 or bf16 (y may hold another of the three than x: a prefill
 * step normalizes f32 rows into the f16 ones its products read); weight
 * f32; statistics in f32. With heads > 1
 * each row holds `heads` vectors of `cols` elements, `cols` apart, each
 * normalized on its own (the per-head query and key norms of Qwen3): vector
 * h of row r starts at xOffset + r * xRowStride + h * cols, and its weight
 * at weightOffset + h * weightHeadStride (0: one weight for every head). */
struct RMSNormParams
{
    uint32_t rows = 1; ///< rows normalized
    uint32_t cols = 0; ///< elements per row (per vector with heads > 1)
    float eps = 1e-5f; ///< added to the mean square
    uint32_t xRowStride = 0; ///< 0: cols
    uint32_t yRowStride = 0; ///< 0: cols
    uint64_t xOffset = 0; ///< first element of x
    uint64_t weightOffset = 0; ///< first element of weight
    uint64_t yOffset = 0; ///< first element of y
    uint32_t heads = 1; ///< vectors per row, each normalized on its own; row strides of 0 mean heads * cols
    uint32_t weightHeadStride = 0; ///< weights between consecutive heads' weights (0: all heads share one)
};

/** OpRMSNorm({x, weight, y}, RMSNormParams), or {x, y} without a weight;
 * y may be x (in place). */
class OpRMSNorm : public KernelOp
{
  public:
    /** Checks the tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpRMSNorm(const std::vector<std::shared_ptr<Memory>>& tensors, const RMSNormParams& params);
};

/** y[r, c] = (x[r, c] - mean) / sqrt(var + eps) * weight[c] + bias[c], with
 * the row's mean and (biased) variance. Types as RMSNorm. */
struct LayerNormParams
{
    uint32_t rows = 1; ///< rows normalized
    uint32_t cols = 0; ///< elements per row
    float eps = 1e-5f; ///< added to the variance
    uint32_t xRowStride = 0; ///< 0: cols
    uint32_t yRowStride = 0; ///< 0: cols
    uint64_t xOffset = 0; ///< first element of x
    uint64_t weightOffset = 0; ///< first element of weight
    uint64_t biasOffset = 0; ///< first element of bias
    uint64_t yOffset = 0; ///< first element of y
};

/** OpLayerNorm({x, weight, bias, y}, ...), {x, weight, y} (no bias) or
 * {x, y} (neither); y may be x. */
class OpLayerNorm : public KernelOp
{
  public:
    /** Checks the tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpLayerNorm(const std::vector<std::shared_ptr<Memory>>& tensors, const LayerNormParams& params);
};

} // namespace kp
