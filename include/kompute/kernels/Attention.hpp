// SPDX-License-Identifier: Apache-2.0
// Scaled dot-product attention of query rows against a KV cache, with
// grouped-query heads and per-row causal limits read at run time.
#pragma once

#include <cstdint>

#include "kompute/kernels/KernelOp.hpp"

namespace kp {

/** Which kernel OpAttention runs. */
enum class AttentionPath
{
    eAuto = 0,    ///< eDecode for up to 4 query rows, ePrefill above
    eDecode = 1,  ///< split over the context; the last chunk to finish merges (one dispatch)
    ePrefill = 2, ///< tiled flash-attention kernel (query tiles x KV tiles), on cooperative matrices where it can
};

/**
 * Shape, layout and options of OpAttention. It computes
 * out[r, h, :] = sum_p softmax_p(scale * q[r, h, :] . K[p, h / G, :]) V[p, h / G, :]
 * with G = heads / kvHeads (grouped-query attention).
 *
 * Layouts (elements, row-major):
 * - q and out: [rows][heads][headDim], row r at qOffset + r * qRowStride
 *   (outOffset + r * outRowStride);
 * - kCache and vCache: position-major [kvCapacity][kvHeads][headDim], the
 *   vector of position p and KV head g at kvOffset + p * kvRowStride +
 *   g * headDim, so that one token's K (or V) row of kvHeads * headDim values
 *   is one OpSetRows row;
 * - positions: uint32, one per query row: the query's own position in the
 *   cache. With `causal`, row r attends to cache positions 0..positions[r]
 *   inclusive; without, every row attends to 0..positions[rows - 1].
 *   Positions beyond kvCapacity - 1 are clamped to it.
 *
 * q: f32; caches: f16 or f32 (one type); out: f32, or f16 where the caches
 * are f16 (the output rounded once, for a product that reads f16 rows).
 * headDim: a multiple of 4, at most 256. out may be q (the same range, both
 * f32), never a cache.
 *
 * The decode path is one dispatch that keeps the chunks' partial results
 * and a counter per (row, KV head) in buffers of the operation (the counters
 * are back at 0 after each dispatch): one operation object is evaluated
 * once at a time, not in two sequences running at once (build one per
 * sequence for that). Where the cache's offset and row stride are
 * multiples of 4 elements it loads 4 values at once (8 f16 values where
 * they are multiples of 8). On devices with subgroup shuffles it runs
 * path() "decode-flash-subgroup": how many workgroups share a row's
 * context follows the length read from `positions` on the device, so a
 * short context costs one workgroup per (row, KV head) and no merge;
 * KOMPUTE_ENV_DISABLE=attention-decode-flash keeps it on the split kernel
 * ("decode-split-subgroup" / "-shared-memory"), which runs everywhere else.
 *
 * The prefill path runs the f32 SIMT kernel ("prefill-tiled") or, for f16
 * caches and headDim 64 or 128 on devices with 16x16x16 f16 x f16 -> f32
 * subgroup matrices and subgroup shuffles, the cooperative-matrix kernel
 * (flash attention on tensor cores; path() "prefill-coopmat-nv-..." or
 * "-khr-..."): q is scaled and rounded to f16 and the softmax weights are
 * rounded to f16 before they multiply V (f32 accumulation; about 1e-3 of
 * the output's range). That kernel is the default on NVIDIA devices (the
 * NV form: driver 580 crashes compiling the KHR one) for 64 rows or more;
 * elsewhere, and for fewer rows, the caller asks for it with one of its
 * variants (prefillKvTile or prefillSubgroups non-zero).
 * KOMPUTE_ENV_DISABLE=attention-coopmat (or coopmat, or coopmat-khr /
 * coopmat-nv for one form) keeps it off; an asked-for variant is ignored
 * where it cannot run.
 */
struct AttentionParams
{
    uint32_t rows = 1; ///< query tokens
    uint32_t heads = 1; ///< query heads
    uint32_t kvHeads = 1; ///< divides heads
    uint32_t headDim = 0; ///< values per head: a multiple of 4, at most 256
    uint32_t kvCapacity = 0; ///< positions the caches hold
    float scale = 0.0f;      ///< 0: 1 / sqrt(headDim)
    bool causal = true; ///< each row attends up to its own position (see above)
    uint32_t kvRowStride = 0; ///< elements between positions of a cache; 0: kvHeads * headDim
    uint64_t kvOffset = 0;    ///< of both caches
    uint32_t qRowStride = 0;  ///< 0: heads * headDim
    uint32_t outRowStride = 0; ///< 0: heads * headDim
    uint64_t qOffset = 0; ///< first element of q, in elements
    uint64_t outOffset = 0; ///< first element of out, in elements
    uint64_t positionsOffset = 0; ///< first position, in elements of positions
    AttentionPath path = AttentionPath::eAuto; ///< the kernel to run
    /** Cache positions per workgroup on the decode path: a power of two
     * from 16 to 256, or 0 to choose. "decode-flash-subgroup": the fewest
     * per active workgroup (0: 256; longer contexts spread over at most 64
     * workgroups per row and KV head); the split kernel: exactly (0: about
     * 256 workgroups, within the device's shared memory). */
    uint32_t decodeChunk = 0;
    /** Cache positions per tile of the cooperative-matrix prefill path
     * (32 or 64), or 0 to choose. The three prefill fields tune that path
     * and are ignored where it does not run; prefillKvTile or
     * prefillSubgroups non-zero asks for it where it is not the default
     * (see above; 0: 32). */
    uint32_t prefillKvTile = 0;
    /** Subgroups per workgroup of that path (1, 2, 4 or 8), each for 16
     * (query row, head) pairs of a KV head's group, or 0 to choose. */
    uint32_t prefillSubgroups = 0;
    /** Loads the next K/V tile into registers while the current one is
     * used (more registers, fewer stalls) on that path. */
    bool prefillPrefetch = false;
};

/** OpAttention({q, kCache, vCache, positions, out}, AttentionParams). */
class OpAttention : public KernelOp
{
  public:
    /** Checks the five tensors against `params` (kp::Error naming what is
     * wrong) and builds the path's pipelines, and on the decode path the
     * operation's scratch buffers. */
    OpAttention(const std::vector<std::shared_ptr<Memory>>& tensors, const AttentionParams& params);

  private:
    std::shared_ptr<Memory> mScratch;  // partial results of the decode path
    std::shared_ptr<Memory> mCounters; // chunks finished per (row, KV head); 0 between evaluations
};

} // namespace kp
