// SPDX-License-Identifier: Apache-2.0
// The fixture that cases (a), (b), (c) and (i) share: case (i) compares
// Python against C++ on exactly the work of case (a), so both must build it
// from one definition. benchmarks/python/eval_overhead.py builds the same
// fixture through the kp module; it carries its own copy of kIncrement
// (it runs on its own), and case (i) checks that both compile to the same
// SPIR-V (spirvChecksum), so the two copies cannot drift apart unnoticed.
#pragma once

#include "../Harness.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace bench {

// One invocation that increments one counter: the dispatch itself costs
// next to nothing, so what is measured is the framework and the driver.
inline constexpr const char* kIncrement = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Counter { uint counter[]; };
void main() { counter[0] += 1u; }
)";

struct Fixture
{
    std::shared_ptr<kp::TensorT<uint32_t>> counter;
    std::shared_ptr<kp::Algorithm> algorithm;
    std::vector<uint32_t> spirv;

    explicit Fixture(kp::Manager& mgr)
      : counter(mgr.tensorT<uint32_t>(std::vector<uint32_t>{ 0 }, kp::Memory::MemoryTypes::eDeviceAndHost))
      , spirv(compile(kIncrement))
    {
        algorithm = mgr.algorithm({ counter }, spirv, { 1, 1, 1 });
    }
};

// The loop sizes of cases (a) and (b), which case (i) repeats in C++ and in
// Python: per sample, `evalIterations` evals of the recorded sequence, or
// `oneLinerIterations` one-liners (sequence, record, eval); `evalWarmup`
// unmeasured samples before the first.
inline int
evalIterations(bool quick)
{
    return quick ? 20 : 2000;
}

inline int
evalWarmup(bool quick)
{
    return quick ? 1 : 2;
}

inline int
oneLinerIterations(bool quick)
{
    return quick ? 10 : 1000;
}

/** 32-bit FNV-1a over the little-endian bytes of SPIR-V words: a checksum
 * simple enough to compute identically in Python (eval_overhead.py). */
inline uint32_t
spirvChecksum(const std::vector<uint32_t>& words)
{
    uint32_t hash = 2166136261u;
    for (uint32_t word : words) {
        for (int shift = 0; shift < 32; shift += 8) {
            hash ^= (word >> shift) & 0xffu;
            hash *= 16777619u;
        }
    }
    return hash;
}

} // namespace bench
