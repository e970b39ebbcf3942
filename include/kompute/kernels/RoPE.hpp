// SPDX-License-Identifier: Apache-2.0
// Rotary position embedding (RoPE), with the position of each row read from
// a tensor at run time, so one recorded sequence serves every decode step;
// and OpRoPECache, RoPE fused with the KV-cache write of a transformer layer.
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

/**
 * The attention inputs of a transformer layer in one dispatch: RoPE on the
 * query and key heads and the KV-cache write (OpRoPE on both, then
 * OpSetRows of the keys and of the values, fused). qkv is [rows][heads +
 * 2 kvHeads][headDim]: per row the query heads, the key heads, the value
 * heads (row r at qkvOffset + r * qkvRowStride). For each row r:
 * - the query heads are rotated in place in qkv;
 * - the key heads, rotated, go to row positions[r] of keyCache;
 * - the value heads, unchanged, go to row positions[r] of valueCache;
 * a cache row is [kvHeads][headDim] at cacheOffset + positions[r] *
 * cacheRowStride, in both caches. The key and value heads of qkv are left as
 * they were. Rotation, ropeDims, theta, freqScale, mode and freqFactors as
 * OpRoPE (the same arithmetic, so the same results). With a bias (Qwen2's
 * query, key and value biases: heads + 2 kvHeads heads of headDim f32 from
 * biasOffset), bias[h * headDim + c] is added to every row's value (h, c)
 * before the rotation, as OpBinary's eAdd of the bias row would. A position
 * whose row would not fit in a cache is not written (as OpSetRows); its
 * query heads are still rotated. Types: qkv f32 or f16; the caches f32, f16
 * or bf16 (one type, values rounded once, from f32); positions uint32;
 * freqFactors and bias f32.
 */
struct RoPECacheParams
{
    uint32_t rows = 1; ///< tokens (rows of qkv)
    uint32_t heads = 1; ///< query heads per row
    uint32_t kvHeads = 1; ///< key heads per row, and value heads
    uint32_t headDim = 0; ///< values per head
    uint32_t ropeDims = 0; ///< even, <= headDim; 0: headDim
    float theta = 10000.0f; ///< the frequency base
    float freqScale = 1.0f; ///< positions are multiplied by it (linear scaling)
    RoPEMode mode = RoPEMode::eNormal; ///< which values form pairs
    bool hasFreqFactors = false; ///< a freqFactors tensor follows the caches
    bool hasBias = false; ///< a bias tensor follows (after freqFactors when both)
    uint32_t qkvRowStride = 0; ///< 0: (heads + 2 kvHeads) * headDim
    uint64_t qkvOffset = 0; ///< first element of qkv
    uint32_t cacheRowStride = 0; ///< elements between cache rows; 0: kvHeads * headDim
    uint64_t cacheOffset = 0; ///< first element of row 0 of either cache
    uint64_t positionsOffset = 0; ///< first element of positions
    uint64_t freqFactorsOffset = 0; ///< first element of freqFactors (when given)
    uint64_t biasOffset = 0; ///< first element of bias (when given)
};

/** OpRoPECache({qkv, positions, keyCache, valueCache}, RoPECacheParams),
 * with freqFactors and then bias appended when the params say so. qkv,
 * keyCache and valueCache are three different tensors. */
class OpRoPECache : public KernelOp
{
  public:
    /** Checks the tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpRoPECache(const std::vector<std::shared_ptr<Memory>>& tensors, const RoPECacheParams& params);
};

} // namespace kp
