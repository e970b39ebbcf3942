// SPDX-License-Identifier: Apache-2.0
#include "kompute/kernels/Quantization.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kompute/Errors.hpp"
#include "kompute/Half.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

const char*
toString(WeightFormat format)
{
    switch (format) {
        case WeightFormat::eNone: return "none";
        case WeightFormat::eQ8_0: return "q8_0";
        case WeightFormat::eQ4_0: return "q4_0";
    }
    return "unknown";
}

namespace {

void
writeScale(uint8_t* block, float d)
{
    uint16_t bits = float16_t::fromFloat(d);
    std::memcpy(block, &bits, 2);
}

float
readScale(const uint8_t* block)
{
    uint16_t bits;
    std::memcpy(&bits, block, 2);
    return float16_t::toFloat(bits);
}

} // namespace

std::vector<uint8_t>
quantize(WeightFormat format, const float* values, size_t count)
{
    if (format == WeightFormat::eNone) {
        throw Error("kp::quantize needs a block format (eQ8_0 or eQ4_0), not eNone");
    }
    if (count % kWeightsPerBlock != 0) {
        throw Error(logger::format("kp::quantize: {} values are not whole blocks of {} weights",
                                   count,
                                   kWeightsPerBlock));
    }
    size_t blocks = count / kWeightsPerBlock;
    std::vector<uint8_t> out(blocks * blockBytes(format));
    for (size_t b = 0; b < blocks; ++b) {
        const float* x = values + b * kWeightsPerBlock;
        uint8_t* block = out.data() + b * blockBytes(format);
        if (format == WeightFormat::eQ8_0) {
            float amax = 0;
            for (uint32_t j = 0; j < kWeightsPerBlock; ++j) {
                amax = std::max(amax, std::fabs(x[j]));
            }
            float d = amax / 127.0f;
            float inverse = d != 0 ? 1.0f / d : 0.0f;
            writeScale(block, d);
            for (uint32_t j = 0; j < kWeightsPerBlock; ++j) {
                block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(x[j] * inverse)));
            }
        } else {
            float amax = 0;
            float extreme = 0;
            for (uint32_t j = 0; j < kWeightsPerBlock; ++j) {
                if (std::fabs(x[j]) > amax) {
                    amax = std::fabs(x[j]);
                    extreme = x[j];
                }
            }
            float d = extreme / -8.0f;
            float inverse = d != 0 ? 1.0f / d : 0.0f;
            writeScale(block, d);
            for (uint32_t j = 0; j < kWeightsPerBlock / 2; ++j) {
                auto nibble = [&](float v) {
                    return static_cast<uint8_t>(std::min(15, static_cast<int>(v * inverse + 8.5f)));
                };
                block[2 + j] = static_cast<uint8_t>(nibble(x[j]) | (nibble(x[j + 16]) << 4));
            }
        }
    }
    return out;
}

std::vector<float>
dequantize(WeightFormat format, const uint8_t* data, size_t blocks)
{
    if (format == WeightFormat::eNone) {
        throw Error("kp::dequantize needs a block format (eQ8_0 or eQ4_0), not eNone");
    }
    std::vector<float> out(blocks * kWeightsPerBlock);
    for (size_t b = 0; b < blocks; ++b) {
        const uint8_t* block = data + b * blockBytes(format);
        float d = readScale(block);
        float* y = out.data() + b * kWeightsPerBlock;
        for (uint32_t j = 0; j < kWeightsPerBlock; ++j) {
            if (format == WeightFormat::eQ8_0) {
                y[j] = d * static_cast<float>(static_cast<int8_t>(block[2 + j]));
            } else {
                uint8_t byte = block[2 + j % 16];
                int q = j < 16 ? (byte & 15) : (byte >> 4);
                y[j] = d * static_cast<float>(q - 8);
            }
        }
    }
    return out;
}

} // namespace kp
