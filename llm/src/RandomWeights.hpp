// SPDX-License-Identifier: Apache-2.0
// Random weights for models without a file (--random), the same for
// Model::random and writeRandomModel.
#pragma once

#include <cstdint>
#include <vector>

#include "kompute/llm/ModelConfig.hpp"

namespace kp {
namespace llm {

/** The bytes of weight number `index` (from 1, in weightSpecs order) of a
 * random model: matrices of `type`, uniform with variance 1/(row length)
 * (the embedding about 1); vectors f32: layer norms ones, biases uniform in
 * [-0.5, 0.5], query/key norms in [0.5, 1.5], RoPE factors from 1 to 8. */
std::vector<uint8_t> randomWeight(const WeightSpec& spec, TensorType type, uint64_t seed, uint64_t index);

} // namespace llm
} // namespace kp
