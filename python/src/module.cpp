// SPDX-License-Identifier: Apache-2.0
// The extension module kp._kp: bindings of the C++ API with the names of
// upstream Kompute's Python module. No logic lives here that the C++ side
// lacks, beyond converting Python values (see numpy.cpp).
//
// Every bound call either releases the GIL (anything that can wait for the
// device or take a lock for long: construction, destroy, eval, algorithm
// creation, compilation) or keeps it for quick work; both flush the queued
// log messages to Python's logging afterwards (see logging.cpp).
#include "common.hpp"

#include <nanobind/stl/array.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace kp {
namespace python {

namespace {

const auto releaseGil = nb::call_guard<ReleaseGil>();
const auto keepGil = nb::call_guard<FlushLog>();

// The Sequence methods that return the sequence for chaining: `work` runs
// without the GIL, and the Python object called is returned as it is, which
// spares converting the C++ shared_ptr back (a lookup of its Python object)
// in every call of an evaluation loop.
template<typename Work>
nb::object
chaining(nb::handle self, Work&& work)
{
    kp::Sequence& sequence = nb::cast<kp::Sequence&>(self);
    {
        ReleaseGil release;
        work(sequence);
    }
    return nb::borrow(self);
}

PyObject* gError = nullptr;
PyObject* gDestroyedError = nullptr;
PyObject* gVulkanError = nullptr;
PyObject* gOutOfMemoryError = nullptr;
PyObject* gDeviceLostError = nullptr;

/** Raises `type` with `message`; Vulkan errors carry the result code as
 * `.code` (the VkResult value) and `.result` (its name). */
void
raise(PyObject* type, const char* message, std::optional<vk::Result> result = std::nullopt)
{
    if (!result) {
        PyErr_SetString(type, message);
        return;
    }
    PyObject* error = PyObject_CallFunction(type, "s", message);
    if (error == nullptr) {
        return; // the call set the Python error
    }
    PyObject* name = PyUnicode_FromString(kp::VulkanError::resultName(*result).c_str());
    PyObject* code = PyLong_FromLong(static_cast<long>(*result));
    if (name != nullptr && code != nullptr) {
        PyObject_SetAttrString(error, "result", name);
        PyObject_SetAttrString(error, "code", code);
    }
    Py_XDECREF(name);
    Py_XDECREF(code);
    PyErr_SetObject(type, error);
    Py_DECREF(error);
}

PyObject*
vulkanErrorType(vk::Result result)
{
    switch (result) {
        case vk::Result::eErrorOutOfDeviceMemory:
        case vk::Result::eErrorOutOfHostMemory:
            return gOutOfMemoryError;
        case vk::Result::eErrorDeviceLost:
            return gDeviceLostError;
        default:
            return gVulkanError;
    }
}

/** Sets the Python error for Kompute's exceptions; others propagate (to
 * nanobind's own translation). */
void
translateError(const std::exception_ptr& p)
{
    try {
        std::rethrow_exception(p);
    } catch (const DestroyedError& e) {
        raise(gDestroyedError, e.what());
    } catch (const VulkanError& e) {
        raise(vulkanErrorType(e.result()), e.what(), e.result());
    } catch (const Error& e) {
        raise(gError, e.what());
    } catch (const vk::SystemError& e) {
        auto result = static_cast<vk::Result>(e.code().value());
        raise(vulkanErrorType(result), e.what(), result);
    }
}

// --- Device information --------------------------------------------------

/** The Python value of a JSON value: dict, list, int, float, str, bool or
 * None. */
nb::object
toPython(const kp::JsonValue& value)
{
    if (value.isNull()) {
        return nb::none();
    }
    if (value.isBool()) {
        return nb::bool_(value.asBool());
    }
    if (value.isInt()) {
        return nb::int_(value.asInt());
    }
    if (value.isUnsigned()) {
        return nb::int_(value.asUnsigned());
    }
    if (value.isDouble()) {
        return nb::float_(value.asDouble());
    }
    if (value.isString()) {
        return nb::str(value.asString().c_str());
    }
    if (value.isArray()) {
        nb::list list;
        for (const auto& item : value.items()) {
            list.append(toPython(item));
        }
        return list;
    }
    nb::dict dict;
    for (const auto& [key, member] : value.members()) {
        dict[key.c_str()] = toPython(member);
    }
    return dict;
}

/** A device description (kp::describeDevice) as a dict; upstream's sizes
 * are tuples, as upstream's module returns them. */
nb::dict
deviceDict(const kp::JsonValue& description)
{
    nb::dict info = nb::cast<nb::dict>(toPython(description));
    for (const char* key : { "max_work_group_count", "max_work_group_size" }) {
        nb::object list = info[key];
        info[key] = nb::steal(PySequence_Tuple(list.ptr()));
    }
    return info;
}

nb::dict
memoryStatsDict(const MemoryStats& stats)
{
    nb::list types;
    for (const auto& type : stats.memoryTypes) {
        nb::dict entry;
        entry["memory_type_index"] = type.memoryTypeIndex;
        entry["heap_index"] = type.heapIndex;
        entry["property_flags"] = vk::to_string(type.propertyFlags);
        entry["allocated_bytes"] = type.allocatedBytes;
        entry["used_bytes"] = type.usedBytes;
        entry["peak_used_bytes"] = type.peakUsedBytes;
        entry["device_memory_count"] = type.deviceMemoryCount;
        entry["allocation_count"] = type.allocationCount;
        types.append(entry);
    }
    nb::dict result;
    result["allocated_bytes"] = stats.allocatedBytes();
    result["used_bytes"] = stats.usedBytes();
    result["device_memory_count"] = stats.deviceMemoryCount();
    result["memory_types"] = types;
    return result;
}

std::string
memoryRepr(Memory& memory, const char* kind)
{
    const char* dtype = numpyDtypeName(memory.dataType());
    std::string text = std::string("<kp.") + kind + " " + (dtype != nullptr ? dtype : "custom") +
                       "[" + std::to_string(memory.size()) + "] " +
                       Memory::toString(memory.memoryType());
    if (!memory.isInit()) {
        text += " (destroyed)";
    }
    return text + ">";
}

/** OpSyncDevice and OpSyncLocal: the same two constructors. */
template<typename SyncOp>
void
bindSyncOperation(nb::module_& m, const char* name, const char* doc)
{
    using namespace nb::literals;
    using MemoryList = std::vector<std::shared_ptr<Memory>>;
    nb::class_<SyncOp, kp::OpBase>(m, name, doc)
      .def(nb::init<const MemoryList&>(),
           "tensors"_a,
           keepGil,
           "Syncs the whole of each tensor. Raises if the list is empty or holds a destroyed "
           "tensor.")
      .def(nb::init<const MemoryList&, uint32_t, uint32_t>(),
           "tensors"_a,
           "offset"_a,
           "count"_a,
           keepGil,
           "Syncs elements [offset, offset + count) of each tensor.");
}

// --- Slots of kp.Memory: the buffer protocol -----------------------------

PyType_Slot memorySlots[] = {
    { Py_bf_getbuffer, reinterpret_cast<void*>(memoryGetBuffer) },
    { Py_bf_releasebuffer, reinterpret_cast<void*>(memoryReleaseBuffer) },
    { 0, nullptr },
};

} // namespace

void
setPythonError(std::exception_ptr error) noexcept
{
    try {
        std::rethrow_exception(error);
    } catch (nb::python_error& e) {
        e.restore();
    } catch (const Error&) {
        translateError(error);
    } catch (const vk::SystemError&) {
        translateError(error);
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "Unknown C++ exception");
    }
}

} // namespace python
} // namespace kp

using namespace kp::python;
using kp::Memory;
namespace py = kp::python;

NB_MODULE(_kp, m)
{
    using namespace nb::literals;
    using MemoryTypes = Memory::MemoryTypes;
    using DataTypes = Memory::DataTypes;
    using MemoryList = std::vector<std::shared_ptr<Memory>>;

    m.doc() = "Kompute: general purpose GPU compute over Vulkan (the compiled part of the kp "
              "package; import kp, not this module)";
    m.attr("__version__") = KOMPUTE_PYTHON_VERSION;

    installLogSink();

    // --- Exceptions ---------------------------------------------------------

    // Named after the module as imported (kp._kp, or _kp for stubgen);
    // kp/__init__.py presents them as kp.Error, ...
    std::string moduleName = nb::cast<std::string>(m.attr("__name__"));
    std::string errorName = moduleName + ".Error";
    std::string destroyedName = moduleName + ".DestroyedError";
    std::string vulkanName = moduleName + ".VulkanError";
    py::gError = PyErr_NewExceptionWithDoc(
      errorName.c_str(),
      "Any error raised by Kompute: misuse, bad input, or a failed Vulkan call. A subclass of "
      "RuntimeError, as upstream's errors are.",
      PyExc_RuntimeError,
      nullptr);
    py::gDestroyedError = PyErr_NewExceptionWithDoc(
      destroyedName.c_str(),
      "An object was used after it, or the Manager that made it, was destroyed.",
      py::gError,
      nullptr);
    py::gVulkanError = PyErr_NewExceptionWithDoc(
      vulkanName.c_str(),
      "A Vulkan call failed; the message names the VkResult and what was being done. "
      "`code` is the VkResult value (e.g. -2) and `result` its name "
      "(\"VK_ERROR_OUT_OF_DEVICE_MEMORY\"); both are None on an instance made by hand.",
      py::gError,
      nullptr);
    std::string outOfMemoryName = moduleName + ".OutOfMemoryError";
    std::string deviceLostName = moduleName + ".DeviceLostError";
    // Also a MemoryError, as running out of memory is elsewhere in Python.
    PyObject* outOfMemoryBases = PyTuple_Pack(2, py::gVulkanError, PyExc_MemoryError);
    py::gOutOfMemoryError = PyErr_NewExceptionWithDoc(
      outOfMemoryName.c_str(),
      "Device or host memory ran out (VK_ERROR_OUT_OF_DEVICE_MEMORY or "
      "VK_ERROR_OUT_OF_HOST_MEMORY), or an allocation exceeds its memory heap or "
      "maxMemoryAllocationSize (refused before the driver sees it). A VulkanError and a "
      "MemoryError.",
      outOfMemoryBases,
      nullptr);
    Py_DECREF(outOfMemoryBases);
    py::gDeviceLostError = PyErr_NewExceptionWithDoc(
      deviceLostName.c_str(),
      "The device was lost (VK_ERROR_DEVICE_LOST): a shader may have faulted or run too "
      "long. Destroy the Manager and create a new one.",
      py::gVulkanError,
      nullptr);
    PyObject_SetAttrString(py::gVulkanError, "result", Py_None);
    PyObject_SetAttrString(py::gVulkanError, "code", Py_None);
    m.attr("Error") = nb::handle(py::gError);
    m.attr("DestroyedError") = nb::handle(py::gDestroyedError);
    m.attr("VulkanError") = nb::handle(py::gVulkanError);
    m.attr("OutOfMemoryError") = nb::handle(py::gOutOfMemoryError);
    m.attr("DeviceLostError") = nb::handle(py::gDeviceLostError);

    nb::register_exception_translator([](const std::exception_ptr& p, void*) { translateError(p); });
    m.def(
      "_throw_vulkan_error",
      [](int code, const std::string& action) { kp::throwVulkanError(static_cast<vk::Result>(code), action); },
      "code"_a,
      "action"_a,
      "Raises the error Kompute raises when a Vulkan call returns `code` (for tests).");

    // --- Logging (used by kp/__init__.py) ------------------------------------

    m.def("_flush_log", &flushLog, "Hands queued C++ log messages to the 'kp' logger now.");
    m.def("_release_operations_at_exit", &releaseOperationsAtExit,
          "Destroys the sequences that hold operations written in Python (kp's atexit "
          "handler).");
    m.def(
      "_set_native_log_level",
      [](int level) { kp::logger::setLogLevel(nativeLevel(level)); },
      "level"_a,
      "Sets the C++ side's threshold from a Python logging level (use kp.set_log_level).");
    m.def(
      "_get_native_log_level",
      []() { return pythonLevel(kp::logger::getLogLevel()); },
      "The C++ side's threshold as a Python logging level (60 means off).");

    // --- Enums ----------------------------------------------------------------

    nb::enum_<MemoryTypes>(m,
                           "MemoryTypes",
                           nb::is_arithmetic(),
                           "Where a tensor's memory lives and how the host reaches it.")
      .value("device",
             MemoryTypes::eDevice,
             "Device-local memory; the host view is a staging copy: OpSyncDevice / OpSyncLocal "
             "move data between them (the default).")
      .value("host",
             MemoryTypes::eHost,
             "Host-visible coherent memory that shaders use directly; no sync operation needed.")
      .value("storage",
             MemoryTypes::eStorage,
             "Device-local memory without a host view (data() raises): for intermediates.")
      .value("deviceAndHost",
             MemoryTypes::eDeviceAndHost,
             "Memory both device-local and host-visible (integrated GPUs, resizable BAR).")
      ;

    nb::enum_<DataTypes>(m,
                         "DataTypes",
                         nb::is_arithmetic(),
                         "Element type of a tensor (numpy dtype in brackets).")
      .value("bool", DataTypes::eBool, "Boolean, one byte per element [bool].")
      .value("int", DataTypes::eInt, "32-bit signed integer [int32].")
      .value("uint", DataTypes::eUnsignedInt, "32-bit unsigned integer [uint32].")
      .value("float", DataTypes::eFloat, "32-bit float [float32].")
      .value("double", DataTypes::eDouble, "64-bit float [float64].")
      .value("custom", DataTypes::eCustom,
             "Elements of a caller-given size: from Python, a numpy structured or void dtype "
             "(Manager.tensor_t, zeros) or tensor_t(data, element_size=n).")
      .value("short", DataTypes::eShort, "16-bit signed integer [int16].")
      .value("ushort", DataTypes::eUnsignedShort, "16-bit unsigned integer [uint16].")
      .value("char", DataTypes::eChar, "8-bit signed integer [int8].")
      .value("uchar", DataTypes::eUnsignedChar, "8-bit unsigned integer [uint8].")
      .value("long", DataTypes::eLong, "64-bit signed integer [int64].")
      .value("ulong", DataTypes::eUnsignedLong, "64-bit unsigned integer [uint64].")
      .value("half", DataTypes::eHalf, "16-bit float [float16].")
      .value("bfloat16", DataTypes::eBFloat16,
             "bfloat16, 16 bits: numpy views are uint16 (the raw bits), or "
             "ml_dtypes.bfloat16 where that package is installed.")
      ;

    // --- Shaders ----------------------------------------------------------------

    nb::class_<kp::Shader>(m,
                           "Shader",
                           "Getting SPIR-V for an Algorithm: GLSL compiled in the process, or a "
                           ".spv file.")
      .def_static(
        "compile_source",
        [](const std::string& source,
           const std::map<std::string, std::string>& defines,
           const std::string& entryPoint) {
            std::vector<uint32_t> words;
            {
                ReleaseGil release;
                words = kp::Shader::compileSource(source, defines, entryPoint);
            }
            return spirvToBytes(words);
        },
        "source"_a,
        "defines"_a = std::map<std::string, std::string>(),
        "entry_point"_a = "main",
        keepGil,
        "Compiles GLSL compute-shader source to SPIR-V bytes (for Vulkan 1.1) in the process. "
        "`defines` are preprocessor macros (an empty value defines the name alone). Raises "
        "kp.Error with the compiler's messages, which carry line numbers, if the source does not "
        "compile.")
      .def_static(
        "load_spirv",
        [](const std::string& path) { return spirvToBytes(kp::Shader::loadSpirv(path)); },
        "path"_a,
        keepGil,
        "Reads a SPIR-V binary file and returns its bytes; raises kp.Error if it cannot be "
        "read or is not SPIR-V.")
      .def_static("has_compiler",
                  &kp::Shader::hasCompiler,
                  "Whether compile_source is available in this build.");

    m.attr("SHADEROPMULT_COMP_SPV") =
      nb::bytes(reinterpret_cast<const char*>(kp::SHADEROPMULT_COMP_SPV.data()),
                kp::SHADEROPMULT_COMP_SPV.size() * 4);
    m.attr("SHADERLOGISTICREGRESSION_COMP_SPV") =
      nb::bytes(reinterpret_cast<const char*>(kp::SHADERLOGISTICREGRESSION_COMP_SPV.data()),
                kp::SHADERLOGISTICREGRESSION_COMP_SPV.size() * 4);

    // --- Memory and Tensor ------------------------------------------------------

    nb::class_<Memory>(m,
                       "Memory",
                       nb::type_slots(py::memorySlots),
                       "Base class of GPU memory objects (Tensor, Image). Supports the "
                       "buffer protocol: memoryview(t) and numpy.asarray(t) see the host view "
                       "without a copy.")
      .def(
        "data",
        [](nb::handle self) { return memoryData(self); },
        keepGil,
        "The host view as a 1-D numpy array, without a copy: writes through it change the "
        "tensor's host data, and it keeps the tensor alive (its .base is the tensor). It does "
        "not talk to the GPU: record OpSyncDevice to send host data to the device and "
        "OpSyncLocal to bring results back (eHost / eDeviceAndHost tensors need neither). "
        "Raises kp.DestroyedError once the tensor or its Manager is destroyed, and kp.Error "
        "for a storage tensor, which has no host view. An array obtained before destroy() "
        "stays readable afterwards (it shows the last host data): the memory behind it is "
        "freed when the array and the tensor are gone.")
      .def(
        "__array__",
        [](nb::handle self, nb::handle dtype, nb::handle copy) {
            return memoryArrayInterface(self, dtype, copy);
        },
        "dtype"_a = nb::none(),
        "copy"_a = nb::none(),
        keepGil,
        "numpy.asarray(t): the host view, like data(). Raises kp.DestroyedError once the "
        "tensor or its Manager is destroyed.")
      .def(
        "__dlpack__",
        [](nb::handle self, nb::handle stream, nb::handle maxVersion, nb::handle dlDevice,
           nb::handle copy) { return memoryDlpack(self, stream, maxVersion, dlDevice, copy); },
        nb::kw_only(),
        "stream"_a = nb::none(),
        "max_version"_a = nb::none(),
        "dl_device"_a = nb::none(),
        "copy"_a = nb::none(),
        keepGil,
        "DLPack export of the host view, without a copy: numpy.from_dlpack(t) and "
        "torch.from_dlpack(t) see the same memory as data(), a 1-D array of the tensor's dtype "
        "(float16 as float16, bfloat16 as DLPack bfloat16, custom elements as uint8 bytes) on "
        "the CPU device. That memory is the host view: for host and deviceAndHost tensors the "
        "tensor's memory itself, for device tensors and images a staging copy that only OpSyncDevice "
        "/ OpSyncLocal exchange with the device. The capsule, and the array a consumer makes of "
        "it, keeps the tensor alive; the memory stays valid after destroy(), as data()'s does. "
        "Raises kp.DestroyedError for a destroyed tensor, kp.Error for a storage tensor (no "
        "host view), BufferError for copy=True or a dl_device other than the CPU.")
      .def("__dlpack_device__",
           &memoryDlpackDevice,
           keepGil,
           "(1, 0): DLPack's kDLCPU, device 0; the host view is in host memory.")
      .def(
        "set_data",
        [](nb::handle self, ArrayLike values) { memorySetData(self, values.object); },
        "values"_a,
        keepGil,
        "Copies `values` (converted to this tensor's dtype; exactly size() elements) into the "
        "host view. Like data()[:] = values; record OpSyncDevice to send it to the device.")
      .def("size", &Memory::size, keepGil, "Number of elements.")
      .def("__len__", &Memory::size, keepGil, "Number of elements.")
      .def("memory_size", &Memory::memorySize, keepGil, "Size in bytes.")
      .def("data_type_memory_size",
           nb::overload_cast<>(&Memory::dataTypeMemorySize, nb::const_),
           keepGil,
           "Bytes per element.")
      .def("data_type", nb::overload_cast<>(&Memory::dataType, nb::const_), keepGil,
           "The element type (kp.DataTypes).")
      .def("memory_type", &Memory::memoryType, keepGil, "The memory type (kp.MemoryTypes).")
      .def("is_init", &Memory::isInit, keepGil,
           "False once destroyed (directly or by its Manager's destroy()).")
      .def("is_host_view_direct", &Memory::isHostViewDirect, keepGil,
           "True when the host view is the device memory itself (host and deviceAndHost "
           "tensors, on every device): no staging copy, and OpSyncDevice / OpSyncLocal only "
           "order accesses. Device tensors' host views are a copy of their own everywhere.")
      .def("destroy", &Memory::destroy, releaseGil,
           "Frees the GPU memory, without waiting: once work in flight that may use it has "
           "completed. Afterwards every use raises kp.DestroyedError (arrays from data() stay "
           "readable). Idempotent.");

    nb::class_<kp::Tensor, Memory>(
      m,
      "Tensor",
      "A one-dimensional array of elements in GPU memory with a host view. Made by "
      "Manager.tensor() / Manager.tensor_t().")
      .def(
        "__repr__",
        [](kp::Tensor& self) { return memoryRepr(self, "Tensor"); },
        keepGil,
        "Element type, size and memory type.")
      .def(
        "upload",
        [](nb::handle self, ArrayLike values) { tensorUpload(self, values.object); },
        "values"_a,
        keepGil,
        "set_data(values) and an evaluated OpSyncDevice in one call, returning once the "
        "device holds the data. For large tensors the copy into the staging buffer and the "
        "transfer run side by side (64 MiB chunks), so it is faster than the two steps. Runs "
        "on the Manager's queue 0; work in flight that uses the tensor must be awaited first.")
      .def(
        "download",
        [](nb::handle self) { return tensorDownload(self); },
        keepGil,
        "An evaluated OpSyncLocal and a copy of the host view into a new numpy array, "
        "overlapped like upload(). The array does not share memory with the tensor.");

    nb::enum_<kp::WaitStrategy>(m,
                                "WaitStrategy",
                                "How evaluations wait for the device (see "
                                "Manager.set_wait_strategy).")
      .value("auto",
             kp::WaitStrategy::eAuto,
             "Polls for a short time adapted to the sequence's recent durations (at most the "
             "manager's spin limit), then blocks; long work sleeps until shortly before its "
             "shortest recent duration, then polls its end; on CPU drivers it blocks at once "
             "(the default).")
      .value("spin",
             kp::WaitStrategy::eSpin,
             "Polls until the work is done: the lowest latency, one CPU core busy meanwhile.")
      .value("block",
             kp::WaitStrategy::eBlock,
             "Blocks in the driver at once: no CPU time while waiting, the driver's wake-up "
             "latency.");

    nb::enum_<vk::ImageTiling>(m,
                               "ImageTiling",
                               "How an image's texels are laid out in device memory.")
      .value("optimal",
             vk::ImageTiling::eOptimal,
             "The driver's own layout (the default for device and storage images).")
      .value("linear",
             vk::ImageTiling::eLinear,
             "Row after row, with the driver's row pitch (the default for host and "
             "deviceAndHost images).");

    nb::class_<kp::Image, Memory>(
      m,
      "Image",
      "A two-dimensional storage image of width x height texels of 1, 2 or 4 channels, bound "
      "to shaders as a storage image (layout(set = 0, binding = i, rgba32f) uniform image2D, "
      "...). Its host view (data(), data_hwc(), the buffer protocol) is a tightly packed "
      "staging copy, row after row, whatever the memory type: images always need OpSyncDevice "
      "/ OpSyncLocal to move host data to and from the device (data given at creation is "
      "uploaded already). Made by Manager.image() / Manager.image_t().")
      .def(
        "data_hwc",
        [](nb::handle self) { return imageDataHwc(self); },
        keepGil,
        "The host view as a numpy array of shape (height, width, channels), without a copy"
        ": image[y, x, c] is channel c of the texel in row y, column x. Like data() (the "
        "same memory, flat), it keeps the image alive (its .base is the image), does not talk "
        "to the GPU, and raises kp.DestroyedError once the image or its Manager is destroyed.")
      .def("width", &kp::Image::getWidth, keepGil, "Width in texels.")
      .def("height", &kp::Image::getHeight, keepGil, "Height in texels.")
      .def("num_channels", &kp::Image::getNumChannels, keepGil,
           "Channels per texel: 1, 2 or 4.")
      .def("tiling", &kp::Image::getTiling, keepGil,
           "The image's tiling (kp.ImageTiling).")
      .def(
        "__repr__",
        [](kp::Image& self) {
            const char* dtype = numpyDtypeName(self.dataType());
            std::string text = std::string("<kp.Image ") + (dtype != nullptr ? dtype : "custom") +
                               "[" + std::to_string(self.getHeight()) + "x" +
                               std::to_string(self.getWidth()) + "x" +
                               std::to_string(self.getNumChannels()) + "] " +
                               Memory::toString(self.memoryType());
            if (!self.isInit()) {
                text += " (destroyed)";
            }
            return text + ">";
        },
        keepGil,
        "Element type, shape (height x width x channels) and memory type.");

    // --- Operations ------------------------------------------------------------

    bindOperationBase(m);

    bindSyncOperation<kp::OpSyncDevice>(
      m,
      "OpSyncDevice",
      "Copies the host views of tensors and images into their device memory (device tensors "
      "and all images; other tensors need no copy).");
    bindSyncOperation<kp::OpSyncLocal>(
      m,
      "OpSyncLocal",
      "Copies the device memory of tensors and images back into their host views, ready to "
      "read once the sequence has completed.");

    nb::class_<kp::OpCopy, kp::OpBase>(
      m,
      "OpCopy",
      "Copies the device data of the first tensor or image into each of the others (same "
      "type and size; image to image, image to tensor and tensor to image too); their host "
      "views receive it too.")
      .def(nb::init<const MemoryList&>(),
           "tensors"_a,
           keepGil,
           "Raises unless there are at least two tensors.");

    nb::class_<kp::OpAlgoDispatch, kp::OpBase>(
      m,
      "OpAlgoDispatch",
      "Dispatches an algorithm, optionally with new push constants (which then stay on the "
      "algorithm, as upstream).")
      .def(
        "__init__",
        [](kp::OpAlgoDispatch* self,
           const std::shared_ptr<kp::Algorithm>& algorithm,
           ConstantsArg pushConstants) {
            new (self) kp::OpAlgoDispatch(
              algorithm,
              constantsFromPython(pushConstants.object, "OpAlgoDispatch push_consts"));
        },
        "algorithm"_a,
        "push_consts"_a = nb::list(),
        keepGil,
        "push_consts: a list of numbers (float32) or a numpy array of any scalar dtype (or a "
        "structured array); empty keeps the algorithm's own. Their byte size must match the "
        "shader's push-constant block, which is checked when the operation is recorded.");

    nb::class_<kp::OpMult, kp::OpAlgoDispatch>(
      m,
      "OpMult",
      "Element-wise multiply of two float tensors into a third, with the built-in shader.")
      .def(nb::init<MemoryList, std::shared_ptr<kp::Algorithm>>(),
           "tensors"_a,
           "algorithm"_a,
           releaseGil,
           "tensors: [a, b, out], all float32 of one size. The algorithm (e.g. "
           "mgr.algorithm()) is rebuilt with the multiply shader, as upstream.");

    bindKernels(m);

    nb::class_<kp::OpMemoryBarrier, kp::OpBase>(
      m,
      "OpMemoryBarrier",
      "Records a pipeline barrier on each tensor's device buffer (or staging buffer).")
      .def(
        "__init__",
        [](kp::OpMemoryBarrier* self,
           const MemoryList& tensors,
           uint32_t srcAccessMask,
           uint32_t dstAccessMask,
           uint32_t srcStageMask,
           uint32_t dstStageMask,
           bool barrierOnPrimary) {
            new (self) kp::OpMemoryBarrier(tensors,
                                           vk::AccessFlags(srcAccessMask),
                                           vk::AccessFlags(dstAccessMask),
                                           vk::PipelineStageFlags(srcStageMask),
                                           vk::PipelineStageFlags(dstStageMask),
                                           barrierOnPrimary);
        },
        "tensors"_a,
        "src_access_mask"_a,
        "dst_access_mask"_a,
        "src_stage_mask"_a,
        "dst_stage_mask"_a,
        "barrier_on_primary"_a = true,
        keepGil,
        "Masks are Vulkan VkAccessFlags / VkPipelineStageFlags values: use kp.AccessFlagBits "
        "and kp.PipelineStageFlagBits (e.g. AccessFlagBits.shader_write | ...).");

    // --- Algorithm ---------------------------------------------------------------

    nb::class_<kp::Algorithm>(
      m,
      "Algorithm",
      "A compute shader with its tensors (binding i = tensor i), specialization and push "
      "constants and workgroup count. Made by Manager.algorithm().")
      .def("get_mem_objects",
           &kp::Algorithm::getMemObjects,
           keepGil,
           "The bound tensors, in binding order.")
      .def("is_init", &kp::Algorithm::isInit, keepGil,
           "False before it is built (empty algorithm) and after destroy().")
      .def("destroy", &kp::Algorithm::destroy, releaseGil,
           "Frees the pipeline and descriptor set once work in flight that may use them has "
           "completed (it does not wait), and lets go of the tensors. Idempotent.")
      .def(
        "rebuild",
        [](kp::Algorithm& self,
           const MemoryList& tensors,
           SpirvArg spirv,
           const kp::Workgroup& workgroup,
           ConstantsArg specConsts,
           ConstantsArg pushConsts) {
            auto words = spirvFromPython(spirv.object);
            auto spec = constantsFromPython(specConsts.object, "spec_consts");
            auto push = constantsFromPython(pushConsts.object, "push_consts");
            ReleaseGil release;
            self.rebuild(tensors, words, workgroup, spec, push);
        },
        "tensors"_a,
        "spirv"_a,
        "workgroup"_a = kp::Workgroup{ 0, 0, 0 },
        "spec_consts"_a = nb::list(),
        "push_consts"_a = nb::list(),
        keepGil,
        "Rebuilds the pipeline with new tensors, shader and constants (empty constants keep "
        "the previous ones; see clear_constants). Sequences that recorded it re-record "
        "themselves.")
      .def("clear_constants", &kp::Algorithm::clearConstants, releaseGil,
           "Forgets the specialization and push constants and the built pipeline, so "
           "that the next rebuild() uses only the constants it is given: for moving an "
           "algorithm to a shader that declares none, which rebuild() with empty constants "
           "cannot do (it keeps the previous ones). Until that rebuild() the algorithm is not "
           "built: is_init() is False and dispatching it raises kp.DestroyedError. Work in "
           "flight keeps the old pipeline until it completes.")
      .def(
        "set_mem_objects",
        [](kp::Algorithm& self, const MemoryList& tensors) {
            ReleaseGil release;
            self.setMemObjects(tensors);
        },
        "tensors"_a,
        keepGil,
        "Binds other tensors of the same kinds without rebuilding the pipeline.")
      .def("set_workgroup",
           &kp::Algorithm::setWorkgroup,
           "workgroup"_a,
           "min_size"_a = 1,
           keepGil,
           "Sets the group counts of the next recorded dispatch: x = 0 means (min_size, 1, 1); "
           "y or z = 0 means 1. Raises beyond the device's limits.")
      .def(
        "get_workgroup",
        [](kp::Algorithm& self) {
            const kp::Workgroup& wg = self.getWorkgroup();
            return nb::make_tuple(wg[0], wg[1], wg[2]);
        },
        nb::sig("def get_workgroup(self) -> tuple[int, int, int]"),
        keepGil,
        "The group counts (x, y, z) of the dispatch.")
      .def(
        "set_push_constants",
        [](kp::Algorithm& self, ConstantsArg values) {
            self.setPushConstants(constantsFromPython(values.object, "push_consts"));
        },
        "push_consts"_a,
        keepGil,
        "Replaces the push constants; their byte size must match the shader's block.")
      .def(
        "get_push_constants",
        [](kp::Algorithm& self, DTypeArg dtype) {
            return constantsToNumpy(kp::ConstantBytes::from(self.getPushConstants<uint8_t>()),
                                    dtype.object);
        },
        "dtype"_a = nb::str("float32"),
        keepGil,
        "The current push constants, read as a numpy array of `dtype`.")
      .def(
        "get_specialization_constants",
        [](kp::Algorithm& self, DTypeArg dtype) {
            return constantsToNumpy(
              kp::ConstantBytes::from(self.getSpecializationConstants<uint8_t>()), dtype.object);
        },
        "dtype"_a = nb::str("float32"),
        keepGil,
        "The specialization constants, read as a numpy array of `dtype`.");

    // --- Sequence ------------------------------------------------------------------

    nb::class_<kp::Sequence>(
      m,
      "Sequence",
      "A batch of operations recorded into one command buffer and submitted together on one "
      "queue. Recording after an evaluation starts a new batch; eval() with nothing new "
      "re-submits the last batch. Use one sequence from one thread at a time. Made by "
      "Manager.sequence().")
      .def("record",
           [](nb::handle self, std::shared_ptr<kp::OpBase> op) {
               auto& sequence = nb::cast<kp::Sequence&>(self);
               sequence.record(op);
               noteRecorded(sequence, *op);
               return nb::borrow(self);
           },
           "op"_a,
           keepGil,
           nb::sig("def record(self, op: OpBase) -> Sequence"),
           "Records an operation into the batch and returns the sequence (for chaining). "
           "Raises while the sequence is running.")
      .def("eval",
           [](nb::handle self) { return chaining(self, [](kp::Sequence& s) { s.eval(); }); },
           keepGil,
           nb::sig("def eval(self) -> Sequence"),
           "Submits the batch and waits for it (without holding the GIL); returns the "
           "sequence.")
      .def("eval",
           [](nb::handle self, std::shared_ptr<kp::OpBase> op) {
               noteRecorded(nb::cast<kp::Sequence&>(self), *op);
               return chaining(self, [&op](kp::Sequence& s) { s.eval(std::move(op)); });
           },
           "op"_a,
           keepGil,
           nb::sig("def eval(self, op: OpBase) -> Sequence"),
           "Clears the batch, records `op` alone, submits and waits; returns the sequence.")
      .def("eval_async",
           [](nb::handle self) { return chaining(self, [](kp::Sequence& s) { s.evalAsync(); }); },
           keepGil,
           nb::sig("def eval_async(self) -> Sequence"),
           "Submits the batch and returns at once, while the device works; eval_await() "
           "completes it. Raises if the previous submission was not awaited.")
      .def("eval_async",
           [](nb::handle self, std::shared_ptr<kp::OpBase> op) {
               noteRecorded(nb::cast<kp::Sequence&>(self), *op);
               return chaining(self, [&op](kp::Sequence& s) { s.evalAsync(std::move(op)); });
           },
           "op"_a,
           keepGil,
           nb::sig("def eval_async(self, op: OpBase) -> Sequence"),
           "Clears the batch, records `op` alone and submits it without waiting.")
      .def("eval_await",
           [](nb::handle self, uint64_t timeout) {
               return chaining(self, [timeout](kp::Sequence& s) { s.evalAwait(timeout); });
           },
           "timeout"_a = UINT64_MAX,
           keepGil,
           nb::sig("def eval_await(self, timeout: int = 18446744073709551615) -> Sequence"),
           "Waits up to `timeout` nanoseconds (64-bit; default: no limit) for the submission, "
           "without holding the GIL. On timeout the sequence stays running: call it again "
           "later. Returns at once when nothing is pending. Returns the sequence.")
      .def("is_recording", &kp::Sequence::isRecording, keepGil,
           "True while operations are being recorded into a batch not yet evaluated.")
      .def("is_running", &kp::Sequence::isRunning, keepGil,
           "True between eval_async() and the eval_await() that completes it.")
      .def("is_init", &kp::Sequence::isInit, keepGil,
           "False once destroyed (directly or by its Manager's destroy()).")
      .def("clear", &kp::Sequence::clear, releaseGil,
           "Drops the recorded operations and ends recording.")
      .def("begin", &kp::Sequence::begin, releaseGil,
           "Starts a new, empty batch (record() does it when needed).")
      .def("end", &kp::Sequence::end, releaseGil,
           "Ends recording (eval() does it when needed).")
      .def("rerecord", &kp::Sequence::rerecord, releaseGil,
           "Records the batch's operations again into a fresh command buffer.")
      .def("get_timestamps", &kp::Sequence::getTimestamps, releaseGil,
           "Raw timestamp ticks of the last completed evaluation: one at the start and one "
           "after each operation (needs total_timestamps in Manager.sequence()). Multiply "
           "differences by get_device_properties()['timestamp_period'] for nanoseconds, or use "
           "get_timestamps_ns().")
      .def("get_timestamps_ns", &kp::Sequence::getTimestampsNs, releaseGil,
           "The timestamps in nanoseconds.")
      .def("wait_for",
           &kp::Sequence::waitFor,
           "other"_a,
           keepGil,
           "Makes every later submission of this sequence wait, on the GPU, for the latest "
           "submission of `other`, so a chain a -> b -> c of eval_async() calls needs "
           "no host wait in between: await only the last. The dependency stays until "
           "clear_waits(). Where the device has timeline semaphores no host wait is involved, "
           "even across queues; elsewhere the submission waits on the host for `other`. A "
           "sequence never submitted is not waited for. Returns this sequence.")
      .def("recorded_barrier_count", &kp::Sequence::recordedBarrierCount, keepGil,
           "Pipeline barriers the sequence recorded between the operations of the current "
           "batch: one before each operation that reads what an earlier one wrote or "
           "writes what an earlier one read or wrote, and around custom operations that declare "
           "no accesses. Independent operations need none.")
      .def("clear_waits", &kp::Sequence::clearWaits, keepGil,
           "Drops the dependencies added by wait_for().")
      .def("submission_count", &kp::Sequence::submissionCount, keepGil,
           "Number of submissions so far; the value this sequence's timeline semaphore "
           "reaches when the latest one completes.")
      .def(
        "destroy",
        [](kp::Sequence& self) {
            checkNotInOperationHook("Sequence.destroy()");
            ReleaseGil release;
            self.destroy();
        },
        keepGil,
        "Drops the recorded operations and frees the command buffer once work in flight has "
        "completed (it does not wait; a submission never awaited completes on its own). "
        "Idempotent; afterwards every use raises kp.DestroyedError. Raises kp.Error from "
        "within an operation's hooks (record, pre_eval, post_eval), where it would wait for "
        "the sequence that runs them.");

    // --- Manager -------------------------------------------------------------------------

    nb::class_<kp::Manager>(
      m,
      "Manager",
      "Owns a Vulkan device and creates tensors, algorithms and sequences on it. Objects it "
      "made keep it alive; destroy() (or leaving a `with` block) frees everything at once, "
      "after which those objects raise kp.DestroyedError.")
      .def(nb::init<uint32_t, const std::vector<uint32_t>&, const std::vector<std::string>&>(),
           "device"_a = 0,
           "family_queue_indices"_a = std::vector<uint32_t>(),
           "desired_extensions"_a = std::vector<std::string>(),
           releaseGil,
           "Creates a Vulkan instance and a device on physical device `device` (see "
           "list_devices()). One queue is created per entry of `family_queue_indices` (repeat a "
           "family for several of its queues; empty: one queue of the first compute family). "
           "Raises kp.Error for a device index out of range, or a family without compute or "
           "without enough queues. The environment variable KOMPUTE_ENV_DEBUG_LAYERS may name "
           "Vulkan layers to enable (e.g. VK_LAYER_KHRONOS_validation).")
      .def(
        "__enter__",
        [](nb::handle self) { return nb::borrow(self); },
        nb::sig("def __enter__(self) -> Manager"),
        "Returns the manager; leaving the block destroys it.")
      .def(
        "__exit__",
        [](kp::Manager& self, nb::args) {
            checkNotInOperationHook("Leaving a Manager's with block");
            ReleaseGil release;
            self.destroy();
        },
        keepGil,
        "Destroys the manager and everything it made.")
      .def(
        "destroy",
        [](kp::Manager& self) {
            checkNotInOperationHook("Manager.destroy()");
            ReleaseGil release;
            self.destroy();
        },
        keepGil,
        "Waits for the device, destroys every object this manager made that is still alive "
        "(they stay as inert Python objects: using them raises kp.DestroyedError; numpy "
        "arrays obtained from their data() stay readable, showing the last host data), then "
        "the device. Idempotent. Raises kp.Error from within an operation's hooks (record, "
        "pre_eval, post_eval), where it would wait for the sequence that runs them.")
      .def("clear", &kp::Manager::clear, keepGil,
           "Kept for upstream code: expired objects are pruned automatically.")
      .def(
        "sequence",
        [](kp::Manager& self, uint32_t queueIndex, uint32_t totalTimestamps) {
            return self.sequence(queueIndex, totalTimestamps);
        },
        "queue_index"_a = 0,
        "total_timestamps"_a = 0,
        nb::keep_alive<0, 1>(),
        releaseGil,
        "A new sequence on queue `queue_index` (a position in family_queue_indices). With "
        "total_timestamps > 0 it records a timestamp at its start and after each of up to that "
        "many operations (see Sequence.get_timestamps).")
      .def(
        "tensor",
        [](kp::Manager& self, ArrayLike data, MemoryTypes memoryType) {
            return tensorFromPython(self, data.object, memoryType, true);
        },
        "data"_a,
        "memory_type"_a = MemoryTypes::eDevice,
        nb::keep_alive<0, 1>(),
        keepGil,
        "A float32 tensor holding a copy of `data` (a list, an array or any object with "
        "__dlpack__, of any shape and strides, flattened; values are converted to float32). "
        "As upstream, a bare number is taken as one value: mgr.tensor(4) is the one-element "
        "tensor [4.0], not a tensor of 4 elements; for that use zeros(4) or empty(4).")
      .def(
        "tensor_t",
        [](kp::Manager& self,
           ArrayLike data,
           MemoryTypes memoryType,
           std::optional<DTypeArg> dtype,
           std::optional<uint32_t> elementSize) {
            return tensorFromPython(self, data.object, memoryType, false,
                                    dtype ? nb::handle(dtype->object) : nb::handle(),
                                    elementSize);
        },
        "data"_a,
        "memory_type"_a = MemoryTypes::eDevice,
        "dtype"_a = nb::none(),
        "element_size"_a = nb::none(),
        nb::keep_alive<0, 1>(),
        keepGil,
        "A tensor holding a copy of the array `data` (a numpy array, or any object with "
        "__dlpack__ on the CPU, such as a torch tensor; any strides; flattened in C order), "
        "with the array's dtype: "
        "bool, int8/16/32/64, uint8/16/32/64, float16/32/64 (int64 -> DataTypes.long, uint64 "
        "-> ulong, float16 -> half), ml_dtypes.bfloat16 or DLPack bfloat16 (-> "
        "DataTypes.bfloat16), or a structured dtype (numpy.dtype([('x', 'f4'), ('id', 'u4')], "
        "align=True)) or raw void dtype ('V16') for elements of that size (-> "
        "DataTypes.custom; data() then shows the same structured elements). Other dtypes, "
        "DLPack arrays in another device's memory, and numbers instead of arrays raise "
        "TypeError (mgr.tensor_t(4) is refused: use zeros(4) for 4 elements, [4] for one). "
        "With `dtype` (a numpy dtype, a structured dtype or kp.DataTypes) the data is "
        "converted to it first; dtype=kp.DataTypes.bfloat16 (or \"bfloat16\") rounds floats "
        "to bfloat16 and takes uint16 data as the raw bits. With `element_size` the "
        "bytes of `data` (bytes, bytearray, memoryview or any array) become custom elements "
        "of that many bytes, whose data() shows them as raw void elements; their total must "
        "be a whole number of elements (else ValueError).")
      .def(
        "zeros",
        [](kp::Manager& self, nb::handle shape, DTypeArg dtype, MemoryTypes memoryType) {
            return tensorOfShape(self, shape, dtype.object, memoryType, true, "Manager.zeros()");
        },
        "shape"_a.none(), // refused by tensorOfShape, with a message
        "dtype"_a = nb::str("float32"),
        "memory_type"_a = MemoryTypes::eDevice,
        nb::sig("def zeros(self, shape: int | collections.abc.Sequence[int], dtype: "
                "numpy.typing.DTypeLike = 'float32', memory_type: MemoryTypes = "
                "MemoryTypes.device) -> Tensor"),
        nb::keep_alive<0, 1>(),
        keepGil,
        "A tensor of `shape` elements (an int, or a tuple of ints whose product it "
        "holds, flattened, as numpy counts them) of `dtype`: anything tensor_t's dtype takes "
        "(a numpy dtype, kp.DataTypes, \"bfloat16\", ml_dtypes.bfloat16) or a structured "
        "dtype (custom elements of its size); float32 by default, as mgr.tensor. Both its "
        "host view and its device memory hold zeros, whatever the memory type (a device "
        "tensor's zeros are uploaded once, on queue 0): no OpSyncDevice is needed before a "
        "shader reads it. Raises kp.Error for zero elements.")
      .def(
        "empty",
        [](kp::Manager& self, nb::handle shape, DTypeArg dtype, MemoryTypes memoryType) {
            return tensorOfShape(self, shape, dtype.object, memoryType, false, "Manager.empty()");
        },
        "shape"_a.none(),
        "dtype"_a = nb::str("float32"),
        "memory_type"_a = MemoryTypes::eDevice,
        nb::sig("def empty(self, shape: int | collections.abc.Sequence[int], dtype: "
                "numpy.typing.DTypeLike = 'float32', memory_type: MemoryTypes = "
                "MemoryTypes.device) -> Tensor"),
        nb::keep_alive<0, 1>(),
        keepGil,
        "Like zeros() but without writing anything (C++ Manager::tensorT<T>(size)): "
        "the host view and the device memory hold whatever the memory held before, not "
        "necessarily zeros nor the same values; for outputs that a shader or a copy fills. "
        "Costs no upload.")
      .def(
        "image",
        [](kp::Manager& self,
           uint32_t width,
           uint32_t height,
           uint32_t numChannels,
           MemoryTypes memoryType,
           std::optional<vk::ImageTiling> tiling) {
            return emptyImage(self, width, height, numChannels, DataTypes::eFloat, memoryType,
                              tiling);
        },
        "width"_a,
        "height"_a,
        "num_channels"_a,
        "memory_type"_a = MemoryTypes::eDevice,
        "tiling"_a = nb::none(),
        nb::keep_alive<0, 1>(),
        keepGil,
        "A float32 image of width x height texels of num_channels (1, 2 or 4) channels, with "
        "undefined contents. tiling: kp.ImageTiling, or None for the default (linear for host "
        "and deviceAndHost images, optimal otherwise).")
      .def(
        "image",
        [](kp::Manager& self,
           ArrayLike data,
           uint32_t width,
           uint32_t height,
           uint32_t numChannels,
           MemoryTypes memoryType,
           std::optional<vk::ImageTiling> tiling) {
            return imageFromPython(
              self, data.object, width, height, numChannels, memoryType, tiling, true);
        },
        "data"_a,
        "width"_a,
        "height"_a,
        "num_channels"_a,
        "memory_type"_a = MemoryTypes::eDevice,
        "tiling"_a = nb::none(),
        nb::keep_alive<0, 1>(),
        keepGil,
        "A float32 image holding a copy of `data` (converted to float32), uploaded to the "
        "device: width x height texels of num_channels (1, 2 or 4) channels. `data` is flat "
        "(width x height x num_channels values, row after row) or has shape (height, width, "
        "num_channels) (or (height, width) for one channel), which must match the sizes: "
        "otherwise ValueError. Channel counts or types the device cannot store as a storage "
        "image (e.g. 3 channels) raise kp.Error. tiling: kp.ImageTiling, or None for the "
        "default (linear for host and deviceAndHost images, optimal otherwise).")
      .def(
        "image_t",
        [](kp::Manager& self,
           uint32_t width,
           uint32_t height,
           uint32_t numChannels,
           DTypeArg dtype,
           MemoryTypes memoryType,
           std::optional<vk::ImageTiling> tiling) {
            return emptyImage(self,
                              width,
                              height,
                              numChannels,
                              dataTypeFromPython(dtype.object, "Manager.image_t()"),
                              memoryType,
                              tiling);
        },
        "width"_a,
        "height"_a,
        "num_channels"_a,
        "dtype"_a,
        "memory_type"_a = MemoryTypes::eDevice,
        "tiling"_a = nb::none(),
        nb::keep_alive<0, 1>(),
        keepGil,
        "An image of element type `dtype` (a numpy dtype or kp.DataTypes) with undefined "
        "contents; see the form with data.")
      .def(
        "image_t",
        [](kp::Manager& self,
           ArrayLike data,
           std::optional<uint32_t> width,
           std::optional<uint32_t> height,
           std::optional<uint32_t> numChannels,
           MemoryTypes memoryType,
           std::optional<vk::ImageTiling> tiling) {
            return imageFromPython(
              self, data.object, width, height, numChannels, memoryType, tiling, false);
        },
        "data"_a,
        "width"_a = nb::none(),
        "height"_a = nb::none(),
        "num_channels"_a = nb::none(),
        "memory_type"_a = MemoryTypes::eDevice,
        "tiling"_a = nb::none(),
        nb::keep_alive<0, 1>(),
        keepGil,
        "An image holding a copy of the array `data`, uploaded to the device, with the array's "
        "dtype: float32, float16 (DataTypes.half), int32, uint32, int16, uint16, int8, uint8 "
        "(what a storage image can hold; bool, float64 and 64-bit integers raise kp.Error). An "
        "array of shape (height, width, channels) or (height, width) gives the sizes itself "
        "(any given must match, else ValueError); a flat one needs width and height "
        "(num_channels defaults to 1). Channel counts the device cannot store (e.g. 3) raise "
        "kp.Error.")
      .def(
        "algorithm",
        [](kp::Manager& self,
           const MemoryList& tensors,
           SpirvArg spirv,
           const kp::Workgroup& workgroup,
           ConstantsArg specConsts,
           ConstantsArg pushConsts) {
            auto words = spirvFromPython(spirv.object);
            auto spec = constantsFromPython(specConsts.object, "spec_consts");
            auto push = constantsFromPython(pushConsts.object, "push_consts");
            ReleaseGil release;
            return self.algorithmWithConstants(tensors, words, workgroup, spec, push);
        },
        "tensors"_a = MemoryList(),
        "spirv"_a = nb::bytes("", 0),
        "workgroup"_a = kp::Workgroup{ 0, 0, 0 },
        "spec_consts"_a = nb::list(),
        "push_consts"_a = nb::list(),
        nb::keep_alive<0, 1>(),
        keepGil,
        "An algorithm running `spirv` (bytes, e.g. from kp.compile_source) over `tensors` "
        "(binding i = tensor i). workgroup: group counts (x, y, z); x = 0 means (size of "
        "tensors[0], 1, 1). spec_consts / push_consts: lists of numbers (float32) or numpy "
        "arrays of any scalar dtype (or structured arrays); the shader is checked against the "
        "tensors and the constants' byte sizes before the driver sees it, raising kp.Error on "
        "any mismatch. SPIR-V whose length is not a multiple of 4 raises ValueError. With no "
        "tensors or no SPIR-V an empty algorithm is returned (for OpMult).")
      .def(
        "list_devices",
        [](kp::Manager& self) {
            nb::list devices;
            auto count = static_cast<uint32_t>(self.listDevices().size());
            for (uint32_t i = 0; i < count; ++i) {
                devices.append(deviceDict(kp::describeDevice(i)));
            }
            return devices;
        },
        nb::sig("def list_devices(self) -> list[dict[str, typing.Any]]"),
        keepGil,
        "One dict per Vulkan device of this manager's instance (keys as get_device_properties, "
        "plus 'index', the value to give Manager(device=...)).")
      .def(
        "get_device_properties",
        [](kp::Manager& self) { return deviceDict(self.deviceDescription()); },
        nb::sig("def get_device_properties(self) -> dict[str, typing.Any]"),
        keepGil,
        "This manager's device, with the fields of `kompute-info --json` (one C++ function "
        "makes both): upstream's device_name, max_work_group_count, max_work_group_invocations, "
        "max_work_group_size, max_push_constants_size, timestamps_supported; and device_type, "
        "vendor, vendor_id, device_id, api_version, driver_name, driver_version(_text), "
        "timestamp_period (nanoseconds per tick), queue_families, memory_heaps, memory_types, "
        "limits, subgroup, arithmetic, storage, atomics, integer_dot_product, "
        "cooperative_matrix (with its shapes), float_controls, timeline_semaphore, features "
        "(every row of the capability table: supported / enabled), enabled_extensions, "
        "disabled (KOMPUTE_ENV_DISABLE) and fast_paths. 'enabled' is what this manager "
        "enabled.")
      .def(
        "memory_stats",
        [](kp::Manager& self) { return memoryStatsDict(self.memoryStats()); },
        nb::sig("def memory_stats(self) -> dict[str, typing.Any]"),
        keepGil,
        "Device memory use: allocated_bytes, used_bytes, device_memory_count, and "
        "memory_types, a list with the same figures (and peak_used_bytes, allocation_count, "
        "property_flags) per Vulkan memory type.")
      .def(
        "pipeline_stats",
        [](kp::Manager& self) {
            kp::PipelineStats stats = self.pipelineStats();
            nb::dict result;
            result["shader_modules_created"] = stats.shaderModulesCreated;
            result["pipelines_created"] = stats.pipelinesCreated;
            result["live_pipelines"] = stats.livePipelines;
            return result;
        },
        nb::sig("def pipeline_stats(self) -> dict[str, int]"),
        keepGil,
        "Pipeline objects: shader_modules_created, pipelines_created, live_pipelines. "
        "Algorithms of the same SPIR-V, specialization constants and layout share one shader "
        "module, pipeline layout and pipeline.")
      .def("set_wait_strategy",
           &kp::Manager::setWaitStrategy,
           "strategy"_a,
           "auto_spin_limit_ns"_a = kp::Manager::kDefaultAutoSpinLimitNs,
           keepGil,
           "How the waits of this manager's sequences (eval, eval_await, the one-liner) wait "
           "for the device: kp.WaitStrategy.auto (the default, or KOMPUTE_ENV_WAIT), "
           ".spin or .block. auto_spin_limit_ns is the longest auto polls before it blocks "
           "(default 100 us). Takes effect at the next wait.")
      .def("get_wait_strategy", &kp::Manager::getWaitStrategy, keepGil,
           "The wait strategy (see set_wait_strategy).")
      .def("get_auto_spin_limit_ns", &kp::Manager::getAutoSpinLimitNs, keepGil,
           "The longest WaitStrategy.auto polls before it blocks, in ns.")
      .def("queue_count", &kp::Manager::queueCount, keepGil,
           "Number of queues (sequence(queue_index) takes queue_index below it).")
      .def("queue_family_index", &kp::Manager::queueFamilyIndex, "queue_index"_a, keepGil,
           "The queue family of queue `queue_index`.")
      .def_static("compute_queue_families",
                  &kp::Manager::computeQueueFamilies,
                  "count"_a,
                  "device"_a = 0,
                  releaseGil,
                  "Family indices for `count` compute queues of physical device `device`, to "
                  "pass as Manager(device, family_queue_indices): queues of compute-only "
                  "families first (GPUs run them beside the general queue), then of the other "
                  "compute families. Raises kp.Error if the device has fewer compute queues.")
      .def("load_pipeline_cache", &kp::Manager::loadPipelineCache, "path"_a, releaseGil,
           "Merges a pipeline cache file saved by save_pipeline_cache. Returns False, "
           "with a warning, if it is missing or from another device or driver.")
      .def("save_pipeline_cache", &kp::Manager::savePipelineCache, "path"_a, releaseGil,
           "Writes the manager's pipeline cache to a file, so algorithms build faster next "
           "time.");

    bindLlm(m);
}
