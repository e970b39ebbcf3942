// SPDX-License-Identifier: Apache-2.0
// kp::llm::Sampler: picks the next token from a row of logits: greedy, or
// with temperature, top-k and top-p (nucleus) from a seeded generator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace kp {
namespace llm {

/** How a Sampler picks tokens. */
struct SamplerParams
{
    /** 0 (or less) is greedy: the highest logit, ties to the lowest id. */
    float temperature = 0.8f;
    /** Keep the k most likely tokens; 0 keeps all. */
    uint32_t topK = 40;
    /** Keep the most likely tokens whose probabilities add up to at least
     * p; 1 keeps all. */
    float topP = 0.95f;
    /** Seed of the generator: the same seed gives the same tokens. */
    uint64_t seed = 0;
};

/** Picks the next token from a row of logits: greedy, or at random with
 * temperature, top-k and top-p from a seeded generator (std::mt19937_64).
 * Keeps its generator and buffers between calls: not synchronised (one per
 * thread). */
class Sampler
{
  public:
    /** Throws kp::Error for out-of-range parameters (topP outside (0, 1],
     * a temperature that is NaN). */
    explicit Sampler(SamplerParams params);

    /** Whether the temperature is 0 or less: sample() is argmax(). */
    bool isGreedy() const { return mParams.temperature <= 0.0f; }
    /** The parameters it was made with. */
    const SamplerParams& params() const { return mParams; }

    /** The next token for `count` logits. */
    uint32_t sample(const float* logits, size_t count);

    /** The index of the largest value (the lowest index among equals). */
    static uint32_t argmax(const float* values, size_t count);

  private:
    SamplerParams mParams;
    std::mt19937_64 mRandom;
    // Kept between calls, so sampling does not allocate.
    std::vector<std::pair<float, uint32_t>> mCandidates;
    std::vector<double> mWeights;
};

} // namespace llm
} // namespace kp
