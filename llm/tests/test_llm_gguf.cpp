// SPDX-License-Identifier: Apache-2.0
// The GGUF reader and the model's metadata checks: every value type, tensor
// infos and alignment, and clear errors for every kind of broken file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "GgufWriter.hpp"
#include "kompute/llm/Gguf.hpp"
#include "kompute/llm/GgufWriter.hpp"
#include "kompute/llm/ModelConfig.hpp"
#include "kompute/llm/Tokenizer.hpp"

using kp::llm::FormatError;
using kp::llm::GgufFile;
using kp::llm::GgufValueType;
using kp::llm::ModelConfig;
using kp::llm::TensorType;
using kp::llm::test::GgufWriter;

namespace {

std::vector<uint8_t>
f32Bytes(size_t count, float start = 0.0f)
{
    std::vector<uint8_t> out;
    for (size_t i = 0; i < count; ++i) {
        GgufWriter::put<float>(out, start + static_cast<float>(i));
    }
    return out;
}

/** Expects a FormatError whose message contains `part`. */
template<typename F>
void
expectFormatError(F&& action, const std::string& part)
{
    try {
        action();
        FAIL() << "no error; expected one containing '" << part << "'";
    } catch (const FormatError& error) {
        EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what() << "\n  expected: " << part;
    }
}

GgufWriter
everyType()
{
    GgufWriter w;
    auto scalar = [&](const std::string& key, uint32_t type, auto value) {
        std::vector<uint8_t> kv;
        GgufWriter::putString(kv, key);
        GgufWriter::put<uint32_t>(kv, type);
        GgufWriter::put(kv, value);
        w.addRaw(kv);
    };
    scalar("u8", 0, uint8_t(200));
    scalar("i8", 1, int8_t(-100));
    scalar("u16", 2, uint16_t(60000));
    scalar("i16", 3, int16_t(-30000));
    w.addU32("u32", 4000000000u);
    w.addI32("i32", -2000000000);
    w.addF32("f32", 1.5f);
    w.addBool("bool", true);
    w.addString("string", "h\xC3\xA9llo");
    w.addU64("u64", 1ull << 40);
    scalar("i64", 11, int64_t(-(1ll << 40)));
    w.addF64("f64", 0.25);
    w.addStringArray("strings", { "a", "", "ccc" });
    w.addArray<float>("floats", 6, { 1.0f, -2.0f });
    w.addArray<int32_t>("ints", 5, { 3, -4, 5 });
    // An array of two arrays of uint8.
    std::vector<uint8_t> nested;
    GgufWriter::putString(nested, "nested");
    GgufWriter::put<uint32_t>(nested, 9);
    GgufWriter::put<uint32_t>(nested, 9);
    GgufWriter::put<uint64_t>(nested, 2);
    for (int k = 0; k < 2; ++k) {
        GgufWriter::put<uint32_t>(nested, 0);
        GgufWriter::put<uint64_t>(nested, 1);
        GgufWriter::put<uint8_t>(nested, uint8_t(7 + k));
    }
    w.addRaw(nested);
    w.addTensor("a", { 4, 2 }, 0, f32Bytes(8));
    w.addTensor("b", { 3 }, 0, f32Bytes(3, 100.0f));
    std::vector<uint8_t> q8(34 * 2, 1); // 64 weights of Q8_0
    w.addTensor("q", { 64 }, 8, q8);
    return w;
}

} // namespace

TEST(Gguf, ReadsEveryValueTypeAndTheTensors)
{
    for (uint32_t version : { 2u, 3u }) {
        GgufWriter w = everyType();
        w.version = version;
        GgufFile file = GgufFile::fromBytes(w.bytes(), "every.gguf");
        EXPECT_EQ(file.version(), version);
        EXPECT_EQ(file.alignment(), 32u);
        EXPECT_EQ(file.getUInt("u8"), 200u);
        EXPECT_EQ(file.getInt("i8"), -100);
        EXPECT_EQ(file.getUInt("u16"), 60000u);
        EXPECT_EQ(file.getInt("i16"), -30000);
        EXPECT_EQ(file.getUInt("u32"), 4000000000u);
        EXPECT_EQ(file.getInt("i32"), -2000000000);
        EXPECT_EQ(file.getFloat("f32"), 1.5);
        EXPECT_TRUE(file.getBool("bool"));
        EXPECT_EQ(file.getString("string"), "h\xC3\xA9llo");
        EXPECT_EQ(file.getUInt("u64"), 1ull << 40);
        EXPECT_EQ(file.getInt("i64"), -(1ll << 40));
        EXPECT_EQ(file.getFloat("f64"), 0.25);
        EXPECT_EQ(file.getFloat("u32"), 4000000000.0); // integers read as floats
        EXPECT_EQ(file.getStringArray("strings"), (std::vector<std::string>{ "a", "", "ccc" }));
        EXPECT_EQ(file.getFloatArray("floats"), (std::vector<double>{ 1.0, -2.0 }));
        EXPECT_EQ(file.getIntArray("ints"), (std::vector<int64_t>{ 3, -4, 5 }));
        const auto& nested = std::get<kp::llm::GgufArray>(file.find("nested")->value);
        ASSERT_EQ(nested.elements.size(), 2u);
        EXPECT_EQ(nested.elementType, GgufValueType::eArray);
        EXPECT_EQ(std::get<uint64_t>(std::get<kp::llm::GgufArray>(nested.elements[1].value).elements[0].value), 8u);
        EXPECT_EQ(file.metadata().size(), 16u);
        EXPECT_EQ(file.metadata()[0].key, "u8");

        ASSERT_EQ(file.tensors().size(), 3u);
        const auto& a = file.tensor("a");
        EXPECT_EQ(a.shape, (std::vector<uint64_t>{ 4, 2 }));
        EXPECT_EQ(a.type, TensorType::eF32);
        EXPECT_EQ(a.byteSize, 32u);
        const auto& b = file.tensor("b");
        const float* values = reinterpret_cast<const float*>(file.tensorData(b));
        EXPECT_EQ(values[2], 102.0f);
        EXPECT_EQ(b.offset % 32, 0u);
        EXPECT_EQ(file.tensor("q").byteSize, 68u);
        EXPECT_EQ(file.findTensor("missing"), nullptr);
    }
}

TEST(Gguf, HonoursGeneralAlignment)
{
    GgufWriter w;
    w.alignment = 64;
    w.addU32("general.alignment", 64);
    w.addTensor("x", { 3 }, 0, f32Bytes(3));
    w.addTensor("y", { 5 }, 0, f32Bytes(5, 10.0f));
    GgufFile file = GgufFile::fromBytes(w.bytes());
    EXPECT_EQ(file.alignment(), 64u);
    EXPECT_EQ(file.tensor("y").offset, 64u);
    EXPECT_EQ(reinterpret_cast<const float*>(file.tensorData(file.tensor("y")))[4], 14.0f);

    GgufWriter bad;
    bad.addU32("general.alignment", 48);
    expectFormatError([&] { GgufFile::fromBytes(bad.bytes()); }, "power of two");
}

TEST(Gguf, OpensFilesFromDisk)
{
    std::string path = ::testing::TempDir() + "/kompute_llm_test.gguf";
    {
        std::vector<uint8_t> bytes = everyType().bytes();
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    GgufFile file = GgufFile::open(path);
    EXPECT_EQ(file.name(), path);
    EXPECT_EQ(reinterpret_cast<const float*>(file.tensorData(file.tensor("b")))[0], 100.0f);
    std::remove(path.c_str());
    expectFormatError([&] { GgufFile::open(path); }, "cannot open");
    {
        std::ofstream empty(path, std::ios::binary);
    }
    expectFormatError([&] { GgufFile::open(path); }, "empty");
    std::remove(path.c_str());
}

TEST(Gguf, WrongMagicAndVersions)
{
    std::vector<uint8_t> bytes = everyType().bytes();
    bytes[0] = 'P';
    bytes[1] = 'K';
    expectFormatError([&] { GgufFile::fromBytes(bytes, "x.zip"); }, "x.zip: not a GGUF file: it starts with 'PKUF'");
    for (uint32_t version : { 1u, 4u, 0x03000000u }) {
        GgufWriter w = everyType();
        w.version = version;
        expectFormatError([&] { GgufFile::fromBytes(w.bytes()); },
                          version == 1 ? "version 1 is not supported"
                                       : (version == 4 ? "unsupported GGUF version 4" : "big-endian"));
    }
}

TEST(Gguf, EveryTruncationIsAClearError)
{
    std::vector<uint8_t> bytes = everyType().bytes();
    // The last tensor's data ends 32 bytes before the padded end; cutting the
    // padding alone leaves a valid file.
    for (size_t length = 0; length + 60 < bytes.size(); ++length) {
        std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
        EXPECT_THROW(GgufFile::fromBytes(cut), FormatError) << "length " << length;
    }
    std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 64);
    expectFormatError([&] { GgufFile::fromBytes(cut); }, "tensor 'q' (Q8_0, 68 bytes at data offset 64) ends past the end");
}

TEST(Gguf, CorruptBytesNeverCrash)
{
    std::vector<uint8_t> bytes = everyType().bytes();
    std::mt19937 random(7);
    for (int trial = 0; trial < 3000; ++trial) {
        std::vector<uint8_t> corrupt = bytes;
        for (int k = 0; k < 3; ++k) {
            corrupt[random() % corrupt.size()] = static_cast<uint8_t>(random());
        }
        try {
            GgufFile file = GgufFile::fromBytes(corrupt);
            for (const auto& info : file.tensors()) {
                (void)file.tensorData(info);
            }
        } catch (const FormatError&) {
        }
    }
}

TEST(Gguf, BadTensorInfos)
{
    {
        GgufWriter w;
        w.addTensor("a", { 4 }, 0, f32Bytes(4));
        w.addTensor("b", { 4 }, 0, f32Bytes(4));
        expectFormatError([&] { GgufFile::fromBytes(w.bytes({ 0, 8 })); }, "not a multiple of the alignment");
        // 'a' claims 64 floats but 'b' starts after 32 bytes.
        GgufWriter big;
        big.addTensor("a", { 64 }, 0, f32Bytes(8));
        big.addTensor("b", { 64 }, 0, f32Bytes(64));
        expectFormatError([&] { GgufFile::fromBytes(big.bytes({ 0, 32 })); }, "tensors 'a' and 'b' overlap");
    }
    GgufWriter rows;
    rows.addTensor("q", { 40 }, 8, std::vector<uint8_t>(68));
    expectFormatError([&] { GgufFile::fromBytes(rows.bytes()); }, "not a multiple of its 32-element blocks");
    GgufWriter unknown;
    unknown.addTensor("u", { 4 }, 99, std::vector<uint8_t>(16));
    expectFormatError([&] { GgufFile::fromBytes(unknown.bytes()); }, "unknown type type 99");
    GgufWriter dims;
    dims.addTensor("d", { 1, 1, 1, 1, 1 }, 0, f32Bytes(1));
    expectFormatError([&] { GgufFile::fromBytes(dims.bytes()); }, "has 5 dimensions");
    GgufWriter twice;
    twice.addTensor("t", { 1 }, 0, f32Bytes(1));
    twice.addTensor("t", { 1 }, 0, f32Bytes(1));
    expectFormatError([&] { GgufFile::fromBytes(twice.bytes()); }, "tensor 't' appears twice");
}

TEST(Gguf, BadMetadata)
{
    GgufWriter dup;
    dup.addU32("k", 1);
    dup.addU32("k", 2);
    expectFormatError([&] { GgufFile::fromBytes(dup.bytes()); }, "'k' appears twice");
    GgufWriter type;
    std::vector<uint8_t> kv;
    GgufWriter::putString(kv, "weird");
    GgufWriter::put<uint32_t>(kv, 13);
    type.addRaw(kv);
    expectFormatError([&] { GgufFile::fromBytes(type.bytes()); }, "'weird' has unknown value type 13");
    GgufWriter huge;
    std::vector<uint8_t> arr;
    GgufWriter::putString(arr, "huge");
    GgufWriter::put<uint32_t>(arr, 9);
    GgufWriter::put<uint32_t>(arr, 10);
    GgufWriter::put<uint64_t>(arr, 1ull << 60);
    huge.addRaw(arr);
    expectFormatError([&] { GgufFile::fromBytes(huge.bytes()); }, "'huge' has 1152921504606846976 elements");

    GgufFile file = GgufFile::fromBytes(everyType().bytes(), "m.gguf");
    expectFormatError([&] { file.getUInt("absent"); }, "m.gguf: missing metadata key 'absent'");
    expectFormatError([&] { file.getString("u32"); }, "'u32' is uint32, expected a string");
    expectFormatError([&] { file.getUInt("i8"); }, "'i8' is -100");
    expectFormatError([&] { file.getStringArray("floats"); }, "is array of float32, expected an array of strings");
    EXPECT_EQ(file.getUInt("absent", 5), 5u);
    expectFormatError([&] { file.tensor("nope"); }, "missing tensor 'nope'");
}

// --- Model metadata -------------------------------------------------------------------

namespace {

GgufWriter
llamaMetadata()
{
    GgufWriter w;
    w.addString("general.architecture", "llama");
    w.addU32("llama.context_length", 128);
    w.addU32("llama.embedding_length", 64);
    w.addU32("llama.block_count", 1);
    w.addU32("llama.feed_forward_length", 96);
    w.addU32("llama.attention.head_count", 4);
    w.addU32("llama.attention.head_count_kv", 2);
    w.addF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.addF32("llama.rope.freq_base", 500000.0f);
    w.addU32("llama.vocab_size", 32);
    return w;
}

void
addWeights(GgufWriter& w, const ModelConfig& config, uint32_t type = 0)
{
    for (const auto& spec : kp::llm::weightSpecs(config)) {
        uint64_t count = 1;
        for (uint64_t e : spec.shape) {
            count *= e;
        }
        uint32_t t = spec.isMatrix ? type : 0;
        size_t bytes = t == 0 ? count * 4 : (t == 8 ? count / 32 * 34 : count * 2);
        w.addTensor(spec.name, spec.shape, t, std::vector<uint8_t>(bytes));
    }
}

} // namespace

TEST(ModelConfig, ReadsLlamaMetadata)
{
    GgufWriter w = llamaMetadata();
    GgufFile file = GgufFile::fromBytes(w.bytes());
    ModelConfig c = ModelConfig::fromGguf(file);
    EXPECT_EQ(c.embeddingLength, 64u);
    EXPECT_EQ(c.headDim, 16u);
    EXPECT_EQ(c.ropeDims, 16u);
    EXPECT_EQ(c.headCountKv, 2u);
    EXPECT_EQ(c.ropeTheta, 500000.0f);
    EXPECT_EQ(c.vocabSize, 32u);
    EXPECT_TRUE(c.tiedOutput);
    addWeights(w, c, 8);
    GgufFile complete = GgufFile::fromBytes(w.bytes());
    EXPECT_NO_THROW(kp::llm::checkWeights(complete, ModelConfig::fromGguf(complete)));
}

TEST(ModelConfig, ClearErrors)
{
    GgufWriter arch;
    arch.addString("general.architecture", "gpt2");
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(arch.bytes())); },
                      "unsupported architecture 'gpt2'");
    GgufWriter missing;
    missing.addString("general.architecture", "llama");
    missing.addU32("llama.context_length", 128);
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(missing.bytes())); },
                      "missing metadata key 'llama.embedding_length'");
    GgufWriter heads = llamaMetadata();
    heads.addU32("llama.rope.dimension_count", 18);
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(heads.bytes())); }, "rope.dimension_count 18");

    GgufWriter w = llamaMetadata();
    ModelConfig c = ModelConfig::fromGguf(GgufFile::fromBytes(w.bytes()));
    GgufWriter noWeights = llamaMetadata();
    expectFormatError([&] { kp::llm::checkWeights(GgufFile::fromBytes(noWeights.bytes()), c); },
                      "missing tensor 'token_embd.weight' (shape [64, 32])");

    GgufWriter quantized = llamaMetadata();
    addWeights(quantized, c);
    for (auto& t : quantized.tensors) {
        if (t.name == "blk.0.ffn_up.weight") {
            t.type = 9; // Q8_1: 32-element blocks of 36 bytes
            t.data.assign(64 * 96 / 32 * 36, 0);
        }
    }
    expectFormatError([&] { kp::llm::checkWeights(GgufFile::fromBytes(quantized.bytes()), c); },
                      "tensor 'blk.0.ffn_up.weight' has type Q8_1, which this runner does not support");

    GgufWriter shape = llamaMetadata();
    addWeights(shape, c);
    for (auto& t : shape.tensors) {
        if (t.name == "blk.0.attn_k.weight") {
            t.shape = { 64, 64 };
            t.data.assign(64 * 64 * 4, 0);
        }
    }
    expectFormatError([&] { kp::llm::checkWeights(GgufFile::fromBytes(shape.bytes()), c); },
                      "tensor 'blk.0.attn_k.weight' has shape [64, 64], but the model's metadata needs [64, 32]");
}

TEST(ModelConfig, ReadsQwenMetadataAndRopeScaling)
{
    GgufWriter qwen2;
    qwen2.addString("general.architecture", "qwen2");
    qwen2.addU32("qwen2.context_length", 32768);
    qwen2.addU32("qwen2.embedding_length", 64);
    qwen2.addU32("qwen2.block_count", 1);
    qwen2.addU32("qwen2.feed_forward_length", 96);
    qwen2.addU32("qwen2.attention.head_count", 4);
    qwen2.addU32("qwen2.attention.head_count_kv", 2);
    qwen2.addF32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
    qwen2.addF32("qwen2.rope.freq_base", 1000000.0f);
    qwen2.addU32("qwen2.vocab_size", 32);
    ModelConfig c = ModelConfig::fromGguf(GgufFile::fromBytes(qwen2.bytes()));
    EXPECT_EQ(c.architecture, "qwen2");
    EXPECT_EQ(c.contextLength, 32768u);
    EXPECT_TRUE(c.attentionBias && c.ropeNeox && !c.qkNorm);
    EXPECT_EQ(c.ropeTheta, 1000000.0f);
    addWeights(qwen2, c);
    EXPECT_NO_THROW(kp::llm::checkWeights(GgufFile::fromBytes(qwen2.bytes()), c));
    // Without its biases a qwen2 file is incomplete.
    GgufWriter noBias = qwen2;
    noBias.tensors.erase(std::remove_if(noBias.tensors.begin(), noBias.tensors.end(),
                                        [](const auto& t) { return t.name == "blk.0.attn_k.bias"; }),
                         noBias.tensors.end());
    expectFormatError([&] { kp::llm::checkWeights(GgufFile::fromBytes(noBias.bytes()), c); },
                      "missing tensor 'blk.0.attn_k.bias' (shape [32])");

    GgufWriter qwen3;
    qwen3.addString("general.architecture", "qwen3");
    qwen3.addU32("qwen3.context_length", 40960);
    qwen3.addU32("qwen3.embedding_length", 64);
    qwen3.addU32("qwen3.block_count", 1);
    qwen3.addU32("qwen3.feed_forward_length", 96);
    qwen3.addU32("qwen3.attention.head_count", 4);
    qwen3.addU32("qwen3.attention.head_count_kv", 2);
    qwen3.addU32("qwen3.attention.key_length", 32);
    qwen3.addU32("qwen3.attention.value_length", 32);
    qwen3.addF32("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
    qwen3.addU32("qwen3.vocab_size", 32);
    c = ModelConfig::fromGguf(GgufFile::fromBytes(qwen3.bytes()));
    EXPECT_TRUE(c.qkNorm && c.ropeNeox && !c.attentionBias);
    EXPECT_EQ(c.headDim, 32u);
    EXPECT_EQ(c.ropeDims, 32u);
    addWeights(qwen3, c);
    GgufFile complete = GgufFile::fromBytes(qwen3.bytes());
    EXPECT_NO_THROW(kp::llm::checkWeights(complete, c));
    EXPECT_EQ(complete.tensor("blk.0.attn_q.weight").shape, (std::vector<uint64_t>{ 64, 128 }));
    EXPECT_EQ(complete.tensor("blk.0.attn_q_norm.weight").shape, (std::vector<uint64_t>{ 32 }));

    // Linear scaling, as rope.scaling.* or the older rope.scale_linear.
    GgufWriter linear = llamaMetadata();
    linear.addString("llama.rope.scaling.type", "linear");
    linear.addF32("llama.rope.scaling.factor", 4.0f);
    linear.addU32("llama.rope.scaling.original_context_length", 2048);
    EXPECT_EQ(ModelConfig::fromGguf(GgufFile::fromBytes(linear.bytes())).ropeFreqScale, 0.25f);
    GgufWriter old = llamaMetadata();
    old.addF32("llama.rope.scale_linear", 2.0f);
    EXPECT_EQ(ModelConfig::fromGguf(GgufFile::fromBytes(old.bytes())).ropeFreqScale, 0.5f);
    GgufWriter none = llamaMetadata(); // llama.cpp: an explicit none never scales
    none.addString("llama.rope.scaling.type", "none");
    none.addF32("llama.rope.scaling.factor", 4.0f);
    EXPECT_EQ(ModelConfig::fromGguf(GgufFile::fromBytes(none.bytes())).ropeFreqScale, 1.0f);
    // Llama 3.1: rope_freqs.weight, ropeDims / 2 f32 divisors.
    GgufWriter llama31 = llamaMetadata();
    llama31.addTensor("rope_freqs.weight", { 8 }, 0, std::vector<uint8_t>(8 * 4));
    c = ModelConfig::fromGguf(GgufFile::fromBytes(llama31.bytes()));
    EXPECT_TRUE(c.ropeFreqFactors);
    llama31.tensors.clear();
    addWeights(llama31, c);
    EXPECT_NO_THROW(kp::llm::checkWeights(GgufFile::fromBytes(llama31.bytes()), c));
    for (auto& t : llama31.tensors) {
        if (t.name == "rope_freqs.weight") {
            t.shape = { 16 };
            t.data.assign(16 * 4, 0);
        }
    }
    expectFormatError([&] { kp::llm::checkWeights(GgufFile::fromBytes(llama31.bytes()), c); },
                      "tensor 'rope_freqs.weight' has shape [16], but the model's metadata needs [8]");
}

TEST(ModelConfig, WhatTheRunnerDoesNotReadIsAnError)
{
    GgufWriter noArch;
    noArch.addU32("llama.context_length", 128);
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(noArch.bytes())); },
                      "missing metadata key 'general.architecture'");
    GgufWriter other;
    other.addString("general.architecture", "gemma2");
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(other.bytes())); },
                      "unsupported architecture 'gemma2' (general.architecture): this runner supports 'llama'");
    GgufWriter unknownKey = llamaMetadata();
    unknownKey.addU32("llama.attention.sliding_window", 4096);
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(unknownKey.bytes())); },
                      "metadata key 'llama.attention.sliding_window' is not understood by this runner");
    GgufWriter yarn = llamaMetadata();
    yarn.addString("llama.rope.scaling.type", "yarn");
    yarn.addF32("llama.rope.scaling.factor", 4.0f);
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(yarn.bytes())); },
                      "unsupported RoPE scaling 'yarn' (llama.rope.scaling.type)");
    GgufWriter experts = llamaMetadata();
    experts.addU32("llama.expert_count", 8);
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(experts.bytes())); },
                      "llama.expert_count is 8: mixture-of-experts models are not supported");
    GgufWriter value = llamaMetadata();
    value.addU32("llama.attention.value_length", 8);
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(value.bytes())); },
                      "llama.attention.value_length 8 differs from the key head size 16");
    GgufWriter badFactor = llamaMetadata();
    badFactor.addF32("llama.rope.scaling.factor", 0.0f);
    expectFormatError([&] { ModelConfig::fromGguf(GgufFile::fromBytes(badFactor.bytes())); },
                      "llama.rope.scaling.factor must be positive");

    // rope_freqs in a qwen2 file: llama.cpp reads it for llama only.
    GgufWriter qwenFreqs;
    qwenFreqs.addString("general.architecture", "qwen2");
    qwenFreqs.addU32("qwen2.context_length", 64);
    qwenFreqs.addU32("qwen2.embedding_length", 64);
    qwenFreqs.addU32("qwen2.block_count", 1);
    qwenFreqs.addU32("qwen2.feed_forward_length", 64);
    qwenFreqs.addU32("qwen2.attention.head_count", 4);
    qwenFreqs.addU32("qwen2.vocab_size", 32);
    qwenFreqs.addF32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
    ModelConfig qc = ModelConfig::fromGguf(GgufFile::fromBytes(qwenFreqs.bytes()));
    addWeights(qwenFreqs, qc);
    qwenFreqs.addTensor("rope_freqs.weight", { 4 }, 0, std::vector<uint8_t>(4 * 4));
    GgufFile qf = GgufFile::fromBytes(qwenFreqs.bytes());
    EXPECT_FALSE(ModelConfig::fromGguf(qf).ropeFreqFactors);
    expectFormatError([&] { kp::llm::checkWeights(qf, ModelConfig::fromGguf(qf)); },
                      "tensor 'rope_freqs.weight' is not part of a qwen2 model");
    // A quantized vector (a bias) is refused by name.
    GgufWriter qBias = qwenFreqs;
    qBias.tensors.pop_back();
    for (auto& t : qBias.tensors) {
        if (t.name == "blk.0.attn_v.bias") {
            t.type = 8; // Q8_0
            t.data.assign(64 / 32 * 34, 0); // 4 KV heads x 16 values
        }
    }
    expectFormatError([&] { kp::llm::checkWeights(GgufFile::fromBytes(qBias.bytes()), qc); },
                      "vector 'blk.0.attn_v.bias' has type Q8_0");

    // A tensor no layer reads: qwen2's bias in a llama file.
    GgufWriter extra = llamaMetadata();
    ModelConfig c = ModelConfig::fromGguf(GgufFile::fromBytes(extra.bytes()));
    addWeights(extra, c);
    extra.addTensor("blk.0.attn_q.bias", { 64 }, 0, std::vector<uint8_t>(64 * 4));
    expectFormatError([&] { kp::llm::checkWeights(GgufFile::fromBytes(extra.bytes()), c); },
                      "tensor 'blk.0.attn_q.bias' is not part of a llama model as this runner reads it");
    // A config whose flags are not its architecture's.
    ModelConfig mixed = c;
    mixed.qkNorm = true;
    EXPECT_THROW(mixed.validate(), kp::llm::FormatError);
    EXPECT_THROW(mixed.setArchitecture("gpt2"), kp::Error);
    mixed.setArchitecture("qwen3");
    EXPECT_NO_THROW(mixed.validate());
    EXPECT_EQ(ModelConfig::architectureNames(), (std::vector<std::string>{ "llama", "qwen2", "qwen3" }));
}

TEST(ModelConfig, NamedShapes)
{
    ModelConfig c = ModelConfig::named("llama-8b");
    EXPECT_EQ(c.embeddingLength, 4096u);
    EXPECT_EQ(c.blockCount, 32u);
    EXPECT_EQ(c.feedForwardLength, 14336u);
    EXPECT_EQ(c.headCountKv, 8u);
    EXPECT_EQ(c.vocabSize, 128256u);
    EXPECT_EQ(c.ropeTheta, 500000.0f);
    EXPECT_NEAR(static_cast<double>(c.parameterCount()), 8.03e9, 0.01e9);
    EXPECT_THROW(ModelConfig::named("llama-70b"), kp::Error);
    ModelConfig qwen3 = ModelConfig::named("qwen3-8b");
    EXPECT_EQ(qwen3.architecture, "qwen3");
    EXPECT_EQ(qwen3.headDim, 128u);
    EXPECT_NEAR(static_cast<double>(qwen3.parameterCount()), 8.19e9, 0.01e9);
    ModelConfig qwen2 = ModelConfig::named("qwen2-0.5b");
    EXPECT_TRUE(qwen2.attentionBias && qwen2.tiedOutput);
    EXPECT_NEAR(static_cast<double>(qwen2.parameterCount()), 0.494e9, 0.001e9);
    EXPECT_EQ(kp::llm::parseWeightType("Q4_0"), TensorType::eQ4_0);
    EXPECT_EQ(kp::llm::parseWeightType("q4_k"), TensorType::eQ4_K);
    EXPECT_EQ(kp::llm::parseWeightType("IQ4_XS"), TensorType::eIQ4_XS);
    EXPECT_THROW(kp::llm::parseWeightType("q8_k"), kp::Error);
    EXPECT_THROW(kp::llm::parseWeightType("q4_k_m"), kp::Error); // a mix: WeightMix::parse
}

TEST(GgufWriter, RandomModelFilesReadBackWhole)
{
    std::string path = ::testing::TempDir() + "/kompute_llm_random.gguf";
    ModelConfig tiny = ModelConfig::named("tiny");
    kp::llm::writeRandomModel(path, tiny, TensorType::eQ4_0, 7);
    GgufFile file = GgufFile::open(path);
    ModelConfig read = ModelConfig::fromGguf(file);
    EXPECT_EQ(read.embeddingLength, tiny.embeddingLength);
    EXPECT_EQ(read.headCountKv, tiny.headCountKv);
    EXPECT_EQ(read.vocabSize, tiny.vocabSize);
    EXPECT_NO_THROW(kp::llm::checkWeights(file, read));
    EXPECT_EQ(file.tensor("blk.1.ffn_down.weight").type, TensorType::eQ4_0);
    EXPECT_EQ(file.tensor("output_norm.weight").type, TensorType::eF32);
    kp::llm::Tokenizer tokenizer = kp::llm::Tokenizer::fromGguf(file);
    std::vector<uint32_t> ids = tokenizer.encode("héllo, wörld");
    EXPECT_EQ(ids.front(), 0u); // <|begin_of_text|>
    EXPECT_EQ(tokenizer.decode(ids), "héllo, wörld");
    EXPECT_TRUE(tokenizer.isEndOfGeneration(1));
    // The same seed makes the same bytes.
    std::string again = path + ".2";
    kp::llm::writeRandomModel(again, tiny, TensorType::eQ4_0, 7);
    GgufFile second = GgufFile::open(again);
    const auto& a = file.tensor("blk.0.attn_q.weight");
    EXPECT_EQ(std::memcmp(file.tensorData(a), second.tensorData(second.tensor("blk.0.attn_q.weight")), a.byteSize), 0);
    std::remove(path.c_str());
    std::remove(again.c_str());
}
