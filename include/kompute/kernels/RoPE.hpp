// SPDX-License-Identifier: Apache-2.0
// Rotary position embedding (RoPE), with the position of each row read from
// a tensor at run time, so one recorded sequence serves every decode step.
#pragma once

#include <cstdint>

#include "kompute/kernels/KernelOp.hpp"

namespace kp {

/** Which pairs of values RoPE rotates together. */
enum class RoPEMode
{
    eNormal = 0, ///< rotates adjacent pairs (x[2i], x[2i+1]): GGUF's llama layout
    eNeoX = 1,   ///< rotates (x[i], x[i + ropeDims/2]): GPT-NeoX, Hugging Face layout
};

/**
 * x is [rows][heads][headDim] (row r at xOffset + r * xRowStride); pair i
 * (i < ropeDims/2) of every head of row r turns by the angle
 * positions[r] * freqScale * theta^(-2i / ropeDims). Dimensions from ropeDims
 * to headDim are copied unchanged. x and y: f32 or f16 (one type); positions
 * uint32 (eUnsignedInt). With a freqFactors tensor (f32, ropeDims/2 values
 * from freqFactorsOffset: Llama 3.1's rope_freqs) pair i's angle is divided
 * by freqFactors[i]. The angle is computed in f32 with the device's exp2,
 * sin and cos: on devices where these are approximate it is off by up to
 * about positions[r] * 2^-22 radians (2e-3 at position 8191 on the H200;
 * the same order as llama.cpp's f32 angles).
 */
struct RoPEParams
{
    uint32_t rows = 1; ///< tokens (rows of x)
    uint32_t heads = 1; ///< heads per row
    uint32_t headDim = 0; ///< values per head
    uint32_t ropeDims = 0; ///< even, <= headDim; 0: headDim
    float theta = 10000.0f; ///< the frequency base
    float freqScale = 1.0f; ///< positions are multiplied by it (linear scaling)
    RoPEMode mode = RoPEMode::eNormal; ///< which values form pairs
    uint32_t xRowStride = 0; ///< 0: heads * headDim
    uint32_t yRowStride = 0; ///< 0: heads * headDim
    uint64_t xOffset = 0; ///< first element of x
    uint64_t yOffset = 0; ///< first element of y
    uint64_t positionsOffset = 0; ///< first element of positions
    uint64_t freqFactorsOffset = 0; ///< first element of freqFactors (when given)
};

/** OpRoPE({x, positions, y}, RoPEParams) or OpRoPE({x, positions, y,
 * freqFactors}, RoPEParams): y may be x. */
class OpRoPE : public KernelOp
{
  public:
    /** Checks the tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpRoPE(const std::vector<std::shared_ptr<Memory>>& tensors, const RoPEParams& params);
};

} // namespace kp
