// SPDX-License-Identifier: Apache-2.0
// kp::llm::WeightMix: the weight type of each matrix of a random model, one
// type for all or the per-tensor mixes llama.cpp's llama-quantize writes
// (Q4_K_M, Q5_K_M, ...), so that --random llama-8b:q4_k_m measures what a
// downloaded Q4_K_M file runs.
#pragma once

#include <string>

#include "kompute/llm/Gguf.hpp"
#include "kompute/llm/ModelConfig.hpp"

namespace kp {
namespace llm {

/**
 * The types of a model's matrices (norm weights are always F32).
 * A pure mix gives every matrix `base`, and `output` to output.weight. The
 * K-quant mixes follow llama-quantize's choices for a Llama layout:
 *   Q4_K_M / Q5_K_M: Q4_K / Q5_K, with attn_v and ffn_down in Q6_K in the
 *     layers llama.cpp gives more bits (the first and last eighth of the
 *     layers and every third one between), output.weight Q6_K;
 *   Q4_K_S / Q5_K_S: Q4_K / Q5_K, attn_v of the first 4 layers and ffn_down
 *     of the first eighth in Q5_K (Q4_K_S), output.weight Q6_K.
 * A matrix whose rows are not whole 256-weight super-blocks takes
 * llama-quantize's fallback (Q4_K: Q5_0, Q5_K: Q5_1, Q6_K: Q8_0, Q2_K and
 * Q3_K: IQ4_NL).
 */
struct WeightMix
{
    /** The kinds of mixes. */
    enum class Kind
    {
        ePure,   ///< every matrix `base`, output.weight `output`
        eQ4_K_M, ///< llama-quantize's Q4_K_M
        eQ5_K_M, ///< llama-quantize's Q5_K_M
        eQ4_K_S, ///< llama-quantize's Q4_K_S
        eQ5_K_S, ///< llama-quantize's Q5_K_S
    };
    Kind kind = Kind::ePure; ///< which mix
    TensorType base = TensorType::eF32;   ///< the type of most matrices
    TensorType output = TensorType::eF32; ///< the type of output.weight
    /** The mix's name as parse() reads it ("q4_k_m", "q4_0/q6_k"). */
    std::string name() const;

    /** Every matrix of type `type` (output.weight too). */
    static WeightMix pure(TensorType type);
    /** Parses a weight type as parseWeightType does ("q4_0", "q6_k"), a
     * pure type with another type for output.weight ("q4_0/q6_k": what
     * llama-quantize writes for Q4_0), or a mix ("q4_k_m", "q5_k_m",
     * "q4_k_s", "q5_k_s"); any case. kp::Error for anything else. */
    static WeightMix parse(const std::string& text);

    /** The type of weight `spec` of a model of `config` (F32 for norm
     * weights). */
    TensorType typeOf(const WeightSpec& spec, const ModelConfig& config) const;
};

} // namespace llm
} // namespace kp
