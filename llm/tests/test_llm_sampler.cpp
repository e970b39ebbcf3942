// SPDX-License-Identifier: Apache-2.0
// The sampler: greedy, temperature, top-k, top-p, and that a seed repeats.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "kompute/Errors.hpp"
#include "kompute/llm/Sampler.hpp"

using kp::llm::Sampler;
using kp::llm::SamplerParams;

namespace {

/** How often each token is drawn, as a fraction of `draws`. */
std::map<uint32_t, double>
frequencies(Sampler& sampler, const std::vector<float>& logits, int draws)
{
    std::map<uint32_t, double> counts;
    for (int i = 0; i < draws; ++i) {
        counts[sampler.sample(logits.data(), logits.size())] += 1.0 / draws;
    }
    return counts;
}

} // namespace

TEST(Sampler, GreedyTakesTheLargestLogitAndTheLowestIdOnTies)
{
    Sampler greedy(SamplerParams{ 0.0f, 40, 0.95f, 1 });
    EXPECT_TRUE(greedy.isGreedy());
    std::vector<float> logits{ 0.5f, 3.0f, -1.0f, 3.0f };
    EXPECT_EQ(greedy.sample(logits.data(), logits.size()), 1u);
    EXPECT_EQ(Sampler::argmax(logits.data(), 1), 0u);
    EXPECT_THROW(greedy.sample(logits.data(), 0), kp::Error);
}

TEST(Sampler, TopKOfOneIsGreedy)
{
    Sampler sampler(SamplerParams{ 1.5f, 1, 1.0f, 3 });
    std::vector<float> logits{ 0.1f, 0.2f, 0.9f, 0.3f };
    for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(sampler.sample(logits.data(), logits.size()), 2u);
    }
}

TEST(Sampler, FrequenciesFollowTheSoftmax)
{
    // Probabilities of logits log(1), log(2), log(3), log(4) at temperature 1:
    // 0.1, 0.2, 0.3, 0.4.
    std::vector<float> logits{ std::log(1.0f), std::log(2.0f), std::log(3.0f), std::log(4.0f) };
    Sampler sampler(SamplerParams{ 1.0f, 0, 1.0f, 42 });
    std::map<uint32_t, double> seen = frequencies(sampler, logits, 40000);
    for (uint32_t id = 0; id < 4; ++id) {
        EXPECT_NEAR(seen[id], 0.1 * (id + 1), 0.01) << id;
    }
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP)
{
    // 0.4 + 0.3 = 0.7 >= 0.6: only ids 3 and 2 remain, at 4/7 and 3/7.
    std::vector<float> logits{ std::log(1.0f), std::log(2.0f), std::log(3.0f), std::log(4.0f) };
    Sampler sampler(SamplerParams{ 1.0f, 0, 0.6f, 5 });
    std::map<uint32_t, double> seen = frequencies(sampler, logits, 20000);
    EXPECT_EQ(seen[0] + seen[1], 0.0);
    EXPECT_NEAR(seen[3], 4.0 / 7.0, 0.015);
}

TEST(Sampler, LowTemperatureSharpens)
{
    std::vector<float> logits{ 1.0f, 2.0f };
    Sampler cold(SamplerParams{ 0.05f, 0, 1.0f, 9 });
    int top = 0;
    for (int i = 0; i < 1000; ++i) {
        top += cold.sample(logits.data(), logits.size()) == 1;
    }
    EXPECT_EQ(top, 1000);
}

TEST(Sampler, TheSameSeedRepeats)
{
    std::vector<float> logits(100);
    for (size_t i = 0; i < logits.size(); ++i) {
        logits[i] = std::sin(static_cast<float>(i));
    }
    Sampler a(SamplerParams{ 0.9f, 20, 0.9f, 1234 });
    Sampler b(SamplerParams{ 0.9f, 20, 0.9f, 1234 });
    Sampler c(SamplerParams{ 0.9f, 20, 0.9f, 99 });
    bool differs = false;
    for (int i = 0; i < 200; ++i) {
        uint32_t x = a.sample(logits.data(), logits.size());
        EXPECT_EQ(x, b.sample(logits.data(), logits.size()));
        differs |= x != c.sample(logits.data(), logits.size());
    }
    EXPECT_TRUE(differs);
}

TEST(Sampler, RejectsBadParameters)
{
    EXPECT_THROW(Sampler(SamplerParams{ 1.0f, 0, 0.0f, 0 }), kp::Error);
    EXPECT_THROW(Sampler(SamplerParams{ 1.0f, 0, 1.5f, 0 }), kp::Error);
    EXPECT_THROW(Sampler(SamplerParams{ NAN, 0, 1.0f, 0 }), kp::Error);
}
