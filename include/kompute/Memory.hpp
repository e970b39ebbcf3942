// SPDX-License-Identifier: Apache-2.0
// kp::Memory: the common base of Tensor (a buffer) and Image. It owns the
// device allocation and the host view (`data()`, `vector()`, `setData()`).
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kompute/Core.hpp"
#include "kompute/Errors.hpp"
#include "kompute/Half.hpp"

namespace kp {

class Memory;

namespace internal {
class Device;
class BatchReferences;
struct Allocation;
struct MemoryInternals;
/** The device context of a memory object (for the kernel library, which
 * builds its operations' algorithms on it and checks that their tensors
 * share one Manager). */
std::shared_ptr<Device>
deviceOf(const Memory& memory);
}

/**
 * The common base of kp::Tensor (a buffer) and kp::Image: size() elements
 * of one data type on the device, in one of four memory types, and the host
 * view through which the program reads and writes them (data(), vector(),
 * setData()).
 *
 * Memory objects are made by a kp::Manager (Manager::tensor(),
 * Manager::tensorT(), Manager::image(), Manager::imageT()) and handed out
 * as std::shared_ptr. Each owns its Vulkan buffer or image and their
 * memory, and keeps its Manager's device alive. destroy(), or dropping the
 * last reference, hands them to the device, which frees them once the work
 * in flight that may use them has completed: it never waits. Afterwards the
 * object is inert and every use throws kp::DestroyedError. See
 * @ref readme_lifetimes.
 *
 * Thread safety: a memory object may be dropped or destroyed on any thread,
 * also while its Manager is being destroyed on another; otherwise it is not
 * synchronised. The host view is plain memory: do not write it while a
 * submitted sequence reads it, nor read it before a sequence that writes it
 * has completed.
 */
class Memory
{
  public:
    /** Where the memory lives and how the host reaches it. Each type
     * behaves the same on discrete and on unified-memory devices; the
     * table of @ref readme_memory_types says what each is on both. */
    enum class MemoryTypes
    {
        /** Device-local memory; the host view is a staging copy of its own,
         * on every device, moved only by OpSyncDevice / OpSyncLocal (and
         * OpCopy into the object). The default. */
        eDevice = 0,
        /** Host-visible, coherent memory that shaders use directly: the host
         * view is the memory itself, no sync operation is needed. */
        eHost = 1,
        /** Device-local memory without a host view (rawData() is null,
         * vector() throws): for data only the device touches. */
        eStorage = 2,
        /** Memory that is both device-local and host-visible (unified
         * memory, a resizable-BAR window): the host view is the memory
         * itself. Creation throws where the device has no such memory. */
        eDeviceAndHost = 3,
    };

    /** Element type of a memory object. Values 0 to 9 are upstream
     * Kompute's and keep its numbers; 10 to 13 follow them (see
     * @ref compatibility). */
    enum class DataTypes
    {
        eBool = 0,          ///< bool, one byte per element
        eInt = 1,           ///< int32_t
        eUnsignedInt = 2,   ///< uint32_t
        eFloat = 3,         ///< float (32-bit)
        eDouble = 4,        ///< double (64-bit float)
        eCustom = 5,        ///< elements of a size the caller gives (raw bytes)
        eShort = 6,         ///< int16_t
        eUnsignedShort = 7, ///< uint16_t
        eChar = 8,          ///< int8_t
        eUnsignedChar = 9,  ///< uint8_t
        eLong = 10,         ///< int64_t
        eUnsignedLong = 11, ///< uint64_t
        eHalf = 12,         ///< kp::float16_t (IEEE 754 binary16)
        eBFloat16 = 13,     ///< kp::bfloat16_t
    };

    /** Runtime discriminator returned by type(). */
    enum class Type
    {
        eTensor = 0, ///< a kp::Tensor
        eImage = 1,  ///< a kp::Image
    };

    /** The enumerator's name, for example "eDevice" ("unknown" for a value
     * outside the enumeration). */
    static std::string toString(MemoryTypes memoryType);
    /** The enumerator's name, for example "eFloat" ("unknown" for a value
     * outside the enumeration). */
    static std::string toString(DataTypes dataType);

    /** Bytes per element of a data type (0 for eCustom: caller-given). */
    static uint32_t dataTypeMemorySize(DataTypes dataType);

    /** Whether dataType<T>() exists: whether T is the element type of one of
     * the DataTypes. */
    template<typename T>
    static constexpr bool hasDataType()
    {
        return std::is_same_v<T, bool> || std::is_same_v<T, int8_t> ||
               std::is_same_v<T, uint8_t> || std::is_same_v<T, int16_t> ||
               std::is_same_v<T, uint16_t> || std::is_same_v<T, int32_t> ||
               std::is_same_v<T, uint32_t> || std::is_same_v<T, int64_t> ||
               std::is_same_v<T, uint64_t> || std::is_same_v<T, float> ||
               std::is_same_v<T, double> || std::is_same_v<T, float16_t> ||
               std::is_same_v<T, bfloat16_t>;
    }

    /** Compile-time mapping from a C++ element type to its DataTypes
     * (bool, int8/16/32/64_t, uint8/16/32/64_t, float, double,
     * kp::float16_t, kp::bfloat16_t); any other T fails to compile. */
    template<typename T>
    static constexpr DataTypes dataType()
    {
        static_assert(sizeof(T) == 0,
                      "No Kompute data type for this C++ type: use bool, "
                      "int8/16/32/64_t, uint8/16/32/64_t, float, double or "
                      "kp::float16_t or kp::bfloat16_t, or a raw eCustom tensor");
        return DataTypes::eCustom;
    }

    Memory(const Memory&) = delete;
    Memory(Memory&&) = delete;
    Memory& operator=(const Memory&) = delete;
    Memory& operator=(Memory&&) = delete;
    virtual ~Memory();

    /** Hands the device memory to the device, which frees it once work in
     * flight that may use it has completed (it does not wait). Afterwards
     * every use throws kp::DestroyedError. */
    virtual void destroy() = 0;
    /** False once the object was destroyed (by destroy(), or by its
     * Manager's destroy()); from then on every use throws
     * kp::DestroyedError. */
    virtual bool isInit() const = 0;
    /** Whether this is a Tensor or an Image. */
    virtual Type type() = 0;

    /** The memory type chosen at creation. */
    MemoryTypes memoryType() const { return mMemoryType; }
    /** The element type chosen at creation. */
    DataTypes dataType() const { return mDataType; }

    /** Number of elements (width x height x channels for images). */
    uint32_t size() const { return mSize; }
    /** Bytes per element. */
    uint32_t dataTypeMemorySize() const { return mDataTypeMemorySize; }
    /** size() x dataTypeMemorySize(). */
    uint32_t memorySize() const { return mSize * mDataTypeMemorySize; }
    /** An image's width in pixels; a tensor's size(). */
    uint32_t getX() const { return mX; }
    /** An image's height in pixels; 1 for a tensor. */
    uint32_t getY() const { return mY; }

    /** True when the host view is the device memory itself (eHost and
     * eDeviceAndHost tensors, on every device): no staging copy is made and
     * OpSyncDevice/OpSyncLocal only add barriers. eDevice views are a copy
     * of their own everywhere, moved only by the sync operations; images
     * always have a staging copy. */
    bool isHostViewDirect() const { return mHostViewIsPrimary; }

    // --- Host view --------------------------------------------------------

    /** Pointer to the host view (mapped memory; staging memory for
     * eDevice). nullptr for eStorage, which has no host view (with a
     * warning). The pointer is valid until destroy(); throws
     * kp::DestroyedError after it. */
    void* rawData();

    /**
     * Keeps the memory behind the host view mapped, and unused by other
     * objects, until this object is deleted, even after destroy() or its
     * Manager's destroy(). For bindings whose views live as long as
     * the object rather than until destroy(), such as the numpy arrays of
     * the Python module: reading such a view after destroy() sees the last
     * host data instead of freed memory. The Vulkan device then stays
     * until the last such object goes. May be called from any thread.
     */
    void keepHostViewUntilDeleted() { mKeepHostView.store(true); }

    /** Copies `bytes` bytes into the host view; throws kp::Error if the
     * size is not memorySize() or `data` is null, kp::Error for an eStorage
     * object (no host view) and kp::DestroyedError after destroy(). Does
     * not touch the device copy of an eDevice object: record OpSyncDevice
     * for that. Copies of 16 MiB or more run on several threads. */
    void setData(const void* data, size_t bytes);

    /** Typed form: also throws if T is a C++ type of another Kompute data
     * type than this object's (any T is accepted for eCustom). */
    template<typename T>
    void setData(const std::vector<T>& data)
    {
        if constexpr (hasDataType<T>()) {
            if (mDataType != DataTypes::eCustom && dataType<T>() != mDataType) {
                throw Error("setData() was given " + toString(dataType<T>()) +
                            " elements, but this object holds " + toString(mDataType) +
                            " elements");
            }
        }
        if constexpr (std::is_same_v<T, bool>) {
            std::vector<uint8_t> bytes(data.begin(), data.end());
            setData(bytes.data(), bytes.size());
        } else {
            setData(data.data(), data.size() * sizeof(T));
        }
    }

    /** Typed pointer into the host view (no copy): rawData() cast to T*. */
    template<typename T>
    T* data()
    {
        return static_cast<T*>(rawData());
    }

    /** Copy of the host view, as memorySize() / sizeof(T) elements. Throws
     * kp::Error for an eStorage object and kp::DestroyedError after
     * destroy(). */
    template<typename T>
    std::vector<T> vector()
    {
        const T* begin = static_cast<const T*>(hostViewOrThrow("vector()"));
        return std::vector<T>(begin, begin + memorySize() / sizeof(T));
    }

    // --- Recording (used by the operations; public for custom ops) -------

    /** Records a copy of the host view's staging memory into device
     * memory. Records nothing when the host view is the device memory
     * itself. Records no barrier: the caller orders it (a Sequence does,
     * for the operations it records). Throws kp::DestroyedError after
     * destroy(). */
    virtual void recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd) = 0;
    /** Records a copy of device memory into the staging memory behind the
     * host view (nothing where the host view is the memory itself); no
     * barrier, as recordCopyFromStagingToDevice(). */
    virtual void recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd) = 0;
    /** Records a pipeline barrier with these masks on the object's primary
     * memory (the buffer or image shaders and copies use). */
    virtual void recordPrimaryMemoryBarrier(const vk::CommandBuffer& cmd,
                                            vk::AccessFlags srcAccessMask,
                                            vk::AccessFlags dstAccessMask,
                                            vk::PipelineStageFlags srcStageMask,
                                            vk::PipelineStageFlags dstStageMask) = 0;
    /** Records a pipeline barrier with these masks on the staging memory
     * behind the host view; nothing where there is none. */
    virtual void recordStagingMemoryBarrier(const vk::CommandBuffer& cmd,
                                            vk::AccessFlags srcAccessMask,
                                            vk::AccessFlags dstAccessMask,
                                            vk::PipelineStageFlags srcStageMask,
                                            vk::PipelineStageFlags dstStageMask) = 0;

    /** Records a device copy from `source` into this object; both must hold
     * the same data type and element count (kp::Error otherwise, and
     * kp::DestroyedError if either was destroyed). No barrier is recorded. */
    void recordCopyFrom(const vk::CommandBuffer& cmd,
                        std::shared_ptr<Memory> source);

    /** A descriptor write that binds this object at `binding` of
     * `descriptorSet` (a storage buffer, or a storage image in GENERAL
     * layout). It points into this object: use it before the object's next
     * call of this function, while the object lives. */
    virtual vk::WriteDescriptorSet constructDescriptorSet(
      vk::DescriptorSet descriptorSet,
      uint32_t binding) = 0;
    /** eStorageBuffer for tensors, eStorageImage for images. */
    virtual vk::DescriptorType getDescriptorType() = 0;

    /** Throws kp::DestroyedError naming `action` if the object is gone. */
    void checkInit(const char* action) const;

    /** Notes that a Sequence's batch being recorded on this thread uses the
     * object's buffer or image. The record methods above do it; a
     * custom operation that records commands on getPrimaryBuffer() or
     * getPrimaryImage() itself calls it too. destroy() then keeps the
     * Vulkan objects until that batch is recorded anew, cleared or
     * destroyed, so the command buffer stays valid. */
    void noteRecorded();

    /// \cond INTERNAL
    // Not API: Memory's constructor takes the library's internal device
    // context, so only Tensor and Image derive from it.
  protected:
    // Algorithms bind memory objects and must check they share a device;
    // OpCopy copies tensors with a shader where that is faster.
    friend class Algorithm;
    friend class OpCopy;
    // The operations check that their objects share one device.
    friend struct internal::MemoryInternals;
    friend std::shared_ptr<internal::Device> internal::deviceOf(const Memory& memory);

    Memory(std::shared_ptr<internal::Device> device,
           DataTypes dataType,
           uint32_t elementCount,
           uint32_t elementByteSize,
           MemoryTypes memoryType,
           uint32_t x,
           uint32_t y);

    /** Throws unless `source` can be copied into this object: both alive,
     * the same data type and size. */
    void checkCopyableFrom(const Memory& source) const;
    /** Subclasses copy `data` (if any) once their memory exists. */
    void initialiseHostView(const void* data);
    /** Subclasses' destroy() gives the owner of the host view's memory
     * here: it is kept if keepHostViewUntilDeleted() was called. */
    void keepHostViewOwner(std::shared_ptr<void> owner);

    void* hostViewOrThrow(const char* action);
    /** The host view, after checking that `bytes` is this object's size
     * and `data` is not null (setData, upload, download). */
    void* hostViewForCopy(const void* data, size_t bytes, const char* action);
    /** Subclasses' copy from another object of the same kind. */
    virtual void recordCopyFromSameSize(const vk::CommandBuffer& cmd,
                                        Memory& source) = 0;
    /** Name used in messages: "Tensor" or "Image". */
    virtual const char* kindName() const = 0;

    std::shared_ptr<internal::Device> mDevice;
    DataTypes mDataType;
    MemoryTypes mMemoryType;
    uint32_t mSize;
    uint32_t mDataTypeMemorySize;
    uint32_t mX;
    uint32_t mY;
    // Mapped host view (primary or staging memory); null for eStorage.
    void* mHostView = nullptr;
    bool mHostViewIsPrimary = false;
    std::atomic<bool> mKeepHostView{ false };
    std::shared_ptr<void> mKeptHostView;
    std::unique_ptr<internal::BatchReferences> mRecordedIn;
    /// \endcond
};

/// \cond INTERNAL
// The explicit specialisations of Memory::dataType<T>(), documented there.
template<>
constexpr Memory::DataTypes
Memory::dataType<bool>()
{
    return DataTypes::eBool;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<int32_t>()
{
    return DataTypes::eInt;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<uint32_t>()
{
    return DataTypes::eUnsignedInt;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<float>()
{
    return DataTypes::eFloat;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<double>()
{
    return DataTypes::eDouble;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<int16_t>()
{
    return DataTypes::eShort;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<uint16_t>()
{
    return DataTypes::eUnsignedShort;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<int8_t>()
{
    return DataTypes::eChar;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<uint8_t>()
{
    return DataTypes::eUnsignedChar;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<int64_t>()
{
    return DataTypes::eLong;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<uint64_t>()
{
    return DataTypes::eUnsignedLong;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<float16_t>()
{
    return DataTypes::eHalf;
}
template<>
constexpr Memory::DataTypes
Memory::dataType<bfloat16_t>()
{
    return DataTypes::eBFloat16;
}
/// \endcond

} // namespace kp
