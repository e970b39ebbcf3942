// SPDX-License-Identifier: Apache-2.0
// kp::Algorithm: a compute shader with its bindings (tensors and images),
// specialization constants, push constants and workgroup count.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kompute/Core.hpp"
#include "kompute/Half.hpp"
#include "kompute/Memory.hpp"

namespace kp {

class Tensor;

namespace internal {
class Device;
class BatchReferences;
class DescriptorSetOwner;
struct AlgorithmObjects;
struct SharedPipeline;
}

/** Raw bytes of push or specialization constants plus what they hold. */
struct ConstantBytes
{
    enum class Kind
    {
        eNone,   ///< no values
        eBool,   ///< stored as 32-bit VkBool32
        eInt,
        eUnsignedInt,
        eFloat,
        eStruct, ///< a user type: only its size is known
    };

    std::vector<uint8_t> bytes;
    uint32_t elementSize = 0;
    Kind kind = Kind::eNone;

    uint32_t count() const
    {
        return elementSize == 0 ? 0 : static_cast<uint32_t>(bytes.size() / elementSize);
    }
    bool empty() const { return bytes.empty(); }
    /** "float32", "uint32", "struct of 12 bytes", ... */
    std::string typeName() const;

    template<typename T>
    static ConstantBytes from(const std::vector<T>& values)
    {
        static_assert(std::is_trivially_copyable_v<T> || std::is_same_v<T, bool>,
                      "constants must be trivially copyable");
        ConstantBytes constants;
        if constexpr (std::is_same_v<T, bool>) {
            // SPIR-V booleans are 32-bit in specialization data.
            constants.elementSize = 4;
            constants.kind = Kind::eBool;
            for (bool value : values) {
                uint32_t word = value ? 1u : 0u;
                const auto* raw = reinterpret_cast<const uint8_t*>(&word);
                constants.bytes.insert(constants.bytes.end(), raw, raw + 4);
            }
            return constants;
        } else {
            constants.elementSize = sizeof(T);
            if constexpr (std::is_same_v<T, float16_t> || std::is_floating_point_v<T>) {
                constants.kind = Kind::eFloat;
            } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
                constants.kind = Kind::eInt;
            } else if constexpr (std::is_integral_v<T>) {
                constants.kind = Kind::eUnsignedInt;
            } else {
                constants.kind = Kind::eStruct;
            }
            constants.bytes.resize(values.size() * sizeof(T));
            if (!values.empty()) {
                std::memcpy(constants.bytes.data(), values.data(), constants.bytes.size());
            }
            if (values.empty()) {
                constants.kind = Kind::eNone;
            }
            return constants;
        }
    }

    template<typename T>
    std::vector<T> as() const
    {
        std::vector<T> values(bytes.size() / sizeof(T));
        if (!values.empty()) {
            std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
        }
        return values;
    }
};

class Algorithm
{
  public:
    /** Upstream's constructor: builds on the device of the memory objects
     * (which must come from a Manager or be built on `device`). Prefer
     * Manager::algorithm. Nothing is built when memObjects or spirv is
     * empty. */
    template<typename S = float, typename P = float>
    Algorithm(std::shared_ptr<vk::Device> device,
              const std::vector<std::shared_ptr<Memory>>& memObjects = {},
              const std::vector<uint32_t>& spirv = {},
              const Workgroup& workgroup = {},
              const std::vector<S>& specializationConstants = {},
              const std::vector<P>& pushConstants = {})
      : Algorithm(contextOf(device, memObjects),
                  memObjects,
                  spirv,
                  workgroup,
                  ConstantBytes::from(specializationConstants),
                  ConstantBytes::from(pushConstants))
    {
    }

    /** Used by the Manager. */
    Algorithm(std::shared_ptr<internal::Device> device,
              const std::vector<std::shared_ptr<Memory>>& memObjects,
              const std::vector<uint32_t>& spirv,
              const Workgroup& workgroup,
              const ConstantBytes& specializationConstants,
              const ConstantBytes& pushConstants);

    Algorithm(const Algorithm&) = delete;
    Algorithm(Algorithm&&) = delete;
    Algorithm& operator=(const Algorithm&) = delete;
    Algorithm& operator=(Algorithm&&) = delete;
    ~Algorithm();

    /**
     * Checks the shader against the objects and constants (see README:
     * "What is checked before the driver sees a shader") and creates the
     * pipeline and descriptor set. An empty spec or push vector keeps the
     * previous values. Sequences that recorded this algorithm re-record
     * themselves at their next evaluation.
     */
    template<typename S = float, typename P = float>
    void rebuild(const std::vector<std::shared_ptr<Memory>>& memObjects,
                 const std::vector<uint32_t>& spirv,
                 const Workgroup& workgroup = {},
                 const std::vector<S>& specializationConstants = {},
                 const std::vector<P>& pushConstants = {})
    {
        rebuild(memObjects,
                spirv,
                workgroup,
                ConstantBytes::from(specializationConstants),
                ConstantBytes::from(pushConstants));
    }
    void rebuild(const std::vector<std::shared_ptr<Memory>>& memObjects,
                 const std::vector<uint32_t>& spirv,
                 const Workgroup& workgroup,
                 const ConstantBytes& specializationConstants,
                 const ConstantBytes& pushConstants);

    /** Binds other memory objects of the same kinds, without rebuilding the
     * pipeline (ours): they get a fresh descriptor set, and the old one is
     * freed once work in flight has completed (it does not wait). */
    void setMemObjects(const std::vector<std::shared_ptr<Memory>>& memObjects);

    void recordDispatch(const vk::CommandBuffer& commandBuffer);
    void recordBindCore(const vk::CommandBuffer& commandBuffer);
    void recordBindPush(const vk::CommandBuffer& commandBuffer);

    bool isInit() const;

    /** Group counts for the next recorded dispatch. x = 0 means
     * (minSize, 1, 1), as upstream, and then y and z must be 0 or 1 (a
     * larger one would be ignored: that throws); with x > 0, a y or z of 0
     * means 1. Throws beyond the device's maxComputeWorkGroupCount. No
     * pipeline rebuild is needed. */
    void setWorkgroup(const Workgroup& workgroup, uint32_t minSize = 1);
    const Workgroup& getWorkgroup() const { return mWorkgroup; }

    /** Replaces the push constants; their total size must match the
     * shader's push-constant block. */
    template<typename T>
    void setPushConstants(const std::vector<T>& pushConstants)
    {
        setPushConstants(ConstantBytes::from(pushConstants));
    }
    void setPushConstants(const void* data, uint32_t size, uint32_t memorySize);
    void setPushConstants(const ConstantBytes& pushConstants);

    template<typename T>
    const std::vector<T> getSpecializationConstants() const
    {
        return mSpecializationConstants.as<T>();
    }
    template<typename T>
    const std::vector<T> getPushConstants() const
    {
        return mPushConstants.as<T>();
    }

    const std::vector<std::shared_ptr<Memory>>& getMemObjects() const { return mMemObjects; }
    /** Kompute 0.9.0's getter: the memory objects as tensors (deprecated:
     * use getMemObjects()). Throws kp::Error if one is an image. */
    [[deprecated("Kompute 0.9.0 name: use getMemObjects()")]] std::vector<std::shared_ptr<Tensor>>
    getTensors() const;

    /** Hands the Vulkan objects to the device, which frees them once work
     * in flight has completed (it does not wait), and lets go of the memory
     * objects. Idempotent. */
    void destroy();

    /** Forgets the stored specialization and push constants and the built
     * pipeline (ours), so that the next rebuild uses only what it is given:
     * for moving an algorithm to a shader that declares none (as OpMult
     * does). */
    void clearConstants();

    // --- ours, for interoperation and for the operations -----------------
    vk::Pipeline getPipeline() const;
    vk::PipelineLayout getPipelineLayout() const;
    vk::DescriptorSet getDescriptorSet() const;
    /** Changes whenever the pipeline or descriptor set is replaced, so that
     * recorded command buffers know they must be recorded again. */
    uint64_t generation() const { return mGeneration; }
    /** Throws kp::DestroyedError naming `action` unless the algorithm and
     * all its memory objects are alive. */
    void checkUsable(const char* action) const;
    /** How the shader accesses the memory object at `binding` (ours):
     * eShaderRead and/or eShaderWrite. A binding decorated NonWritable
     * (GLSL `readonly`) is only read, one decorated NonReadable (`writeonly`)
     * only written; any other is taken as read and written. */
    vk::AccessFlags getBindingAccess(uint32_t binding) const;

  private:
    // OpMult checks the algorithm's device before it rebuilds it.
    friend class OpMult;

    static std::shared_ptr<internal::Device> contextOf(
      const std::shared_ptr<vk::Device>& device,
      const std::vector<std::shared_ptr<Memory>>& memObjects);
    void release();
    internal::DescriptorSetOwner allocateDescriptorSet(const internal::SharedPipeline& pipeline);
    void writeDescriptors(vk::DescriptorSet set,
                          const std::vector<std::shared_ptr<Memory>>& memObjects);

    std::shared_ptr<internal::Device> mDevice;
    std::unique_ptr<internal::AlgorithmObjects> mObjects;
    // The sequence batches that recorded it (see internal/Batches.hpp).
    std::unique_ptr<internal::BatchReferences> mRecordedIn;
    std::vector<std::shared_ptr<Memory>> mMemObjects;
    std::vector<uint32_t> mSpirv;
    ConstantBytes mSpecializationConstants;
    ConstantBytes mPushConstants;
    uint32_t mDeclaredPushConstantBytes = 0;
    std::vector<vk::AccessFlags> mBindingAccess; // by binding, from the SPIR-V
    Workgroup mWorkgroup{ 1, 1, 1 };
    uint64_t mGeneration = 0;
    bool mRegistered = false; // in the device's registry of live objects
};

} // namespace kp
