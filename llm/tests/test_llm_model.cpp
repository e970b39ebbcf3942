// SPDX-License-Identifier: Apache-2.0
// The LLM runner's forward pass on the device (kp::llm::Model and Context)
// against a host reference written out here in double precision: a small
// Llama of random weights in every weight type, the other layouts (Llama
// 3.1's rope_freqs, linear RoPE scaling, qwen2's biases, qwen3's query/key
// norms and head size) read from files, the logits of every position, decode steps against teacher forcing, the argmax on the device,
// a model file read back, and clear errors for bad input.
//
// Tolerances (largest absolute difference over the largest reference
// logit) are python/tests/test_llm_model.py's: the reference reads the same
// (dequantized) weights and rounds keys and values to f16 as the KV cache
// does, so what remains is the kernels' rounding: none on lavapipe's f32
// paths (about 1e-6), f16 operands on cooperative-matrix GEMMs, 8-bit
// activations on the integer dot-product mat-vec.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "TestSupport.hpp"

#include "RandomWeights.hpp"
#include "kompute/llm/GgufWriter.hpp"
#include "kompute/llm/Llm.hpp"

namespace {

using kp::llm::Context;
using kp::llm::ContextOptions;
using kp::llm::Logits;
using kp::llm::Model;
using kp::llm::ModelConfig;
using kp::llm::TensorType;

const std::vector<uint32_t> kPrompt{ 1, 40, 270, 7, 100, 5, 61, 200, 33, 12, 280, 3 };
const uint64_t kSeed = 7;

/** Small enough for lavapipe; rows of whole 32-weight blocks. */
ModelConfig
smallConfig()
{
    ModelConfig c;
    c.name = "test";
    c.contextLength = 64;
    c.embeddingLength = 64;
    c.blockCount = 2;
    c.feedForwardLength = 128;
    c.headCount = 4;
    c.headCountKv = 2;
    c.headDim = 16;
    c.ropeDims = 16;
    c.vocabSize = 300;
    c.validate();
    return c;
}

/** smallConfig() with rows of whole 256-weight super-blocks (and of whole
 * groups of 8 Q8_0/Q4_0 blocks: the int-dot mat-vec's quantized-x mode). */
ModelConfig
superBlockConfig()
{
    ModelConfig c = smallConfig();
    c.embeddingLength = 256;
    c.feedForwardLength = 512;
    c.headDim = 64;
    c.ropeDims = 64;
    c.validate();
    return c;
}

double
tolerance(TensorType type)
{
    switch (type) {
        case TensorType::eF32: return 5e-3;
        case TensorType::eF16: return 2e-2;
        case TensorType::eBF16: return 4e-2;
        default: return 3e-2;
    }
}

// --- The host reference --------------------------------------------------------------

float
halfToFloat(const uint8_t* bytes)
{
    uint16_t bits;
    std::memcpy(&bits, bytes, 2);
    return kp::float16_t::toFloat(bits);
}

/** A weight's values, dequantized from its GGUF bytes (the block layouts of
 * the GGUF format, written out independently of the runner; the other block
 * types through kp::dequantize, which python/tests/test_kernels_quant.py
 * checks against the gguf package's). */
std::vector<double>
decode(const std::vector<uint8_t>& bytes, TensorType type, uint64_t count)
{
    std::vector<double> out(count);
    kp::WeightFormat format = kp::WeightFormat::eNone;
    for (auto f : { kp::WeightFormat::eQ4_1, kp::WeightFormat::eQ5_0, kp::WeightFormat::eQ5_1,
                    kp::WeightFormat::eQ2_K, kp::WeightFormat::eQ3_K, kp::WeightFormat::eQ4_K,
                    kp::WeightFormat::eQ5_K, kp::WeightFormat::eQ6_K, kp::WeightFormat::eIQ4_NL,
                    kp::WeightFormat::eIQ4_XS }) {
        std::string name = kp::toString(f);
        for (char& ch : name) {
            ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        }
        if (name == kp::llm::toString(type)) {
            format = f;
        }
    }
    if (format != kp::WeightFormat::eNone) {
        std::vector<float> values = kp::dequantize(format, bytes.data(), count / kp::blockWeights(format));
        return std::vector<double>(values.begin(), values.end());
    }
    for (uint64_t i = 0; i < count; ++i) {
        switch (type) {
            case TensorType::eF32: {
                float v;
                std::memcpy(&v, bytes.data() + 4 * i, 4);
                out[i] = v;
                break;
            }
            case TensorType::eF16: out[i] = halfToFloat(bytes.data() + 2 * i); break;
            case TensorType::eBF16: {
                uint32_t wide = uint32_t(bytes[2 * i]) << 16 | uint32_t(bytes[2 * i + 1]) << 24;
                float v;
                std::memcpy(&v, &wide, 4);
                out[i] = v;
                break;
            }
            case TensorType::eQ8_0: {
                const uint8_t* block = bytes.data() + (i / 32) * 34;
                out[i] = double(static_cast<int8_t>(block[2 + i % 32])) * halfToFloat(block);
                break;
            }
            case TensorType::eQ4_0: {
                const uint8_t* block = bytes.data() + (i / 32) * 18;
                uint32_t j = i % 32;
                uint32_t q = j < 16 ? block[2 + j] & 0x0F : block[2 + j - 16] >> 4;
                out[i] = (double(q) - 8.0) * halfToFloat(block);
                break;
            }
            default: ADD_FAILURE() << "no reference for type " << kp::llm::toString(type);
        }
    }
    return out;
}

/** The weights Model::random makes, as doubles ([out][in] row-major). */
struct HostWeights
{
    std::map<std::string, std::vector<double>> byName;
    const std::vector<double>& operator[](const std::string& name) const { return byName.at(name); }
};

HostWeights
hostWeights(const ModelConfig& c, const kp::llm::WeightMix& mix, uint64_t seed)
{
    HostWeights w;
    uint64_t index = 0;
    for (const kp::llm::WeightSpec& spec : kp::llm::weightSpecs(c)) {
        uint64_t count = spec.shape[0] * (spec.shape.size() > 1 ? spec.shape[1] : 1);
        TensorType t = mix.typeOf(spec, c);
        w.byName[spec.name] = decode(kp::llm::randomWeight(spec, t, seed, ++index), t, count);
    }
    return w;
}

HostWeights
hostWeights(const ModelConfig& c, TensorType type, uint64_t seed)
{
    return hostWeights(c, kp::llm::WeightMix::pure(type), seed);
}

using Rows = std::vector<std::vector<double>>;

/** y[t][out] = x[t][in] . W[out][in]^T */
Rows
linear(const Rows& x, const std::vector<double>& w, size_t out)
{
    Rows y(x.size(), std::vector<double>(out, 0.0));
    for (size_t t = 0; t < x.size(); ++t) {
        const size_t in = x[t].size();
        for (size_t o = 0; o < out; ++o) {
            double s = 0;
            for (size_t i = 0; i < in; ++i) {
                s += x[t][i] * w[o * in + i];
            }
            y[t][o] = s;
        }
    }
    return y;
}

Rows
rmsNorm(const Rows& x, const std::vector<double>& w, double eps)
{
    Rows y = x;
    for (auto& row : y) {
        double squares = 0;
        for (double v : row) {
            squares += v * v;
        }
        double inv = 1.0 / std::sqrt(squares / double(row.size()) + eps);
        for (size_t i = 0; i < row.size(); ++i) {
            row[i] *= inv * w[i];
        }
    }
    return y;
}

/** Pair i of each head turns by p * freqScale * theta^(-2i/dims) / factor_i:
 * adjacent pairs in GGUF's llama layout, (i, i + dims/2) in qwen's. */
void
rope(Rows& x, const ModelConfig& c, uint32_t heads, const std::vector<double>* factors)
{
    for (size_t p = 0; p < x.size(); ++p) {
        for (uint32_t h = 0; h < heads; ++h) {
            for (uint32_t i = 0; i < c.ropeDims / 2; ++i) {
                double angle = double(p) * c.ropeFreqScale * std::pow(double(c.ropeTheta), -2.0 * i / c.ropeDims);
                if (factors) {
                    angle /= (*factors)[i];
                }
                size_t first = c.ropeNeox ? i : 2 * i;
                size_t second = c.ropeNeox ? i + c.ropeDims / 2 : 2 * i + 1;
                double& a = x[p][h * c.headDim + first];
                double& b = x[p][h * c.headDim + second];
                double a0 = a, b0 = b;
                a = a0 * std::cos(angle) - b0 * std::sin(angle);
                b = a0 * std::sin(angle) + b0 * std::cos(angle);
            }
        }
    }
}

/** Each head of each row RMS-normalized with weight `w` (qwen3). */
void
headNorm(Rows& x, const std::vector<double>& w, uint32_t heads, uint32_t headDim, double eps)
{
    for (auto& row : x) {
        for (uint32_t h = 0; h < heads; ++h) {
            double squares = 0;
            for (uint32_t i = 0; i < headDim; ++i) {
                squares += row[h * headDim + i] * row[h * headDim + i];
            }
            double inv = 1.0 / std::sqrt(squares / headDim + eps);
            for (uint32_t i = 0; i < headDim; ++i) {
                row[h * headDim + i] *= inv * w[i];
            }
        }
    }
}

void
addBias(Rows& x, const std::vector<double>& bias)
{
    for (auto& row : x) {
        for (size_t i = 0; i < row.size(); ++i) {
            row[i] += bias[i];
        }
    }
}

void
roundToHalf(Rows& x)
{
    for (auto& row : x) {
        for (double& v : row) {
            v = kp::float16_t::toFloat(kp::float16_t::fromFloat(static_cast<float>(v)));
        }
    }
}

/** Logits [tokens][vocabulary] of teacher forcing `tokens` from position 0. */
Rows
referenceLogits(const ModelConfig& c, const HostWeights& w, const std::vector<uint32_t>& tokens)
{
    const size_t n = tokens.size(), d = c.embeddingLength, hd = c.headDim;
    const size_t group = c.headCount / c.headCountKv;
    Rows x(n);
    for (size_t t = 0; t < n; ++t) {
        const auto& e = w["token_embd.weight"];
        x[t].assign(e.begin() + tokens[t] * d, e.begin() + (tokens[t] + 1) * d);
    }
    for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
        const std::string b = "blk." + std::to_string(layer) + ".";
        Rows h = rmsNorm(x, w[b + "attn_norm.weight"], c.rmsEpsilon);
        Rows q = linear(h, w[b + "attn_q.weight"], c.headCount * hd);
        Rows k = linear(h, w[b + "attn_k.weight"], c.headCountKv * hd);
        Rows v = linear(h, w[b + "attn_v.weight"], c.headCountKv * hd);
        if (c.attentionBias) {
            addBias(q, w[b + "attn_q.bias"]);
            addBias(k, w[b + "attn_k.bias"]);
            addBias(v, w[b + "attn_v.bias"]);
        }
        if (c.qkNorm) {
            headNorm(q, w[b + "attn_q_norm.weight"], c.headCount, c.headDim, c.rmsEpsilon);
            headNorm(k, w[b + "attn_k_norm.weight"], c.headCountKv, c.headDim, c.rmsEpsilon);
        }
        const std::vector<double>* factors = c.ropeFreqFactors ? &w["rope_freqs.weight"] : nullptr;
        rope(q, c, c.headCount, factors);
        rope(k, c, c.headCountKv, factors);
        roundToHalf(k); // the KV cache is f16
        roundToHalf(v);
        Rows attention(n, std::vector<double>(c.headCount * hd, 0.0));
        for (size_t t = 0; t < n; ++t) {
            for (uint32_t head = 0; head < c.headCount; ++head) {
                const size_t kvHead = head / group;
                std::vector<double> scores(t + 1);
                double top = -INFINITY;
                for (size_t p = 0; p <= t; ++p) {
                    double s = 0;
                    for (size_t i = 0; i < hd; ++i) {
                        s += q[t][head * hd + i] * k[p][kvHead * hd + i];
                    }
                    scores[p] = s / std::sqrt(double(hd));
                    top = std::max(top, scores[p]);
                }
                double sum = 0;
                for (double& s : scores) {
                    s = std::exp(s - top);
                    sum += s;
                }
                for (size_t p = 0; p <= t; ++p) {
                    for (size_t i = 0; i < hd; ++i) {
                        attention[t][head * hd + i] += scores[p] / sum * v[p][kvHead * hd + i];
                    }
                }
            }
        }
        Rows o = linear(attention, w[b + "attn_output.weight"], d);
        for (size_t t = 0; t < n; ++t) {
            for (size_t i = 0; i < d; ++i) {
                x[t][i] += o[t][i];
            }
        }
        h = rmsNorm(x, w[b + "ffn_norm.weight"], c.rmsEpsilon);
        Rows gate = linear(h, w[b + "ffn_gate.weight"], c.feedForwardLength);
        Rows up = linear(h, w[b + "ffn_up.weight"], c.feedForwardLength);
        for (size_t t = 0; t < n; ++t) {
            for (size_t i = 0; i < c.feedForwardLength; ++i) {
                double g = gate[t][i];
                gate[t][i] = g / (1.0 + std::exp(-g)) * up[t][i];
            }
        }
        Rows down = linear(gate, w[b + "ffn_down.weight"], d);
        for (size_t t = 0; t < n; ++t) {
            for (size_t i = 0; i < d; ++i) {
                x[t][i] += down[t][i];
            }
        }
    }
    Rows h = rmsNorm(x, w["output_norm.weight"], c.rmsEpsilon);
    return linear(h, w[c.tiedOutput ? "token_embd.weight" : "output.weight"], c.vocabSize);
}

/** A part of a temporary file's name of its own, so that test processes
 * running side by side do not write one file. */
std::string
uniqueSuffix()
{
    return "-" + std::to_string(std::random_device{}());
}

/** Largest absolute difference over the largest reference value, over rows
 * [first, first + rows of `actual`) of `expected`. */
double
relativeError(const std::vector<float>& actual, const Rows& expected, size_t first = 0)
{
    const size_t vocab = expected[0].size();
    EXPECT_EQ(actual.size() % vocab, 0u);
    double diff = 0, scale = 0;
    for (size_t i = 0; i < actual.size(); ++i) {
        double e = expected[first + i / vocab][i % vocab];
        if (!std::isfinite(actual[i])) {
            return INFINITY; // (std::max would pass a NaN over)
        }
        diff = std::max(diff, std::abs(double(actual[i]) - e));
        scale = std::max(scale, std::abs(e));
    }
    return diff / scale;
}

uint32_t
argmax(const float* row, size_t count)
{
    return static_cast<uint32_t>(std::max_element(row, row + count) - row);
}

/** The labels of the last evaluation's profiled operations, each followed
 * by "; " (ContextOptions::profile). */
std::string
profileLabels(const Context& context)
{
    std::string labels;
    for (const auto& op : context.profile()) {
        labels += op.label + "; ";
    }
    return labels;
}

// --- The tests ------------------------------------------------------------------------

class LlmForwardPass : public kp_test::KomputeParamTest<TensorType>
{};

TEST_P(LlmForwardPass, MatchesTheHostReference)
{
    const TensorType type = GetParam();
    const ModelConfig c = smallConfig();
    const Rows expected = referenceLogits(c, hostWeights(c, type, kSeed), kPrompt);
    auto model = Model::random(mgr(), c, type, kSeed);
    EXPECT_EQ(model->weightType(), type);

    // Every position of one prompt step (the GEMM path).
    ContextOptions options;
    options.contextSize = 32;
    options.profile = true;
    options.attentionInsideContext = 32; // (every decode step attends inside the qkv product where it can)
    // (Every mat-vec mode rotating inside the product where the layout
    // allows, whichever mode this device's products take.)
    kp_test::ScopedEnv everywhere("KOMPUTE_ENV_ROPE_INSIDE", "all");
    Context context(model, options);
    std::vector<float> logits;
    context.evaluate(kPrompt, Logits::eAll, &logits);
    ASSERT_EQ(logits.size(), kPrompt.size() * c.vocabSize);
    EXPECT_LT(relativeError(logits, expected), tolerance(type));
    EXPECT_EQ(context.position(), kPrompt.size());

    // A prompt of 5 tokens, then one token per step (the mat-vec path and
    // the decode attention over the cache the earlier steps wrote).
    context.reset();
    std::vector<uint32_t> head(kPrompt.begin(), kPrompt.begin() + 5);
    context.evaluate(head, Logits::eLast, &logits);
    EXPECT_LT(relativeError(logits, expected, 4), tolerance(type));
    const size_t recorded = context.recordedSteps();
    for (size_t t = 5; t < kPrompt.size(); ++t) {
        context.evaluate({ kPrompt[t] }, Logits::eLast, &logits);
        EXPECT_LT(relativeError(logits, expected, t), tolerance(type)) << "position " << t;
    }
    EXPECT_EQ(context.recordedSteps(), recorded + 1) << "one recorded sequence serves every decode step";

    // The argmax on the device picks what the logits say.
    context.reset();
    context.evaluate(head, Logits::eLast, &logits);
    context.reset();
    EXPECT_EQ(context.evaluateGreedy(head), argmax(logits.data(), logits.size()));
    context.evaluate({ kPrompt[5] }, Logits::eLast, &logits);
    uint32_t next = argmax(logits.data(), logits.size());
    context.reset();
    context.evaluate(head, Logits::eNone, nullptr);
    EXPECT_EQ(context.evaluateGreedy({ kPrompt[5] }), next);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes,
                         LlmForwardPass,
                         ::testing::Values(TensorType::eF32, TensorType::eF16, TensorType::eBF16, TensorType::eQ8_0,
                                           TensorType::eQ4_0),
                         [](const auto& info) { return kp::llm::toString(info.param); });

/** The layouts besides Llama 1/2/3's: each changes what the step records. */
struct Variant
{
    const char* name;
    std::function<void(ModelConfig&)> apply;
};

const Variant kVariants[] = {
    { "llama31", [](ModelConfig& c) { c.ropeFreqFactors = true; c.ropeTheta = 500000.0f; } },
    { "llamaLinearRope", [](ModelConfig& c) { c.ropeFreqScale = 0.25f; } },
    { "qwen2", [](ModelConfig& c) { c.setArchitecture("qwen2"); c.tiedOutput = true; } },
    { "qwen3",
      [](ModelConfig& c) {
          c.setArchitecture("qwen3");
          c.headDim = 32; // attention.key_length: not width / heads
          c.ropeDims = 32;
          c.ropeTheta = 1000000.0f;
      } },
    { "qwen3PartialRope",
      [](ModelConfig& c) {
          c.setArchitecture("qwen3");
          c.headDim = 8;
          c.ropeDims = 4;
          c.tiedOutput = true;
      } },
};

class LlmArchitecture : public kp_test::KomputeParamTest<std::tuple<size_t, TensorType>>
{};

TEST_P(LlmArchitecture, MatchesTheHostReferenceFromAFile)
{
    const Variant& variant = kVariants[std::get<0>(GetParam())];
    const TensorType type = std::get<1>(GetParam());
    ModelConfig c = smallConfig();
    variant.apply(c);
    c.validate();
    const Rows expected = referenceLogits(c, hostWeights(c, type, kSeed), kPrompt);

    // Through a file: what the loader reads (architecture keys, key_length,
    // rope_freqs, biases, norms) must make the same model.
    const std::string path = ::testing::TempDir() + "kompute-llm-arch-" + variant.name + uniqueSuffix() + ".gguf";
    kp::llm::writeRandomModel(path, c, type, kSeed);
    kp::llm::GgufFile file = kp::llm::GgufFile::open(path);
    const ModelConfig read = ModelConfig::fromGguf(file);
    EXPECT_EQ(read.architecture, c.architecture);
    EXPECT_EQ(read.headDim, c.headDim);
    EXPECT_EQ(read.ropeFreqFactors, c.ropeFreqFactors);
    EXPECT_EQ(read.ropeFreqScale, c.ropeFreqScale);
    EXPECT_EQ(read.tiedOutput, c.tiedOutput);
    auto model = Model::load(mgr(), file);
    std::remove(path.c_str());
    EXPECT_EQ(model->weightType(), type);
    EXPECT_NE(model->typeMix().find(kp::llm::toString(type)), std::string::npos) << model->typeMix();

    ContextOptions options;
    options.contextSize = 32;
    options.profile = true;
    options.attentionInsideContext = 32; // (every decode step attends inside the qkv product where it can)
    // (Every mat-vec mode rotating inside the product where the layout
    // allows, whichever mode this device's products take.)
    kp_test::ScopedEnv everywhere("KOMPUTE_ENV_ROPE_INSIDE", "all");
    Context context(model, options);
    std::vector<float> logits;
    context.evaluate(kPrompt, Logits::eAll, &logits);
    ASSERT_EQ(logits.size(), kPrompt.size() * c.vocabSize);
    EXPECT_LT(relativeError(logits, expected), tolerance(type));

    // Decoding: one token per step after a prompt of 5.
    context.reset();
    std::vector<uint32_t> head(kPrompt.begin(), kPrompt.begin() + 5);
    context.evaluate(head, Logits::eLast, &logits);
    EXPECT_LT(relativeError(logits, expected, 4), tolerance(type));
    for (size_t t = 5; t < kPrompt.size(); ++t) {
        context.evaluate({ kPrompt[t] }, Logits::eLast, &logits);
        EXPECT_LT(relativeError(logits, expected, t), tolerance(type)) << "position " << t;
    }
    // A decode step rotates and caches inside the qkv product where the
    // pairs are neighbours and no q/k norm comes between (the Llamas; the
    // Qwens rotate halves: OpRoPECache after the product), here on every
    // mode (KOMPUTE_ENV_ROPE_INSIDE=all), and at this short context attends
    // inside it too (MatMulParams::attentionC).
    std::string labels = profileLabels(context);
    bool inside = !c.ropeNeox && !c.qkNorm;
    EXPECT_EQ(labels.find("rope_kv_cache and attention inside") != std::string::npos, inside) << labels;
    EXPECT_EQ(labels.find("rope_kv_cache (OpRoPECache)") != std::string::npos, !inside) << labels;
    EXPECT_EQ(labels.find("attention (OpAttention)") != std::string::npos, !inside) << labels;

    // The reference without what the variant adds is far off: the test
    // sees whether it is applied.
    ModelConfig plain = smallConfig();
    plain.headDim = c.headDim;
    plain.ropeDims = c.ropeDims;
    plain.tiedOutput = c.tiedOutput;
    plain.ropeTheta = c.ropeTheta;
    HostWeights w = hostWeights(c, type, kSeed);
    double without = relativeError(logits, referenceLogits(plain, w, kPrompt), kPrompt.size() - 1);
    EXPECT_GT(without, std::max(0.05, 3 * tolerance(type)));
    std::printf("%s %s: %.3g off the reference without it\n", variant.name, kp::llm::toString(type).c_str(), without);
}

INSTANTIATE_TEST_SUITE_P(Layouts,
                         LlmArchitecture,
                         ::testing::Combine(::testing::Range<size_t>(0, sizeof(kVariants) / sizeof(kVariants[0])),
                                            ::testing::Values(TensorType::eF32, TensorType::eQ8_0, TensorType::eQ4_0)),
                         [](const auto& info) {
                             return std::string(kVariants[std::get<0>(info.param)].name) + "_" +
                                    kp::llm::toString(std::get<1>(info.param));
                         });

// The other block types and llama-quantize's mixes, on a model whose rows
// are whole 256-weight super-blocks: every position of a prompt step (the
// GEMM) and decode steps (the mat-vec) against the host reference.
class LlmBlockTypes : public kp_test::KomputeParamTest<std::string>
{};

TEST_P(LlmBlockTypes, MatchTheHostReference)
{
    const ModelConfig c = superBlockConfig();
    const kp::llm::WeightMix mix = kp::llm::WeightMix::parse(GetParam());
    const Rows expected = referenceLogits(c, hostWeights(c, mix, kSeed), kPrompt);
    auto model = Model::random(mgr(), c, mix, kSeed);
    Context context(model, ContextOptions{ 32 });
    std::vector<float> logits;
    context.evaluate(kPrompt, Logits::eAll, &logits);
    for (size_t t = 0; t < kPrompt.size(); ++t) {
        std::vector<float> row(logits.begin() + t * c.vocabSize, logits.begin() + (t + 1) * c.vocabSize);
        EXPECT_LT(relativeError(row, expected, t), 4e-2) << "position " << t;
    }
    context.reset();
    std::vector<uint32_t> head(kPrompt.begin(), kPrompt.begin() + 9);
    context.evaluate(head, Logits::eNone, nullptr);
    for (size_t t = 9; t < kPrompt.size(); ++t) {
        context.evaluate({ kPrompt[t] }, Logits::eLast, &logits);
        EXPECT_LT(relativeError(logits, expected, t), 4e-2) << "decode position " << t;
    }
}

INSTANTIATE_TEST_SUITE_P(Mixes,
                         LlmBlockTypes,
                         ::testing::Values("q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl",
                                           "iq4_xs", "q4_k_m", "q5_k_m", "q4_0/q6_k"),
                         [](const auto& info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '/', '_');
                             return name;
                         });

TEST(LlmWeightMix, GivesEachTensorLlamaQuantizesType)
{
    ModelConfig c = ModelConfig::named("llama-8b");
    auto typeOf = [&](const kp::llm::WeightMix& mix, const std::string& name) {
        for (const auto& spec : kp::llm::weightSpecs(c)) {
            if (spec.name == name) {
                return mix.typeOf(spec, c);
            }
        }
        ADD_FAILURE() << "no weight " << name;
        return TensorType::eF32;
    };
    auto q4km = kp::llm::WeightMix::parse("Q4_K_M");
    EXPECT_EQ(q4km.name(), "q4_k_m");
    EXPECT_EQ(typeOf(q4km, "output.weight"), TensorType::eQ6_K);
    EXPECT_EQ(typeOf(q4km, "token_embd.weight"), TensorType::eQ4_K);
    EXPECT_EQ(typeOf(q4km, "blk.0.attn_q.weight"), TensorType::eQ4_K);
    // 32 layers: more bits for layers 0-3, 28-31 and 4 + 3i + 2 between.
    for (int layer : { 0, 3, 6, 9, 28, 31 }) {
        EXPECT_EQ(typeOf(q4km, "blk." + std::to_string(layer) + ".attn_v.weight"), TensorType::eQ6_K) << layer;
        EXPECT_EQ(typeOf(q4km, "blk." + std::to_string(layer) + ".ffn_down.weight"), TensorType::eQ6_K) << layer;
    }
    for (int layer : { 4, 5, 7, 26 }) {
        EXPECT_EQ(typeOf(q4km, "blk." + std::to_string(layer) + ".attn_v.weight"), TensorType::eQ4_K) << layer;
    }
    EXPECT_EQ(typeOf(q4km, "blk.3.attn_norm.weight"), TensorType::eF32);
    auto q40 = kp::llm::WeightMix::parse("q4_0/q6_k");
    EXPECT_EQ(q40.name(), "q4_0/q6_k");
    EXPECT_EQ(typeOf(q40, "output.weight"), TensorType::eQ6_K);
    EXPECT_EQ(typeOf(q40, "blk.1.ffn_down.weight"), TensorType::eQ4_0);
    // Rows that are not whole super-blocks fall back as llama-quantize does.
    ModelConfig narrow = smallConfig();
    for (const auto& spec : kp::llm::weightSpecs(narrow)) {
        if (spec.name == "blk.0.attn_q.weight") {
            EXPECT_EQ(kp::llm::WeightMix::parse("q4_k").typeOf(spec, narrow), TensorType::eQ5_0);
            EXPECT_EQ(kp::llm::WeightMix::parse("q6_k").typeOf(spec, narrow), TensorType::eQ8_0);
        }
    }
    EXPECT_THROW(kp::llm::WeightMix::parse("q4_k_x"), kp::Error);
}

class LlmContext : public kp_test::KomputeTest
{};

/** The decode tests' models: `body(type, quant, expected, model)` for
 * random F16, Q8_0 and Q4_0 models of `c` (the quantized ones only where
 * `manager`'s device has integer dot products, which the quantized-x
 * mat-vec needs), with the host's logits of teacher forcing kPrompt.
 * `quantDisabled`, if given, is in KOMPUTE_ENV_DISABLE around the
 * quantized models' body and their making (what the device is asked to
 * store depends on it). */
template<typename Body>
void
forEachDecodeType(kp::Manager& manager, const ModelConfig& c, const char* quantDisabled, Body&& body)
{
    for (TensorType type : { TensorType::eF16, TensorType::eQ8_0, TensorType::eQ4_0 }) {
        SCOPED_TRACE(kp::llm::toString(type));
        bool quant = type != TensorType::eF16;
        if (quant && !manager.capabilities().integerDotProduct.supported) {
            continue; // (no integer dot products: no quantized-x mode)
        }
        kp_test::DisablePaths disable(quant ? quantDisabled : nullptr);
        const Rows expected = referenceLogits(c, hostWeights(c, type, kSeed), kPrompt);
        auto model = Model::random(manager, c, type, kSeed);
        body(type, quant, expected, model);
    }
}

TEST_F(LlmContext, PromptsSplitIntoStepsGiveTheSameLogits)
{
    const ModelConfig c = smallConfig();
    auto model = Model::random(mgr(), c, TensorType::eF32, kSeed);
    std::vector<float> whole, split;
    Context(model, ContextOptions{ 32, 512, false, 0 }).evaluate(kPrompt, Logits::eAll, &whole);
    Context chunked(model, ContextOptions{ 32, 5, false, 0 });
    chunked.evaluate(kPrompt, Logits::eAll, &split);
    ASSERT_EQ(split.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
        ASSERT_NEAR(split[i], whole[i], 1e-4) << "logit " << i;
    }
    std::vector<float> last;
    chunked.reset();
    chunked.evaluate(kPrompt, Logits::eLast, &last);
    ASSERT_EQ(last.size(), c.vocabSize);
    for (size_t i = 0; i < last.size(); ++i) {
        ASSERT_NEAR(last[i], whole[whole.size() - c.vocabSize + i], 1e-4) << "logit " << i;
    }
}

// The activations only some steps need (f32 gate and up, SwiGLU's output)
// are made when a step first needs them and made again, larger, for a
// longer step: a decode step, then a prompt step of 6 tokens (which, with
// gemm-swiglu off, needs 6 rows of gate and up where decoding needed one),
// then decoding again, each against the host's logits.
TEST_F(LlmContext, ActivationsAreMadeForTheStepsThatNeedThem)
{
    const ModelConfig c = superBlockConfig();
    const TensorType type = TensorType::eF16;
    const Rows expected = referenceLogits(c, hostWeights(c, type, kSeed), kPrompt);
    auto model = Model::random(mgr(), c, type, kSeed);
    for (const char* disabled : { static_cast<const char*>(nullptr), "gemm-swiglu" }) {
        SCOPED_TRACE(disabled ? disabled : "default");
        kp_test::DisablePaths disable(disabled);
        Context context(model, ContextOptions{ 32, 512, true, 0 });
        std::vector<float> logits;
        context.evaluate({ kPrompt[0] }, Logits::eLast, &logits);
        EXPECT_LT(relativeError(logits, expected, 0), tolerance(type));
        context.evaluate(std::vector<uint32_t>(kPrompt.begin() + 1, kPrompt.begin() + 7), Logits::eLast, &logits);
        EXPECT_LT(relativeError(logits, expected, 6), tolerance(type));
        context.evaluate({ kPrompt[7] }, Logits::eLast, &logits);
        EXPECT_LT(relativeError(logits, expected, 7), tolerance(type));
    }
}

// Decode steps with the RMSNorms inside the mat-vecs that read them
// (MatMulParams::normA): F16 weights in the float row mode, Q8_0 and Q4_0
// in the int-dot quantized-x mode (rows of 256 weights; "matvec-float"
// makes lavapipe take it too): the logits match the host reference and the
// same steps with the norms apart ("matvec-norm" off), and the profile
// shows each norm inside its product, the RoPE and the KV-cache write
// inside the qkv product with its norm (MatMulParams::ropeC: this model
// rotates neighbouring pairs, and has no q/k norm) where the product is the
// float mat-vec (F16) or the int-dot one (unless KOMPUTE_ENV_ROPE_INSIDE
// is "float"), and apart where the norms are or where "matvec-rope" is off
// (and the prompt step's gate and up as one product with the SwiGLU in its
// epilogue, MatMulParams::swigluC, or, where "gemm-swiglu" is off, one
// product and OpSwiGLU); the decode's gate and up with the SwiGLU in their
// epilogue by default (the int-dot product's quantized for the down
// product; the float one's as floats, not with KOMPUTE_ENV_DECODE_GLU=1),
// or (with KOMPUTE_ENV_DECODE_GLU=0, and with "matvec-glu" off) the down
// product computing it (the int-dot one in its x pass).
TEST_F(LlmContext, DecodeNormalizesInsideTheMatVec)
{
    const ModelConfig c = superBlockConfig();
    forEachDecodeType(mgr(), c, nullptr, [&](TensorType type, bool quant, const Rows& expected, const auto& model) {
        std::map<bool, std::vector<float>> last;
        const std::string mode = quant ? "matvec-float" : "";
        const std::string comma = quant ? "," : "";
        // (disabled paths, KOMPUTE_ENV_ROPE_INSIDE: every product rotates
        // inside by default and with "all"; with "float" the int-dot one
        // records OpRoPECache after it)
        // (and KOMPUTE_ENV_DECODE_GLU)
        std::vector<std::tuple<std::string, const char*, const char*>> runs = {
            { mode, nullptr, nullptr },
            { mode + comma + "matvec-norm,gemm-swiglu", nullptr, nullptr },
            { mode + comma + "matvec-rope", nullptr, nullptr },
            { mode, "float", nullptr }
        };
        if (quant) {
            runs.push_back({ mode, "all", nullptr });
        }
        runs.push_back({ mode, nullptr, "1" });
        runs.push_back({ mode, nullptr, "0" });
        runs.push_back({ mode, nullptr, "all" });
        runs.push_back({ mode + comma + "matvec-glu", nullptr, "all" });
        for (const auto& [disabled, ropeInside, gluOn] : runs) {
            SCOPED_TRACE(disabled + " KOMPUTE_ENV_ROPE_INSIDE=" + (ropeInside ? ropeInside : "(unset)") +
                         " KOMPUTE_ENV_DECODE_GLU=" + (gluOn ? gluOn : "(unset)"));
            kp_test::DisablePaths disable(disabled.c_str());
            kp_test::ScopedEnv inside("KOMPUTE_ENV_ROPE_INSIDE", ropeInside);
            kp_test::ScopedEnv gluEnv("KOMPUTE_ENV_DECODE_GLU", gluOn);
            bool folded = disabled.find("matvec-norm") == std::string::npos;
            bool rotated = folded && disabled.find("matvec-rope") == std::string::npos &&
                           !(quant && ropeInside != nullptr && std::string(ropeInside) == "float");
            ContextOptions options{ 32, 512, true, 0 };
            options.attentionInsideContext = 32; // (and the attention inside the qkv product with them)
            Context context(model, options);
            std::vector<float> logits;
            std::vector<uint32_t> head(kPrompt.begin(), kPrompt.begin() + 5);
            context.evaluate(head, Logits::eLast, &logits);
            // (The profile is the last evaluation's.) The prompt step: gate
            // and up in one product, the SwiGLU in its epilogue or, with
            // gemm-swiglu off, over the halves of its rows.
            std::string promptLabels = profileLabels(context);
            bool swigluInside = disabled.find("gemm-swiglu") == std::string::npos;
            EXPECT_EQ(promptLabels.find("ffn_gate_up_swiglu (OpMatMul); ") != std::string::npos, swigluInside)
              << promptLabels;
            EXPECT_EQ(promptLabels.find("ffn_gate_up (OpMatMul); ") != std::string::npos, !swigluInside) << promptLabels;
            EXPECT_EQ(promptLabels.find("swiglu (OpSwiGLU)") != std::string::npos, !swigluInside) << promptLabels;
            EXPECT_EQ(promptLabels.find("ffn_up (OpMatMul)"), std::string::npos) << promptLabels;
            for (size_t t = 5; t < kPrompt.size(); ++t) {
                context.evaluate({ kPrompt[t] }, Logits::eLast, &logits);
                EXPECT_LT(relativeError(logits, expected, t), tolerance(type)) << "position " << t;
            }
            last[folded] = logits;
            std::string labels = profileLabels(context);
            EXPECT_EQ(labels.find("output (OpMatMul, output_norm inside)") != std::string::npos, folded) << labels;
            // The decode: gate and up with the SwiGLU in the epilogue
            // (MatMulParams::swigluC) on the int-dot mat-vec with its int8
            // blocks, read by ffn_down as its x (quantizeC, quantizedA), by
            // default and with KOMPUTE_ENV_DECODE_GLU=1 or all; on the float
            // mat-vec by default and with "all" (ffn_down reads the SwiGLU's
            // row of floats); unless "matvec-glu" is off or the norm is
            // apart; else the down product computes the SwiGLU itself
            // (swigluA; on the int-dot mat-vec in its x pass).
            std::string gluValue = gluOn ? gluOn : "all";
            bool glu = folded && (quant ? gluValue != "0" : gluValue == "all") &&
                       disabled.find("matvec-glu") == std::string::npos;
            EXPECT_EQ(labels.find("ffn_gate_up_swiglu (OpMatMul, ffn_norm inside)") != std::string::npos, glu)
              << labels;
            EXPECT_EQ(labels.find("ffn_down (OpMatMul, x quantized by ffn_gate_up_swiglu)") != std::string::npos,
                      glu && quant)
              << labels;
            EXPECT_EQ(labels.find("ffn_down (OpMatMul); ") != std::string::npos, glu && !quant) << labels;
            EXPECT_EQ(labels.find("ffn_gate_up (OpMatMul, ffn_norm inside)") != std::string::npos, folded && !glu)
              << labels;
            EXPECT_EQ(labels.find("ffn_down_swiglu (OpMatMul)") != std::string::npos, !glu) << labels;
            EXPECT_EQ(labels.find("attn_qkv (OpMatMul, attn_norm, rope_kv_cache and attention inside)") !=
                        std::string::npos,
                      rotated)
              << labels;
            EXPECT_EQ(labels.find("attention (OpAttention)") != std::string::npos, !rotated) << labels;
            EXPECT_EQ(labels.find("attn_qkv (OpMatMul, attn_norm inside)") != std::string::npos, folded && !rotated)
              << labels;
            EXPECT_EQ(labels.find("rope_kv_cache (OpRoPECache)") != std::string::npos, !rotated) << labels;
        }
        const auto& a = last[true];
        const auto& b = last[false];
        ASSERT_EQ(a.size(), b.size());
        double diff = 0, scale = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            diff = std::max(diff, std::abs(double(a[i]) - b[i]));
            scale = std::max(scale, std::abs(double(b[i])));
        }
        EXPECT_LT(diff / scale, tolerance(type));
    });
}

// ContextOptions::dispatchChain: the decode steps' mat-vecs ordered by
// their shaders instead of by barriers (MatMulParams::chained) give the
// logits the barriers give, and the host reference's, in F16 (the float
// mat-vec), Q8_0 and Q4_0 (the int-dot quantized-x mode, with the x pass
// before ffn_down; "matvec-float" makes lavapipe take it), with
// KOMPUTE_ENV_DECODE_CHAIN overriding the option either way. The
// synchronization validation cannot see ordering done by the shaders'
// atomics: it reports each chained read after a write as a hazard. So this
// test runs in CTest's test_llm_model_chain, with the layer's core checks
// and without it (KOMPUTE_TEST_SYNC_VALIDATION=0), and skips itself
// elsewhere; every other test checks the barriers the sequences record.
TEST_F(LlmContext, DecodeChainGivesTheLogitsOfBarriers)
{
    if (kp_test::syncValidation()) {
        GTEST_SKIP() << "runs without the synchronization validation (test_llm_model_chain)";
    }
    kp::Manager* manager = &mgr();
    const ModelConfig c = superBlockConfig();
    forEachDecodeType(*manager, c, "matvec-float", [&](TensorType type, bool, const Rows& expected, const auto& model) {
        std::map<std::string, std::vector<std::vector<float>>> decoded;
        for (const char* run : { "barriers", "chain", "env 0", "env 1" }) {
            SCOPED_TRACE(run);
            std::string name = run;
            ContextOptions options{ 32 };
            options.dispatchChain = name == "chain" || name == "env 0";
            // (The chain records OpAttention: so do the barriers' steps
            // here, so that the same kernels run in both.)
            options.attentionInsideContext = 0;
            kp_test::ScopedEnv env("KOMPUTE_ENV_DECODE_CHAIN",
                                   name == "env 0" ? "0" : (name == "env 1" ? "1" : nullptr));
            Context context(model, options);
            std::vector<float> logits;
            std::vector<uint32_t> head(kPrompt.begin(), kPrompt.begin() + 5);
            context.evaluate(head, Logits::eLast, &logits);
            for (size_t t = 5; t < kPrompt.size(); ++t) {
                context.evaluate({ kPrompt[t] }, Logits::eLast, &logits);
                EXPECT_LT(relativeError(logits, expected, t), tolerance(type)) << "position " << t;
                decoded[name].push_back(logits);
            }
            // Greedy decoding reads the chain's word back beside the argmax.
            EXPECT_LT(context.evaluateGreedy({ kPrompt[5] }), c.vocabSize);
        }
        // The same kernels' arithmetic, ordered otherwise: the same logits.
        for (const char* run : { "chain", "env 1" }) {
            EXPECT_EQ(decoded[run], decoded["barriers"]) << run;
        }
        EXPECT_EQ(decoded["env 0"], decoded["barriers"]);
    });
}

// Decode steps attend inside the query/key/value product
// (MatMulParams::attentionC) while the context, the token's position + 1,
// is at most ContextOptions::attentionInsideContext, and record
// OpAttention after it from there on: every step's logits match the host
// reference, and the profile of each step shows which one ran.
// KOMPUTE_ENV_ATTENTION_INSIDE overrides the option (0: never; a value that
// is no count is ignored), and "matvec-attention" off records OpAttention.
TEST_F(LlmContext, DecodeAttendsInsideTheQkvProductUpToItsContext)
{
    const ModelConfig c = superBlockConfig();
    forEachDecodeType(mgr(), c, nullptr, [&](TensorType type, bool quant, const Rows& expected, const auto& model) {
        struct Run
        {
            const char* disabled;
            const char* env;
            uint32_t limit;  // the context up to which a step attends inside
            uint32_t option; // the option in force (a step of each kind asked for is recorded)
        };
        for (const Run& run : std::vector<Run>{ { "", nullptr, 7, 7 },
                                                { "", "9", 9, 9 },
                                                { "", "0", 0, 0 },
                                                { "", "seven", 7, 7 },
                                                { "matvec-attention", nullptr, 0, 7 } }) {
            SCOPED_TRACE(std::string(run.disabled) + " KOMPUTE_ENV_ATTENTION_INSIDE=" + (run.env ? run.env : "(unset)"));
            std::string disabled = std::string(quant ? "matvec-float" : "") + (quant && *run.disabled ? "," : "") +
                                   run.disabled;
            kp_test::DisablePaths disable(disabled.c_str());
            kp_test::ScopedEnv env("KOMPUTE_ENV_ATTENTION_INSIDE", run.env);
            ContextOptions options{ 32, 512, true, 0 };
            options.attentionInsideContext = 7;
            Context context(model, options);
            std::vector<float> logits;
            std::vector<uint32_t> head(kPrompt.begin(), kPrompt.begin() + 5);
            context.evaluate(head, Logits::eLast, &logits);
            EXPECT_LT(relativeError(logits, expected, 4), tolerance(type));
            for (size_t t = 5; t < kPrompt.size(); ++t) {
                context.evaluate({ kPrompt[t] }, Logits::eLast, &logits);
                EXPECT_LT(relativeError(logits, expected, t), tolerance(type)) << "position " << t;
                std::string labels = profileLabels(context);
                bool inside = t < run.limit;
                EXPECT_EQ(labels.find("rope_kv_cache and attention inside") != std::string::npos, inside)
                  << "position " << t << ": " << labels;
                EXPECT_EQ(labels.find("attention (OpAttention)") != std::string::npos, !inside)
                  << "position " << t << ": " << labels;
            }
            // The prompt step, and a decode step of each kind asked for.
            size_t kinds = (run.option > 5 ? 1 : 0) + (run.option < kPrompt.size() ? 1 : 0);
            EXPECT_EQ(context.recordedSteps(), 1 + kinds);
        }
    });
}

// Q4_0 matrices of rows of whole groups of 8 blocks go to the device
// grouped where the mat-vec takes integer dot products
// (kp::preferredWeightFormat, kp::groupBlocks; the kernels read Q4_0X8),
// Q8_0 ones and the others as GGUF stores them;
// KOMPUTE_ENV_DISABLE=grouped-blocks while the model is made keeps every
// matrix as stored. Both
// give the host reference's logits, prompt (GEMM) and decode (mat-vec:
// the int-dot quantized-x mode where the device has integer dot products,
// "matvec-float" makes lavapipe take it), and each other's.
TEST_F(LlmContext, QuantizedMatricesGoToTheDeviceGrouped)
{
    for (TensorType type : { TensorType::eQ8_0, TensorType::eQ4_0 }) {
        SCOPED_TRACE(kp::llm::toString(type));
        auto small = Model::random(mgr(), smallConfig(), type, kSeed);
        EXPECT_FALSE(small->layers()[0].wDown.grouped) << "rows of 64 weights are not whole groups";
        const ModelConfig c = superBlockConfig();
        const Rows expected = referenceLogits(c, hostWeights(c, type, kSeed), kPrompt);
        kp_test::DisablePaths intDot(mgr().capabilities().integerDotProduct.supported ? "matvec-float" : "");
        const bool groups = mgr().capabilities().integerDotProduct.supported;
        std::map<bool, std::vector<float>> decoded;
        for (bool grouped : { true, false }) {
            SCOPED_TRACE(grouped ? "grouped" : "as stored");
            std::shared_ptr<Model> model;
            {
                kp_test::DisablePaths off(grouped ? "" : "grouped-blocks");
                model = Model::random(mgr(), c, type, kSeed);
            }
            for (const auto* w : { &model->layers()[1].wq, &model->layers()[1].wGate, &model->layers()[1].wDown,
                                   &model->tokenEmbedding(), &model->output() }) {
                EXPECT_EQ(w->grouped, grouped && groups && type == TensorType::eQ4_0);
            }
            Context context(model, ContextOptions{ 32 });
            std::vector<float> logits;
            context.evaluate(kPrompt, Logits::eAll, &logits);
            for (size_t t = 0; t < kPrompt.size(); ++t) {
                std::vector<float> row(logits.begin() + t * c.vocabSize, logits.begin() + (t + 1) * c.vocabSize);
                EXPECT_LT(relativeError(row, expected, t), tolerance(type)) << "position " << t;
            }
            context.reset();
            std::vector<uint32_t> head(kPrompt.begin(), kPrompt.begin() + 5);
            context.evaluate(head, Logits::eNone, nullptr);
            for (size_t t = 5; t < kPrompt.size(); ++t) {
                context.evaluate({ kPrompt[t] }, Logits::eLast, &logits);
                EXPECT_LT(relativeError(logits, expected, t), tolerance(type)) << "decode position " << t;
            }
            decoded[grouped] = logits;
        }
        double diff = 0, scale = 0;
        for (size_t i = 0; i < decoded[true].size(); ++i) {
            diff = std::max(diff, std::abs(double(decoded[true][i]) - decoded[false][i]));
            scale = std::max(scale, std::abs(double(decoded[false][i])));
        }
        EXPECT_LT(diff / scale, 1e-3) << "the same weights, summed in another order";
    }
}

TEST_F(LlmContext, AModelFileGivesWhatTheSameRandomModelGives)
{
    const ModelConfig c = smallConfig();
    const std::string path = ::testing::TempDir() + "kompute-llm-model-test" + uniqueSuffix() + ".gguf";
    for (const char* mixName : { "q8_0", "q4_k_m" }) {
        SCOPED_TRACE(mixName);
        auto mix = kp::llm::WeightMix::parse(mixName);
        kp::llm::writeRandomModel(path, c, mix, kSeed);
        kp::llm::GgufFile file = kp::llm::GgufFile::open(path);
        auto loaded = Model::load(mgr(), file);
        auto random = Model::random(mgr(), c, mix, kSeed);
        EXPECT_EQ(loaded->weightBytes(), random->weightBytes());
        EXPECT_EQ(file.tensor("output.weight").type, mix.typeOf({ "output.weight", { 64, 300 }, true }, c));
        std::vector<float> fromFile, fromMemory;
        Context(loaded, ContextOptions{ 32 }).evaluate(kPrompt, Logits::eAll, &fromFile);
        Context(random, ContextOptions{ 32 }).evaluate(kPrompt, Logits::eAll, &fromMemory);
        EXPECT_EQ(fromFile, fromMemory);
        std::remove(path.c_str());
    }
}

TEST_F(LlmContext, BadInputIsAClearErrorAndChangesNothing)
{
    const ModelConfig c = smallConfig();
    auto model = Model::random(mgr(), c, TensorType::eF16, kSeed);
    Context context(model, ContextOptions{ 16 });
    std::vector<float> logits;
    auto expectError = [&](const std::function<void()>& call, const std::string& fragment) {
        try {
            call();
            ADD_FAILURE() << "no error; expected one with '" << fragment << "'";
        } catch (const kp::Error& error) {
            EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
        }
    };
    context.evaluate({ 1, 2, 3 }, Logits::eNone, nullptr);
    expectError([&] { context.evaluate({ 4, 300 }, Logits::eLast, &logits); },
                "token id 300 is outside the vocabulary of 300 tokens");
    expectError([&] { context.evaluateGreedy(std::vector<uint32_t>(14, 1)); },
                "the context is full: 3 of 16 tokens are cached and 14 more were given");
    expectError([&] { context.evaluateGreedy({}); }, "no tokens to evaluate");
    expectError([&] { context.evaluate({ 1 }, Logits::eLast, nullptr); }, "no vector to put the logits in");
    EXPECT_EQ(context.position(), 3u);
    // What was cached is still there: the next token sees the same context,
    // bit for bit what the same two steps give on a fresh context. (The
    // same steps, not {1, 2, 3, 4} in one: a prompt step runs the GEMM,
    // which on cooperative matrices rounds activations to f16, and a decode
    // step the mat-vec, so those two differ by rounding on such devices.)
    context.evaluate({ 4 }, Logits::eLast, &logits);
    std::vector<float> untouched;
    Context fresh(model, ContextOptions{ 16 });
    fresh.evaluate({ 1, 2, 3 }, Logits::eNone, nullptr);
    fresh.evaluate({ 4 }, Logits::eLast, &untouched);
    EXPECT_EQ(logits, untouched);
    expectError([&] { Context unbatched(model, ContextOptions{ 16, 0 }); }, "the batch size must be at least 1");
    const uint64_t maxRange = mgr().getDeviceProperties().limits.maxStorageBufferRange;
    const uint64_t rowBytes = uint64_t(c.headCountKv) * c.headDim * 2;
    const uint32_t tooMany = static_cast<uint32_t>(std::min<uint64_t>(UINT32_MAX, maxRange / rowBytes + 1));
    expectError([&] { Context huge(model, ContextOptions{ tooMany, 1 }); }, "use a smaller context size");
    expectError([&] { Model::random(mgr(), c, TensorType::eQ8_K, 1); }, "random weights of type Q8_K");
}

} // namespace
