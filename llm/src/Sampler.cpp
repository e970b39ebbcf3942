// SPDX-License-Identifier: Apache-2.0
#include "kompute/llm/Sampler.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kompute/Errors.hpp"

namespace kp {
namespace llm {

Sampler::Sampler(SamplerParams params)
  : mParams(params)
  , mRandom(params.seed)
{
    if (std::isnan(params.temperature)) {
        throw kp::Error("sampler: the temperature is NaN");
    }
    if (!(params.topP > 0.0f && params.topP <= 1.0f)) {
        throw kp::Error("sampler: top-p must be in (0, 1], not " + std::to_string(params.topP));
    }
}

uint32_t
Sampler::argmax(const float* values, size_t count)
{
    if (count == 0) {
        throw kp::Error("sampler: no logits to choose from");
    }
    size_t best = 0;
    for (size_t i = 1; i < count; ++i) {
        if (values[i] > values[best]) {
            best = i;
        }
    }
    return static_cast<uint32_t>(best);
}

uint32_t
Sampler::sample(const float* logits, size_t count)
{
    if (count == 0) {
        throw kp::Error("sampler: no logits to choose from");
    }
    if (isGreedy()) {
        return argmax(logits, count);
    }
    // Candidates sorted by logit, the most likely first (ties: lower id).
    mCandidates.resize(count);
    for (size_t i = 0; i < count; ++i) {
        mCandidates[i] = { logits[i], static_cast<uint32_t>(i) };
    }
    auto better = [](const std::pair<float, uint32_t>& a, const std::pair<float, uint32_t>& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    size_t kept = count;
    if (mParams.topK > 0 && mParams.topK < count) {
        kept = mParams.topK;
        std::partial_sort(mCandidates.begin(), mCandidates.begin() + kept, mCandidates.end(), better);
    } else {
        std::sort(mCandidates.begin(), mCandidates.end(), better);
    }
    // Softmax of logit / temperature over what top-k kept.
    const float top = mCandidates[0].first;
    double total = 0.0;
    std::vector<double>& weights = mWeights;
    weights.resize(kept);
    for (size_t i = 0; i < kept; ++i) {
        weights[i] = std::exp((static_cast<double>(mCandidates[i].first) - top) / mParams.temperature);
        total += weights[i];
    }
    // Top-p: the shortest prefix whose probability reaches p.
    if (mParams.topP < 1.0f) {
        double sum = 0.0;
        for (size_t i = 0; i < kept; ++i) {
            sum += weights[i] / total;
            if (sum >= mParams.topP) {
                kept = i + 1;
                break;
            }
        }
        total = 0.0;
        for (size_t i = 0; i < kept; ++i) {
            total += weights[i];
        }
    }
    double draw = std::uniform_real_distribution<double>(0.0, total)(mRandom);
    for (size_t i = 0; i < kept; ++i) {
        draw -= weights[i];
        if (draw < 0.0) {
            return mCandidates[i].second;
        }
    }
    return mCandidates[kept - 1].second;
}

} // namespace llm
} // namespace kp
