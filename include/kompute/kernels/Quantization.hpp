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

/** Weights per block (32), and bytes per block (34, 18; 0 for eNone).
 * Q8_0 = { f16 d; int8 qs[32]; }: weight j = qs[j] * d; Q4_0 = { f16 d;
 * uint8 qs[16]; }: weight j = (nibble - 8) * d, weights 0..15 in the low
 * nibbles of qs[0..15], 16..31 in the high ones (as ggml writes them). */
constexpr uint32_t kWeightsPerBlock = 32;
/** Bytes per block of `format`: 34 (Q8_0), 18 (Q4_0), 0 (eNone). */
constexpr uint32_t
blockBytes(WeightFormat format)
{
    return format == WeightFormat::eQ8_0 ? 34u : format == WeightFormat::eQ4_0 ? 18u : 0u;
}

/** "none", "q8_0", "q4_0". */
const char* toString(WeightFormat format);

/** Encodes `count` floats (a multiple of 32) as GGUF blocks, rounding as
 * ggml's reference quantizer does (Q8_0: d = max|x| / 127, q = round(x / d);
 * Q4_0: d = x_at_max|x| / -8, q = min(15, trunc(x / d + 8.5))). */
std::vector<uint8_t> quantize(WeightFormat format, const float* values, size_t count);
/** Decodes `blocks` whole blocks into 32 floats each. */
std::vector<float> dequantize(WeightFormat format, const uint8_t* data, size_t blocks);

} // namespace kp
