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

/** Raw bytes of push or specialization constants plus what they hold: the
 * type-erased form in which Algorithm keeps its constants, so that they
 * can be checked against the shader's declarations. A plain value type. */
struct ConstantBytes
{
    /** What kind of scalar the elements are. */
    enum class Kind
    {
        eNone,        ///< no values
        eBool,        ///< stored as 32-bit VkBool32
        eInt,         ///< signed integers
        eUnsignedInt, ///< unsigned integers
        eFloat,       ///< floating point (float16_t, float, double)
        eStruct,      ///< a user type: only its size is known
    };

    /** The values' bytes, element after element. */
    std::vector<uint8_t> bytes;
    /** Bytes per element (4 for bool); 0 when there are none. */
    uint32_t elementSize = 0;
    /** What the elements are. */
    Kind kind = Kind::eNone;

    /** Number of elements. */
    uint32_t count() const
    {
        return elementSize == 0 ? 0 : static_cast<uint32_t>(bytes.size() / elementSize);
    }
    /** Whether there are no bytes. */
    bool empty() const { return bytes.empty(); }
    /** "float32", "uint32", "struct of 12 bytes", ... */
    std::string typeName() const;

    /** The bytes of `values`, of any trivially copyable T (bool becomes a
     * 32-bit VkBool32 per value, as SPIR-V booleans are in specialization
     * data); an empty vector gives Kind::eNone. */
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

    /** The bytes read back as values of T (bytes.size() / sizeof(T) of
     * them). */
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

/**
 * A compute shader (SPIR-V) bound to memory objects (binding i = object i,
 * in descriptor set 0), with its specialization constants, push constants
 * and workgroup count: what OpAlgoDispatch dispatches. Made by
 * Manager::algorithm() and handed out as std::shared_ptr.
 *
 * Everything is checked before the driver sees the shader (bindings,
 * constants, limits: see @ref readme_what_is_checked_before_the_driver_sees_a_shader),
 * and mistakes throw kp::Error. Algorithms of the same SPIR-V, constants and
 * layout share one pipeline (@ref readme_shared_pipelines); the descriptor
 * set comes from pools the Manager shares.
 *
 * Ownership: the algorithm holds its memory objects (std::shared_ptr) until
 * destroy() or its own end, and its share of the pipeline and its
 * descriptor set, which destroy() hands to the device to free once work in
 * flight has completed (it does not wait). Its Manager's destroy() destroys
 * it too; afterwards use throws kp::DestroyedError.
 *
 * Thread safety: not synchronised. Change an algorithm (rebuild,
 * setMemObjects, setWorkgroup, setPushConstants) on one thread at a time,
 * and not while another thread records or evaluates a sequence that holds
 * it. It may be dropped or destroyed on any thread.
 */
class Algorithm
{
  public:
    /** Upstream's constructor: builds on the device of the memory objects
     * (which must come from a Manager or be built on `device`). Prefer
     * Manager::algorithm. Nothing is built when memObjects or spirv is
     * empty (rebuild() builds it later). Throws kp::Error as rebuild(), and
     * when the objects come from another device than `device`. */
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

    /// \cond INTERNAL
    /** Used by the Manager. */
    Algorithm(std::shared_ptr<internal::Device> device,
              const std::vector<std::shared_ptr<Memory>>& memObjects,
              const std::vector<uint32_t>& spirv,
              const Workgroup& workgroup,
              const ConstantBytes& specializationConstants,
              const ConstantBytes& pushConstants);
    /// \endcond

    Algorithm(const Algorithm&) = delete;
    Algorithm(Algorithm&&) = delete;
    Algorithm& operator=(const Algorithm&) = delete;
    Algorithm& operator=(Algorithm&&) = delete;
    /** As destroy(); errors are logged, never thrown. */
    ~Algorithm();

    /**
     * Checks the shader against the objects and constants (see README:
     * "What is checked before the driver sees a shader") and creates the
     * pipeline and descriptor set. An empty spec or push vector keeps the
     * previous values. Sequences that recorded this algorithm re-record
     * themselves at their next evaluation. Throws kp::Error for a mistake
     * (nothing is replaced then: the algorithm stays as it was), for an
     * empty `memObjects` and for objects of another Manager.
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
    /** rebuild() with constants already in raw form. */
    void rebuild(const std::vector<std::shared_ptr<Memory>>& memObjects,
                 const std::vector<uint32_t>& spirv,
                 const Workgroup& workgroup,
                 const ConstantBytes& specializationConstants,
                 const ConstantBytes& pushConstants);

    /** Binds other memory objects of the same kinds, without rebuilding the
     * pipeline: they get a fresh descriptor set, and the old one is freed
     * once work in flight has completed (it does not wait). Throws
     * kp::Error unless there is one object per binding, each a tensor or an
     * image as the binding was, of this algorithm's Manager. */
    void setMemObjects(const std::vector<std::shared_ptr<Memory>>& memObjects);

    /** Records vkCmdDispatch with getWorkgroup(); bind first
     * (recordBindCore, recordBindPush). Throws kp::DestroyedError unless
     * the algorithm and its memory objects are alive. */
    void recordDispatch(const vk::CommandBuffer& commandBuffer);
    /** Records binding the pipeline and the descriptor set (and notes the
     * command buffer's batch uses the algorithm and its memory objects, see
     * Memory::noteRecorded()). Throws as recordDispatch(). */
    void recordBindCore(const vk::CommandBuffer& commandBuffer);
    /** Records the push constants (nothing when there are none). Throws as
     * recordDispatch(). */
    void recordBindPush(const vk::CommandBuffer& commandBuffer);

    /** Whether the algorithm is built (it was given objects and SPIR-V) and
     * neither it nor its Manager was destroyed. */
    bool isInit() const;

    /** Group counts for the next recorded dispatch. x = 0 means
     * (minSize, 1, 1), as upstream, and then y and z must be 0 or 1 (a
     * larger one would be ignored: that throws); with x > 0, a y or z of 0
     * means 1. Throws beyond the device's maxComputeWorkGroupCount. No
     * pipeline rebuild is needed. */
    void setWorkgroup(const Workgroup& workgroup, uint32_t minSize = 1);
    /** The group counts of the next recorded dispatch (resolved: no 0). */
    const Workgroup& getWorkgroup() const { return mWorkgroup; }

    /** Replaces the push constants; their total size must match the
     * shader's push-constant block (kp::Error otherwise). They are
     * recorded into command buffers (recordBindPush()): a sequence recorded
     * earlier keeps the values it recorded until it records again. */
    template<typename T>
    void setPushConstants(const std::vector<T>& pushConstants)
    {
        setPushConstants(ConstantBytes::from(pushConstants));
    }
    /** Upstream's raw form: `size` values of `memorySize` bytes each from
     * `data` (which must not be null when size > 0). */
    void setPushConstants(const void* data, uint32_t size, uint32_t memorySize);
    /** The same with constants in raw form. */
    void setPushConstants(const ConstantBytes& pushConstants);

    /** The specialization constants, read as values of T. */
    template<typename T>
    const std::vector<T> getSpecializationConstants() const
    {
        return mSpecializationConstants.as<T>();
    }
    /** The current push constants, read as values of T. */
    template<typename T>
    const std::vector<T> getPushConstants() const
    {
        return mPushConstants.as<T>();
    }

    /** The bound memory objects, binding i at index i (empty after
     * destroy()). */
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
     * pipeline, so that the next rebuild uses only what it is given:
     * for moving an algorithm to a shader that declares none (as OpMult
     * does). */
    void clearConstants();

    // --- For interoperation and for the operations -----------------------
    /** The compute pipeline (shared with algorithms of the same SPIR-V,
     * constants and layout, and owned by them together), or a null handle
     * when not built. */
    vk::Pipeline getPipeline() const;
    /** The pipeline layout (owned as the pipeline), or a null handle. */
    vk::PipelineLayout getPipelineLayout() const;
    /** The algorithm's descriptor set (owned by it; replaced by
     * setMemObjects and rebuild), or a null handle. */
    vk::DescriptorSet getDescriptorSet() const;
    /** Changes whenever the pipeline or descriptor set is replaced, so that
     * recorded command buffers know they must be recorded again. */
    uint64_t generation() const { return mGeneration; }
    /** Throws kp::DestroyedError naming `action` unless the algorithm and
     * all its memory objects are alive. */
    void checkUsable(const char* action) const;
    /** How the shader accesses the memory object at `binding`:
     * eShaderRead and/or eShaderWrite. A binding decorated NonWritable
     * (GLSL `readonly`) is only read, one decorated NonReadable (`writeonly`)
     * only written; any other is taken as read and written. Throws
     * kp::Error for a binding the algorithm does not have. */
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
