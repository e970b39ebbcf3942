// SPDX-License-Identifier: Apache-2.0
// kp::llm::GgufFile: a reader of GGUF files (versions 2 and 3), the model
// format of llama.cpp: a header, typed metadata key-values, tensor infos and
// the tensor data, which stays memory-mapped (nothing is copied at open).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kompute/Errors.hpp"

namespace kp {
/** The LLM runner (library kompute::llm, umbrella header
 * <kompute/llm/Llm.hpp>): GGUF files, tokenizers, the sampler, and Llama-
 * family models run on a kp::Manager's device. See @ref llm. */
namespace llm {

/** A malformed, truncated or unsupported model file (or a missing key). The
 * message names the file and what was wrong. */
class FormatError : public kp::Error
{
  public:
    using kp::Error::Error;
};

/** Element types of GGUF tensors (ggml's type numbers). The runner computes
 * with F32, F16, BF16 and the block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS (isSupportedWeightType);
 * the others are known by name only, so that an error can say which type a
 * file has. */
enum class TensorType : uint32_t
{
    eF32 = 0,
    eF16 = 1,
    eQ4_0 = 2,
    eQ4_1 = 3,
    eQ5_0 = 6,
    eQ5_1 = 7,
    eQ8_0 = 8,
    eQ8_1 = 9,
    eQ2_K = 10,
    eQ3_K = 11,
    eQ4_K = 12,
    eQ5_K = 13,
    eQ6_K = 14,
    eQ8_K = 15,
    eIQ2_XXS = 16,
    eIQ2_XS = 17,
    eIQ3_XXS = 18,
    eIQ1_S = 19,
    eIQ4_NL = 20,
    eIQ3_S = 21,
    eIQ2_S = 22,
    eIQ4_XS = 23,
    eI8 = 24,
    eI16 = 25,
    eI32 = 26,
    eI64 = 27,
    eF64 = 28,
    eIQ1_M = 29,
    eBF16 = 30,
    eTQ1_0 = 34,
    eTQ2_0 = 35,
};

/** Layout of a tensor type: `blockSize` elements take `blockBytes` bytes.
 * blockSize is 0 for types this reader does not know the layout of. */
struct TensorTypeLayout
{
    uint32_t blockSize = 0;  ///< elements per block (1 for plain types)
    uint32_t blockBytes = 0; ///< bytes per block
};

/** "F32", "Q4_0", ...; "type N" for numbers ggml never used. */
std::string toString(TensorType type);
/** The block layout of `type` (blockSize 0 where it is not known). */
TensorTypeLayout layoutOf(TensorType type);
/** True for the types the runner computes with. */
bool isSupportedWeightType(TensorType type);

/** Value types of GGUF metadata. */
enum class GgufValueType : uint32_t
{
    eUInt8 = 0,    ///< uint8
    eInt8 = 1,     ///< int8
    eUInt16 = 2,   ///< uint16
    eInt16 = 3,    ///< int16
    eUInt32 = 4,   ///< uint32
    eInt32 = 5,    ///< int32
    eFloat32 = 6,  ///< float32
    eBool = 7,     ///< bool
    eString = 8,   ///< UTF-8 string
    eArray = 9,    ///< array of one element type
    eUInt64 = 10,  ///< uint64
    eInt64 = 11,   ///< int64
    eFloat64 = 12, ///< float64
};

/** The type's name as GGUF writes it ("uint32", "string", ...). */
std::string toString(GgufValueType type);

struct GgufValue;

/** An array value: elements of one type (arrays of arrays are allowed). */
struct GgufArray
{
    GgufValueType elementType = GgufValueType::eUInt8; ///< type of every element
    std::vector<GgufValue> elements;                   ///< the elements, in file order
};

/** One metadata value, with the type the file gave it. Integers keep their
 * signedness; floats are held as double. */
struct GgufValue
{
    GgufValueType type = GgufValueType::eUInt8; ///< the type in the file
    /** Unsigned integers as uint64_t, signed ones as int64_t, floats as
     * double, then bool, string or array. */
    std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;

    /** Whether the value is an integer (signed or not). */
    bool isInteger() const;
    /** Whether the value is a float (32 or 64 bits). */
    bool isFloat() const;
};

/** One metadata entry of a GGUF file. */
struct GgufKeyValue
{
    std::string key; ///< for example "llama.block_count"
    GgufValue value; ///< its value
};

/** A tensor of the file. `shape` is in GGUF order: shape[0] (ne0) is the
 * length of the contiguous rows, so a weight matrix of `out` rows of `in`
 * weights has shape {in, out}. */
struct GgufTensorInfo
{
    std::string name;            ///< for example "blk.0.attn_q.weight"
    std::vector<uint64_t> shape; ///< dimensions, ne0 first
    TensorType type = TensorType::eF32; ///< element type
    /** Offset of the data from the start of the data section. */
    uint64_t offset = 0;
    uint64_t elementCount = 0; ///< product of the shape
    uint64_t byteSize = 0;     ///< bytes of the data
};

/**
 * A GGUF file (versions 2 and 3), memory-mapped and checked when opened:
 * its header, typed metadata, tensor infos and the tensor data, which stays
 * in the mapping (nothing is copied at open). Movable, not copyable; the
 * mapping lives as long as the object, and pointers from tensorData() are
 * valid while it does. Read-only after open(): its const functions may be
 * called from several threads at once.
 */
class GgufFile
{
  public:
    /** Maps the file and reads its header, metadata and tensor infos; throws
     * FormatError for a bad file (wrong magic, unsupported version,
     * truncated, tensors out of the file or misaligned, ...). */
    static GgufFile open(const std::string& path);
    /** The same over bytes in memory (kept by the object); `name` is used in
     * messages. */
    static GgufFile fromBytes(std::vector<uint8_t> bytes, const std::string& name = "<memory>");

    /** Takes over the other file's mapping. */
    GgufFile(GgufFile&&) noexcept;
    /** Takes over the other file's mapping (this one's is released). */
    GgufFile& operator=(GgufFile&&) noexcept;
    /** Unmaps the file. */
    ~GgufFile();

    /** File name as given to open(). */
    const std::string& name() const { return mName; }
    /** The GGUF version (2 or 3). */
    uint32_t version() const { return mVersion; }
    /** general.alignment, 32 when absent. */
    uint64_t alignment() const { return mAlignment; }
    /** Size of the file in bytes. */
    uint64_t fileSize() const { return mSize; }

    /** Every metadata entry, in file order. */
    const std::vector<GgufKeyValue>& metadata() const { return mMetadata; }
    /** The value of `key`, or null. */
    const GgufValue* find(const std::string& key) const;
    /** Whether the file has `key`. */
    bool has(const std::string& key) const { return find(key) != nullptr; }

    // Typed accessors: they throw FormatError naming the key when it is
    // missing or of another type (integers of any width convert when the
    // value fits; floats accept integers).
    /** The value of `key` as this type; throws FormatError naming the key
     * when it is missing or of another type (integers of any width convert
     * when the value fits; floats accept integers). */
    ///@{
    std::string getString(const std::string& key) const;
    uint64_t getUInt(const std::string& key) const;
    int64_t getInt(const std::string& key) const;
    double getFloat(const std::string& key) const;
    bool getBool(const std::string& key) const;
    std::vector<std::string> getStringArray(const std::string& key) const;
    std::vector<double> getFloatArray(const std::string& key) const;
    std::vector<int64_t> getIntArray(const std::string& key) const;
    ///@}

    // The same with a default for an absent key (a present key of the
    // wrong type still throws).
    /** The value of `key`, or `fallback` when the key is absent (a present
     * key of the wrong type still throws FormatError). */
    ///@{
    std::string getString(const std::string& key, const std::string& fallback) const;
    uint64_t getUInt(const std::string& key, uint64_t fallback) const;
    double getFloat(const std::string& key, double fallback) const;
    bool getBool(const std::string& key, bool fallback) const;
    ///@}

    /** Every tensor info, in file order. */
    const std::vector<GgufTensorInfo>& tensors() const { return mTensors; }
    /** The tensor called `name`, or null. */
    const GgufTensorInfo* findTensor(const std::string& name) const;
    /** The tensor called `name`; throws FormatError if there is none. */
    const GgufTensorInfo& tensor(const std::string& name) const;
    /** The tensor's bytes (in the mapping; valid while this object lives). */
    const uint8_t* tensorData(const GgufTensorInfo& info) const;

    /** A FormatError whose message starts with the file's name. */
    FormatError error(const std::string& message) const;

    /** Where the bytes live (a file mapping or a vector). */
    class Mapping;

  private:
    GgufFile(std::unique_ptr<Mapping> mapping, std::string name);
    void parse();

    std::unique_ptr<Mapping> mMapping;
    std::string mName;
    const uint8_t* mBytes = nullptr;
    uint64_t mSize = 0;
    uint32_t mVersion = 0;
    uint64_t mAlignment = 32;
    uint64_t mDataOffset = 0;
    std::vector<GgufKeyValue> mMetadata;
    std::vector<GgufTensorInfo> mTensors;
};

} // namespace llm
} // namespace kp
