// SPDX-License-Identifier: Apache-2.0
// GGUF reader. Every read is bounds-checked against the file's size, so a
// truncated or corrupt file is a FormatError that says where it broke.
#include "kompute/llm/Gguf.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kp {
namespace llm {

// --- Types ---------------------------------------------------------------------

namespace {

struct TypeEntry
{
    TensorType type;
    const char* name;
    TensorTypeLayout layout;
};

// ggml's block layouts (elements per block, bytes per block).
const TypeEntry kTypes[] = {
    { TensorType::eF32, "F32", { 1, 4 } },       { TensorType::eF16, "F16", { 1, 2 } },
    { TensorType::eQ4_0, "Q4_0", { 32, 18 } },   { TensorType::eQ4_1, "Q4_1", { 32, 20 } },
    { TensorType::eQ5_0, "Q5_0", { 32, 22 } },   { TensorType::eQ5_1, "Q5_1", { 32, 24 } },
    { TensorType::eQ8_0, "Q8_0", { 32, 34 } },   { TensorType::eQ8_1, "Q8_1", { 32, 36 } },
    { TensorType::eQ2_K, "Q2_K", { 256, 84 } },  { TensorType::eQ3_K, "Q3_K", { 256, 110 } },
    { TensorType::eQ4_K, "Q4_K", { 256, 144 } }, { TensorType::eQ5_K, "Q5_K", { 256, 176 } },
    { TensorType::eQ6_K, "Q6_K", { 256, 210 } }, { TensorType::eQ8_K, "Q8_K", { 256, 292 } },
    { TensorType::eIQ2_XXS, "IQ2_XXS", { 256, 66 } },
    { TensorType::eIQ2_XS, "IQ2_XS", { 256, 74 } },
    { TensorType::eIQ3_XXS, "IQ3_XXS", { 256, 98 } },
    { TensorType::eIQ1_S, "IQ1_S", { 256, 50 } },
    { TensorType::eIQ4_NL, "IQ4_NL", { 32, 18 } },
    { TensorType::eIQ3_S, "IQ3_S", { 256, 110 } },
    { TensorType::eIQ2_S, "IQ2_S", { 256, 82 } },
    { TensorType::eIQ4_XS, "IQ4_XS", { 256, 136 } },
    { TensorType::eI8, "I8", { 1, 1 } },         { TensorType::eI16, "I16", { 1, 2 } },
    { TensorType::eI32, "I32", { 1, 4 } },       { TensorType::eI64, "I64", { 1, 8 } },
    { TensorType::eF64, "F64", { 1, 8 } },       { TensorType::eIQ1_M, "IQ1_M", { 256, 56 } },
    { TensorType::eBF16, "BF16", { 1, 2 } },     { TensorType::eTQ1_0, "TQ1_0", { 256, 54 } },
    { TensorType::eTQ2_0, "TQ2_0", { 256, 66 } },
};

const TypeEntry*
findType(TensorType type)
{
    for (const TypeEntry& entry : kTypes) {
        if (entry.type == type) {
            return &entry;
        }
    }
    return nullptr;
}

} // namespace

std::string
toString(TensorType type)
{
    const TypeEntry* entry = findType(type);
    return entry ? entry->name : "type " + std::to_string(static_cast<uint32_t>(type));
}

TensorTypeLayout
layoutOf(TensorType type)
{
    const TypeEntry* entry = findType(type);
    return entry ? entry->layout : TensorTypeLayout{};
}

bool
isSupportedWeightType(TensorType type)
{
    switch (type) {
        case TensorType::eF32:
        case TensorType::eF16:
        case TensorType::eBF16:
        case TensorType::eQ8_0:
        case TensorType::eQ4_0:
        case TensorType::eQ4_1:
        case TensorType::eQ5_0:
        case TensorType::eQ5_1:
        case TensorType::eQ2_K:
        case TensorType::eQ3_K:
        case TensorType::eQ4_K:
        case TensorType::eQ5_K:
        case TensorType::eQ6_K:
        case TensorType::eIQ4_NL:
        case TensorType::eIQ4_XS: return true;
        default: return false;
    }
}

std::string
toString(GgufValueType type)
{
    switch (type) {
        case GgufValueType::eUInt8: return "uint8";
        case GgufValueType::eInt8: return "int8";
        case GgufValueType::eUInt16: return "uint16";
        case GgufValueType::eInt16: return "int16";
        case GgufValueType::eUInt32: return "uint32";
        case GgufValueType::eInt32: return "int32";
        case GgufValueType::eFloat32: return "float32";
        case GgufValueType::eBool: return "bool";
        case GgufValueType::eString: return "string";
        case GgufValueType::eArray: return "array";
        case GgufValueType::eUInt64: return "uint64";
        case GgufValueType::eInt64: return "int64";
        case GgufValueType::eFloat64: return "float64";
    }
    return "type " + std::to_string(static_cast<uint32_t>(type));
}

bool
GgufValue::isInteger() const
{
    return std::holds_alternative<uint64_t>(value) || std::holds_alternative<int64_t>(value);
}

bool
GgufValue::isFloat() const
{
    return std::holds_alternative<double>(value);
}

// --- The bytes: a read-only mapping of the file, or a vector ----------------------

class GgufFile::Mapping
{
  public:
    virtual ~Mapping() = default;
    const uint8_t* bytes = nullptr;
    uint64_t size = 0;
};

namespace {

class FileMapping : public GgufFile::Mapping
{
  public:
    FileMapping(void* address, uint64_t length)
      : mAddress(address)
      , mLength(length)
    {
        bytes = static_cast<const uint8_t*>(address);
        size = length;
    }
    ~FileMapping() override
    {
        if (mAddress != nullptr) {
            munmap(mAddress, mLength);
        }
    }

  private:
    void* mAddress;
    uint64_t mLength;
};

class MemoryMapping : public GgufFile::Mapping
{
  public:
    explicit MemoryMapping(std::vector<uint8_t> data)
      : mData(std::move(data))
    {
        bytes = mData.data();
        size = mData.size();
    }

  private:
    std::vector<uint8_t> mData;
};

constexpr uint32_t kMagic = 0x46554747; // "GGUF" read as a little-endian uint32
constexpr uint32_t kMaxDims = 4;        // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;

/** Bounds-checked little-endian reads from the file's bytes. */
class Reader
{
  public:
    Reader(const GgufFile& file, const uint8_t* bytes, uint64_t size)
      : mFile(file)
      , mBytes(bytes)
      , mSize(size)
    {
    }

    uint64_t position() const { return mPosition; }
    uint64_t remaining() const { return mSize - mPosition; }

    void need(uint64_t bytes, const std::string& what) const
    {
        if (bytes > remaining()) {
            throw mFile.error("truncated: " + what + " at byte " + std::to_string(mPosition) +
                              " needs " + std::to_string(bytes) + " bytes, the file has " +
                              std::to_string(remaining()) + " left");
        }
    }

    template<typename T>
    T read(const std::string& what)
    {
        need(sizeof(T), what);
        T value;
        std::memcpy(&value, mBytes + mPosition, sizeof(T));
        mPosition += sizeof(T);
        return value;
    }

    std::string readString(const std::string& what)
    {
        uint64_t length = read<uint64_t>(what + " (length)");
        need(length, what);
        std::string text(reinterpret_cast<const char*>(mBytes + mPosition), length);
        mPosition += length;
        return text;
    }

  private:
    const GgufFile& mFile;
    const uint8_t* mBytes;
    uint64_t mSize;
    uint64_t mPosition = 0;
};

/** Smallest encoding of one value of a type (for array-count sanity). */
uint64_t
minimumBytes(GgufValueType type)
{
    switch (type) {
        case GgufValueType::eUInt8:
        case GgufValueType::eInt8:
        case GgufValueType::eBool: return 1;
        case GgufValueType::eUInt16:
        case GgufValueType::eInt16: return 2;
        case GgufValueType::eUInt32:
        case GgufValueType::eInt32:
        case GgufValueType::eFloat32: return 4;
        case GgufValueType::eString:
        case GgufValueType::eUInt64:
        case GgufValueType::eInt64:
        case GgufValueType::eFloat64: return 8;
        case GgufValueType::eArray: return 12;
    }
    return 1;
}

bool
isKnownValueType(uint32_t type)
{
    return type <= static_cast<uint32_t>(GgufValueType::eFloat64);
}

GgufValue
readValue(Reader& reader, const GgufFile& file, GgufValueType type, const std::string& key, int depth)
{
    GgufValue result;
    result.type = type;
    const std::string what = "value of '" + key + "'";
    switch (type) {
        case GgufValueType::eUInt8: result.value = uint64_t(reader.read<uint8_t>(what)); break;
        case GgufValueType::eInt8: result.value = int64_t(reader.read<int8_t>(what)); break;
        case GgufValueType::eUInt16: result.value = uint64_t(reader.read<uint16_t>(what)); break;
        case GgufValueType::eInt16: result.value = int64_t(reader.read<int16_t>(what)); break;
        case GgufValueType::eUInt32: result.value = uint64_t(reader.read<uint32_t>(what)); break;
        case GgufValueType::eInt32: result.value = int64_t(reader.read<int32_t>(what)); break;
        case GgufValueType::eUInt64: result.value = reader.read<uint64_t>(what); break;
        case GgufValueType::eInt64: result.value = reader.read<int64_t>(what); break;
        case GgufValueType::eFloat32: result.value = double(reader.read<float>(what)); break;
        case GgufValueType::eFloat64: result.value = reader.read<double>(what); break;
        case GgufValueType::eBool: {
            uint8_t byte = reader.read<uint8_t>(what);
            if (byte > 1) {
                throw file.error("'" + key + "' is a bool of value " + std::to_string(byte) +
                                 " (must be 0 or 1)");
            }
            result.value = byte == 1;
            break;
        }
        case GgufValueType::eString: result.value = reader.readString(what); break;
        case GgufValueType::eArray: {
            if (depth >= kMaxArrayDepth) {
                throw file.error("'" + key + "' nests arrays deeper than " +
                                 std::to_string(kMaxArrayDepth) + " levels");
            }
            uint32_t elementType = reader.read<uint32_t>(what + " (array type)");
            if (!isKnownValueType(elementType)) {
                throw file.error("'" + key + "' is an array of unknown value type " +
                                 std::to_string(elementType));
            }
            uint64_t count = reader.read<uint64_t>(what + " (array length)");
            GgufArray array;
            array.elementType = static_cast<GgufValueType>(elementType);
            uint64_t least = minimumBytes(array.elementType);
            if (count > reader.remaining() / least) {
                throw file.error("truncated: '" + key + "' has " + std::to_string(count) +
                                 " elements, more than the " + std::to_string(reader.remaining()) +
                                 " bytes left in the file can hold");
            }
            array.elements.reserve(count);
            for (uint64_t i = 0; i < count; ++i) {
                array.elements.push_back(readValue(reader, file, array.elementType, key, depth + 1));
            }
            result.value = std::move(array);
            break;
        }
    }
    return result;
}

bool
multiplyChecked(uint64_t a, uint64_t b, uint64_t& out)
{
    if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) {
        return false;
    }
    out = a * b;
    return true;
}

} // namespace

// --- GgufFile ---------------------------------------------------------------------

GgufFile::GgufFile(std::unique_ptr<Mapping> mapping, std::string name)
  : mMapping(std::move(mapping))
  , mName(std::move(name))
{
    mBytes = mMapping->bytes;
    mSize = mMapping->size;
    parse();
}

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile
GgufFile::open(const std::string& path)
{
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw FormatError(path + ": cannot open: " + std::strerror(errno));
    }
    struct stat info
    {};
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        throw FormatError(path + ": not a regular file");
    }
    uint64_t size = static_cast<uint64_t>(info.st_size);
    if (size == 0) {
        ::close(fd);
        throw FormatError(path + ": the file is empty (a GGUF file starts with the magic 'GGUF')");
    }
    void* address = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int mapError = errno;
    ::close(fd);
    if (address == MAP_FAILED) {
        throw FormatError(path + ": cannot map the file: " + std::strerror(mapError));
    }
    // The tensor data is read once, front to back, when it is uploaded.
    madvise(address, size, MADV_SEQUENTIAL);
    return GgufFile(std::make_unique<FileMapping>(address, size), path);
}

GgufFile
GgufFile::fromBytes(std::vector<uint8_t> bytes, const std::string& name)
{
    return GgufFile(std::make_unique<MemoryMapping>(std::move(bytes)), name);
}

FormatError
GgufFile::error(const std::string& message) const
{
    return FormatError(mName + ": " + message);
}

void
GgufFile::parse()
{
    Reader reader(*this, mBytes, mSize);
    uint32_t magic = reader.read<uint32_t>("the magic");
    if (magic != kMagic) {
        unsigned char shown[4];
        std::memcpy(shown, &magic, 4);
        std::string printable;
        for (unsigned char c : shown) {
            if (c >= 32 && c < 127) {
                printable += static_cast<char>(c);
            } else {
                char hex[8];
                std::snprintf(hex, sizeof(hex), "\\x%02x", c);
                printable += hex;
            }
        }
        throw error("not a GGUF file: it starts with '" + printable + "', not 'GGUF'");
    }
    mVersion = reader.read<uint32_t>("the version");
    if (mVersion == 1) {
        throw error("GGUF version 1 is not supported (only 2 and 3): convert the model again "
                    "with a current llama.cpp");
    }
    if (mVersion != 2 && mVersion != 3) {
        uint32_t swapped = __builtin_bswap32(mVersion);
        if (swapped == 2 || swapped == 3) {
            throw error("big-endian GGUF files are not supported");
        }
        throw error("unsupported GGUF version " + std::to_string(mVersion) +
                    " (this reader knows versions 2 and 3)");
    }
    uint64_t tensorCount = reader.read<uint64_t>("the tensor count");
    uint64_t keyCount = reader.read<uint64_t>("the metadata count");
    // Each key-value takes at least 8 + 4 + 1 bytes, each tensor info 8 + 4 + 4 + 8.
    if (keyCount > reader.remaining() / 13) {
        throw error("truncated or corrupt: the header announces " + std::to_string(keyCount) +
                    " metadata entries, more than the file can hold");
    }
    if (tensorCount > reader.remaining() / 24) {
        throw error("truncated or corrupt: the header announces " + std::to_string(tensorCount) +
                    " tensors, more than the file can hold");
    }

    std::unordered_set<std::string> keys;
    mMetadata.reserve(keyCount);
    for (uint64_t i = 0; i < keyCount; ++i) {
        std::string key = reader.readString("metadata key " + std::to_string(i));
        uint32_t type = reader.read<uint32_t>("the type of '" + key + "'");
        if (!isKnownValueType(type)) {
            throw error("'" + key + "' has unknown value type " + std::to_string(type));
        }
        if (!keys.insert(key).second) {
            throw error("metadata key '" + key + "' appears twice");
        }
        GgufValue value = readValue(reader, *this, static_cast<GgufValueType>(type), key, 0);
        mMetadata.push_back({ std::move(key), std::move(value) });
    }

    if (has("general.alignment")) {
        uint64_t value = getUInt("general.alignment");
        if (value == 0 || (value & (value - 1)) != 0) {
            throw error("general.alignment is " + std::to_string(value) +
                        ": it must be a power of two");
        }
        mAlignment = value;
    }

    std::unordered_set<std::string> names;
    mTensors.reserve(tensorCount);
    for (uint64_t i = 0; i < tensorCount; ++i) {
        GgufTensorInfo info;
        info.name = reader.readString("the name of tensor " + std::to_string(i));
        const std::string what = "tensor '" + info.name + "'";
        uint32_t dims = reader.read<uint32_t>("the dimension count of " + what);
        if (dims == 0 || dims > kMaxDims) {
            throw error(what + " has " + std::to_string(dims) + " dimensions (1 to " +
                        std::to_string(kMaxDims) + " are allowed)");
        }
        info.elementCount = 1;
        for (uint32_t d = 0; d < dims; ++d) {
            uint64_t extent = reader.read<uint64_t>("the shape of " + what);
            if (extent == 0 || !multiplyChecked(info.elementCount, extent, info.elementCount)) {
                throw error(what + " has an invalid shape (dimension " + std::to_string(d) +
                            " is " + std::to_string(extent) + ")");
            }
            info.shape.push_back(extent);
        }
        info.type = static_cast<TensorType>(reader.read<uint32_t>("the type of " + what));
        info.offset = reader.read<uint64_t>("the data offset of " + what);
        TensorTypeLayout layout = layoutOf(info.type);
        if (layout.blockSize == 0) {
            throw error(what + " has unknown type " + toString(info.type));
        }
        if (info.shape[0] % layout.blockSize != 0) {
            throw error(what + " of type " + toString(info.type) + " has rows of " +
                        std::to_string(info.shape[0]) + " elements, not a multiple of its " +
                        std::to_string(layout.blockSize) + "-element blocks");
        }
        if (!multiplyChecked(info.elementCount / layout.blockSize, layout.blockBytes, info.byteSize)) {
            throw error(what + " is too large");
        }
        if (info.offset % mAlignment != 0) {
            throw error(what + " starts at data offset " + std::to_string(info.offset) +
                        ", which is not a multiple of the alignment " + std::to_string(mAlignment));
        }
        if (!names.insert(info.name).second) {
            throw error("tensor '" + info.name + "' appears twice");
        }
        mTensors.push_back(std::move(info));
    }

    // The data section starts at the next multiple of the alignment.
    uint64_t end = reader.position();
    mDataOffset = (end + mAlignment - 1) / mAlignment * mAlignment;
    uint64_t dataBytes = mSize > mDataOffset ? mSize - mDataOffset : 0;
    for (const GgufTensorInfo& info : mTensors) {
        if (info.offset > dataBytes || info.byteSize > dataBytes - info.offset) {
            throw error("truncated: tensor '" + info.name + "' (" + toString(info.type) + ", " +
                        std::to_string(info.byteSize) + " bytes at data offset " +
                        std::to_string(info.offset) + ") ends past the end of the file (" +
                        std::to_string(dataBytes) + " bytes of tensor data)");
        }
    }
    // Tensors must not overlap: sort a copy by offset and compare neighbours.
    std::vector<const GgufTensorInfo*> byOffset;
    for (const GgufTensorInfo& info : mTensors) {
        byOffset.push_back(&info);
    }
    std::sort(byOffset.begin(), byOffset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < byOffset.size(); ++i) {
        const GgufTensorInfo& previous = *byOffset[i - 1];
        if (previous.offset + previous.byteSize > byOffset[i]->offset) {
            throw error("tensors '" + previous.name + "' and '" + byOffset[i]->name +
                        "' overlap: the first is " + std::to_string(previous.byteSize) +
                        " bytes of " + toString(previous.type) +
                        " (as its shape and type say), more than the space before the next");
        }
    }
}

const GgufValue*
GgufFile::find(const std::string& key) const
{
    for (const GgufKeyValue& entry : mMetadata) {
        if (entry.key == key) {
            return &entry.value;
        }
    }
    return nullptr;
}

namespace {

const GgufValue&
required(const GgufFile& file, const std::string& key)
{
    const GgufValue* value = file.find(key);
    if (value == nullptr) {
        throw file.error("missing metadata key '" + key + "'");
    }
    return *value;
}

[[noreturn]] void
wrongType(const GgufFile& file, const std::string& key, const GgufValue& value, const char* wanted)
{
    std::string has = toString(value.type);
    if (value.type == GgufValueType::eArray) {
        has = "array of " + toString(std::get<GgufArray>(value.value).elementType);
    }
    throw file.error("metadata key '" + key + "' is " + has + ", expected " + wanted);
}

uint64_t
asUInt(const GgufFile& file, const std::string& key, const GgufValue& value)
{
    if (const uint64_t* u = std::get_if<uint64_t>(&value.value)) {
        return *u;
    }
    if (const int64_t* i = std::get_if<int64_t>(&value.value)) {
        if (*i >= 0) {
            return static_cast<uint64_t>(*i);
        }
        throw file.error("metadata key '" + key + "' is " + std::to_string(*i) +
                         ", expected a value of at least 0");
    }
    wrongType(file, key, value, "an unsigned integer");
}

int64_t
asInt(const GgufFile& file, const std::string& key, const GgufValue& value)
{
    if (const int64_t* i = std::get_if<int64_t>(&value.value)) {
        return *i;
    }
    if (const uint64_t* u = std::get_if<uint64_t>(&value.value)) {
        if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return static_cast<int64_t>(*u);
        }
    }
    wrongType(file, key, value, "an integer");
}

double
asFloat(const GgufFile& file, const std::string& key, const GgufValue& value)
{
    if (const double* d = std::get_if<double>(&value.value)) {
        return *d;
    }
    if (const uint64_t* u = std::get_if<uint64_t>(&value.value)) {
        return static_cast<double>(*u);
    }
    if (const int64_t* i = std::get_if<int64_t>(&value.value)) {
        return static_cast<double>(*i);
    }
    wrongType(file, key, value, "a number");
}

const GgufArray&
asArray(const GgufFile& file, const std::string& key, const GgufValue& value, const char* wanted)
{
    if (const GgufArray* array = std::get_if<GgufArray>(&value.value)) {
        return *array;
    }
    wrongType(file, key, value, wanted);
}

} // namespace

std::string
GgufFile::getString(const std::string& key) const
{
    const GgufValue& value = required(*this, key);
    if (const std::string* text = std::get_if<std::string>(&value.value)) {
        return *text;
    }
    wrongType(*this, key, value, "a string");
}

uint64_t
GgufFile::getUInt(const std::string& key) const
{
    return asUInt(*this, key, required(*this, key));
}

int64_t
GgufFile::getInt(const std::string& key) const
{
    return asInt(*this, key, required(*this, key));
}

double
GgufFile::getFloat(const std::string& key) const
{
    return asFloat(*this, key, required(*this, key));
}

bool
GgufFile::getBool(const std::string& key) const
{
    const GgufValue& value = required(*this, key);
    if (const bool* flag = std::get_if<bool>(&value.value)) {
        return *flag;
    }
    wrongType(*this, key, value, "a bool");
}

std::vector<std::string>
GgufFile::getStringArray(const std::string& key) const
{
    const GgufValue& value = required(*this, key);
    const GgufArray& array = asArray(*this, key, value, "an array of strings");
    if (array.elementType != GgufValueType::eString) {
        wrongType(*this, key, value, "an array of strings");
    }
    std::vector<std::string> result;
    result.reserve(array.elements.size());
    for (const GgufValue& element : array.elements) {
        result.push_back(std::get<std::string>(element.value));
    }
    return result;
}

std::vector<double>
GgufFile::getFloatArray(const std::string& key) const
{
    const GgufValue& value = required(*this, key);
    const GgufArray& array = asArray(*this, key, value, "an array of numbers");
    std::vector<double> result;
    result.reserve(array.elements.size());
    for (const GgufValue& element : array.elements) {
        if (element.type == GgufValueType::eString || element.type == GgufValueType::eArray ||
            element.type == GgufValueType::eBool) {
            wrongType(*this, key, value, "an array of numbers");
        }
        result.push_back(asFloat(*this, key, element));
    }
    return result;
}

std::vector<int64_t>
GgufFile::getIntArray(const std::string& key) const
{
    const GgufValue& value = required(*this, key);
    const GgufArray& array = asArray(*this, key, value, "an array of integers");
    std::vector<int64_t> result;
    result.reserve(array.elements.size());
    for (const GgufValue& element : array.elements) {
        if (!element.isInteger()) {
            wrongType(*this, key, value, "an array of integers");
        }
        result.push_back(asInt(*this, key, element));
    }
    return result;
}

std::string
GgufFile::getString(const std::string& key, const std::string& fallback) const
{
    return has(key) ? getString(key) : fallback;
}

uint64_t
GgufFile::getUInt(const std::string& key, uint64_t fallback) const
{
    return has(key) ? getUInt(key) : fallback;
}

double
GgufFile::getFloat(const std::string& key, double fallback) const
{
    return has(key) ? getFloat(key) : fallback;
}

bool
GgufFile::getBool(const std::string& key, bool fallback) const
{
    return has(key) ? getBool(key) : fallback;
}

const GgufTensorInfo*
GgufFile::findTensor(const std::string& name) const
{
    for (const GgufTensorInfo& info : mTensors) {
        if (info.name == name) {
            return &info;
        }
    }
    return nullptr;
}

const GgufTensorInfo&
GgufFile::tensor(const std::string& name) const
{
    const GgufTensorInfo* info = findTensor(name);
    if (info == nullptr) {
        throw error("missing tensor '" + name + "'");
    }
    return *info;
}

const uint8_t*
GgufFile::tensorData(const GgufTensorInfo& info) const
{
    return mBytes + mDataOffset + info.offset;
}

} // namespace llm
} // namespace kp
