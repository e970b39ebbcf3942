// SPDX-License-Identifier: Apache-2.0
#include "kompute/llm/GgufWriter.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "RandomWeights.hpp"
#include "Unicode.hpp"

namespace kp {
namespace llm {

namespace {

class Bytes
{
  public:
    template<typename T>
    void put(T value)
    {
        size_t at = data.size();
        data.resize(at + sizeof(T));
        std::memcpy(data.data() + at, &value, sizeof(T));
    }
    void putString(const std::string& text)
    {
        put<uint64_t>(text.size());
        data.insert(data.end(), text.begin(), text.end());
    }
    void putValue(const GgufValue& value)
    {
        switch (value.type) {
            case GgufValueType::eUInt8: put<uint8_t>(static_cast<uint8_t>(std::get<uint64_t>(value.value))); break;
            case GgufValueType::eInt8: put<int8_t>(static_cast<int8_t>(std::get<int64_t>(value.value))); break;
            case GgufValueType::eUInt16: put<uint16_t>(static_cast<uint16_t>(std::get<uint64_t>(value.value))); break;
            case GgufValueType::eInt16: put<int16_t>(static_cast<int16_t>(std::get<int64_t>(value.value))); break;
            case GgufValueType::eUInt32: put<uint32_t>(static_cast<uint32_t>(std::get<uint64_t>(value.value))); break;
            case GgufValueType::eInt32: put<int32_t>(static_cast<int32_t>(std::get<int64_t>(value.value))); break;
            case GgufValueType::eUInt64: put<uint64_t>(std::get<uint64_t>(value.value)); break;
            case GgufValueType::eInt64: put<int64_t>(std::get<int64_t>(value.value)); break;
            case GgufValueType::eFloat32: put<float>(static_cast<float>(std::get<double>(value.value))); break;
            case GgufValueType::eFloat64: put<double>(std::get<double>(value.value)); break;
            case GgufValueType::eBool: put<uint8_t>(std::get<bool>(value.value) ? 1 : 0); break;
            case GgufValueType::eString: putString(std::get<std::string>(value.value)); break;
            case GgufValueType::eArray: {
                const GgufArray& array = std::get<GgufArray>(value.value);
                put<uint32_t>(static_cast<uint32_t>(array.elementType));
                put<uint64_t>(array.elements.size());
                for (const GgufValue& element : array.elements) {
                    putValue(element);
                }
                break;
            }
        }
    }
    void pad(uint64_t alignment) { data.resize((data.size() + alignment - 1) / alignment * alignment, 0); }

    std::vector<uint8_t> data;
};

GgufValue
scalar(GgufValueType type, decltype(GgufValue::value) value)
{
    GgufValue v;
    v.type = type;
    v.value = std::move(value);
    return v;
}

} // namespace

GgufWriter::GgufWriter(uint64_t alignment)
  : mAlignment(alignment)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        throw kp::Error("the GGUF alignment must be a power of two");
    }
    if (alignment != 32) {
        setUInt32("general.alignment", static_cast<uint32_t>(alignment));
    }
}

void
GgufWriter::set(const std::string& key, GgufValue value)
{
    for (GgufKeyValue& entry : mMetadata) {
        if (entry.key == key) {
            entry.value = std::move(value);
            return;
        }
    }
    mMetadata.push_back({ key, std::move(value) });
}

void
GgufWriter::setString(const std::string& key, const std::string& value)
{
    set(key, scalar(GgufValueType::eString, value));
}

void
GgufWriter::setUInt32(const std::string& key, uint32_t value)
{
    set(key, scalar(GgufValueType::eUInt32, uint64_t(value)));
}

void
GgufWriter::setFloat32(const std::string& key, float value)
{
    set(key, scalar(GgufValueType::eFloat32, double(value)));
}

void
GgufWriter::setBool(const std::string& key, bool value)
{
    set(key, scalar(GgufValueType::eBool, value));
}

void
GgufWriter::setStringArray(const std::string& key, const std::vector<std::string>& values)
{
    GgufArray array{ GgufValueType::eString, {} };
    for (const std::string& v : values) {
        array.elements.push_back(scalar(GgufValueType::eString, v));
    }
    set(key, scalar(GgufValueType::eArray, std::move(array)));
}

void
GgufWriter::setFloat32Array(const std::string& key, const std::vector<float>& values)
{
    GgufArray array{ GgufValueType::eFloat32, {} };
    for (float v : values) {
        array.elements.push_back(scalar(GgufValueType::eFloat32, double(v)));
    }
    set(key, scalar(GgufValueType::eArray, std::move(array)));
}

void
GgufWriter::setInt32Array(const std::string& key, const std::vector<int32_t>& values)
{
    GgufArray array{ GgufValueType::eInt32, {} };
    for (int32_t v : values) {
        array.elements.push_back(scalar(GgufValueType::eInt32, int64_t(v)));
    }
    set(key, scalar(GgufValueType::eArray, std::move(array)));
}

void
GgufWriter::addTensor(const std::string& name, std::vector<uint64_t> shape, TensorType type, std::vector<uint8_t> bytes)
{
    TensorTypeLayout layout = layoutOf(type);
    uint64_t elements = 1;
    for (uint64_t extent : shape) {
        elements *= extent;
    }
    if (layout.blockSize == 0 || shape.empty() || shape[0] % layout.blockSize != 0 ||
        elements / layout.blockSize * layout.blockBytes != bytes.size()) {
        throw kp::Error("tensor '" + name + "': " + std::to_string(bytes.size()) + " bytes do not fit its shape and type " +
                        toString(type));
    }
    mTensors.push_back({ name, std::move(shape), type, std::move(bytes) });
}

void
GgufWriter::write(const std::string& path) const
{
    Bytes header;
    header.put<uint32_t>(0x46554747);
    header.put<uint32_t>(3);
    header.put<uint64_t>(mTensors.size());
    header.put<uint64_t>(mMetadata.size());
    for (const GgufKeyValue& entry : mMetadata) {
        header.putString(entry.key);
        header.put<uint32_t>(static_cast<uint32_t>(entry.value.type));
        header.putValue(entry.value);
    }
    uint64_t offset = 0;
    for (const Tensor& t : mTensors) {
        header.putString(t.name);
        header.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
        for (uint64_t extent : t.shape) {
            header.put<uint64_t>(extent);
        }
        header.put<uint32_t>(static_cast<uint32_t>(t.type));
        header.put<uint64_t>(offset);
        offset += (t.bytes.size() + mAlignment - 1) / mAlignment * mAlignment;
    }
    header.pad(mAlignment);

    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(header.data.data()), static_cast<std::streamsize>(header.data.size()));
    const std::vector<char> zeros(mAlignment, 0);
    for (const Tensor& t : mTensors) {
        out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
        uint64_t padding = (mAlignment - t.bytes.size() % mAlignment) % mAlignment;
        out.write(zeros.data(), static_cast<std::streamsize>(padding));
    }
    out.close();
    if (!out) {
        throw kp::Error(path + ": writing failed: " + std::strerror(errno));
    }
}

void
writeRandomModel(const std::string& path, const ModelConfig& config, const WeightMix& mix, uint64_t seed)
{
    config.validate();
    if (config.vocabSize < 258) {
        throw kp::Error("a random model file needs a vocabulary of at least 258 tokens (the 256 bytes and two specials)");
    }
    GgufWriter writer;
    const std::string a = config.architecture + ".";
    writer.setString("general.architecture", config.architecture);
    writer.setString("general.name", config.name.empty() ? "random" : config.name);
    writer.setUInt32(a + "context_length", config.contextLength);
    writer.setUInt32(a + "embedding_length", config.embeddingLength);
    writer.setUInt32(a + "block_count", config.blockCount);
    writer.setUInt32(a + "feed_forward_length", config.feedForwardLength);
    writer.setUInt32(a + "attention.head_count", config.headCount);
    writer.setUInt32(a + "attention.head_count_kv", config.headCountKv);
    if (uint64_t(config.headDim) * config.headCount != config.embeddingLength) {
        writer.setUInt32(a + "attention.key_length", config.headDim);
        writer.setUInt32(a + "attention.value_length", config.headDim);
    }
    writer.setUInt32(a + "rope.dimension_count", config.ropeDims);
    writer.setFloat32(a + "rope.freq_base", config.ropeTheta);
    if (config.ropeFreqScale != 1.0f) {
        writer.setString(a + "rope.scaling.type", "linear");
        writer.setFloat32(a + "rope.scaling.factor", 1.0f / config.ropeFreqScale);
    }
    writer.setFloat32(a + "attention.layer_norm_rms_epsilon", config.rmsEpsilon);
    writer.setUInt32(a + "vocab_size", config.vocabSize);

    // Byte-level BPE: two control tokens, the 256 bytes (GPT-2's printable
    // characters), then reserved control tokens; no merges.
    std::vector<std::string> tokens{ "<|begin_of_text|>", "<|end_of_text|>" };
    std::vector<int32_t> types{ 3, 3 };
    std::vector<uint32_t> codePoints = unicode::byteLevelCodePoints();
    for (uint32_t b = 0; b < 256; ++b) {
        std::string text;
        uint32_t cp = codePoints[b];
        if (cp < 0x80) {
            text.push_back(static_cast<char>(cp));
        } else {
            text.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            text.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
        tokens.push_back(text);
        types.push_back(1);
    }
    while (tokens.size() < config.vocabSize) {
        tokens.push_back("<|reserved_" + std::to_string(tokens.size()) + "|>");
        types.push_back(3);
    }
    writer.setString("tokenizer.ggml.model", "gpt2");
    writer.setString("tokenizer.ggml.pre", "llama-bpe");
    writer.setStringArray("tokenizer.ggml.tokens", tokens);
    writer.setInt32Array("tokenizer.ggml.token_type", types);
    writer.setStringArray("tokenizer.ggml.merges", {});
    writer.setUInt32("tokenizer.ggml.bos_token_id", 0);
    writer.setUInt32("tokenizer.ggml.eos_token_id", 1);
    writer.setBool("tokenizer.ggml.add_bos_token", true);

    uint64_t index = 0;
    for (const WeightSpec& spec : weightSpecs(config)) {
        ++index;
        TensorType type = mix.typeOf(spec, config);
        std::vector<uint8_t> bytes = randomWeight(spec, type, seed, index);
        writer.addTensor(spec.name, spec.shape, type, std::move(bytes));
    }
    writer.write(path);
}

void
writeRandomModel(const std::string& path, const ModelConfig& config, TensorType type, uint64_t seed)
{
    writeRandomModel(path, config, WeightMix::pure(type), seed);
}

} // namespace llm
} // namespace kp
