// SPDX-License-Identifier: Apache-2.0
// OpRoPECache's checks, shared with the mat-vec that does its work on the
// row it writes (MatMulParams::ropeC).
#pragma once

#include "kernels/KernelSupport.hpp"
#include "kompute/kernels/RoPE.hpp"

namespace kp {
namespace kernels {

/** Where OpRoPECache's tensors are among an operation's: its own order, or
 * after A, B, C (qkv) and the norm's weights for the mat-vec. `factors` and
 * `bias` are read only where the params have them. */
struct RoPECacheTensors
{
    size_t qkv = 0, positions = 1, keys = 2, values = 3, factors = 4, bias = 5;
};

/** The push constants of the rotation and the caches, as RoPE.comp (after
 * rows, qkvRowStride and qkvOffset) and MatVec.comp's ROPE_EPILOGUE (after
 * the mat-vec's) declare them. */
struct RoPECachePush
{
    uint32_t heads, kvHeads, headDim;
    uint32_t ropeDims; // 0 replaced by headDim
    float log2Theta, freqScale;
    uint32_t cacheRowStride; // 0 replaced
    uint32_t cacheOffset;
    uint32_t keyRows, valueRows; // cache rows that fit in each cache
    uint32_t positionsOffset, factorsOffset, biasOffset; // 0 where absent
};

/** OpRoPECache's parameters, checked against its tensors (kp::Error naming
 * what is wrong) and resolved as the shaders take them. */
struct RoPECacheResolved
{
    uint32_t mode; // RoPEMode, the shaders' NEOX
    uint32_t qkvStride; // 0 replaced
    uint64_t rowWidth; // elements of one row of qkv, (heads + 2 kvHeads) * headDim
    uint64_t qkvExtent; // elements of qkv from qkvOffset on that its rows span
    StorageType qkvType, cacheType;
    RoPECachePush push;
};

RoPECacheResolved
resolveRoPECache(const Checker& check, const RoPECacheParams& params, const RoPECacheTensors& at = {});

} // namespace kernels
} // namespace kp
