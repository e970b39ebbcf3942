// SPDX-License-Identifier: Apache-2.0
#include "RandomWeights.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "kompute/Half.hpp"
#include "kompute/kernels/Quantization.hpp"

#include "WeightFormats.hpp"

namespace kp {
namespace llm {

namespace {

// --- Random weights ----------------------------------------------------------------------

uint64_t
splitMix(uint64_t& state)
{
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/** Uniform in [-1, 1). */
float
unit(uint64_t& state)
{
    return static_cast<float>(static_cast<int64_t>(splitMix(state) >> 11) * (1.0 / 4503599627370496.0) - 1.0);
}

/**
 * Fills `out` with `elements` weights of `type`, uniform in [-scale, scale],
 * on several threads (an 8B model has 8e9 of them). Blocks are filled
 * independently from (seed, block), so the result does not depend on the
 * number of threads.
 */
void
fillRandom(uint8_t* out, TensorType type, uint64_t elements, float scale, uint64_t seed)
{
    TensorTypeLayout layout = layoutOf(type);
    const uint64_t blocks = elements / layout.blockSize;
    // Chunks of 4096 blocks, each seeded on its own.
    const uint64_t chunkBlocks = 4096;
    const uint64_t chunks = (blocks + chunkBlocks - 1) / chunkBlocks;
    auto fillChunk = [&](uint64_t chunk) {
        uint64_t state = seed * 0x100000001B3ull + chunk;
        uint64_t first = chunk * chunkBlocks;
        uint64_t last = std::min(blocks, first + chunkBlocks);
        kp::WeightFormat format = weightFormatOf(type);
        if (format != kp::WeightFormat::eNone && type != TensorType::eQ8_0 && type != TensorType::eQ4_0) {
            // The other block types: uniform values, quantized by the kernel
            // library's quantizer.
            std::vector<float> values((last - first) * layout.blockSize);
            for (float& v : values) {
                v = scale * unit(state);
            }
            std::vector<uint8_t> encoded = kp::quantize(format, values.data(), values.size());
            std::memcpy(out + first * layout.blockBytes, encoded.data(), encoded.size());
            return;
        }
        for (uint64_t b = first; b < last; ++b) {
            uint8_t* block = out + b * layout.blockBytes;
            switch (type) {
                case TensorType::eF32: {
                    float v = scale * unit(state);
                    std::memcpy(block, &v, 4);
                    break;
                }
                case TensorType::eF16: {
                    uint16_t bits = kp::float16_t::fromFloat(scale * unit(state));
                    std::memcpy(block, &bits, 2);
                    break;
                }
                case TensorType::eBF16: {
                    float v = scale * unit(state);
                    uint32_t wide;
                    std::memcpy(&wide, &v, 4);
                    uint16_t bits = static_cast<uint16_t>(wide >> 16);
                    std::memcpy(block, &bits, 2);
                    break;
                }
                case TensorType::eQ8_0: {
                    uint16_t d = kp::float16_t::fromFloat(scale / 127.0f);
                    std::memcpy(block, &d, 2);
                    for (int i = 0; i < 32; i += 8) {
                        uint64_t r = splitMix(state);
                        for (int k = 0; k < 8; ++k) {
                            int q = static_cast<int>((r >> (8 * k)) & 0xFF) % 255 - 127;
                            block[2 + i + k] = static_cast<uint8_t>(static_cast<int8_t>(q));
                        }
                    }
                    break;
                }
                case TensorType::eQ4_0: {
                    uint16_t d = kp::float16_t::fromFloat(scale / 8.0f);
                    std::memcpy(block, &d, 2);
                    uint64_t r0 = splitMix(state), r1 = splitMix(state);
                    std::memcpy(block + 2, &r0, 8);
                    std::memcpy(block + 10, &r1, 8);
                    break;
                }
                default: throw kp::Error("no random weights of type " + toString(type));
            }
        }
    };
    unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    if (chunks < 4 || threads == 1) {
        for (uint64_t c = 0; c < chunks; ++c) {
            fillChunk(c);
        }
        return;
    }
    std::vector<std::thread> pool;
    std::atomic<uint64_t> next{ 0 };
    std::exception_ptr failure;
    std::mutex failureLock;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            try {
                for (uint64_t c = next++; c < chunks; c = next++) {
                    fillChunk(c);
                }
            } catch (...) {
                std::lock_guard<std::mutex> guard(failureLock);
                failure = std::current_exception();
            }
        });
    }
    for (std::thread& thread : pool) {
        thread.join();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
}

} // namespace

std::vector<uint8_t>
randomWeight(const WeightSpec& spec, TensorType type, uint64_t seed, uint64_t index)
{
    uint64_t cols = spec.shape[0];
    uint64_t elements = cols * (spec.shape.size() > 1 ? spec.shape[1] : 1);
    if (!spec.isMatrix) {
        // The layer norms are ones; biases, query/key norms and RoPE
        // factors vary, so that a test sees whether they are applied.
        auto endsWith = [&](const char* suffix) {
            size_t n = std::strlen(suffix);
            return spec.name.size() >= n && spec.name.compare(spec.name.size() - n, n, suffix) == 0;
        };
        uint64_t state = seed * 1000003ull + index;
        std::vector<uint8_t> bytes(elements * 4);
        for (uint64_t i = 0; i < elements; ++i) {
            float v = 1.0f;
            if (endsWith(".bias")) {
                v = 0.5f * unit(state);
            } else if (endsWith("attn_q_norm.weight") || endsWith("attn_k_norm.weight")) {
                v = 1.0f + 0.5f * unit(state);
            } else if (spec.name == "rope_freqs.weight") {
                // Llama 3.1's shape: 1 for the fast pairs, up to 8 for the slow.
                v = 1.0f + 7.0f * float(i) / float(std::max<uint64_t>(1, elements - 1));
            }
            std::memcpy(bytes.data() + 4 * i, &v, 4);
        }
        return bytes;
    }
    TensorTypeLayout layout = layoutOf(type);
    if (layout.blockSize == 0 || cols % layout.blockSize != 0) {
        throw kp::Error("weight '" + spec.name + "' has rows of " + std::to_string(cols) + " weights, not whole blocks of " +
                        toString(type));
    }
    std::vector<uint8_t> bytes(elements / layout.blockSize * layout.blockBytes);
    float scale = spec.name == "token_embd.weight" ? 1.0f : std::sqrt(3.0f / static_cast<float>(cols));
    fillRandom(bytes.data(), type, elements, scale, seed * 1000003ull + index);
    return bytes;
}

} // namespace llm
} // namespace kp
