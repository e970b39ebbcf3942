// SPDX-License-Identifier: Apache-2.0
#include "kompute/Memory.hpp"

#include <cstring>

#include "internal/Batches.hpp"
#include "internal/Device.hpp"
#include "internal/HostCopy.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using logger::format;

std::string
Memory::toString(MemoryTypes memoryType)
{
    switch (memoryType) {
        case MemoryTypes::eDevice: return "eDevice";
        case MemoryTypes::eHost: return "eHost";
        case MemoryTypes::eStorage: return "eStorage";
        case MemoryTypes::eDeviceAndHost: return "eDeviceAndHost";
    }
    return "unknown";
}

std::string
Memory::toString(DataTypes dataType)
{
    switch (dataType) {
        case DataTypes::eBool: return "eBool";
        case DataTypes::eInt: return "eInt";
        case DataTypes::eUnsignedInt: return "eUnsignedInt";
        case DataTypes::eFloat: return "eFloat";
        case DataTypes::eDouble: return "eDouble";
        case DataTypes::eCustom: return "eCustom";
        case DataTypes::eShort: return "eShort";
        case DataTypes::eUnsignedShort: return "eUnsignedShort";
        case DataTypes::eChar: return "eChar";
        case DataTypes::eUnsignedChar: return "eUnsignedChar";
        case DataTypes::eLong: return "eLong";
        case DataTypes::eUnsignedLong: return "eUnsignedLong";
        case DataTypes::eHalf: return "eHalf";
        case DataTypes::eBFloat16: return "eBFloat16";
    }
    return "unknown";
}

uint32_t
Memory::dataTypeMemorySize(DataTypes dataType)
{
    switch (dataType) {
        case DataTypes::eBool:
        case DataTypes::eChar:
        case DataTypes::eUnsignedChar: return 1;
        case DataTypes::eShort:
        case DataTypes::eUnsignedShort:
        case DataTypes::eHalf:
        case DataTypes::eBFloat16: return 2;
        case DataTypes::eInt:
        case DataTypes::eUnsignedInt:
        case DataTypes::eFloat: return 4;
        case DataTypes::eDouble:
        case DataTypes::eLong:
        case DataTypes::eUnsignedLong: return 8;
        case DataTypes::eCustom: return 0;
    }
    return 0;
}

Memory::Memory(std::shared_ptr<internal::Device> device,
               DataTypes dataType,
               uint32_t elementCount,
               uint32_t elementByteSize,
               MemoryTypes memoryType,
               uint32_t x,
               uint32_t y)
  : mDevice(std::move(device))
  , mDataType(dataType)
  , mMemoryType(memoryType)
  , mSize(elementCount)
  , mDataTypeMemorySize(elementByteSize)
  , mX(x)
  , mY(y)
  , mRecordedIn(std::make_unique<internal::BatchReferences>())
{
    if (static_cast<uint32_t>(memoryType) > static_cast<uint32_t>(MemoryTypes::eDeviceAndHost)) {
        throw Error(format("Memory type {} is not one of eDevice, eHost, eStorage, eDeviceAndHost",
                           static_cast<uint32_t>(memoryType)));
    }
    if (static_cast<uint32_t>(dataType) > static_cast<uint32_t>(DataTypes::eBFloat16)) {
        throw Error(format("Data type {} is not a kp::Memory::DataTypes value",
                           static_cast<uint32_t>(dataType)));
    }
    if (elementCount == 0) {
        throw Error("Cannot create a zero-sized memory object (zero elements): give at least "
                    "one element (or a size greater than zero)");
    }
    if (elementByteSize == 0) {
        throw Error("Cannot create a memory object whose elements are zero bytes");
    }
    uint32_t expected = dataTypeMemorySize(dataType);
    if (expected != 0 && expected != elementByteSize) {
        throw Error(format("{} elements are {} bytes, but an element size of {} bytes was given",
                           toString(dataType),
                           expected,
                           elementByteSize));
    }
    if (static_cast<uint64_t>(elementCount) * elementByteSize > UINT32_MAX) {
        throw Error(format("{} elements of {} bytes exceed the 4 GiB limit of one memory object",
                           elementCount,
                           elementByteSize));
    }
}

Memory::~Memory() = default;

void
Memory::checkInit(const char* action) const
{
    if (!isInit()) {
        throw DestroyedError(format("{}: this {} was destroyed (directly or by its Manager's "
                                    "destroy())",
                                    action,
                                    kindName()));
    }
}

void
Memory::initialiseHostView(const void* data)
{
    if (data != nullptr && mHostView != nullptr) {
        internal::copyHostBytes(mHostView, data, memorySize());
    }
}

void
Memory::keepHostViewOwner(std::shared_ptr<void> owner)
{
    if (mKeepHostView.load() && owner) {
        mKeptHostView = std::move(owner);
    }
}

void
Memory::noteRecorded()
{
    mRecordedIn->noteRecorded();
}

void*
Memory::hostViewOrThrow(const char* action)
{
    checkInit(action);
    if (mHostView == nullptr) {
        throw Error(format("{}: an eStorage {} has no host view; copy it (OpCopy) into an "
                           "eDevice or eHost object to read it",
                           action,
                           kindName()));
    }
    return mHostView;
}

void*
Memory::rawData()
{
    checkInit("rawData()");
    if (mHostView == nullptr) {
        KP_LOG_WARN("rawData() of an eStorage {} is null: it has no host view", kindName());
    }
    return mHostView;
}

void
Memory::setData(const void* data, size_t bytes)
{
    internal::copyHostBytes(hostViewForCopy(data, bytes, "setData()"), data, bytes);
}

void*
Memory::hostViewForCopy(const void* data, size_t bytes, const char* action)
{
    void* view = hostViewOrThrow(action);
    if (bytes != memorySize()) {
        throw Error(format("{} was given {} bytes, but this {} holds {} bytes ({} "
                           "elements of {} bytes)",
                           action,
                           bytes,
                           kindName(),
                           memorySize(),
                           size(),
                           dataTypeMemorySize()));
    }
    if (data == nullptr) {
        throw Error(format("{} was given a null pointer", action));
    }
    return view;
}

void
Memory::recordCopyFrom(const vk::CommandBuffer& cmd, std::shared_ptr<Memory> source)
{
    checkInit("recordCopyFrom()");
    if (!source) {
        throw Error("recordCopyFrom() was given a null source");
    }
    checkCopyableFrom(*source);
    recordCopyFromSameSize(cmd, *source);
}

void
Memory::checkCopyableFrom(const Memory& source) const
{
    checkInit("recordCopyFrom()");
    source.checkInit("recordCopyFrom() source");
    if (source.dataType() != dataType()) {
        throw Error(format("Cannot copy a {} of {} into a {} of {}: the data types differ",
                           source.kindName(),
                           toString(source.dataType()),
                           kindName(),
                           toString(dataType())));
    }
    if (source.size() != size() || source.memorySize() != memorySize()) {
        throw Error(format("Cannot copy a {} of {} elements ({} bytes) into a {} of {} elements "
                           "({} bytes): the sizes differ",
                           source.kindName(),
                           source.size(),
                           source.memorySize(),
                           kindName(),
                           size(),
                           memorySize()));
    }
}

std::shared_ptr<internal::Device>
internal::deviceOf(const Memory& memory)
{
    return memory.mDevice;
}

} // namespace kp
