// SPDX-License-Identifier: Apache-2.0
// The GGUF block types the runner reads, as the kernel library names them.
#pragma once

#include <kompute/kernels/Quantization.hpp>

#include "kompute/llm/Gguf.hpp"

namespace kp {
namespace llm {

/** The kernels' format of GGUF blocks of `type`; eNone for F32, F16, BF16
 * and the types the kernels do not read. */
inline kp::WeightFormat
weightFormatOf(TensorType type)
{
    switch (type) {
        case TensorType::eQ8_0: return kp::WeightFormat::eQ8_0;
        case TensorType::eQ4_0: return kp::WeightFormat::eQ4_0;
        case TensorType::eQ4_1: return kp::WeightFormat::eQ4_1;
        case TensorType::eQ5_0: return kp::WeightFormat::eQ5_0;
        case TensorType::eQ5_1: return kp::WeightFormat::eQ5_1;
        case TensorType::eQ2_K: return kp::WeightFormat::eQ2_K;
        case TensorType::eQ3_K: return kp::WeightFormat::eQ3_K;
        case TensorType::eQ4_K: return kp::WeightFormat::eQ4_K;
        case TensorType::eQ5_K: return kp::WeightFormat::eQ5_K;
        case TensorType::eQ6_K: return kp::WeightFormat::eQ6_K;
        case TensorType::eIQ4_NL: return kp::WeightFormat::eIQ4_NL;
        case TensorType::eIQ4_XS: return kp::WeightFormat::eIQ4_XS;
        default: return kp::WeightFormat::eNone;
    }
}

} // namespace llm
} // namespace kp
