// SPDX-License-Identifier: Apache-2.0
#include "kompute/kernels/Quantization.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "internal/Environment.hpp"
#include "kernels/MatMulDevice.hpp"
#include "kompute/Manager.hpp"
#include "kompute/Errors.hpp"
#include "kompute/Half.hpp"
#include "kompute/logger/Logger.hpp"

// The decoders compute each weight in the order ggml and the `gguf` package
// do (d * sc first, then * q, then - m), each product rounded to f32 in a
// statement of its own, so that the results are bit for bit theirs: a fused
// multiply-add would round once instead of twice (C++17 without GNU
// extensions, as the library is built, leaves contraction off in GCC; Clang
// contracts only within one expression).

namespace kp {

const char*
toString(WeightFormat format)
{
    switch (format) {
        case WeightFormat::eNone: return "none";
        case WeightFormat::eQ8_0: return "q8_0";
        case WeightFormat::eQ4_0: return "q4_0";
        case WeightFormat::eQ4_1: return "q4_1";
        case WeightFormat::eQ5_0: return "q5_0";
        case WeightFormat::eQ5_1: return "q5_1";
        case WeightFormat::eQ2_K: return "q2_k";
        case WeightFormat::eQ3_K: return "q3_k";
        case WeightFormat::eQ4_K: return "q4_k";
        case WeightFormat::eQ5_K: return "q5_k";
        case WeightFormat::eQ6_K: return "q6_k";
        case WeightFormat::eIQ4_NL: return "iq4_nl";
        case WeightFormat::eIQ4_XS: return "iq4_xs";
        case WeightFormat::eQ8_0X8: return "q8_0x8";
        case WeightFormat::eQ4_0X8: return "q4_0x8";
    }
    return "unknown";
}

namespace {

// The 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl).
constexpr int8_t kIq4Values[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

void
writeHalf(uint8_t* at, float value)
{
    uint16_t bits = float16_t::fromFloat(value);
    std::memcpy(at, &bits, 2);
}

float
readHalf(const uint8_t* at)
{
    uint16_t bits;
    std::memcpy(&bits, at, 2);
    return float16_t::toFloat(bits);
}

// The value a scale takes once stored as f16.
float
asHalf(float value)
{
    return float16_t::toFloat(float16_t::fromFloat(value));
}

int
clampRound(float value, int lo, int hi)
{
    if (!(value == value)) { // NaN
        return 0;
    }
    return static_cast<int>(std::min<float>(hi, std::max<float>(lo, std::nearbyint(value))));
}

// The value of largest magnitude among x[0..n) (its sign kept).
float
extreme(const float* x, uint32_t n)
{
    float amax = 0, value = 0;
    for (uint32_t j = 0; j < n; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            value = x[j];
        }
    }
    return value;
}

// Q4_K and Q5_K: the 6-bit scale and minimum of sub-block j (ggml's
// get_scale_min_k4).
void
scaleMinK4(uint32_t j, const uint8_t* q, uint32_t& scale, uint32_t& min)
{
    if (j < 4) {
        scale = q[j] & 63u;
        min = q[j + 4] & 63u;
    } else {
        scale = (q[j + 4] & 15u) | ((q[j - 4] >> 6) << 4);
        min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

void
packScaleMinK4(const uint32_t scale[8], const uint32_t min[8], uint8_t* q)
{
    for (uint32_t j = 0; j < 4; ++j) {
        q[j] = static_cast<uint8_t>((scale[j] & 63u) | ((scale[j + 4] >> 4) << 6));
        q[j + 4] = static_cast<uint8_t>((min[j] & 63u) | ((min[j + 4] >> 4) << 6));
        q[j + 8] = static_cast<uint8_t>((scale[j + 4] & 15u) | ((min[j + 4] & 15u) << 4));
    }
}

// Asymmetric sub-blocks (Q2_K, Q4_K, Q5_K): w = (d * sc) * q - (dmin * m),
// q in 0..levels, sc and m in 0..scaleMax. Fills q[256], sc[], m[] and
// returns d and dmin (as stored).
void
quantizeAsymmetric(const float* x,
                   uint32_t subBlock,
                   int levels,
                   int scaleMax,
                   uint8_t* q,
                   uint32_t* sc,
                   uint32_t* m,
                   float& d,
                   float& dmin)
{
    const uint32_t subBlocks = 256 / subBlock;
    float scales[16], mins[16];
    float maxScale = 0, maxMin = 0;
    for (uint32_t s = 0; s < subBlocks; ++s) {
        float lo = 0, hi = 0; // the minimum is never positive (as ggml's)
        for (uint32_t j = 0; j < subBlock; ++j) {
            lo = std::min(lo, x[s * subBlock + j]);
            hi = std::max(hi, x[s * subBlock + j]);
        }
        scales[s] = (hi - lo) / levels;
        mins[s] = -lo;
        maxScale = std::max(maxScale, scales[s]);
        maxMin = std::max(maxMin, mins[s]);
    }
    d = asHalf(maxScale / scaleMax);
    dmin = asHalf(maxMin / scaleMax);
    for (uint32_t s = 0; s < subBlocks; ++s) {
        sc[s] = d > 0 ? static_cast<uint32_t>(clampRound(scales[s] / d, 0, scaleMax)) : 0;
        // Rounded up, so that the sub-block's minimum stays reachable.
        m[s] = dmin > 0 ? static_cast<uint32_t>(std::min<float>(scaleMax, std::ceil(mins[s] / dmin))) : 0;
        float dl = d * static_cast<float>(sc[s]);
        float ml = dmin * static_cast<float>(m[s]);
        for (uint32_t j = 0; j < subBlock; ++j) {
            float v = x[s * subBlock + j];
            q[s * subBlock + j] = dl > 0 ? static_cast<uint8_t>(clampRound((v + ml) / dl, 0, levels)) : 0;
        }
    }
}

// Symmetric sub-blocks (Q3_K, Q6_K): w = (d * sc) * q, q in qMin..qMax
// (qMin < 0), sc signed in scMin..scMax. Fills q (offset by -qMin), sc
// (offset by -scMin), returns d as stored.
float
quantizeSymmetric(const float* x, uint32_t subBlock, int qMin, int qMax, int scMin, int scMax, uint8_t* q, int* sc)
{
    const uint32_t subBlocks = 256 / subBlock;
    float scales[16];
    for (uint32_t s = 0; s < subBlocks; ++s) {
        scales[s] = extreme(x + s * subBlock, subBlock) / static_cast<float>(qMin);
    }
    float d = asHalf(extreme(scales, subBlocks) / static_cast<float>(scMin));
    for (uint32_t s = 0; s < subBlocks; ++s) {
        sc[s] = d != 0 ? clampRound(scales[s] / d, scMin, scMax) : 0;
        float dl = d * static_cast<float>(sc[s]);
        for (uint32_t j = 0; j < subBlock; ++j) {
            int level = dl != 0 ? clampRound(x[s * subBlock + j] / dl, qMin, qMax) : 0;
            q[s * subBlock + j] = static_cast<uint8_t>(level - qMin);
        }
    }
    return d;
}

// The IQ4 level nearest to x / d.
uint8_t
nearestIq4(float x, float d)
{
    if (d == 0) {
        return 8; // the level nearest 0
    }
    float v = x / d;
    uint8_t best = 0;
    for (uint8_t i = 1; i < 16; ++i) {
        if (std::fabs(kIq4Values[i] - v) < std::fabs(kIq4Values[best] - v)) {
            best = i;
        }
    }
    return best;
}

// ggml's reference quantizers of the 32-weight formats.
void
quantizeSmall(WeightFormat format, const float* x, uint8_t* block)
{
    switch (format) {
        case WeightFormat::eQ8_0: {
            float amax = 0;
            for (uint32_t j = 0; j < 32; ++j) {
                amax = std::max(amax, std::fabs(x[j]));
            }
            float d = amax / 127.0f;
            float inverse = d != 0 ? 1.0f / d : 0.0f;
            writeHalf(block, d);
            for (uint32_t j = 0; j < 32; ++j) {
                block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(x[j] * inverse)));
            }
            return;
        }
        case WeightFormat::eQ4_0:
        case WeightFormat::eQ5_0: {
            bool five = format == WeightFormat::eQ5_0;
            float d = extreme(x, 32) / (five ? -16.0f : -8.0f);
            float inverse = d != 0 ? 1.0f / d : 0.0f;
            writeHalf(block, d);
            uint8_t* qs = block + (five ? 6 : 2);
            uint32_t qh = 0;
            int top = five ? 31 : 15;
            float bias = five ? 16.5f : 8.5f;
            for (uint32_t j = 0; j < 16; ++j) {
                int q0 = std::min(top, static_cast<int>(x[j] * inverse + bias));
                int q1 = std::min(top, static_cast<int>(x[j + 16] * inverse + bias));
                qs[j] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
                qh |= (uint32_t(q0 >> 4) << j) | (uint32_t(q1 >> 4) << (j + 16));
            }
            if (five) {
                std::memcpy(block + 2, &qh, 4);
            }
            return;
        }
        case WeightFormat::eQ4_1:
        case WeightFormat::eQ5_1: {
            bool five = format == WeightFormat::eQ5_1;
            float lo = x[0], hi = x[0];
            for (uint32_t j = 1; j < 32; ++j) {
                lo = std::min(lo, x[j]);
                hi = std::max(hi, x[j]);
            }
            int top = five ? 31 : 15;
            float d = (hi - lo) / static_cast<float>(top);
            float inverse = d != 0 ? 1.0f / d : 0.0f;
            writeHalf(block, d);
            writeHalf(block + 2, lo);
            uint8_t* qs = block + (five ? 8 : 4);
            uint32_t qh = 0;
            for (uint32_t j = 0; j < 16; ++j) {
                int q0 = std::min(top, static_cast<int>((x[j] - lo) * inverse + 0.5f));
                int q1 = std::min(top, static_cast<int>((x[j + 16] - lo) * inverse + 0.5f));
                qs[j] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
                qh |= (uint32_t(q0 >> 4) << j) | (uint32_t(q1 >> 4) << (j + 16));
            }
            if (five) {
                std::memcpy(block + 4, &qh, 4);
            }
            return;
        }
        case WeightFormat::eIQ4_NL: {
            float d = asHalf(extreme(x, 32) / static_cast<float>(kIq4Values[0]));
            writeHalf(block, d);
            for (uint32_t j = 0; j < 16; ++j) {
                block[2 + j] = static_cast<uint8_t>(nearestIq4(x[j], d) | (nearestIq4(x[j + 16], d) << 4));
            }
            return;
        }
        default: return;
    }
}

// Our quantizers of the 256-weight formats (see Quantization.hpp).
void
quantizeSuper(WeightFormat format, const float* x, uint8_t* block)
{
    uint8_t q[256];
    switch (format) {
        case WeightFormat::eQ2_K: {
            uint32_t sc[16], m[16];
            float d, dmin;
            quantizeAsymmetric(x, 16, 3, 15, q, sc, m, d, dmin);
            for (uint32_t i = 0; i < 16; ++i) {
                block[i] = static_cast<uint8_t>(sc[i] | (m[i] << 4));
            }
            for (uint32_t e = 0; e < 256; ++e) {
                uint32_t n = e >> 7, j = (e >> 5) & 3u, l = e & 31u;
                block[16 + 32 * n + l] |= static_cast<uint8_t>(q[e] << (2 * j));
            }
            writeHalf(block + 80, d);
            writeHalf(block + 82, dmin);
            return;
        }
        case WeightFormat::eQ3_K: {
            int sc[16];
            float d = quantizeSymmetric(x, 16, -4, 3, -32, 31, q, sc);
            for (uint32_t e = 0; e < 256; ++e) {
                uint32_t n = e >> 7, j = (e >> 5) & 3u, l = e & 31u;
                block[32 + 32 * n + l] |= static_cast<uint8_t>((q[e] & 3u) << (2 * j));
                block[l] |= static_cast<uint8_t>((q[e] >> 2) << (n * 4 + j));
            }
            uint8_t* scales = block + 96;
            for (uint32_t i = 0; i < 16; ++i) {
                uint32_t u = static_cast<uint32_t>(sc[i] + 32);
                scales[i < 8 ? i : i - 8] |= static_cast<uint8_t>((u & 15u) << (i < 8 ? 0 : 4));
                scales[8 + i % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (i / 4)));
            }
            writeHalf(block + 108, d);
            return;
        }
        case WeightFormat::eQ4_K:
        case WeightFormat::eQ5_K: {
            bool five = format == WeightFormat::eQ5_K;
            uint32_t sc[8], m[8];
            float d, dmin;
            quantizeAsymmetric(x, 32, five ? 31 : 15, 63, q, sc, m, d, dmin);
            writeHalf(block, d);
            writeHalf(block + 2, dmin);
            packScaleMinK4(sc, m, block + 4);
            uint8_t* qs = block + (five ? 48 : 16);
            for (uint32_t s = 0; s < 8; ++s) {
                for (uint32_t l = 0; l < 32; ++l) {
                    uint8_t v = q[s * 32 + l];
                    qs[(s >> 1) * 32 + l] |= static_cast<uint8_t>((v & 15u) << ((s & 1u) * 4));
                    if (five) {
                        block[16 + l] |= static_cast<uint8_t>((v >> 4) << s);
                    }
                }
            }
            return;
        }
        case WeightFormat::eQ6_K: {
            int sc[16];
            float d = quantizeSymmetric(x, 16, -32, 31, -128, 127, q, sc);
            for (uint32_t e = 0; e < 256; ++e) {
                uint32_t n = e >> 7, g = (e >> 5) & 3u, l = e & 31u;
                block[64 * n + (g & 1u) * 32 + l] |= static_cast<uint8_t>((q[e] & 15u) << ((g >> 1) * 4));
                block[128 + 32 * n + l] |= static_cast<uint8_t>((q[e] >> 4) << (2 * g));
            }
            for (uint32_t i = 0; i < 16; ++i) {
                block[192 + i] = static_cast<uint8_t>(static_cast<int8_t>(sc[i]));
            }
            writeHalf(block + 208, d);
            return;
        }
        case WeightFormat::eIQ4_XS: {
            float scales[8];
            for (uint32_t s = 0; s < 8; ++s) {
                scales[s] = extreme(x + 32 * s, 32) / static_cast<float>(kIq4Values[0]);
            }
            float d = asHalf(extreme(scales, 8) / -32.0f);
            writeHalf(block, d);
            uint32_t scalesHigh = 0;
            for (uint32_t s = 0; s < 8; ++s) {
                int ls = d != 0 ? clampRound(scales[s] / d, -32, 31) : 0;
                uint32_t u = static_cast<uint32_t>(ls + 32);
                block[4 + s / 2] |= static_cast<uint8_t>((u & 15u) << (4 * (s % 2)));
                scalesHigh |= (u >> 4) << (2 * s);
                float dl = d * static_cast<float>(ls);
                for (uint32_t j = 0; j < 16; ++j) {
                    block[8 + 16 * s + j] = static_cast<uint8_t>(nearestIq4(x[32 * s + j], dl) |
                                                                 (nearestIq4(x[32 * s + j + 16], dl) << 4));
                }
            }
            uint16_t high = static_cast<uint16_t>(scalesHigh);
            std::memcpy(block + 2, &high, 2);
            return;
        }
        default: return;
    }
}

void
dequantizeBlock(WeightFormat format, const uint8_t* b, float* y)
{
    switch (format) {
        case WeightFormat::eQ8_0: {
            float d = readHalf(b);
            for (uint32_t j = 0; j < 32; ++j) {
                y[j] = d * static_cast<float>(static_cast<int8_t>(b[2 + j]));
            }
            return;
        }
        case WeightFormat::eQ4_0:
        case WeightFormat::eIQ4_NL: {
            float d = readHalf(b);
            for (uint32_t j = 0; j < 32; ++j) {
                uint32_t q = (b[2 + j % 16] >> (j < 16 ? 0 : 4)) & 15u;
                float level = format == WeightFormat::eQ4_0 ? static_cast<float>(int(q) - 8)
                                                             : static_cast<float>(kIq4Values[q]);
                y[j] = d * level;
            }
            return;
        }
        case WeightFormat::eQ4_1: {
            float d = readHalf(b), m = readHalf(b + 2);
            for (uint32_t j = 0; j < 32; ++j) {
                uint32_t q = (b[4 + j % 16] >> (j < 16 ? 0 : 4)) & 15u;
                float scaled = d * static_cast<float>(q);
                y[j] = scaled + m;
            }
            return;
        }
        case WeightFormat::eQ5_0:
        case WeightFormat::eQ5_1: {
            bool one = format == WeightFormat::eQ5_1;
            float d = readHalf(b), m = one ? readHalf(b + 2) : 0.0f;
            uint32_t qh;
            std::memcpy(&qh, b + (one ? 4 : 2), 4);
            const uint8_t* qs = b + (one ? 8 : 6);
            for (uint32_t j = 0; j < 32; ++j) {
                uint32_t q = ((qs[j % 16] >> (j < 16 ? 0 : 4)) & 15u) | (((qh >> j) & 1u) << 4);
                if (one) {
                    float scaled = d * static_cast<float>(q);
                    y[j] = scaled + m;
                } else {
                    y[j] = d * static_cast<float>(int(q) - 16);
                }
            }
            return;
        }
        case WeightFormat::eQ2_K: {
            float d = readHalf(b + 80), dmin = readHalf(b + 82);
            for (uint32_t e = 0; e < 256; ++e) {
                uint32_t n = e >> 7, j = (e >> 5) & 3u, l = e & 31u;
                uint8_t sc = b[e >> 4];
                float dl = d * static_cast<float>(sc & 15u);
                float ml = dmin * static_cast<float>(sc >> 4);
                float q = static_cast<float>((b[16 + 32 * n + l] >> (2 * j)) & 3u);
                float scaled = dl * q;
                y[e] = scaled - ml;
            }
            return;
        }
        case WeightFormat::eQ3_K: {
            float d = readHalf(b + 108);
            const uint8_t* scales = b + 96;
            for (uint32_t e = 0; e < 256; ++e) {
                uint32_t n = e >> 7, j = (e >> 5) & 3u, l = e & 31u, i = e >> 4;
                uint32_t low = (i < 8 ? scales[i] : scales[i - 8] >> 4) & 15u;
                uint32_t high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3u;
                float dl = d * static_cast<float>(int(low | (high << 4)) - 32);
                int q = int((b[32 + 32 * n + l] >> (2 * j)) & 3u) - (((b[l] >> (n * 4 + j)) & 1u) ? 0 : 4);
                y[e] = dl * static_cast<float>(q);
            }
            return;
        }
        case WeightFormat::eQ4_K:
        case WeightFormat::eQ5_K: {
            bool five = format == WeightFormat::eQ5_K;
            float d = readHalf(b), dmin = readHalf(b + 2);
            const uint8_t* qs = b + (five ? 48 : 16);
            for (uint32_t s = 0; s < 8; ++s) {
                uint32_t sc, m;
                scaleMinK4(s, b + 4, sc, m);
                float dl = d * static_cast<float>(sc);
                float ml = dmin * static_cast<float>(m);
                for (uint32_t l = 0; l < 32; ++l) {
                    uint32_t q = (qs[(s >> 1) * 32 + l] >> ((s & 1u) * 4)) & 15u;
                    if (five) {
                        q |= ((b[16 + l] >> s) & 1u) << 4;
                    }
                    float scaled = dl * static_cast<float>(q);
                    y[s * 32 + l] = scaled - ml;
                }
            }
            return;
        }
        case WeightFormat::eQ6_K: {
            float d = readHalf(b + 208);
            for (uint32_t e = 0; e < 256; ++e) {
                uint32_t n = e >> 7, g = (e >> 5) & 3u, l = e & 31u;
                uint32_t low = (b[64 * n + (g & 1u) * 32 + l] >> ((g >> 1) * 4)) & 15u;
                uint32_t high = (b[128 + 32 * n + l] >> (2 * g)) & 3u;
                float dl = d * static_cast<float>(static_cast<int8_t>(b[192 + (e >> 4)]));
                y[e] = dl * static_cast<float>(int(low | (high << 4)) - 32);
            }
            return;
        }
        case WeightFormat::eIQ4_XS: {
            float d = readHalf(b);
            uint16_t scalesHigh;
            std::memcpy(&scalesHigh, b + 2, 2);
            for (uint32_t s = 0; s < 8; ++s) {
                uint32_t ls = ((b[4 + s / 2] >> (4 * (s % 2))) & 15u) | (((scalesHigh >> (2 * s)) & 3u) << 4);
                float dl = d * static_cast<float>(int(ls) - 32);
                for (uint32_t j = 0; j < 32; ++j) {
                    uint32_t q = (b[8 + 16 * s + j % 16] >> (j < 16 ? 0 : 4)) & 15u;
                    y[32 * s + j] = dl * static_cast<float>(kIq4Values[q]);
                }
            }
            return;
        }
        case WeightFormat::eQ8_0X8:
        case WeightFormat::eQ4_0X8: {
            // Each block as its base format's bytes, then decoded as that.
            bool q8 = format == WeightFormat::eQ8_0X8;
            uint32_t quantBytes = q8 ? 32 : 16;
            for (uint32_t i = 0; i < 8; ++i) {
                uint8_t block[34];
                std::memcpy(block, b + 2 * i, 2);
                std::memcpy(block + 2, b + 16 + i * quantBytes, quantBytes);
                dequantizeBlock(q8 ? WeightFormat::eQ8_0 : WeightFormat::eQ4_0, block, y + 32 * i);
            }
            return;
        }
        case WeightFormat::eNone: return;
    }
}

// The base format of a grouped one (eQ8_0X8 -> eQ8_0), or eNone.
WeightFormat
baseFormat(WeightFormat grouped)
{
    return grouped == WeightFormat::eQ8_0X8 ? WeightFormat::eQ8_0
           : grouped == WeightFormat::eQ4_0X8 ? WeightFormat::eQ4_0
                                             : WeightFormat::eNone;
}

} // namespace

std::vector<uint8_t>
quantize(WeightFormat format, const float* values, size_t count)
{
    uint32_t weights = blockWeights(format);
    if (weights == 0) {
        throw Error("kp::quantize needs a block format (eQ8_0, eQ4_K, ...), not eNone");
    }
    if (count % weights != 0) {
        throw Error(logger::format("kp::quantize: {} values are not whole blocks of {} weights ({})",
                                   count,
                                   weights,
                                   toString(format)));
    }
    if (baseFormat(format) != WeightFormat::eNone) {
        std::vector<uint8_t> base = quantize(baseFormat(format), values, count);
        return groupBlocks(baseFormat(format), base.data(), base.size());
    }
    size_t blocks = count / weights;
    std::vector<uint8_t> out(blocks * blockBytes(format), 0);
    for (size_t b = 0; b < blocks; ++b) {
        const float* x = values + b * weights;
        uint8_t* block = out.data() + b * blockBytes(format);
        if (weights == 256) {
            quantizeSuper(format, x, block);
        } else {
            quantizeSmall(format, x, block);
        }
    }
    return out;
}

std::vector<float>
dequantize(WeightFormat format, const uint8_t* data, size_t blocks)
{
    uint32_t weights = blockWeights(format);
    if (weights == 0) {
        throw Error("kp::dequantize needs a block format (eQ8_0, eQ4_K, ...), not eNone");
    }
    std::vector<float> out(blocks * weights);
    for (size_t b = 0; b < blocks; ++b) {
        dequantizeBlock(format, data + b * blockBytes(format), out.data() + b * weights);
    }
    return out;
}

std::vector<uint8_t>
groupBlocks(WeightFormat format, const uint8_t* data, size_t bytes)
{
    WeightFormat grouped = groupedFormat(format);
    if (grouped == WeightFormat::eNone) {
        throw Error(logger::format("kp::groupBlocks groups Q8_0 or Q4_0 blocks, not {}", toString(format)));
    }
    uint32_t block = blockBytes(format);
    if (bytes % (8 * block) != 0) {
        throw Error(logger::format("kp::groupBlocks: {} bytes are not whole groups of 8 {} blocks ({} bytes each)",
                                   bytes,
                                   toString(format),
                                   8 * block));
    }
    uint32_t quantBytes = block - 2;
    std::vector<uint8_t> out(bytes);
    for (size_t g = 0; g < bytes / (8 * block); ++g) {
        const uint8_t* in = data + g * 8 * block;
        uint8_t* group = out.data() + g * 8 * block;
        for (uint32_t i = 0; i < 8; ++i) {
            std::memcpy(group + 2 * i, in + i * block, 2);
            std::memcpy(group + 16 + i * quantBytes, in + i * block + 2, quantBytes);
        }
    }
    return out;
}

namespace {

// Whether preferredWeightFormat groups `format` (Q8_0 or Q4_0): Q4_0 only,
// or the formats KOMPUTE_ENV_GROUPED_BLOCKS names (a tuning knob, so that
// kompute-llm can measure grouped Q8_0 end to end; a name that is not q8_0
// or q4_0 is reported and the default kept).
bool
groupsFormat(WeightFormat format)
{
    const char* text = std::getenv("KOMPUTE_ENV_GROUPED_BLOCKS");
    if (!text) {
        return format == WeightFormat::eQ4_0;
    }
    bool q8 = false, q4 = false;
    for (const auto& name : internal::splitList(text)) {
        if (name == "q8_0") {
            q8 = true;
        } else if (name == "q4_0") {
            q4 = true;
        } else {
            KP_LOG_WARN("KOMPUTE_ENV_GROUPED_BLOCKS={} is ignored: '{}' is not q8_0 or q4_0", text, name);
            return format == WeightFormat::eQ4_0;
        }
    }
    return format == WeightFormat::eQ8_0 ? q8 : format == WeightFormat::eQ4_0 && q4;
}

} // namespace

WeightFormat
preferredWeightFormat(const Manager& manager, WeightFormat format, uint32_t rowLength)
{
    // Q4_0 only: grouped, the decode mat-vec takes it interleaved (H200,
    // Llama-8B tg128 346.1 against 339.1 t/s) and the prefill GEMM as fast
    // (pp512 10,899 against 10,876). Grouped Q8_0 measured +1.4% in decode
    // and -5% in prefill (pp512 9,714 against 10,224): it stays as stored
    // (docs/matmul-tuning.md) unless KOMPUTE_ENV_GROUPED_BLOCKS names it.
    WeightFormat grouped = groupsFormat(format) ? groupedFormat(format) : WeightFormat::eNone;
    if (grouped == WeightFormat::eNone || rowLength % 256 != 0) {
        return format;
    }
    // Where OpMatMul's mat-vec takes the int-dot build's quantized-x mode,
    // judged by the same device view and KOMPUTE_ENV_DISABLE names.
    const DeviceCapabilities table = manager.capabilities();
    const vk::PhysicalDeviceProperties properties = manager.getDeviceProperties();
    kernels::DeviceCaps caps = kernels::deviceCaps(table, properties.limits);
    kernels::matmul::DeviceView view = kernels::matmul::matMulDevice(table, properties, caps);
    if (!kernels::matmul::matVecIntDot(view, caps) || caps.isDisabled("matvec-qx") || caps.isDisabled("grouped-blocks")) {
        return format;
    }
    return grouped;
}

} // namespace kp
