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

namespace {

/** What sets an architecture's layers apart from llama's. */
struct Architecture
{
    const char* name;
    bool attentionBias; // q/k/v biases
    bool qkNorm;        // per-head RMSNorm of queries and keys
    bool ropeNeox;      // RoPE pairs (i, i + dims/2)
    bool ropeFreqs;     // may carry rope_freqs.weight (as llama.cpp reads it)
};

const Architecture kArchitectures[] = {
    { "llama", false, false, false, true },
    { "qwen2", true, false, true, false },
    { "qwen3", false, true, true, false },
};

/** The metadata keys (after "ARCH.") the runner reads; any other key of
 * the architecture is refused rather than ignored. */
const char* const kKnownKeys[] = {
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "vocab_size",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "attention.layer_norm_rms_epsilon",
    "rope.dimension_count",
    "rope.freq_base",
    "rope.scale_linear",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scaling.original_context_length",
    "rope.scaling.finetuned",
    "expert_count",
    "expert_used_count",
    "tensor_data_layout",
};

const Architecture*
findArchitecture(const std::string& name)
{
    for (const Architecture& a : kArchitectures) {
        if (name == a.name) {
            return &a;
        }
    }
    return nullptr;
}

} // namespace

void
ModelConfig::setArchitecture(const std::string& name)
{
    const Architecture* arch = findArchitecture(name);
    if (arch == nullptr) {
        std::string known;
        for (const std::string& n : architectureNames()) {
            known += (known.empty() ? "" : ", ") + n;
        }
        throw kp::Error("unknown architecture '" + name + "' (known: " + known + ")");
    }
    architecture = name;
    attentionBias = arch->attentionBias;
    qkNorm = arch->qkNorm;
    ropeNeox = arch->ropeNeox;
}

std::vector<std::string>
ModelConfig::architectureNames()
{
    std::vector<std::string> names;
    for (const Architecture& a : kArchitectures) {
        names.push_back(a.name);
    }
    return names;
}

ModelConfig
ModelConfig::fromGguf(const GgufFile& file)
{
    ModelConfig c;
    c.architecture = file.getString("general.architecture");
    const Architecture* arch = findArchitecture(c.architecture);
    if (arch == nullptr) {
        throw file.error("unsupported architecture '" + c.architecture +
                         "' (general.architecture): this runner supports 'llama' (Llama 1/2/3/3.1/3.2, "
                         "TinyLlama, Mistral and others of that layout), 'qwen2' (Qwen2, Qwen2.5) and 'qwen3' "
                         "(Qwen3 dense models)");
    }
    c.setArchitecture(c.architecture);
    c.name = file.getString("general.name", "");
    const std::string p = c.architecture + ".";
    for (const GgufKeyValue& kv : file.metadata()) {
        if (kv.key.compare(0, p.size(), p) != 0) {
            continue;
        }
        const std::string rest = kv.key.substr(p.size());
        if (std::find(std::begin(kKnownKeys), std::end(kKnownKeys), rest) == std::end(kKnownKeys)) {
            throw file.error("metadata key '" + kv.key + "' is not understood by this runner, which does not " +
                             "ignore what could change the model's results");
        }
    }
    for (const char* experts : { "expert_count", "expert_used_count" }) {
        if (file.getUInt(p + experts, 0) != 0) {
            throw file.error(p + experts + " is " + std::to_string(file.getUInt(p + experts)) +
                             ": mixture-of-experts models are not supported");
        }
    }
    c.contextLength = requiredU32(file, p + "context_length");
    c.embeddingLength = requiredU32(file, p + "embedding_length");
    c.blockCount = requiredU32(file, p + "block_count");
    c.feedForwardLength = requiredU32(file, p + "feed_forward_length");
    c.headCount = requiredU32(file, p + "attention.head_count");
    c.headCountKv = file.has(p + "attention.head_count_kv") ? requiredU32(file, p + "attention.head_count_kv")
                                                           : c.headCount;
    if (file.has(p + "attention.key_length")) {
        // Qwen3 and others: a head size of its own, not width / heads.
        c.headDim = requiredU32(file, p + "attention.key_length");
    } else if (c.embeddingLength % c.headCount != 0) {
        throw file.error(p + "embedding_length " + std::to_string(c.embeddingLength) + " is not a multiple of " +
                         p + "attention.head_count " + std::to_string(c.headCount) + " and " + p +
                         "attention.key_length is absent");
    } else {
        c.headDim = c.embeddingLength / c.headCount;
    }
    if (file.has(p + "attention.value_length")) {
        uint32_t valueLength = requiredU32(file, p + "attention.value_length");
        if (valueLength != c.headDim) {
            throw file.error(p + "attention.value_length " + std::to_string(valueLength) +
                             " differs from the key head size " + std::to_string(c.headDim) +
                             ": such models are not supported");
        }
    }
    c.ropeDims = file.has(p + "rope.dimension_count") ? requiredU32(file, p + "rope.dimension_count") : c.headDim;
    c.ropeTheta = static_cast<float>(file.getFloat(p + "rope.freq_base", 10000.0));
    // Linear scaling (positions divided by the factor) as llama.cpp applies
    // it: rope.scaling.factor, or the older rope.scale_linear, where the type
    // is linear or absent (its default); an explicit type none scales
    // nothing. Llama 3.1's scaling comes as the tensor rope_freqs.weight
    // (per-frequency divisors), with no scaling keys.
    const std::string scaling = file.getString(p + "rope.scaling.type", "linear");
    if (scaling != "none" && scaling != "linear") {
        throw file.error("unsupported RoPE scaling '" + scaling + "' (" + p +
                         "rope.scaling.type); supported: none, linear, and Llama 3.1's rope_freqs.weight");
    }
    double factor = file.has(p + "rope.scaling.factor") ? file.getFloat(p + "rope.scaling.factor")
                                                        : file.getFloat(p + "rope.scale_linear", 1.0);
    if (!(factor > 0.0) || !std::isfinite(factor)) {
        throw file.error(p + "rope.scaling.factor must be positive (" + std::to_string(factor) + " given)");
    }
    c.ropeFreqScale = scaling == "none" ? 1.0f : static_cast<float>(1.0 / factor);
    // Only llama reads rope_freqs: in another architecture's file the tensor
    // is refused by checkWeights as one no layer reads.
    c.ropeFreqFactors = arch->ropeFreqs && file.findTensor("rope_freqs.weight") != nullptr;
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
    return { "tiny", "llama-1b", "llama-7b", "llama-8b", "qwen2-0.5b", "qwen3-8b" };
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
    } else if (shape == "qwen2-0.5b") { // Qwen2.5 0.5B
        c.setArchitecture("qwen2");
        c.contextLength = 32768;
        c.embeddingLength = 896;
        c.blockCount = 24;
        c.feedForwardLength = 4864;
        c.headCount = 14;
        c.headCountKv = 2;
        c.vocabSize = 151936;
        c.ropeTheta = 1000000.0f;
        c.rmsEpsilon = 1e-6f;
        c.tiedOutput = true;
    } else if (shape == "qwen3-8b") { // Qwen3 8B
        c.setArchitecture("qwen3");
        c.contextLength = 40960;
        c.embeddingLength = 4096;
        c.blockCount = 36;
        c.feedForwardLength = 12288;
        c.headCount = 32;
        c.headCountKv = 8;
        c.headDim = 128;
        c.vocabSize = 151936;
        c.ropeTheta = 1000000.0f;
        c.rmsEpsilon = 1e-6f;
    } else {
        std::string known;
        for (const std::string& name : shapeNames()) {
            known += (known.empty() ? "" : ", ") + name;
        }
        throw kp::Error("unknown model shape '" + shape + "' (known: " + known + ")");
    }
    if (c.headDim == 0) {
        c.headDim = c.embeddingLength / c.headCount;
    }
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
    const Architecture* arch = findArchitecture(architecture);
    if (arch == nullptr) {
        fail("unsupported architecture '" + architecture + "'");
    }
    if (attentionBias != arch->attentionBias || qkNorm != arch->qkNorm || ropeNeox != arch->ropeNeox) {
        fail("attentionBias, qkNorm and ropeNeox do not match architecture '" + architecture +
             "' (ModelConfig::setArchitecture sets them)");
    }
    if (ropeFreqFactors && !arch->ropeFreqs) {
        fail("architecture '" + architecture + "' has no rope_freqs (ropeFreqFactors)");
    }
    if (headDim == 0) {
        fail("the head size must be positive");
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
    const uint64_t hd = c.headDim;
    const uint64_t q = uint64_t(c.headCount) * c.headDim;
    const uint64_t kv = uint64_t(c.headCountKv) * c.headDim;
    const uint64_t ff = c.feedForwardLength;
    std::vector<WeightSpec> specs;
    specs.push_back({ "token_embd.weight", { d, c.vocabSize }, true });
    if (c.ropeFreqFactors) {
        specs.push_back({ "rope_freqs.weight", { uint64_t(c.ropeDims / 2) }, false });
    }
    for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
        const std::string b = "blk." + std::to_string(layer) + ".";
        specs.push_back({ b + "attn_norm.weight", { d }, false });
        specs.push_back({ b + "attn_q.weight", { d, q }, true });
        specs.push_back({ b + "attn_k.weight", { d, kv }, true });
        specs.push_back({ b + "attn_v.weight", { d, kv }, true });
        if (c.attentionBias) {
            specs.push_back({ b + "attn_q.bias", { q }, false });
            specs.push_back({ b + "attn_k.bias", { kv }, false });
            specs.push_back({ b + "attn_v.bias", { kv }, false });
        }
        if (c.qkNorm) {
            specs.push_back({ b + "attn_q_norm.weight", { hd }, false });
            specs.push_back({ b + "attn_k_norm.weight", { hd }, false });
        }
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
    const std::vector<WeightSpec> specs = weightSpecs(config);
    for (const GgufTensorInfo& info : file.tensors()) {
        auto known = [&](const WeightSpec& spec) { return spec.name == info.name; };
        if (std::find_if(specs.begin(), specs.end(), known) == specs.end()) {
            throw file.error("tensor '" + info.name + "' is not part of a " + config.architecture +
                             " model as this runner reads it: refused rather than ignored");
        }
    }
    for (const WeightSpec& spec : specs) {
        const GgufTensorInfo* info = file.findTensor(spec.name);
        if (info == nullptr) {
            throw file.error("missing tensor '" + spec.name + "' (shape " + shapeText(spec.shape) + ")");
        }
        if (info->shape != spec.shape) {
            throw file.error("tensor '" + spec.name + "' has shape " + shapeText(info->shape) +
                             ", but the model's metadata needs " + shapeText(spec.shape));
        }
        bool plain = info->type == TensorType::eF32 || info->type == TensorType::eF16 || info->type == TensorType::eBF16;
        if (!spec.isMatrix && !plain) {
            throw file.error("vector '" + spec.name + "' has type " + toString(info->type) +
                             "; norm weights, biases and RoPE factors must be F32, F16 or BF16");
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
