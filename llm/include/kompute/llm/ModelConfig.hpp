// SPDX-License-Identifier: Apache-2.0
// kp::llm::ModelConfig: the hyperparameters of a Llama-family model (the
// architectures llama, qwen2 and qwen3), read from a GGUF file's ARCH.*
// metadata or chosen by name for a model with random weights; and the
// weight tensors such a model has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kompute/llm/Gguf.hpp"

namespace kp {
namespace llm {

/** The hyperparameters of a Llama-family model (the ARCH.* metadata of a
 * GGUF file, ARCH being general.architecture: llama, qwen2 or qwen3). A
 * plain value. */
struct ModelConfig
{
    /** general.architecture: "llama", "qwen2" or "qwen3" (set it with
     * setArchitecture(), which sets the layout flags below to match). */
    std::string architecture = "llama";
    std::string name; ///< general.name, or the shape's name
    uint32_t contextLength = 2048; ///< tokens the model was trained on
    uint32_t embeddingLength = 0; ///< model width
    uint32_t blockCount = 0;      ///< layers
    uint32_t feedForwardLength = 0; ///< width of the feed-forward layers
    uint32_t headCount = 0; ///< attention (query) heads
    uint32_t headCountKv = 0; ///< key/value heads (grouped-query attention)
    /** Values per attention head: attention.key_length where the file
     * has it (Qwen3: not embeddingLength / headCount), else
     * embeddingLength / headCount. */
    uint32_t headDim = 0;
    uint32_t ropeDims = 0; ///< rotated dimensions of each head (<= headDim)
    float ropeTheta = 10000.0f; ///< RoPE frequency base
    /** Linear RoPE scaling: positions times this (1 / rope.scaling.factor
     * or rope.scale_linear; 1 where rope.scaling.type is none). */
    float ropeFreqScale = 1.0f;
    /** The file has rope_freqs.weight (Llama 3.1/3.2's RoPE scaling):
     * ropeDims / 2 divisors of the rotation frequencies, one per pair
     * (architecture llama only). */
    bool ropeFreqFactors = false;
    /** RoPE rotates the pairs (x[i], x[i + ropeDims/2]) of each head
     * (qwen2, qwen3: GGUF keeps Hugging Face's layout) rather than
     * adjacent pairs (llama). */
    bool ropeNeox = false;
    /** The query, key and value products add a bias (qwen2:
     * attn_q.bias, attn_k.bias, attn_v.bias). */
    bool attentionBias = false;
    /** Every query and key head is RMS-normalized with a weight of its own
     * (qwen3: attn_q_norm, attn_k_norm) before RoPE. */
    bool qkNorm = false;
    float rmsEpsilon = 1e-5f; ///< RMSNorm's epsilon
    uint32_t vocabSize = 0; ///< tokens in the vocabulary
    /** True when the file has no output.weight: the output matrix is the
     * token embedding. */
    bool tiedOutput = false;

    /** Reads general.architecture and ARCH.*; FormatError naming the key
     * for an architecture other than architectureNames(), a missing key,
     * an ARCH.* key the runner does not read (it is refused, not
     * ignored), a RoPE scaling type other than none and linear, a
     * mixture of experts, or values that do not fit together. The
     * vocabulary size comes from ARCH.vocab_size, else the token list,
     * else token_embd.weight. */
    static ModelConfig fromGguf(const GgufFile& file);
    /** The architectures fromGguf() reads: "llama", "qwen2", "qwen3". */
    static std::vector<std::string> architectureNames();
    /** Sets `architecture` and the layout flags that go with it (ropeNeox,
     * attentionBias, qkNorm); kp::Error for a name architectureNames()
     * lacks. */
    void setArchitecture(const std::string& name);
    /** Shapes for --random: "tiny", "llama-1b", "llama-7b", "llama-8b",
     * "qwen2-0.5b" (Qwen2.5 0.5B), "qwen3-8b" (see shapeNames()); kp::Error
     * for another name. */
    static ModelConfig named(const std::string& shape);
    /** The names named() knows. */
    static std::vector<std::string> shapeNames();

    /** Throws FormatError unless the values fit together (the layout
     * flags included: they must be the architecture's). */
    void validate() const;
    /** Number of weights (parameters) of the model. */
    uint64_t parameterCount() const;
};

/** A weight tensor of the model: its GGUF name and shape (ne0 first). */
struct WeightSpec
{
    std::string name;            ///< for example "blk.0.ffn_up.weight"
    std::vector<uint64_t> shape; ///< dimensions, ne0 first
    /** Matrices multiply activations; the others are vectors (norm
     * weights, biases, RoPE factors), kept in f32 on the device. */
    bool isMatrix;
};

/** Every weight the model reads, in file order (embedding, rope_freqs when
 * ropeFreqFactors, layers with their biases and query/key norms where the
 * architecture has them, output norm, output matrix unless tied). */
std::vector<WeightSpec> weightSpecs(const ModelConfig& config);

/**
 * Checks the tensors of `file` against what `config` needs: every weight
 * present, of the expected shape, of a supported type (F32, F16, BF16, Q8_0,
 * Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS), and
 * no tensor besides (one the runner does not read is refused, never
 * ignored). Throws FormatError naming the tensor and what is wrong.
 */
void checkWeights(const GgufFile& file, const ModelConfig& config);

/** Parses "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
 * "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs" (any case);
 * kp::Error otherwise. WeightMix::parse reads mixes such as "q4_k_m". */
TensorType parseWeightType(const std::string& name);

} // namespace llm
} // namespace kp
