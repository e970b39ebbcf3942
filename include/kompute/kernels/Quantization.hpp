// SPDX-License-Identifier: Apache-2.0
// GGUF block formats of quantized weights (kp::WeightFormat), and their
// host-side encoding and decoding, for tests, benchmarks and programs that
// make their own weights (the kernels read the blocks on the device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kompute/kernels/KernelOp.hpp"

namespace kp {
class Manager;
}

namespace kp {

/** Weights per block of the 32-weight formats (Q8_0, Q4_0, Q4_1, Q5_0,
 * Q5_1, IQ4_NL); the K-quants and IQ4_XS have super-blocks of 256 (see
 * blockWeights). The byte layouts are GGUF's (ggml's block_q4_0 etc.), all
 * little-endian:
 *   Q8_0  { f16 d; int8 qs[32]; }                        w_j = d * qs[j]
 *   Q4_0  { f16 d; uint8 qs[16]; }                       w_j = d * (q_j - 8)
 *   Q4_1  { f16 d, m; uint8 qs[16]; }                    w_j = d * q_j + m
 *   Q5_0  { f16 d; uint8 qh[4]; uint8 qs[16]; }          w_j = d * (q_j - 16)
 *   Q5_1  { f16 d, m; uint8 qh[4]; uint8 qs[16]; }       w_j = d * q_j + m
 *   IQ4_NL { f16 d; uint8 qs[16]; }                      w_j = d * kvalues[q_j]
 * where the 4-bit q_j of weights 0..15 are the low nibbles of qs[0..15] and
 * those of 16..31 the high ones, and the 5th bit of q_j is bit j of qh.
 * The 256-weight super-blocks:
 *   Q2_K { uint8 scales[16]; uint8 qs[64]; f16 d, dmin; }  16 x 16 weights
 *   Q3_K { uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; f16 d; }
 *   Q4_K { f16 d, dmin; uint8 scales[12]; uint8 qs[128]; }  8 x 32 weights
 *   Q5_K { f16 d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; }
 *   Q6_K { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d; }
 *   IQ4_XS { f16 d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]; }
 * and ours, 8 Q8_0 or Q4_0 blocks grouped with their scales first, so that
 * every block's quants are 16-byte aligned and a row's quants lie side by
 * side in 16-byte chunks (the mat-vec loads them coalesced; groupBlocks):
 *   Q8_0X8 { f16 d[8]; int8 qs[8][32]; }                 block b: d[b], qs[b]
 *   Q4_0X8 { f16 d[8]; uint8 qs[8][16]; } */
constexpr uint32_t kWeightsPerBlock = 32;

/** Weights per block of `format`: 32, or 256 for the K-quants and IQ4_XS (0
 * for eNone). Rows of a quantized tensor are whole blocks. */
constexpr uint32_t
blockWeights(WeightFormat format)
{
    switch (format) {
        case WeightFormat::eNone: return 0;
        case WeightFormat::eQ2_K:
        case WeightFormat::eQ3_K:
        case WeightFormat::eQ4_K:
        case WeightFormat::eQ5_K:
        case WeightFormat::eQ6_K:
        case WeightFormat::eIQ4_XS:
        case WeightFormat::eQ8_0X8:
        case WeightFormat::eQ4_0X8: return 256;
        default: return kWeightsPerBlock;
    }
}

/** Bytes per block of `format`: 34 (Q8_0), 18 (Q4_0), 20 (Q4_1), 22
 * (Q5_0), 24 (Q5_1), 84 (Q2_K), 110 (Q3_K), 144 (Q4_K), 176 (Q5_K), 210
 * (Q6_K), 18 (IQ4_NL), 136 (IQ4_XS), 272 (Q8_0X8), 144 (Q4_0X8); 0
 * (eNone). */
constexpr uint32_t
blockBytes(WeightFormat format)
{
    switch (format) {
        case WeightFormat::eNone: return 0;
        case WeightFormat::eQ8_0: return 34;
        case WeightFormat::eQ4_0: return 18;
        case WeightFormat::eQ4_1: return 20;
        case WeightFormat::eQ5_0: return 22;
        case WeightFormat::eQ5_1: return 24;
        case WeightFormat::eQ2_K: return 84;
        case WeightFormat::eQ3_K: return 110;
        case WeightFormat::eQ4_K: return 144;
        case WeightFormat::eQ5_K: return 176;
        case WeightFormat::eQ6_K: return 210;
        case WeightFormat::eIQ4_NL: return 18;
        case WeightFormat::eIQ4_XS: return 136;
        case WeightFormat::eQ8_0X8: return 272;
        case WeightFormat::eQ4_0X8: return 144;
    }
    return 0;
}

/** "none", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k",
 * "q5_k", "q6_k", "iq4_nl", "iq4_xs", "q8_0x8", "q4_0x8". */
const char* toString(WeightFormat format);

/** Encodes `count` floats (a multiple of blockWeights(format)) as GGUF
 * blocks. Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 round as ggml's reference
 * quantizer does (Q8_0: d = max|x| / 127, q = round(x / d); Q4_0: d =
 * x_at_max|x| / -8, q = min(15, trunc(x / d + 8.5)); Q4_1: d = (max - min) /
 * 15, m = min, q = min(15, trunc((x - m) / d + 0.5)); Q5_0 and Q5_1 the same
 * with 16 and 31). The other formats take a simple quantizer of ours: per
 * sub-block, the scale (and minimum) that spans its values, rounded to the
 * format's scale bits, then the nearest level of each weight; its error is
 * within about one level of the sub-block (ggml's search for better scales
 * is not done). Q8_0X8 and Q4_0X8 round as Q8_0 and Q4_0. */
std::vector<uint8_t> quantize(WeightFormat format, const float* values, size_t count);
/** Decodes `blocks` whole blocks into blockWeights(format) floats each,
 * exactly as ggml (and the `gguf` Python package) does. */
std::vector<float> dequantize(WeightFormat format, const uint8_t* data, size_t blocks);

/** The grouped form of GGUF Q8_0 or Q4_0 data (`bytes` of whole blocks, a
 * multiple of 8 of them): eQ8_0X8 or eQ4_0X8 blocks holding the same
 * weights in the same order. A tensor of rows of whole groups (multiples
 * of 256 weights) keeps its shape; OpMatMul's mat-vec reads it with
 * coalesced loads. Anything else throws kp::Error. */
std::vector<uint8_t> groupBlocks(WeightFormat format, const uint8_t* data, size_t bytes);
/** The format in which the kernel library reads weights of `format`, rows
 * of `rowLength` weights, fastest on `manager`'s device: eQ4_0X8 for Q4_0
 * rows of whole groups (multiples of 256 weights) where OpMatMul's mat-vec
 * takes integer dot products (the interleaved loop that grouping is for;
 * the float mat-vec reads grouped Q4_0 slower), else `format` itself
 * (grouped Q8_0 was slower in prefill than it gained in decode;
 * KOMPUTE_ENV_GROUPED_BLOCKS, e.g. "q8_0,q4_0", names the formats grouped
 * instead, for tuning). KOMPUTE_ENV_DISABLE (read at each call) with
 * grouped-blocks keeps
 * `format`, and so do int-dot and matvec-qx; matvec-float counts integer
 * dot products the device has but does not accelerate, as OpMatMul does.
 * A program that loads GGUF weights asks this, and stores them with
 * groupBlocks where it answers a grouped format. */
WeightFormat preferredWeightFormat(const Manager& manager, WeightFormat format, uint32_t rowLength);
/** The format groupBlocks makes of `format` (eQ8_0 -> eQ8_0X8, eQ4_0 ->
 * eQ4_0X8), or eNone where it makes none. */
constexpr WeightFormat
groupedFormat(WeightFormat format)
{
    return format == WeightFormat::eQ8_0 ? WeightFormat::eQ8_0X8
           : format == WeightFormat::eQ4_0 ? WeightFormat::eQ4_0X8
                                           : WeightFormat::eNone;
}

} // namespace kp
