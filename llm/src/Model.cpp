// SPDX-License-Identifier: Apache-2.0
// Model: checks a file's weights and puts them on the device, or makes up
// random ones of a named shape.
#include "kompute/llm/Model.hpp"

#include "RandomWeights.hpp"
#include "WeightFormats.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>

namespace kp {
namespace llm {

namespace {

using DataTypes = kp::Memory::DataTypes;

struct DeviceFormat
{
    DataTypes dataType;
    uint32_t elementBytes;
};

/** How a weight of `type` is stored in a tensor: the element type for
 * F32/F16/BF16, raw bytes of GGUF blocks for the block types. */
DeviceFormat
deviceFormatOf(TensorType type)
{
    switch (type) {
        case TensorType::eF32: return { DataTypes::eFloat, 4 };
        case TensorType::eF16: return { DataTypes::eHalf, 2 };
        case TensorType::eBF16: return { DataTypes::eBFloat16, 2 };
        default:
            if (weightFormatOf(type) != kp::WeightFormat::eNone) {
                return { DataTypes::eUnsignedChar, 1 };
            }
            break;
    }
    throw kp::Error("weight type " + toString(type) + " cannot be put on the device");
}

uint64_t
byteSize(TensorType type, uint64_t elements)
{
    TensorTypeLayout layout = layoutOf(type);
    return elements / layout.blockSize * layout.blockBytes;
}

float
bf16ToFloat(uint16_t bits)
{
    uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &wide, 4);
    return value;
}

/** A norm weight as f32, from F32, F16 or BF16 bytes. */
std::vector<float>
normToFloat(TensorType type, const uint8_t* bytes, uint32_t count)
{
    std::vector<float> values(count);
    for (uint32_t i = 0; i < count; ++i) {
        if (type == TensorType::eF32) {
            std::memcpy(&values[i], bytes + 4 * i, 4);
        } else {
            uint16_t bits;
            std::memcpy(&bits, bytes + 2 * i, 2);
            values[i] = type == TensorType::eF16 ? kp::float16_t::toFloat(bits) : bf16ToFloat(bits);
        }
    }
    return values;
}

} // namespace

Model::Model(kp::Manager& manager, ModelConfig config)
  : mManager(manager)
  , mConfig(std::move(config))
{
    mLayers.resize(mConfig.blockCount);
}

DeviceWeight&
Model::slot(const std::string& name)
{
    if (name == "token_embd.weight") {
        return mTokenEmbedding;
    }
    if (name == "output_norm.weight") {
        return mOutputNorm;
    }
    if (name == "output.weight") {
        return mOutput;
    }
    if (name == "rope_freqs.weight") {
        return mRopeFreqs;
    }
    // blk.N.<part>.weight
    size_t dot = name.find('.', 4);
    uint32_t index = static_cast<uint32_t>(std::stoul(name.substr(4, dot - 4)));
    std::string part = name.substr(dot + 1);
    Layer& layer = mLayers.at(index);
    if (part == "attn_norm.weight") return layer.attnNorm;
    if (part == "attn_q.weight") return layer.wq;
    if (part == "attn_k.weight") return layer.wk;
    if (part == "attn_v.weight") return layer.wv;
    if (part == "attn_output.weight") return layer.wo;
    if (part == "ffn_norm.weight") return layer.ffnNorm;
    if (part == "ffn_gate.weight") return layer.wGate;
    if (part == "ffn_up.weight") return layer.wUp;
    if (part == "ffn_down.weight") return layer.wDown;
    if (part == "attn_q.bias") return layer.bq;
    if (part == "attn_k.bias") return layer.bk;
    if (part == "attn_v.bias") return layer.bv;
    if (part == "attn_q_norm.weight") return layer.qNorm;
    if (part == "attn_k_norm.weight") return layer.kNorm;
    throw kp::Error("no slot for weight '" + name + "'");
}

DeviceWeight
Model::upload(const std::string& name, TensorType type, const uint8_t* bytes, uint32_t rows,
              uint32_t cols, bool isMatrix)
{
    DeviceWeight weight;
    weight.rows = rows;
    weight.cols = cols;
    const uint64_t elements = uint64_t(rows) * cols;
    if (!isMatrix) {
        // Norm weights are tiny: always f32 on the device.
        std::vector<float> values = normToFloat(type, bytes, static_cast<uint32_t>(elements));
        weight.type = TensorType::eF32;
        weight.tensor = mManager.tensor(values.data(), static_cast<uint32_t>(elements), 4, DataTypes::eFloat,
                                        kp::Memory::MemoryTypes::eStorage);
    } else {
        DeviceFormat format = deviceFormatOf(type);
        uint64_t bytesTotal = byteSize(type, elements);
        uint64_t count = bytesTotal / format.elementBytes;
        // One shader reads each matrix through one binding: refused here,
        // naming the weight, rather than by the first operation over it.
        const uint64_t maxRange = mManager.getDeviceProperties().limits.maxStorageBufferRange;
        if (bytesTotal > std::min<uint64_t>(maxRange, UINT32_MAX)) {
            throw kp::Error("weight '" + name + "' has " + std::to_string(bytesTotal) +
                            " bytes, more than one storage buffer of this device holds (maxStorageBufferRange " +
                            std::to_string(maxRange) + " bytes)");
        }
        weight.type = type;
        // Weights go to the device grouped where the kernel library prefers
        // it (kp::preferredWeightFormat: Q4_0 rows of whole groups of 8
        // blocks, on devices with integer dot products; kp::groupBlocks):
        // the same weights, each block's quants 16-byte aligned after its
        // group's scales, which the decode mat-vec loads coalesced
        // (docs/matmul-tuning.md) and every other kernel reads as well.
        std::vector<uint8_t> grouped;
        kp::WeightFormat blocks = weightFormatOf(type);
        if (blocks != kp::WeightFormat::eNone && kp::preferredWeightFormat(mManager, blocks, cols) != blocks) {
            grouped = kp::groupBlocks(blocks, bytes, bytesTotal);
            bytes = grouped.data();
            weight.grouped = true;
        }
        weight.tensor = mManager.tensor(const_cast<uint8_t*>(bytes), static_cast<uint32_t>(count),
                                        format.elementBytes, format.dataType, kp::Memory::MemoryTypes::eStorage);
    }
    mWeightBytes += weight.tensor->memorySize();
    return weight;
}

namespace {

bool
endsWith(const std::string& name, const char* suffix)
{
    size_t n = std::strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
}

/** How many weights from specs[i] on share one tensor: a layer's query,
 * key and value matrices (3), its gate and up matrices (2), else 1. */
size_t
groupAt(const std::vector<WeightSpec>& specs, size_t i)
{
    auto next = [&](size_t k, const char* suffix) { return i + k < specs.size() && endsWith(specs[i + k].name, suffix); };
    if (endsWith(specs[i].name, "attn_q.weight") && next(1, "attn_k.weight") && next(2, "attn_v.weight")) {
        return 3;
    }
    if (endsWith(specs[i].name, "ffn_gate.weight") && next(1, "ffn_up.weight")) {
        return 2;
    }
    return 1;
}

} // namespace

void
Model::place(const std::vector<WeightSpec>& specs, const WeightSourceFn& source, uint64_t total,
             const LoadProgress& progress)
{
    const uint64_t maxRange = mManager.getDeviceProperties().limits.maxStorageBufferRange;
    uint64_t done = 0;
    auto advance = [&](uint64_t bytes) {
        done += bytes;
        if (progress) {
            progress(done, total);
        }
    };
    for (size_t i = 0; i < specs.size(); ++i) {
        const WeightSpec& spec = specs[i];
        WeightSource weight = source(spec);
        uint32_t cols = static_cast<uint32_t>(spec.shape[0]);
        if (endsWith(spec.name, "attn_q.bias") && i + 2 < specs.size()) {
            // The query, key and value biases of a layer: one f32 vector
            // [q | k | v], added to the product's row by one operation.
            std::vector<float> joined;
            uint64_t bytes = 0;
            for (size_t k = 0; k < 3; ++k) {
                WeightSource part = k == 0 ? weight : source(specs[i + k]);
                uint32_t n = static_cast<uint32_t>(specs[i + k].shape[0]);
                std::vector<float> values = normToFloat(part.type, part.bytes, n);
                joined.insert(joined.end(), values.begin(), values.end());
                bytes += part.byteSize;
            }
            DeviceWeight shared = upload(spec.name, TensorType::eF32, reinterpret_cast<const uint8_t*>(joined.data()),
                                         1, static_cast<uint32_t>(joined.size()), false);
            uint64_t first = 0;
            for (size_t k = 0; k < 3; ++k) {
                DeviceWeight& part = slot(specs[i + k].name);
                part = shared;
                part.cols = static_cast<uint32_t>(specs[i + k].shape[0]);
                part.offset = first;
                first += part.cols;
            }
            advance(bytes);
            i += 2;
            continue;
        }
        uint32_t rows = spec.shape.size() > 1 ? static_cast<uint32_t>(spec.shape[1]) : 1;
        // The query, key and value matrices of a layer share one tensor
        // (in that order), and so do its gate and up matrices: a step then
        // computes each group with one matrix product (decoding: one
        // mat-vec) into adjacent columns. A group stays apart where its
        // types differ or together it would not fit in one storage buffer.
        if (endsWith(spec.name, "attn_q_norm.weight") && i + 1 < specs.size()) {
            // A layer's query and key head norms: one f32 tensor with the
            // query norm once per query head, then the key norm once per key
            // head, so that one operation normalizes every head of a row.
            WeightSource keyNorm = source(specs[i + 1]);
            std::vector<float> qn = normToFloat(weight.type, weight.bytes, cols);
            std::vector<float> kn = normToFloat(keyNorm.type, keyNorm.bytes, cols);
            std::vector<float> joined;
            joined.reserve(uint64_t(mConfig.headCount + mConfig.headCountKv) * cols);
            for (uint32_t h = 0; h < mConfig.headCount + mConfig.headCountKv; ++h) {
                const std::vector<float>& norm = h < mConfig.headCount ? qn : kn;
                joined.insert(joined.end(), norm.begin(), norm.end());
            }
            DeviceWeight shared = upload(spec.name, TensorType::eF32, reinterpret_cast<const uint8_t*>(joined.data()),
                                         1, static_cast<uint32_t>(joined.size()), false);
            shared.cols = cols;
            slot(spec.name) = shared;
            DeviceWeight& k = slot(specs[i + 1].name);
            k = shared;
            k.offset = uint64_t(mConfig.headCount) * cols;
            advance(weight.byteSize + keyNorm.byteSize);
            i += 1;
            continue;
        }
        size_t group = groupAt(specs, i);
        if (group > 1) {
            std::vector<WeightSource> parts{ weight };
            uint64_t bytes = weight.byteSize;
            bool together = true;
            for (size_t k = 1; k < group; ++k) {
                parts.push_back(source(specs[i + k]));
                bytes += parts.back().byteSize;
                together = together && parts.back().type == weight.type &&
                           static_cast<uint32_t>(specs[i + k].shape[0]) == cols;
            }
            if (together && bytes <= maxRange) {
                std::vector<uint8_t> joined;
                joined.reserve(bytes);
                uint32_t allRows = 0;
                for (size_t k = 0; k < group; ++k) {
                    joined.insert(joined.end(), parts[k].bytes, parts[k].bytes + parts[k].byteSize);
                    allRows += static_cast<uint32_t>(specs[i + k].shape[1]);
                }
                DeviceWeight shared = upload(spec.name, weight.type, joined.data(), allRows, cols, true);
                uint64_t firstRow = 0;
                for (size_t k = 0; k < group; ++k) {
                    DeviceWeight& part = slot(specs[i + k].name);
                    part = shared;
                    part.rows = static_cast<uint32_t>(specs[i + k].shape[1]);
                    part.offset = firstRow * cols;
                    firstRow += part.rows;
                }
                advance(bytes);
                i += group - 1;
                continue;
            }
        }
        slot(spec.name) = upload(spec.name, weight.type, weight.bytes, rows, cols, spec.isMatrix);
        advance(weight.byteSize);
    }
}

std::shared_ptr<Model>
Model::load(kp::Manager& manager, const GgufFile& file, const LoadProgress& progress)
{
    ModelConfig config = ModelConfig::fromGguf(file);
    checkWeights(file, config);
    auto model = std::make_shared<Model>(manager, config);
    model->mWeightType = file.tensor("blk.0.attn_q.weight").type;
    for (const GgufTensorInfo& info : file.tensors()) {
        model->mTypeCounts[info.type] += 1;
    }
    std::vector<WeightSpec> specs = weightSpecs(config);
    uint64_t total = 0;
    for (const WeightSpec& spec : specs) {
        total += file.tensor(spec.name).byteSize;
    }
    model->place(
      specs,
      [&](const WeightSpec& spec) {
          const GgufTensorInfo& info = file.tensor(spec.name);
          return WeightSource{ info.type, file.tensorData(info), info.byteSize };
      },
      total,
      progress);
    return model;
}

std::shared_ptr<Model>
Model::random(kp::Manager& manager, const ModelConfig& config, TensorType type, uint64_t seed,
              const LoadProgress& progress)
{
    return random(manager, config, WeightMix::pure(type), seed, progress);
}

std::shared_ptr<Model>
Model::random(kp::Manager& manager, const ModelConfig& config, const WeightMix& mix, uint64_t seed,
              const LoadProgress& progress)
{
    for (TensorType type : { mix.base, mix.output }) {
        if (!isSupportedWeightType(type)) {
            throw kp::Error("random weights of type " + toString(type) +
                            ": supported are F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, "
                            "Q5_K, Q6_K, IQ4_NL and IQ4_XS");
        }
    }
    config.validate();
    auto model = std::make_shared<Model>(manager, config);
    std::vector<WeightSpec> specs = weightSpecs(config);
    for (const WeightSpec& spec : specs) {
        model->mTypeCounts[mix.typeOf(spec, config)] += 1;
    }
    std::map<std::string, uint64_t> indexOf;
    uint64_t total = 0;
    for (const WeightSpec& spec : specs) {
        indexOf.emplace(spec.name, indexOf.size() + 1);
        uint64_t elements = spec.shape[0] * (spec.shape.size() > 1 ? spec.shape[1] : 1);
        total += byteSize(mix.typeOf(spec, config), elements);
        if (spec.name == "blk.0.attn_q.weight") {
            model->mWeightType = mix.typeOf(spec, config);
        }
    }
    // place() uploads each weight right after asking for it (or a group of
    // up to three together): the three weights made last are all it needs.
    std::deque<std::pair<std::string, std::vector<uint8_t>>> made;
    model->place(
      specs,
      [&](const WeightSpec& spec) {
          auto it = std::find_if(made.begin(), made.end(), [&](const auto& m) { return m.first == spec.name; });
          if (it == made.end()) {
              if (made.size() == 3) {
                  made.pop_front();
              }
              made.emplace_back(spec.name, randomWeight(spec, mix.typeOf(spec, config), seed, indexOf[spec.name]));
              it = made.end() - 1;
          }
          TensorType t = mix.typeOf(spec, config);
          return WeightSource{ t, it->second.data(), it->second.size() };
      },
      total,
      progress);
    return model;
}

uint64_t
Model::bytesReadPerToken() const
{
    auto bytesOf = [](const DeviceWeight& w) { return byteSize(w.type, uint64_t(w.rows) * w.cols); };
    uint64_t bytes = 0;
    for (const Layer& layer : mLayers) {
        for (const DeviceWeight* w : { &layer.attnNorm, &layer.wq, &layer.wk, &layer.wv, &layer.wo,
                                       &layer.ffnNorm, &layer.wGate, &layer.wUp, &layer.wDown, &layer.bq,
                                       &layer.bk, &layer.bv, &layer.qNorm, &layer.kNorm }) {
            if (w->tensor) {
                bytes += bytesOf(*w);
            }
        }
    }
    bytes += bytesOf(mOutputNorm) + bytesOf(output());
    bytes += bytesOf(mTokenEmbedding) / mTokenEmbedding.rows;
    return bytes;
}

std::string
Model::typeMix() const
{
    std::vector<std::pair<TensorType, uint32_t>> counts(mTypeCounts.begin(), mTypeCounts.end());
    std::stable_sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string text;
    for (const auto& [type, count] : counts) {
        text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + toString(type);
    }
    return text;
}

} // namespace llm
} // namespace kp
