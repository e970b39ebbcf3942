// SPDX-License-Identifier: Apache-2.0
#include "kompute/llm/ModelConfig.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace kp {
namespace llm {

namespace {

uint32_t
requiredU32(const GgufFile& file, const std::string& key)
{
    uint64_t value = file.getUInt(key);
    if (value == 0 || value > UINT32_MAX) {
        throw file.error("metadata key '" + key + "' is " + std::to_string(value) +
                         ": expected a positive 32-bit value");
    }
    return static_cast<uint32_t>(value);
}

std::string
shapeText(const std::vector<uint64_t>& shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        text += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return text + "]";
}

} // namespace

ModelConfig
ModelConfig::fromGguf(const GgufFile& file)
{
    ModelConfig c;
    c.architecture = file.getString("general.architecture");
    if (c.architecture != "llama") {
        throw file.error("unsupported architecture '" + c.architecture +
                         "' (general.architecture): this runner supports 'llama' (Llama 1/2/3, "
                         "TinyLlama, Mistral and others of that layout)");
    }
    c.name = file.getString("general.name", "");
    const std::string p = "llama.";
    c.contextLength = requiredU32(file, p + "context_length");
    c.embeddingLength = requiredU32(file, p + "embedding_length");
    c.blockCount = requiredU32(file, p + "block_count");
    c.feedForwardLength = requiredU32(file, p + "feed_forward_length");
    c.headCount = requiredU32(file, p + "attention.head_count");
    c.headCountKv = file.has(p + "attention.head_count_kv") ? requiredU32(file, p + "attention.head_count_kv")
                                                           : c.headCount;
    if (c.embeddingLength % c.headCount != 0) {
        throw file.error("llama.embedding_length " + std::to_string(c.embeddingLength) +
                         " is not a multiple of llama.attention.head_count " + std::to_string(c.headCount));
    }
    c.headDim = c.embeddingLength / c.headCount;
    if (file.has(p + "attention.key_length")) {
        uint32_t keyLength = requiredU32(file, p + "attention.key_length");
        if (keyLength != c.headDim) {
            throw file.error("llama.attention.key_length " + std::to_string(keyLength) +
                             " differs from embedding_length / head_count = " + std::to_string(c.headDim) +
                             ": such models are not supported");
        }
    }
    c.ropeDims = file.has(p + "rope.dimension_count") ? requiredU32(file, p + "rope.dimension_count") : c.headDim;
    c.ropeTheta = static_cast<float>(file.getFloat(p + "rope.freq_base", 10000.0));
    std::string scaling = file.getString(p + "rope.scaling.type", "none");
    if (scaling == "linear") {
        double factor = file.getFloat(p + "rope.scaling.factor", 1.0);
        if (!(factor > 0.0)) {
            throw file.error("llama.rope.scaling.factor must be positive");
        }
        c.ropeFreqScale = static_cast<float>(1.0 / factor);
    } else if (scaling != "none") {
        throw file.error("unsupported RoPE scaling '" + scaling +
                         "' (llama.rope.scaling.type); supported: none, linear");
    }
    c.rmsEpsilon = static_cast<float>(file.getFloat(p + "attention.layer_norm_rms_epsilon"));

    if (file.has(p + "vocab_size")) {
        c.vocabSize = requiredU32(file, p + "vocab_size");
    } else if (file.has("tokenizer.ggml.tokens")) {
        c.vocabSize = static_cast<uint32_t>(file.getStringArray("tokenizer.ggml.tokens").size());
    } else {
        const GgufTensorInfo& embedding = file.tensor("token_embd.weight");
        if (embedding.shape.size() != 2) {
            throw file.error("token_embd.weight is not a matrix");
        }
        c.vocabSize = static_cast<uint32_t>(embedding.shape[1]);
    }
    c.tiedOutput = file.findTensor("output.weight") == nullptr;
    try {
        c.validate();
    } catch (const FormatError& error) {
        throw file.error(error.what());
    }
    return c;
}

std::vector<std::string>
ModelConfig::shapeNames()
{
    return { "tiny", "llama-1b", "llama-7b", "llama-8b" };
}

ModelConfig
ModelConfig::named(const std::string& shape)
{
    ModelConfig c;
    c.name = shape;
    if (shape == "tiny") { // small enough for a CPU driver
        c.contextLength = 512;
        c.embeddingLength = 256;
        c.blockCount = 2;
        c.feedForwardLength = 768;
        c.headCount = 4;
        c.headCountKv = 2;
        c.vocabSize = 1024;
    } else if (shape == "llama-1b") { // Llama 3.2 1B
        c.contextLength = 8192;
        c.embeddingLength = 2048;
        c.blockCount = 16;
        c.feedForwardLength = 8192;
        c.headCount = 32;
        c.headCountKv = 8;
        c.vocabSize = 128256;
        c.ropeTheta = 500000.0f;
        c.tiedOutput = true;
    } else if (shape == "llama-7b") { // Llama 2 7B
        c.contextLength = 4096;
        c.embeddingLength = 4096;
        c.blockCount = 32;
        c.feedForwardLength = 11008;
        c.headCount = 32;
        c.headCountKv = 32;
        c.vocabSize = 32000;
    } else if (shape == "llama-8b") { // Llama 3 8B
        c.contextLength = 8192;
        c.embeddingLength = 4096;
        c.blockCount = 32;
        c.feedForwardLength = 14336;
        c.headCount = 32;
        c.headCountKv = 8;
        c.vocabSize = 128256;
        c.ropeTheta = 500000.0f;
    } else {
        std::string known;
        for (const std::string& name : shapeNames()) {
            known += (known.empty() ? "" : ", ") + name;
        }
        throw kp::Error("unknown model shape '" + shape + "' (known: " + known + ")");
    }
    c.headDim = c.embeddingLength / c.headCount;
    c.ropeDims = c.headDim;
    c.validate();
    return c;
}

void
ModelConfig::validate() const
{
    auto fail = [](const std::string& message) { throw FormatError(message); };
    if (embeddingLength == 0 || blockCount == 0 || feedForwardLength == 0 || headCount == 0 ||
        headCountKv == 0 || vocabSize == 0 || contextLength == 0) {
        fail("the model's sizes must all be positive");
    }
    if (headDim * headCount != embeddingLength) {
        fail("head_count " + std::to_string(headCount) + " times the head size " + std::to_string(headDim) +
             " is not embedding_length " + std::to_string(embeddingLength));
    }
    if (headCount % headCountKv != 0) {
        fail("attention.head_count " + std::to_string(headCount) + " is not a multiple of head_count_kv " +
             std::to_string(headCountKv));
    }
    if (headDim % 2 != 0 || ropeDims == 0 || ropeDims > headDim || ropeDims % 2 != 0) {
        fail("rope.dimension_count " + std::to_string(ropeDims) + " must be even and at most the head size " +
             std::to_string(headDim));
    }
    if (!(ropeTheta > 0.0f) || !(rmsEpsilon > 0.0f) || !(ropeFreqScale > 0.0f) || !std::isfinite(ropeTheta)) {
        fail("rope.freq_base, rope scaling and layer_norm_rms_epsilon must be positive");
    }
}

uint64_t
ModelConfig::parameterCount() const
{
    uint64_t count = 0;
    for (const WeightSpec& spec : weightSpecs(*this)) {
        uint64_t n = 1;
        for (uint64_t extent : spec.shape) {
            n *= extent;
        }
        count += n;
    }
    return count;
}

std::vector<WeightSpec>
weightSpecs(const ModelConfig& c)
{
    const uint64_t d = c.embeddingLength;
    const uint64_t q = uint64_t(c.headCount) * c.headDim;
    const uint64_t kv = uint64_t(c.headCountKv) * c.headDim;
    const uint64_t ff = c.feedForwardLength;
    std::vector<WeightSpec> specs;
    specs.push_back({ "token_embd.weight", { d, c.vocabSize }, true });
    for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
        const std::string b = "blk." + std::to_string(layer) + ".";
        specs.push_back({ b + "attn_norm.weight", { d }, false });
        specs.push_back({ b + "attn_q.weight", { d, q }, true });
        specs.push_back({ b + "attn_k.weight", { d, kv }, true });
        specs.push_back({ b + "attn_v.weight", { d, kv }, true });
        specs.push_back({ b + "attn_output.weight", { q, d }, true });
        specs.push_back({ b + "ffn_norm.weight", { d }, false });
        specs.push_back({ b + "ffn_gate.weight", { d, ff }, true });
        specs.push_back({ b + "ffn_up.weight", { d, ff }, true });
        specs.push_back({ b + "ffn_down.weight", { ff, d }, true });
    }
    specs.push_back({ "output_norm.weight", { d }, false });
    if (!c.tiedOutput) {
        specs.push_back({ "output.weight", { d, c.vocabSize }, true });
    }
    return specs;
}

void
checkWeights(const GgufFile& file, const ModelConfig& config)
{
    for (const WeightSpec& spec : weightSpecs(config)) {
        const GgufTensorInfo* info = file.findTensor(spec.name);
        if (info == nullptr) {
            throw file.error("missing tensor '" + spec.name + "' (shape " + shapeText(spec.shape) + ")");
        }
        if (info->shape != spec.shape) {
            throw file.error("tensor '" + spec.name + "' has shape " + shapeText(info->shape) +
                             ", but the model's metadata needs " + shapeText(spec.shape));
        }
        bool quantized = layoutOf(info->type).blockSize > 1;
        if (!spec.isMatrix && quantized) {
            throw file.error("norm weight '" + spec.name + "' has type " + toString(info->type) +
                             "; norm weights must be F32, F16 or BF16");
        }
        if (!isSupportedWeightType(info->type)) {
            throw file.error("tensor '" + spec.name + "' has type " + toString(info->type) +
                             ", which this runner does not support (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
                             "Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)");
        }
    }
}

TensorType
parseWeightType(const std::string& name)
{
    std::string lower;
    for (char c : name) {
        lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    if (lower == "f32") return TensorType::eF32;
    if (lower == "f16") return TensorType::eF16;
    if (lower == "bf16") return TensorType::eBF16;
    for (TensorType type : { TensorType::eQ8_0, TensorType::eQ4_0, TensorType::eQ4_1, TensorType::eQ5_0,
                             TensorType::eQ5_1, TensorType::eQ2_K, TensorType::eQ3_K, TensorType::eQ4_K,
                             TensorType::eQ5_K, TensorType::eQ6_K, TensorType::eIQ4_NL, TensorType::eIQ4_XS }) {
        std::string known = toString(type);
        for (char& c : known) {
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        if (lower == known) {
            return type;
        }
    }
    throw kp::Error("unknown weight type '" + name +
                    "' (known: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, "
                    "iq4_xs)");
}

} // namespace llm
} // namespace kp
