// SPDX-License-Identifier: Apache-2.0
#include "internal/Pipelines.hpp"

#include <functional>
#include <string_view>

#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "internal/SpirvValidation.hpp"

namespace kp {
namespace internal {

namespace {

uint64_t
hashBytes(const void* data, size_t bytes)
{
    return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(data), bytes));
}

uint64_t
combine(uint64_t seed, uint64_t value)
{
    return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

// Prune once this many entries were added since the last time.
constexpr size_t kPruneInterval = 64;

} // namespace

template<typename Map>
void
SharedPipelines::prune(Map& map)
{
    if (++mInsertsSincePrune < kPruneInterval) {
        return;
    }
    mInsertsSincePrune = 0;
    for (auto it = map.begin(); it != map.end();) {
        it = it->second.expired() ? map.erase(it) : std::next(it);
    }
}

std::shared_ptr<const ShaderEntry>
SharedPipelines::shader(const std::vector<uint32_t>& words)
{
    uint64_t hash = hashBytes(words.data(), words.size() * sizeof(uint32_t));
    auto find = [&]() -> std::shared_ptr<ShaderEntry> {
        auto range = mShaders.equal_range(hash);
        for (auto it = range.first; it != range.second; ++it) {
            auto entry = it->second.lock();
            if (entry && entry->words == words) {
                return entry;
            }
        }
        return nullptr;
    };
    {
        std::lock_guard<std::mutex> lock(mMutex);
        if (auto entry = find()) {
            return entry;
        }
    }
    // Validated and read without the lock: other threads' algorithms of
    // other shaders need not wait for it.
    auto entry = std::make_shared<ShaderEntry>();
    entry->hash = hash;
    entry->module = checkedModule(words, mDevice.capabilities());
    entry->words = words;
    std::lock_guard<std::mutex> lock(mMutex);
    if (auto raced = find()) {
        return raced;
    }
    mShaders.emplace(hash, entry);
    prune(mShaders);
    return entry;
}

std::shared_ptr<const SharedPipeline>
SharedPipelines::pipeline(const std::shared_ptr<const ShaderEntry>& shader,
                          const ConstantBytes& specialization,
                          const PipelineLayoutKey& layout)
{
    uint64_t hash = combine(shader->hash,
                            hashBytes(specialization.bytes.data(), specialization.bytes.size()));
    hash = combine(hash, specialization.elementSize);
    hash = combine(hash, hashBytes(layout.bindings.data(), layout.bindings.size() * sizeof(vk::DescriptorType)));
    hash = combine(hash, layout.pushConstantBytes);
    auto find = [&]() -> std::shared_ptr<SharedPipeline> {
        auto range = mPipelines.equal_range(hash);
        for (auto it = range.first; it != range.second; ++it) {
            auto entry = it->second.lock();
            if (entry && entry->shader == shader &&
                entry->specializationElementSize == specialization.elementSize &&
                entry->specializationBytes == specialization.bytes && entry->layoutKey == layout) {
                return entry;
            }
        }
        return nullptr;
    };
    {
        std::lock_guard<std::mutex> lock(mMutex);
        if (auto entry = find()) {
            return entry;
        }
    }
    // Built without the lock (pipeline creation compiles the shader).
    auto built = build(std::const_pointer_cast<ShaderEntry>(shader), hash, specialization, layout);
    std::lock_guard<std::mutex> lock(mMutex);
    if (auto raced = find()) {
        return raced; // ours goes: it was never used
    }
    mPipelines.emplace(hash, built);
    prune(mPipelines);
    return built;
}

std::shared_ptr<SharedPipeline>
SharedPipelines::build(const std::shared_ptr<ShaderEntry>& shader,
                       uint64_t hash,
                       const ConstantBytes& specialization,
                       const PipelineLayoutKey& layout)
{
    vk::Device device = mDevice.device();
    auto entry = std::make_shared<SharedPipeline>();
    entry->hash = hash;
    entry->shader = shader;
    entry->specializationBytes = specialization.bytes;
    entry->specializationElementSize = specialization.elementSize;
    entry->layoutKey = layout;

    std::vector<vk::DescriptorSetLayoutBinding> bindings;
    for (uint32_t i = 0; i < layout.bindings.size(); ++i) {
        vk::DescriptorType type = layout.bindings[i];
        (type == vk::DescriptorType::eStorageImage ? entry->storageImages : entry->storageBuffers) += 1;
        bindings.emplace_back(i, type, 1, vk::ShaderStageFlagBits::eCompute);
    }
    vk::DescriptorSetLayoutCreateInfo setLayoutInfo(
      {}, static_cast<uint32_t>(bindings.size()), bindings.data());
    vk::DescriptorSetLayout setLayout;
    check(device.createDescriptorSetLayout(&setLayoutInfo, nullptr, &setLayout),
          "Creating an algorithm's descriptor set layout");
    entry->setLayout = DescriptorSetLayoutOwner(&mDevice, setLayout);

    vk::PushConstantRange pushRange(vk::ShaderStageFlagBits::eCompute, 0, layout.pushConstantBytes);
    vk::PipelineLayoutCreateInfo layoutInfo(
      {}, 1, entry->setLayout.address(), layout.pushConstantBytes == 0 ? 0 : 1, &pushRange);
    vk::PipelineLayout pipelineLayout;
    check(device.createPipelineLayout(&layoutInfo, nullptr, &pipelineLayout),
          "Creating an algorithm's pipeline layout");
    entry->layout = PipelineLayoutOwner(&mDevice, pipelineLayout);

    vk::ShaderModule shaderModule;
    {
        std::lock_guard<std::mutex> lock(mMutex);
        if (!shader->shaderModule) {
            vk::ShaderModuleCreateInfo moduleInfo(
              {}, shader->words.size() * sizeof(uint32_t), shader->words.data());
            vk::ShaderModule created;
            check(device.createShaderModule(&moduleInfo, nullptr, &created),
                  "Creating an algorithm's shader module");
            shader->shaderModule = ShaderModuleOwner(&mDevice, created);
            mShaderModulesCreated.fetch_add(1);
        }
        shaderModule = shader->shaderModule.get();
    }

    std::vector<vk::SpecializationMapEntry> entries;
    for (uint32_t i = 0; i < specialization.count(); ++i) {
        entries.emplace_back(i, i * specialization.elementSize, specialization.elementSize);
    }
    vk::SpecializationInfo specializationInfo(static_cast<uint32_t>(entries.size()),
                                              entries.data(),
                                              entry->specializationBytes.size(),
                                              entry->specializationBytes.data());
    vk::PipelineShaderStageCreateInfo stage({},
                                            vk::ShaderStageFlagBits::eCompute,
                                            shaderModule,
                                            "main",
                                            entries.empty() ? nullptr : &specializationInfo);
    vk::ComputePipelineCreateInfo pipelineInfo({}, stage, entry->layout.get());
    vk::Pipeline pipeline;
    check(device.createComputePipelines(mDevice.pipelineCache(), 1, &pipelineInfo, nullptr, &pipeline),
          "Creating an algorithm's compute pipeline");
    entry->pipeline = PipelineOwner(&mDevice, pipeline);
    mPipelinesCreated.fetch_add(1);
    return entry;
}

uint32_t
SharedPipelines::livePipelines()
{
    std::lock_guard<std::mutex> lock(mMutex);
    uint32_t live = 0;
    for (const auto& entry : mPipelines) {
        live += entry.second.expired() ? 0 : 1;
    }
    return live;
}

void
SharedPipelines::clear()
{
    std::lock_guard<std::mutex> lock(mMutex);
    mShaders.clear();
    mPipelines.clear();
}

} // namespace internal
} // namespace kp
