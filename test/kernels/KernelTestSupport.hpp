// SPDX-License-Identifier: Apache-2.0
// Helpers of the kernel library's suites: tensors of any float type made
// from float values, results read back as floats, host-side rounding to a
// type, comparisons with per-type tolerances, and running an operation
// between the syncs it needs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <kompute/kernels/Attention.hpp>

#include "../DispatchTestHelpers.hpp"
#include "TestSupport.hpp"

namespace kp_test {

using Tensors = std::vector<std::shared_ptr<kp::Memory>>;

/** The float element types the kernels take. */
inline const std::vector<DataTypes>&
floatTypes()
{
    static const std::vector<DataTypes> types = { DataTypes::eFloat, DataTypes::eHalf, DataTypes::eBFloat16 };
    return types;
}

inline std::string
shortName(DataTypes type)
{
    switch (type) {
        case DataTypes::eFloat: return "f32";
        case DataTypes::eHalf: return "f16";
        case DataTypes::eBFloat16: return "bf16";
        default: return kp::Memory::toString(type);
    }
}

/** `value` rounded to `type` as the device stores it. */
inline float
roundTo(DataTypes type, float value)
{
    switch (type) {
        case DataTypes::eHalf: return kp::float16_t(value);
        case DataTypes::eBFloat16: return kp::bfloat16_t(value);
        default: return value;
    }
}

inline std::vector<float>
roundTo(DataTypes type, std::vector<float> values)
{
    for (float& v : values) {
        v = roundTo(type, v);
    }
    return values;
}

/** `count` uniform values in [low, high), reproducible from `seed`. */
inline std::vector<float>
randomValues(size_t count, uint32_t seed, float low = -1.0f, float high = 1.0f)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> distribution(low, high);
    std::vector<float> values(count);
    for (float& v : values) {
        v = distribution(engine);
    }
    return values;
}

/** A tensor of `type` holding `values` (rounded to the type). */
inline std::shared_ptr<kp::Tensor>
floatTensor(kp::Manager& mgr,
            DataTypes type,
            const std::vector<float>& values,
            MemoryTypes memoryType = MemoryTypes::eDevice)
{
    switch (type) {
        case DataTypes::eHalf:
            return mgr.tensorT<kp::float16_t>(std::vector<kp::float16_t>(values.begin(), values.end()), memoryType);
        case DataTypes::eBFloat16:
            return mgr.tensorT<kp::bfloat16_t>(std::vector<kp::bfloat16_t>(values.begin(), values.end()),
                                               memoryType);
        default: return mgr.tensorT<float>(values, memoryType);
    }
}

/** The host view of a float tensor of any type, as floats. */
inline std::vector<float>
floatsOf(kp::Memory& tensor)
{
    switch (tensor.dataType()) {
        case DataTypes::eHalf: {
            auto values = tensor.vector<kp::float16_t>();
            return std::vector<float>(values.begin(), values.end());
        }
        case DataTypes::eBFloat16: {
            auto values = tensor.vector<kp::bfloat16_t>();
            return std::vector<float>(values.begin(), values.end());
        }
        default: return tensor.vector<float>();
    }
}

/** Relative tolerance of results stored in `type` (about 2 units in the
 * last place of its mantissa, plus f32 rounding of the computation). */
inline float
tolerance(DataTypes type)
{
    switch (type) {
        case DataTypes::eHalf: return 2e-3f;  // 10-bit mantissa
        case DataTypes::eBFloat16: return 1.6e-2f; // 7-bit mantissa
        default: return 2e-5f;
    }
}

/** Expects |actual - expected| <= tol * (|expected| + floor) element-wise
 * (floor keeps values near zero from demanding a relative precision that
 * the cancellation in their computation cannot give). */
inline ::testing::AssertionResult
near(const std::vector<float>& actual,
     const std::vector<float>& expected,
     float tol,
     float floor = 1.0f,
     size_t first = 0)
{
    if (actual.size() < first + expected.size()) {
        return ::testing::AssertionFailure() << "got " << actual.size() << " values, expected at least "
                                             << first + expected.size();
    }
    size_t bad = 0;
    std::ostringstream report;
    for (size_t i = 0; i < expected.size(); ++i) {
        float a = actual[first + i];
        float e = expected[i];
        bool ok = (std::isnan(e) && std::isnan(a)) || (std::isinf(e) && a == e) ||
                  std::fabs(a - e) <= tol * (std::fabs(e) + floor);
        if (!ok) {
            if (bad < 8) {
                report << "\n  [" << i << "] got " << a << ", expected " << e;
            }
            ++bad;
        }
    }
    if (bad > 0) {
        return ::testing::AssertionFailure() << bad << " of " << expected.size()
                                             << " values off (tolerance " << tol << "):" << report.str();
    }
    return ::testing::AssertionSuccess();
}

/** Records OpSyncDevice(inputs), the operation, OpSyncLocal(outputs) into
 * a new sequence and evaluates it; returns the sequence for re-use. */
inline std::shared_ptr<kp::Sequence>
runOp(kp::Manager& mgr, const Tensors& inputs, const std::shared_ptr<kp::OpBase>& op, const Tensors& outputs)
{
    auto seq = mgr.sequence();
    if (!inputs.empty()) {
        seq->record<kp::OpSyncDevice>(inputs);
    }
    seq->record(op);
    seq->record<kp::OpSyncLocal>(outputs);
    seq->eval();
    return seq;
}

/** out[r][h] of attention over position-major caches, in double: the
 * host reference of OpAttention and of MatMulParams::attentionC. */
inline std::vector<float>
hostAttention(const std::vector<float>& q,
              const std::vector<float>& k,
              const std::vector<float>& v,
              const std::vector<uint32_t>& positions,
              const kp::AttentionParams& p)
{
    uint32_t D = p.headDim;
    uint32_t group = p.heads / p.kvHeads;
    uint32_t kvStride = p.kvRowStride == 0 ? p.kvHeads * D : p.kvRowStride;
    double scale = p.scale != 0 ? p.scale : 1.0 / std::sqrt(double(D));
    std::vector<float> out(size_t(p.rows) * p.heads * D);
    for (uint32_t r = 0; r < p.rows; ++r) {
        uint32_t last = std::min(positions[p.causal ? r : p.rows - 1], p.kvCapacity - 1);
        for (uint32_t h = 0; h < p.heads; ++h) {
            uint32_t g = h / group;
            std::vector<double> s(last + 1);
            double m = -INFINITY;
            for (uint32_t j = 0; j <= last; ++j) {
                double dot = 0;
                for (uint32_t d = 0; d < D; ++d) {
                    dot += double(q[(size_t(r) * p.heads + h) * D + d]) * k[p.kvOffset + size_t(j) * kvStride + g * D + d];
                }
                s[j] = dot * scale;
                m = std::max(m, s[j]);
            }
            double sum = 0;
            for (double& e : s) {
                e = std::exp(e - m);
                sum += e;
            }
            for (uint32_t d = 0; d < D; ++d) {
                double acc = 0;
                for (uint32_t j = 0; j <= last; ++j) {
                    acc += s[j] * v[p.kvOffset + size_t(j) * kvStride + g * D + d];
                }
                out[(size_t(r) * p.heads + h) * D + d] = float(acc / sum);
            }
        }
    }
    return out;
}

} // namespace kp_test
