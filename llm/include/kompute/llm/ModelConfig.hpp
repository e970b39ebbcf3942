// SPDX-License-Identifier: Apache-2.0
// kp::llm::ModelConfig: the hyperparameters of a Llama-family model, read
// from a GGUF file's llama.* metadata or chosen by name for a model with
// random weights; and the weight tensors such a model has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kompute/llm/Gguf.hpp"

namespace kp {
namespace llm {

/** The hyperparameters of a Llama-family model (the llama.* metadata of a
 * GGUF file). A plain value. */
struct ModelConfig
{
    std::string architecture = "llama"; ///< general.architecture
    std::string name; ///< general.name, or the shape's name
    uint32_t contextLength = 2048; ///< tokens the model was trained on
    uint32_t embeddingLength = 0; ///< model width
    uint32_t blockCount = 0;      ///< layers
    uint32_t feedForwardLength = 0; ///< width of the feed-forward layers
    uint32_t headCount = 0; ///< attention (query) heads
    uint32_t headCountKv = 0; ///< key/value heads (grouped-query attention)
    uint32_t headDim = 0;  ///< embeddingLength / headCount
    uint32_t ropeDims = 0; ///< rotated dimensions of each head (<= headDim)
    float ropeTheta = 10000.0f; ///< RoPE frequency base
    float ropeFreqScale = 1.0f; ///< linear RoPE scaling: positions times this
    float rmsEpsilon = 1e-5f; ///< RMSNorm's epsilon
    uint32_t vocabSize = 0; ///< tokens in the vocabulary
    /** True when the file has no output.weight: the output matrix is the
     * token embedding. */
    bool tiedOutput = false;

    /** Reads general.architecture and llama.*; FormatError for an
     * architecture other than llama, a missing key, or values that do not
     * fit together (heads that do not divide the width, ...). The
     * vocabulary size comes from llama.vocab_size, else the token list,
     * else token_embd.weight. */
    static ModelConfig fromGguf(const GgufFile& file);
    /** Shapes for --random: "tiny", "llama-1b", "llama-7b", "llama-8b" (see
     * shapeNames()); kp::Error for another name. */
    static ModelConfig named(const std::string& shape);
    /** The names named() knows. */
    static std::vector<std::string> shapeNames();

    /** Throws FormatError unless the values fit together. */
    void validate() const;
    /** Number of weights (parameters) of the model. */
    uint64_t parameterCount() const;
};

/** A weight tensor of the model: its GGUF name and shape (ne0 first). */
struct WeightSpec
{
    std::string name;            ///< for example "blk.0.ffn_up.weight"
    std::vector<uint64_t> shape; ///< dimensions, ne0 first
    /** Matrices multiply activations; the others are norm weights. */
    bool isMatrix;
};

/** Every weight the model reads, in file order (embedding, layers, output
 * norm, output matrix unless tied). */
std::vector<WeightSpec> weightSpecs(const ModelConfig& config);

/**
 * Checks the tensors of `file` against what `config` needs: every weight
 * present, of the expected shape, of a supported type (F32, F16, BF16, Q8_0,
 * Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS; norm
 * weights not in blocks). Throws FormatError naming the tensor and what is
 * wrong.
 */
void checkWeights(const GgufFile& file, const ModelConfig& config);

/** Parses "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
 * "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs" (any case);
 * kp::Error otherwise. WeightMix::parse reads mixes such as "q4_k_m". */
TensorType parseWeightType(const std::string& name);

} // namespace llm
} // namespace kp
