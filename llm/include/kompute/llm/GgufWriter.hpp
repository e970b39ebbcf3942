// SPDX-License-Identifier: Apache-2.0
// kp::llm::GgufWriter: writes GGUF (version 3) files: metadata key-values
// and tensors, each tensor's data aligned to general.alignment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kompute/llm/Gguf.hpp"
#include "kompute/llm/ModelConfig.hpp"
#include "kompute/llm/WeightMix.hpp"

namespace kp {
namespace llm {

/** Builds a GGUF (version 3) file in memory, metadata and tensors, and
 * writes it with write(); each tensor's data is aligned to the alignment.
 * A plain value holding copies of everything it was given; not
 * synchronised. */
class GgufWriter
{
  public:
    /** A writer whose tensors' data is aligned to `alignment` bytes (a
     * power of two, else kp::Error; written as general.alignment when it
     * is not 32). */
    explicit GgufWriter(uint64_t alignment = 32);

    /** Sets metadata `key` (replacing an earlier value of the same key). */
    void set(const std::string& key, GgufValue value);
    /** set() with a value of this type. */
    ///@{
    void setString(const std::string& key, const std::string& value);
    void setUInt32(const std::string& key, uint32_t value);
    void setFloat32(const std::string& key, float value);
    void setBool(const std::string& key, bool value);
    void setStringArray(const std::string& key, const std::vector<std::string>& values);
    void setFloat32Array(const std::string& key, const std::vector<float>& values);
    void setInt32Array(const std::string& key, const std::vector<int32_t>& values);
    ///@}

    /** Adds a tensor: shape ne0 first, `bytes` as the type's layout needs
     * (kp::Error otherwise); the bytes are copied. */
    void addTensor(const std::string& name, std::vector<uint64_t> shape, TensorType type, std::vector<uint8_t> bytes);

    /** Writes the file; kp::Error when it cannot. */
    void write(const std::string& path) const;

  private:
    struct Tensor
    {
        std::string name;
        std::vector<uint64_t> shape;
        TensorType type;
        std::vector<uint8_t> bytes;
    };
    uint64_t mAlignment;
    std::vector<GgufKeyValue> mMetadata;
    std::vector<Tensor> mTensors;
};

/**
 * Writes a model of `config`'s architecture and shape (its
 * rope_freqs, biases and query/key norms included) with the random weights
 * Model::random makes for the same seed, plus a byte-level BPE vocabulary
 * (the 256 bytes, then reserved control tokens up to the vocabulary size;
 * token 0 is "<|begin_of_text|>", 1 "<|end_of_text|>"): a complete model
 * file made without a download, for demos and tests.
 */
void writeRandomModel(const std::string& path, const ModelConfig& config, TensorType type, uint64_t seed = 1);
/** The same with each matrix of the type `mix` gives it (a llama-quantize
 * mix such as Q4_K_M: see WeightMix). */
void writeRandomModel(const std::string& path, const ModelConfig& config, const WeightMix& mix, uint64_t seed = 1);

} // namespace llm
} // namespace kp
