// SPDX-License-Identifier: Apache-2.0
#include "kompute/llm/WeightMix.hpp"

#include <cctype>
#include <cstdlib>

#include "kompute/Errors.hpp"

namespace kp {
namespace llm {

namespace {

std::string
lowerCase(const std::string& text)
{
    std::string lower;
    for (char c : text) {
        lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return lower;
}

// The layer of "blk.N.<name>", or -1.
int
layerOf(const std::string& name)
{
    if (name.rfind("blk.", 0) != 0) {
        return -1;
    }
    return std::atoi(name.c_str() + 4);
}

bool
endsWith(const std::string& text, const std::string& suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and
// every third layer between.
bool
moreBits(int layer, int layers)
{
    return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// llama-quantize's fallback for rows that are not whole super-blocks.
TensorType
fitRows(TensorType type, uint64_t cols)
{
    if (cols % 256 == 0) {
        return type;
    }
    switch (type) {
        case TensorType::eQ2_K:
        case TensorType::eQ3_K: return TensorType::eIQ4_NL;
        case TensorType::eQ4_K: return TensorType::eQ5_0;
        case TensorType::eQ5_K: return TensorType::eQ5_1;
        case TensorType::eQ6_K: return TensorType::eQ8_0;
        case TensorType::eIQ4_XS: return TensorType::eIQ4_NL;
        default: return type;
    }
}

} // namespace

WeightMix
WeightMix::pure(TensorType type)
{
    WeightMix mix;
    mix.base = type;
    mix.output = type;
    return mix;
}

std::string
WeightMix::name() const
{
    switch (kind) {
        case Kind::eQ4_K_M: return "q4_k_m";
        case Kind::eQ5_K_M: return "q5_k_m";
        case Kind::eQ4_K_S: return "q4_k_s";
        case Kind::eQ5_K_S: return "q5_k_s";
        case Kind::ePure: break;
    }
    std::string text = lowerCase(toString(base));
    return output == base ? text : text + "/" + lowerCase(toString(output));
}

WeightMix
WeightMix::parse(const std::string& text)
{
    std::string lower = lowerCase(text);
    struct Named
    {
        const char* name;
        Kind kind;
        TensorType base;
    };
    for (const Named& n : { Named{ "q4_k_m", Kind::eQ4_K_M, TensorType::eQ4_K },
                            Named{ "q5_k_m", Kind::eQ5_K_M, TensorType::eQ5_K },
                            Named{ "q4_k_s", Kind::eQ4_K_S, TensorType::eQ4_K },
                            Named{ "q5_k_s", Kind::eQ5_K_S, TensorType::eQ5_K } }) {
        if (lower == n.name) {
            WeightMix mix;
            mix.kind = n.kind;
            mix.base = n.base;
            mix.output = TensorType::eQ6_K;
            return mix;
        }
    }
    size_t slash = lower.find('/');
    try {
        if (slash == std::string::npos) {
            return pure(parseWeightType(lower));
        }
        WeightMix mix = pure(parseWeightType(lower.substr(0, slash)));
        mix.output = parseWeightType(lower.substr(slash + 1));
        return mix;
    } catch (const kp::Error& error) {
        throw kp::Error(std::string(error.what()) +
                        "; or a mix: q4_k_m, q5_k_m, q4_k_s, q5_k_s, or TYPE/OUTPUT_TYPE such as q4_0/q6_k");
    }
}

TensorType
WeightMix::typeOf(const WeightSpec& spec, const ModelConfig& config) const
{
    if (!spec.isMatrix) {
        return TensorType::eF32;
    }
    uint64_t cols = spec.shape[0];
    if (spec.name == "output.weight") {
        return fitRows(output, cols);
    }
    TensorType type = base;
    int layer = layerOf(spec.name);
    int layers = static_cast<int>(config.blockCount);
    bool attnV = endsWith(spec.name, ".attn_v.weight");
    bool ffnDown = endsWith(spec.name, ".ffn_down.weight");
    switch (kind) {
        case Kind::eQ4_K_M:
        case Kind::eQ5_K_M:
            if ((attnV || ffnDown) && moreBits(layer, layers)) {
                type = TensorType::eQ6_K;
            }
            break;
        case Kind::eQ4_K_S:
            if ((attnV && layer < 4) || (ffnDown && layer < layers / 8)) {
                type = TensorType::eQ5_K;
            }
            break;
        case Kind::eQ5_K_S:
        case Kind::ePure: break;
    }
    return fitRows(type, cols);
}

} // namespace llm
} // namespace kp
