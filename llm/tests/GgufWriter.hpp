// SPDX-License-Identifier: Apache-2.0
// A small GGUF writer for the tests: builds files byte by byte, so tests can
// also write broken ones on purpose.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kp {
namespace llm {
namespace test {

class GgufWriter
{
  public:
    struct Tensor
    {
        std::string name;
        std::vector<uint64_t> shape;
        uint32_t type;
        std::vector<uint8_t> data;
    };

    uint32_t version = 3;
    uint64_t alignment = 32;
    std::vector<std::vector<uint8_t>> keyValues;
    std::vector<Tensor> tensors;

    template<typename T>
    static void put(std::vector<uint8_t>& out, T value)
    {
        size_t at = out.size();
        out.resize(at + sizeof(T));
        std::memcpy(out.data() + at, &value, sizeof(T));
    }
    static void putString(std::vector<uint8_t>& out, const std::string& text)
    {
        put<uint64_t>(out, text.size());
        out.insert(out.end(), text.begin(), text.end());
    }

    void addString(const std::string& key, const std::string& value)
    {
        std::vector<uint8_t> kv = keyOf(key, 8);
        putString(kv, value);
        keyValues.push_back(kv);
    }
    void addU32(const std::string& key, uint32_t value) { addScalar<uint32_t>(key, 4, value); }
    void addI32(const std::string& key, int32_t value) { addScalar<int32_t>(key, 5, value); }
    void addF32(const std::string& key, float value) { addScalar<float>(key, 6, value); }
    void addBool(const std::string& key, bool value) { addScalar<uint8_t>(key, 7, value ? 1 : 0); }
    void addU64(const std::string& key, uint64_t value) { addScalar<uint64_t>(key, 10, value); }
    void addF64(const std::string& key, double value) { addScalar<double>(key, 12, value); }
    void addStringArray(const std::string& key, const std::vector<std::string>& values)
    {
        std::vector<uint8_t> kv = keyOf(key, 9);
        put<uint32_t>(kv, 8);
        put<uint64_t>(kv, values.size());
        for (const std::string& v : values) {
            putString(kv, v);
        }
        keyValues.push_back(kv);
    }
    template<typename T>
    void addArray(const std::string& key, uint32_t elementType, const std::vector<T>& values)
    {
        std::vector<uint8_t> kv = keyOf(key, 9);
        put<uint32_t>(kv, elementType);
        put<uint64_t>(kv, values.size());
        for (const T& v : values) {
            put<T>(kv, v);
        }
        keyValues.push_back(kv);
    }
    void addRaw(std::vector<uint8_t> kv) { keyValues.push_back(std::move(kv)); }

    void addTensor(const std::string& name, std::vector<uint64_t> shape, uint32_t type, std::vector<uint8_t> data)
    {
        tensors.push_back({ name, std::move(shape), type, std::move(data) });
    }

    /** The file's bytes; `offsets` may override each tensor's offset. */
    std::vector<uint8_t> bytes(const std::vector<uint64_t>& offsets = {}) const
    {
        std::vector<uint8_t> out;
        put<uint32_t>(out, 0x46554747);
        put<uint32_t>(out, version);
        put<uint64_t>(out, tensors.size());
        put<uint64_t>(out, keyValues.size());
        for (const auto& kv : keyValues) {
            out.insert(out.end(), kv.begin(), kv.end());
        }
        uint64_t offset = 0;
        std::vector<uint64_t> placed;
        for (size_t i = 0; i < tensors.size(); ++i) {
            const Tensor& t = tensors[i];
            putString(out, t.name);
            put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
            for (uint64_t extent : t.shape) {
                put<uint64_t>(out, extent);
            }
            put<uint32_t>(out, t.type);
            uint64_t at = i < offsets.size() ? offsets[i] : offset;
            put<uint64_t>(out, at);
            placed.push_back(at);
            offset += (t.data.size() + alignment - 1) / alignment * alignment;
        }
        out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
        size_t dataStart = out.size();
        for (size_t i = 0; i < tensors.size(); ++i) {
            size_t at = dataStart + placed[i];
            if (out.size() < at + tensors[i].data.size()) {
                out.resize(at + tensors[i].data.size(), 0);
            }
            std::memcpy(out.data() + at, tensors[i].data.data(), tensors[i].data.size());
        }
        out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
        return out;
    }

  private:
    static std::vector<uint8_t> keyOf(const std::string& key, uint32_t type)
    {
        std::vector<uint8_t> kv;
        putString(kv, key);
        put<uint32_t>(kv, type);
        return kv;
    }
    template<typename T>
    void addScalar(const std::string& key, uint32_t type, T value)
    {
        std::vector<uint8_t> kv = keyOf(key, type);
        put<T>(kv, value);
        keyValues.push_back(kv);
    }
};

} // namespace test
} // namespace llm
} // namespace kp
