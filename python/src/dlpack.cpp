// SPDX-License-Identifier: Apache-2.0
// DLPack, the array-exchange protocol of numpy, PyTorch, JAX, CuPy and
// others. kp.Memory exports its host view (np.from_dlpack(t),
// torch.from_dlpack(t)); Manager.tensor() / tensor_t() import any object
// that exports one. nanobind's ndarray carries the DLPack structures both
// ways (capsules, versioned or not, and their deleters).
#include "common.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

namespace kp {
namespace python {

namespace {

using DataTypes = Memory::DataTypes;
namespace dl = nb::dlpack;

dl::dtype
dlpackType(dl::dtype_code code, uint8_t bits)
{
    return dl::dtype{ static_cast<uint8_t>(code), bits, 1 };
}

/** The DLPack element type of a data type; nullopt for eCustom. */
std::optional<dl::dtype>
dlpackDtypeOf(DataTypes dataType)
{
    switch (dataType) {
        case DataTypes::eBool: return dlpackType(dl::dtype_code::Bool, 8);
        case DataTypes::eChar: return dlpackType(dl::dtype_code::Int, 8);
        case DataTypes::eUnsignedChar: return dlpackType(dl::dtype_code::UInt, 8);
        case DataTypes::eShort: return dlpackType(dl::dtype_code::Int, 16);
        case DataTypes::eUnsignedShort: return dlpackType(dl::dtype_code::UInt, 16);
        case DataTypes::eInt: return dlpackType(dl::dtype_code::Int, 32);
        case DataTypes::eUnsignedInt: return dlpackType(dl::dtype_code::UInt, 32);
        case DataTypes::eLong: return dlpackType(dl::dtype_code::Int, 64);
        case DataTypes::eUnsignedLong: return dlpackType(dl::dtype_code::UInt, 64);
        case DataTypes::eHalf: return dlpackType(dl::dtype_code::Float, 16);
        case DataTypes::eFloat: return dlpackType(dl::dtype_code::Float, 32);
        case DataTypes::eDouble: return dlpackType(dl::dtype_code::Float, 64);
        case DataTypes::eBFloat16: return dlpackType(dl::dtype_code::Bfloat, 16);
        case DataTypes::eCustom: break;
    }
    return std::nullopt;
}

/** Whether Kompute has a data type for a DLPack element type (the ones
 * dlpackDtypeOf gives). */
bool
isSupported(const dl::dtype& dtype)
{
    static constexpr DataTypes kAll[] = {
        DataTypes::eBool,  DataTypes::eChar,          DataTypes::eUnsignedChar,
        DataTypes::eShort, DataTypes::eUnsignedShort, DataTypes::eInt,
        DataTypes::eUnsignedInt, DataTypes::eLong,    DataTypes::eUnsignedLong,
        DataTypes::eHalf,  DataTypes::eFloat,         DataTypes::eDouble,
        DataTypes::eBFloat16,
    };
    for (DataTypes dataType : kAll) {
        if (*dlpackDtypeOf(dataType) == dtype) {
            return true;
        }
    }
    return false;
}

/** "complex64", "float8 (code 10)", ...: a DLPack element type for messages. */
std::string
dtypeName(const dl::dtype& dtype)
{
    std::string kind;
    switch (static_cast<dl::dtype_code>(dtype.code)) {
        case dl::dtype_code::Int: kind = "int"; break;
        case dl::dtype_code::UInt: kind = "uint"; break;
        case dl::dtype_code::Float: kind = "float"; break;
        case dl::dtype_code::Bfloat: kind = "bfloat"; break;
        case dl::dtype_code::Complex: kind = "complex"; break;
        case dl::dtype_code::Bool: kind = "bool"; break;
        default:
            return "(type code " + std::to_string(dtype.code) + ", " + std::to_string(dtype.bits) +
                   " bits)";
    }
    std::string name = kind + std::to_string(dtype.bits);
    if (dtype.lanes != 1) {
        name += " x" + std::to_string(dtype.lanes) + " lanes";
    }
    return name;
}

/** TypeError unless a DLPack device type is the host's (kDLCPU). */
void
checkOnHost(int deviceType, const char* what)
{
    if (deviceType != nb::device::cpu::value) {
        throw nb::type_error((std::string(what) +
                              ": the array is in the memory of another device (DLPack device "
                              "type " +
                              std::to_string(deviceType) +
                              "; 1 is the CPU): copy it to the host first, e.g. with .cpu()")
                               .c_str());
    }
}

/** The host view of `self` (a kp.Memory) as a nanobind ndarray owned by
 * `self`: the array, and every capsule made from it, holds a reference to
 * the Python object, which keeps the tensor alive; keepHostViewUntilDeleted
 * keeps the mapped memory valid after destroy() too, until the object goes. */
nb::object
hostViewArray(nb::handle self, const char* what)
{
    Memory& memory = *nb::cast<Memory*>(self);
    memory.checkInit(what);
    if (memory.memoryType() == Memory::MemoryTypes::eStorage) {
        throw Error(std::string(what) +
                    ": an eStorage (kp.MemoryTypes.storage) object has no host view: copy "
                    "it with OpCopy into a device or host tensor to read it");
    }
    memory.keepHostViewUntilDeleted();
    std::optional<dl::dtype> dtype = dlpackDtypeOf(memory.dataType());
    // eCustom elements go as their bytes.
    size_t shape[1] = { dtype ? memory.size() : memory.memorySize() };
    // array_api: an object with __dlpack__ (a bare ndarray casts to a capsule).
    nb::ndarray<nb::array_api> array(memory.rawData(),
                        1,
                        shape,
                        self,
                        nullptr,
                        dtype.value_or(dlpackType(dl::dtype_code::UInt, 8)),
                        nb::device::cpu::value);
    return nb::cast(array);
}

} // namespace

nb::object
memoryDlpack(nb::handle self,
             nb::handle stream,
             nb::handle maxVersion,
             nb::handle dlDevice,
             nb::handle copy)
{
    // nanobind's ndarray implements the consumer's side of the protocol:
    // a versioned capsule for consumers that give max_version >= (1, 0),
    // dl_device other than the CPU and copy=True refused with BufferError.
    nb::dict kwargs;
    if (!stream.is_none()) {
        kwargs["stream"] = stream;
    }
    if (!maxVersion.is_none()) {
        kwargs["max_version"] = maxVersion;
    }
    if (!dlDevice.is_none()) {
        kwargs["dl_device"] = dlDevice;
    }
    if (!copy.is_none()) {
        kwargs["copy"] = copy;
    }
    return hostViewArray(self, "__dlpack__()").attr("__dlpack__")(**kwargs);
}

nb::tuple
memoryDlpackDevice(nb::handle)
{
    return nb::make_tuple(static_cast<int>(nb::device::cpu::value), 0);
}

std::optional<ImportedArray>
importDlpack(nb::handle data, const char* what)
{
    // numpy arrays take numpy's own path (it handles byte order and
    // read-only arrays, which numpy's __dlpack__ refuses); everything else
    // that speaks DLPack (kp tensors, torch, JAX, a capsule) comes here,
    // so its dtype (bfloat16 too) is the exporter's, not the buffer
    // protocol's guess.
    nb::module_ np = nb::module_::import_("numpy");
    if (nb::isinstance(data, np.attr("ndarray")) ||
        !(nb::hasattr(data, "__dlpack__") || PyCapsule_CheckExact(data.ptr()))) {
        return std::nullopt;
    }
    // The device first, from __dlpack_device__ where the exporter has it:
    // no export is asked for where it could not be read.
    if (nb::hasattr(data, "__dlpack_device__")) {
        nb::tuple device = nb::cast<nb::tuple>(data.attr("__dlpack_device__")());
        checkOnHost(nb::cast<int>(device[0]), what);
    }
    // A versioned capsule where the exporter gives one (it can say that its
    // array is read-only, which numpy needs for read-only arrays), else the
    // unversioned one that exporters predating DLPack 1.0 give. The
    // exporter's own errors (kp.DestroyedError, say) propagate from here.
    nb::object capsule;
    if (PyCapsule_CheckExact(data.ptr())) {
        capsule = nb::borrow(data);
    } else {
        try {
            capsule = data.attr("__dlpack__")(nb::arg("max_version") = nb::make_tuple(1, 0));
        } catch (nb::python_error& error) {
            if (!error.matches(PyExc_TypeError)) {
                throw;
            }
            capsule = data.attr("__dlpack__")();
        }
    }
    if (!PyCapsule_IsValid(capsule.ptr(), "dltensor") &&
        !PyCapsule_IsValid(capsule.ptr(), "dltensor_versioned")) {
        throw nb::type_error((std::string(what) + ": the DLPack export of this " +
                              nb::cast<std::string>(nb::str(data.type().attr("__name__"))) +
                              " could not be read (not a DLPack capsule, or one already "
                              "consumed)")
                               .c_str());
    }
    nb::ndarray<nb::ro> source;
    if (!nb::try_cast(capsule, source, false)) {
        throw nb::type_error((std::string(what) + ": the DLPack capsule of this " +
                              nb::cast<std::string>(nb::str(data.type().attr("__name__"))) +
                              " could not be read")
                               .c_str());
    }
    checkOnHost(source.device_type(), what);
    if (!isSupported(source.dtype())) {
        throw nb::type_error((std::string(what) + ": DLPack dtype " + dtypeName(source.dtype()) +
                              " is not supported; use bool, int8/16/32/64, uint8/16/32/64, "
                              "float16/32/64 or bfloat16")
                               .c_str());
    }
    // The same memory as a numpy array with the source's strides, owned by
    // the imported ndarray (so by the exporter's capsule); the caller copies
    // it once, into contiguous order where it is strided. numpy has no
    // bfloat16: those come as their bits.
    ImportedArray imported;
    dl::dtype dtype = source.dtype();
    if (dtype == *dlpackDtypeOf(DataTypes::eBFloat16)) {
        imported.bfloat16Bits = true;
        dtype = nb::dtype<uint16_t>();
    }
    std::vector<size_t> shape(source.ndim());
    std::vector<int64_t> strides(source.ndim());
    for (size_t i = 0; i < source.ndim(); ++i) {
        shape[i] = source.shape(i);
        strides[i] = source.stride(i);
    }
    // The owner holds the imported ndarray (and so the exporter's tensor).
    auto* held = new nb::ndarray<nb::ro>(source);
    nb::capsule owner(held, [](void* pointer) noexcept {
        delete static_cast<nb::ndarray<nb::ro>*>(pointer);
    });
    nb::ndarray<nb::numpy, nb::ro> view(source.data(),
                                        source.ndim(),
                                        shape.data(),
                                        owner,
                                        strides.data(),
                                        dtype,
                                        nb::device::cpu::value);
    imported.array = nb::cast(view);
    return imported;
}

} // namespace python
} // namespace kp
