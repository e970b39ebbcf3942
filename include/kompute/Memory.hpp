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

class Memory
{
  public:
    /** Where the memory lives and how the host reaches it (API.md 2.1). */
    enum class MemoryTypes
    {
        eDevice = 0,        ///< device-local; host view through staging
        eHost = 1,          ///< host-visible, coherent; no sync ops needed
        eStorage = 2,       ///< device-local, no host view at all
        eDeviceAndHost = 3, ///< device-local and host-visible (UMA, BAR)
    };

    /** Element type. Values 0-9 are upstream's; 10-13 are ours. */
    enum class DataTypes
    {
        eBool = 0,
        eInt = 1,
        eUnsignedInt = 2,
        eFloat = 3,
        eDouble = 4,
        eCustom = 5,
        eShort = 6,
        eUnsignedShort = 7,
        eChar = 8,
        eUnsignedChar = 9,
        eLong = 10,         ///< int64_t (ours)
        eUnsignedLong = 11, ///< uint64_t (ours)
        eHalf = 12,         ///< kp::float16_t (ours)
        eBFloat16 = 13,     ///< kp::bfloat16_t (ours)
    };

    /** Runtime discriminator returned by type(). */
    enum class Type
    {
        eTensor = 0,
        eImage = 1,
    };

    static std::string toString(MemoryTypes memoryType);
    static std::string toString(DataTypes dataType);

    /** Bytes per element of a data type (0 for eCustom: caller-given). */
    static uint32_t dataTypeMemorySize(DataTypes dataType);

    /** Whether dataType<T>() exists, i.e. T is the element type of one of
     * the DataTypes (ours). */
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

    /** Compile-time mapping from a C++ element type to its DataTypes. */
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
    virtual bool isInit() const = 0;
    virtual Type type() = 0;

    MemoryTypes memoryType() const { return mMemoryType; }
    DataTypes dataType() const { return mDataType; }

    /** Number of elements (width x height x channels for images). */
    uint32_t size() const { return mSize; }
    /** Bytes per element. */
    uint32_t dataTypeMemorySize() const { return mDataTypeMemorySize; }
    /** size() x dataTypeMemorySize(). */
    uint32_t memorySize() const { return mSize * mDataTypeMemorySize; }
    uint32_t getX() const { return mX; }
    uint32_t getY() const { return mY; }

    /** True when the host view is the device memory itself (eHost and
     * eDeviceAndHost, on every device): no staging copy is made and
     * OpSyncDevice/OpSyncLocal only add barriers. eDevice views are a copy
     * of their own everywhere, moved only by the sync operations (ours). */
    bool isHostViewDirect() const { return mHostViewIsPrimary; }

    // --- Host view --------------------------------------------------------

    /** Pointer to the host view (mapped memory; staging memory for
     * eDevice). nullptr for eStorage, which has no host view. The
     * pointer is valid until destroy(). */
    void* rawData();

    /**
     * Keeps the memory behind the host view mapped, and unused by other
     * objects, until this object is deleted, even after destroy() or its
     * Manager's destroy() (ours). For bindings whose views live as long as
     * the object rather than until destroy(), such as the numpy arrays of
     * the Python module: reading such a view after destroy() sees the last
     * host data instead of freed memory. The Vulkan device then stays
     * until the last such object goes.
     */
    void keepHostViewUntilDeleted() { mKeepHostView.store(true); }

    /** Copies `bytes` bytes into the host view; throws if the size is not
     * memorySize(). Does not touch the device copy of an eDevice object:
     * record OpSyncDevice for that. */
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

    /** Typed pointer into the host view (no copy). */
    template<typename T>
    T* data()
    {
        return static_cast<T*>(rawData());
    }

    /** Copy of the host view, as memorySize() / sizeof(T) elements. */
    template<typename T>
    std::vector<T> vector()
    {
        const T* begin = static_cast<const T*>(hostViewOrThrow("vector()"));
        return std::vector<T>(begin, begin + memorySize() / sizeof(T));
    }

    // --- Recording (used by the operations; public for custom ops) -------

    /** Copies the host view's staging memory into device memory. Records
     * nothing when the host view is the device memory itself. */
    virtual void recordCopyFromStagingToDevice(const vk::CommandBuffer& cmd) = 0;
    /** Copies device memory into the staging memory behind the host view. */
    virtual void recordCopyFromDeviceToStaging(const vk::CommandBuffer& cmd) = 0;
    virtual void recordPrimaryMemoryBarrier(const vk::CommandBuffer& cmd,
                                            vk::AccessFlags srcAccessMask,
                                            vk::AccessFlags dstAccessMask,
                                            vk::PipelineStageFlags srcStageMask,
                                            vk::PipelineStageFlags dstStageMask) = 0;
    virtual void recordStagingMemoryBarrier(const vk::CommandBuffer& cmd,
                                            vk::AccessFlags srcAccessMask,
                                            vk::AccessFlags dstAccessMask,
                                            vk::PipelineStageFlags srcStageMask,
                                            vk::PipelineStageFlags dstStageMask) = 0;

    /** Records a device copy from `source` into this object; both must hold
     * the same data type and element count. */
    void recordCopyFrom(const vk::CommandBuffer& cmd,
                        std::shared_ptr<Memory> source);

    virtual vk::WriteDescriptorSet constructDescriptorSet(
      vk::DescriptorSet descriptorSet,
      uint32_t binding) = 0;
    virtual vk::DescriptorType getDescriptorType() = 0;

    /** Throws kp::DestroyedError naming `action` if the object is gone. */
    void checkInit(const char* action) const;

    /** Notes that a Sequence's batch being recorded on this thread uses the
     * object's buffer or image (ours). The record methods above do it; a
     * custom operation that records commands on getPrimaryBuffer() or
     * getPrimaryImage() itself calls it too. destroy() then keeps the
     * Vulkan objects until that batch is recorded anew, cleared or
     * destroyed, so the command buffer stays valid. */
    void noteRecorded();

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
};

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

} // namespace kp
