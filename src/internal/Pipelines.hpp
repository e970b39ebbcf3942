// SPDX-License-Identifier: Apache-2.0
// Compute pipelines shared between algorithms.
//
// Algorithms of the same SPIR-V, specialization constants and layout
// (binding kinds and push-constant size) share one VkShaderModule,
// VkPipelineLayout and VkPipeline, so creating such an algorithm costs only
// its descriptor set: the SPIR-V is validated and reflected once, and the
// pipeline built once. Entries are found by a hash of their inputs and
// compared in full on a hit. The device context holds them weakly: a
// pipeline lives while an algorithm uses it, or the retire list still
// holds an algorithm's reference to it (until the GPU is done with it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kompute/Vulkan.hpp"

#include "internal/Owners.hpp"
#include "internal/SpirvReflection.hpp"
#include "kompute/Algorithm.hpp"

namespace kp {
namespace internal {

class Device;

/** A validated and reflected SPIR-V module, and its VkShaderModule once a
 * pipeline needed it. */
struct ShaderEntry
{
    uint64_t hash = 0;
    std::vector<uint32_t> words;
    ReflectedModule module;
    ShaderModuleOwner shaderModule; // made with the first pipeline
};

/** The layout part of a pipeline's identity. */
struct PipelineLayoutKey
{
    std::vector<vk::DescriptorType> bindings; // binding i's descriptor type
    uint32_t pushConstantBytes = 0;           // the range (a multiple of 4)

    bool operator==(const PipelineLayoutKey& other) const
    {
        return bindings == other.bindings && pushConstantBytes == other.pushConstantBytes;
    }
};

/** Everything an algorithm shares with others of the same inputs. */
struct SharedPipeline
{
    uint64_t hash = 0;
    std::shared_ptr<ShaderEntry> shader;
    std::vector<uint8_t> specializationBytes;
    uint32_t specializationElementSize = 0;
    PipelineLayoutKey layoutKey;
    uint32_t storageBuffers = 0;
    uint32_t storageImages = 0;
    DescriptorSetLayoutOwner setLayout;
    PipelineLayoutOwner layout;
    PipelineOwner pipeline;
};

class SharedPipelines
{
  public:
    explicit SharedPipelines(Device& device)
      : mDevice(device)
    {
    }

    /** The validated, reflected module of `words` (validated and reflected
     * on first use; throws kp::Error for invalid SPIR-V). */
    std::shared_ptr<const ShaderEntry> shader(const std::vector<uint32_t>& words);

    /** The pipeline of `shader` with these constants and layout, built on
     * first use (throws kp::VulkanError if the driver refuses). */
    std::shared_ptr<const SharedPipeline> pipeline(const std::shared_ptr<const ShaderEntry>& shader,
                                                   const ConstantBytes& specialization,
                                                   const PipelineLayoutKey& layout);

    /** Counts of Vulkan objects made (ours, Manager::pipelineStats). */
    uint64_t shaderModulesCreated() const { return mShaderModulesCreated.load(); }
    uint64_t pipelinesCreated() const { return mPipelinesCreated.load(); }
    uint32_t livePipelines();

    /** Forgets every entry (the device is being destroyed: no algorithm
     * holds one any more). */
    void clear();

  private:
    std::shared_ptr<SharedPipeline> build(const std::shared_ptr<ShaderEntry>& shader,
                                          uint64_t hash,
                                          const ConstantBytes& specialization,
                                          const PipelineLayoutKey& layout);
    /** Drops expired entries now and then, so the maps stay small. */
    template<typename Map>
    void prune(Map& map);

    Device& mDevice;
    std::mutex mMutex;
    std::unordered_multimap<uint64_t, std::weak_ptr<ShaderEntry>> mShaders;
    std::unordered_multimap<uint64_t, std::weak_ptr<SharedPipeline>> mPipelines;
    size_t mInsertsSincePrune = 0;
    std::atomic<uint64_t> mShaderModulesCreated{ 0 };
    std::atomic<uint64_t> mPipelinesCreated{ 0 };
};

} // namespace internal
} // namespace kp
