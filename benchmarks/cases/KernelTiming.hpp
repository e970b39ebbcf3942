// SPDX-License-Identifier: Apache-2.0
// What the kernel-library cases share (Kernels.cpp, MatMul.cpp): random
// inputs, and timing operations back to back with GPU timestamps.
#pragma once

#include "../Harness.hpp"

#include <memory>
#include <random>
#include <vector>

namespace bench {

inline std::vector<float>
randomFloats(size_t count, uint32_t seed, float low, float high)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> distribution(low, high);
    std::vector<float> values(count);
    for (float& v : values) {
        v = distribution(engine);
    }
    return values;
}

/** Records `runs` operations back to back, cycling through `ops` (several
 * copies of an operation over different tensors keep inputs smaller than the
 * L2 cache from being served from it), with GPU timestamps around each; after
 * a warm-up (a GPU coming from light work stays at its idle clock for a
 * while, see case g) adds `amount / seconds` per run to `measurement`. */
inline void
measureOps(Context& context,
           Measurement& measurement,
           const std::vector<std::shared_ptr<kp::OpBase>>& ops,
           double amount,
           uint32_t runs = 5)
{
    kp::Manager& mgr = context.manager();
    auto sequence = mgr.sequence(0, runs);
    for (uint32_t i = 0; i < runs; ++i) {
        sequence->record(ops[i % ops.size()]);
    }
    double warmUp = context.quick() ? 0.0 : 0.5;
    double warmSeconds = 0.0;
    do {
        warmSeconds += secondsOf([&] { sequence->eval(); });
    } while (warmSeconds < warmUp);
    for (int r = 0; r < context.repetitions(); ++r) {
        sequence->eval();
        auto ns = sequence->getTimestampsNs();
        for (uint32_t i = 1; i <= runs; ++i) {
            measurement.samples.push_back(amount / ((ns[i] - ns[i - 1]) * 1e-9));
        }
    }
}

/** GB/s of `op` over `bytes` (measureOps with one operation). */
inline void
measureOp(Context& context, Measurement& gbs, const std::shared_ptr<kp::OpBase>& op, double bytes)
{
    measureOps(context, gbs, { op }, bytes / 1e9);
}

} // namespace bench
