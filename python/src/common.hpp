// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the kp extension: the call guards every binding uses,
// the log bridge, the exception types, and the numpy conversions.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include <kompute/Kompute.hpp>

namespace nb = nanobind;

namespace kp {
namespace python {

// --- Python arguments taken as they are, with the type their stubs show ------

/** Anything numpy.asarray accepts. */
struct ArrayLike
{
    nb::object object;
};
/** Push or specialization constants: a list of numbers or a numpy array. */
struct ConstantsArg
{
    nb::object object;
};
/** SPIR-V as bytes (or another bytes-like object). */
struct SpirvArg
{
    nb::object object;
};
/** A numpy array returned to Python. */
struct NdArray
{
    nb::object object;
};
/** A numpy dtype, or anything numpy.dtype accepts. */
struct DTypeArg
{
    nb::object object;
};

// --- Log bridge (logging.cpp) -------------------------------------------------

/**
 * Messages of the C++ side are queued by the sink and handed to Python's
 * `logging` (logger "kp") by flushLog(), which runs with the GIL held at the
 * end of every bound call. The sink never touches Python itself, so a
 * message logged on a thread without the GIL, or while the library holds one
 * of its locks, can never deadlock against the GIL.
 */
void installLogSink();
/** Delivers queued messages to the "kp" logger. Needs the GIL; never throws;
 * keeps any pending Python exception. */
void flushLog() noexcept;
/** Python logging level (5 = TRACE, 10 = DEBUG, ..., 60 = off) <-> C++. */
int pythonLevel(logger::Level level);
logger::Level nativeLevel(int pythonLevel);

/** Call guard: releases the GIL around a blocking call, then flushes the
 * log once the GIL is back. */
struct ReleaseGil
{
    ReleaseGil() noexcept
      : state(PyEval_SaveThread())
    {
    }
    ~ReleaseGil()
    {
        PyEval_RestoreThread(state);
        flushLog();
    }
    ReleaseGil(const ReleaseGil&) = delete;
    ReleaseGil& operator=(const ReleaseGil&) = delete;

  private:
    PyThreadState* state;
};

/** Call guard for quick calls that keep the GIL: flushes the log after. */
struct FlushLog
{
    FlushLog() = default;
    ~FlushLog() { flushLog(); }
    FlushLog(const FlushLog&) = delete;
    FlushLog& operator=(const FlushLog&) = delete;
};

// --- Operations (operations.cpp) ----------------------------------------------

/** Binds kp.OpBase (which Python classes may derive from: operations
 * written in Python) and kp.MemoryAccess. */
void bindOperationBase(nb::module_& m);

/** Throws kp::Error naming `action` when called from within a hook of an
 * operation written in Python on this thread: destroying sequences there
 * would wait for the sequence that runs the hook, on this very thread. */
void checkNotInOperationHook(const char* action);

/** Notes that `sequence` holds `op`, if `op` is written in Python. */
void noteRecorded(Sequence& sequence, const OpBase& op);

/**
 * At exit (kp's atexit handler, while Python still runs): destroys the
 * sequences that hold operations written in Python. Such an operation's
 * class refers to its module's globals, which often refer to the sequence:
 * a cycle through C++ that Python's garbage collector cannot see, which
 * would keep all of it (and its Manager) alive past the interpreter.
 */
void releaseOperationsAtExit();

// --- The kernel library (kernels.cpp) -----------------------------------------

/** Binds kp.KernelOp and the kernel library's operations and enums. */
void bindKernels(nb::module_& m);

// --- Exceptions (module.cpp) ---------------------------------------------------

/** Sets the Python error for a C++ exception the way bound calls translate
 * it (for slots, which nanobind's translators do not cover). */
void setPythonError(std::exception_ptr error) noexcept;

// --- The LLM runner (llm.cpp) ---------------------------------------------------

/** Adds the submodule kp._kp.llm. */
void bindLlm(nb::module_& module);

// --- DLPack (dlpack.cpp) ---------------------------------------------------------

/** Memory.__dlpack__: a DLPack capsule over the host view of `self` (a
 * kp.Memory) that keeps `self` alive; the arguments are the protocol's
 * keyword arguments (None where not given). */
nb::object memoryDlpack(nb::handle self,
                        nb::handle stream,
                        nb::handle maxVersion,
                        nb::handle dlDevice,
                        nb::handle copy);

/** Memory.__dlpack_device__: (kDLCPU, 0), where the host view lives. */
nb::tuple memoryDlpackDevice(nb::handle self);

/** An array imported through DLPack, as numpy sees it. */
struct ImportedArray
{
    /** A numpy array over the exporter's memory, with its shape and strides. */
    nb::object array;
    /** The elements are bfloat16, given as their uint16 bits. */
    bool bfloat16Bits = false;
};

/** `data` imported through DLPack when it is an exporter other than a numpy
 * array (or a DLPack capsule); nullopt for anything else. TypeError naming
 * the problem for arrays in another device's memory and element types
 * Kompute has no data type for. */
std::optional<ImportedArray> importDlpack(nb::handle data, const char* what);

// --- numpy (numpy.cpp) -----------------------------------------------------------

/** numpy dtype name ("float32", "uint8", "bool", ...) of a data type;
 * nullptr for eCustom. */
const char* numpyDtypeName(Memory::DataTypes dataType);

/** A tensor holding a copy of `data` (anything numpy.ascontiguousarray
 * accepts, or any DLPack exporter, flattened; strided data is copied once
 * in C order). With asFloat32 the values are converted to float32
 * (Manager.tensor); otherwise the array's dtype decides the data type
 * (Manager.tensor_t), a structured or void dtype making eCustom elements of
 * its size, and numbers (not arrays) raise TypeError. With elementSize the
 * bytes of `data` are eCustom elements of that size. The GIL is released
 * while the tensor is created. */
std::shared_ptr<Tensor> tensorFromPython(Manager& manager,
                                         nb::handle data,
                                         Memory::MemoryTypes memoryType,
                                         bool asFloat32,
                                         nb::handle dtype = nb::handle(),
                                         std::optional<uint32_t> elementSize = std::nullopt);

/** Manager.zeros / Manager.empty: a tensor of `shape` (an int or a sequence
 * of ints, flattened) elements of `dtype` (what tensor_t's dtype takes, and
 * structured dtypes). zeroFilled: its host view and its device memory hold
 * zeros; otherwise both are undefined. */
std::shared_ptr<Tensor> tensorOfShape(Manager& manager,
                                      nb::handle shape,
                                      nb::handle dtype,
                                      Memory::MemoryTypes memoryType,
                                      bool zeroFilled,
                                      const char* what);

/** The numpy dtype of bfloat16 elements: ml_dtypes.bfloat16 where that
 * package is installed, else uint16 (the raw bits). */
nb::object bfloat16Dtype();

/** bfloat16 bits (a uint16 array of the same shape) of `data`: floats are
 * rounded to nearest even; uint16 or ml_dtypes.bfloat16 arrays are taken as
 * the bits. Complex and object data throw TypeError naming `what`. */
nb::object bfloat16Bits(nb::handle data, const char* what);

/** An image holding a copy of `data` (anything numpy.ascontiguousarray
 * accepts): a flat array of width x height x channels elements, or an
 * H x W or H x W x C array whose shape gives (and is checked against) the
 * sizes. With asFloat32 the values are converted to float32
 * (Manager.image); otherwise the array's dtype decides the data type
 * (Manager.image_t). The GIL is released while the image is created. */
std::shared_ptr<Image> imageFromPython(Manager& manager,
                                       nb::handle data,
                                       std::optional<uint32_t> width,
                                       std::optional<uint32_t> height,
                                       std::optional<uint32_t> numChannels,
                                       Memory::MemoryTypes memoryType,
                                       std::optional<vk::ImageTiling> tiling,
                                       bool asFloat32);

/** An image with undefined contents. */
std::shared_ptr<Image> emptyImage(Manager& manager,
                                  uint32_t width,
                                  uint32_t height,
                                  uint32_t numChannels,
                                  Memory::DataTypes dataType,
                                  Memory::MemoryTypes memoryType,
                                  std::optional<vk::ImageTiling> tiling);

/** The data type named by a kp.DataTypes value or anything numpy.dtype
 * accepts (and the string "bfloat16"); TypeError if Kompute has none. */
Memory::DataTypes dataTypeFromPython(nb::handle dtype, const char* what);

/** Zero-copy 1-D numpy array over the host view of `self` (a kp.Memory),
 * with `self` as its base. */
NdArray memoryData(nb::handle self);

/** The same with the shape (height, width, channels) of an image. */
NdArray imageDataHwc(nb::handle self);

/** Memory.__array__(dtype, copy): data(), converted or copied as asked;
 * raises kp.DestroyedError for a destroyed object. */
nb::object memoryArrayInterface(nb::handle self, nb::handle dtype, nb::handle copy);

/** Copies `values` (converted to the object's dtype) into its host view. */
void memorySetData(nb::handle self, nb::handle values);

/** Tensor::upload of `values` (converted to the tensor's dtype), without
 * the GIL. */
void tensorUpload(nb::handle self, nb::handle values);

/** Tensor::download into a new numpy array of the tensor's dtype, without
 * the GIL. */
nb::object tensorDownload(nb::handle self);

/** Push or specialization constants from Python: a list or tuple of numbers
 * (float32, as upstream) or a numpy array of any supported scalar dtype, or
 * a structured array (a struct); None or empty means none. */
ConstantBytes constantsFromPython(nb::handle values, const char* what);

/** Constants as a numpy array of `dtype`. */
NdArray constantsToNumpy(const ConstantBytes& constants, nb::handle dtype);

/** SPIR-V words from bytes (or any bytes-like object); raises ValueError if
 * the length is not a whole number of 32-bit words. */
std::vector<uint32_t> spirvFromPython(nb::handle spirv);

/** SPIR-V words as bytes. */
nb::bytes spirvToBytes(const std::vector<uint32_t>& words);

/** The Py_bf_getbuffer / Py_bf_releasebuffer slots of kp.Memory. */
int memoryGetBuffer(PyObject* self, Py_buffer* view, int flags);
void memoryReleaseBuffer(PyObject* self, Py_buffer* view);

} // namespace python
} // namespace kp

namespace nanobind {
namespace detail {

// Casters that accept any object and name its expected type for the stubs;
// the conversion itself is done (with clear errors) in numpy.cpp.
#define KP_ANY_OBJECT_CASTER(Wrapper, typeName)                                \
    template<>                                                                 \
    struct type_caster<Wrapper>                                                \
    {                                                                          \
        NB_TYPE_CASTER(Wrapper, const_name(typeName))                          \
        template<typename Flags>                                               \
        bool from_python(handle src, Flags, cleanup_list*) noexcept            \
        {                                                                      \
            value.object = borrow(src);                                        \
            return true;                                                       \
        }                                                                      \
        static handle from_cpp(const Wrapper& wrapper, rv_policy, cleanup_list*) noexcept \
        {                                                                      \
            return wrapper.object.inc_ref();                                   \
        }                                                                      \
    };

KP_ANY_OBJECT_CASTER(kp::python::ArrayLike, "numpy.typing.ArrayLike")
KP_ANY_OBJECT_CASTER(kp::python::ConstantsArg, "collections.abc.Sequence[float] | numpy.ndarray")
KP_ANY_OBJECT_CASTER(kp::python::SpirvArg, "bytes")
KP_ANY_OBJECT_CASTER(kp::python::DTypeArg, "numpy.typing.DTypeLike")
KP_ANY_OBJECT_CASTER(kp::python::NdArray, "numpy.ndarray")

#undef KP_ANY_OBJECT_CASTER

} // namespace detail
} // namespace nanobind
