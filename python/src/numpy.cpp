// SPDX-License-Identifier: Apache-2.0
// numpy interoperation without numpy's C API: arrays come in through the
// buffer protocol, and kp.Memory exposes its host view through the buffer
// protocol, so numpy is only imported (lazily) when an array is involved.
#include "common.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace kp {
namespace python {

namespace {

using DataTypes = Memory::DataTypes;

struct DtypeInfo
{
    DataTypes dataType;
    const char* numpyName;
    const char* bufferFormat; // struct-module format of one element
};

// Every data type with a numpy equivalent.
constexpr DtypeInfo kDtypes[] = {
    { DataTypes::eBool, "bool", "?" },
    { DataTypes::eChar, "int8", "b" },
    { DataTypes::eUnsignedChar, "uint8", "B" },
    { DataTypes::eShort, "int16", "h" },
    { DataTypes::eUnsignedShort, "uint16", "H" },
    { DataTypes::eInt, "int32", "i" },
    { DataTypes::eUnsignedInt, "uint32", "I" },
    { DataTypes::eLong, "int64", "q" },
    { DataTypes::eUnsignedLong, "uint64", "Q" },
    { DataTypes::eHalf, "float16", "e" },
    { DataTypes::eFloat, "float32", "f" },
    { DataTypes::eDouble, "float64", "d" },
    // numpy has no bfloat16: the raw 16 bits, or ml_dtypes.bfloat16 where
    // that package is installed (see bfloat16Dtype).
    { DataTypes::eBFloat16, "bfloat16", "H" },
};

const DtypeInfo*
dtypeInfo(DataTypes dataType)
{
    for (const auto& info : kDtypes) {
        if (info.dataType == dataType) {
            return &info;
        }
    }
    return nullptr;
}

constexpr const char* kSupportedDtypes =
  "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, "
  "float64 or ml_dtypes.bfloat16";

nb::module_
numpy()
{
    return nb::module_::import_("numpy");
}

} // namespace

nb::object
bfloat16Dtype()
{
    try {
        return nb::module_::import_("ml_dtypes").attr("bfloat16");
    } catch (nb::python_error&) {
        return nb::str("uint16"); // the raw bits
    }
}

namespace {

/** A C-contiguous buffer view of a Python object, released on scope exit. */
class BufferView
{
  public:
    BufferView(nb::handle object, int flags, const char* what)
    {
        if (PyObject_GetBuffer(object.ptr(), &mView, flags) != 0) {
            PyErr_Clear();
            throw nb::type_error(
              (std::string(what) + ": expected a bytes-like object or array, got " +
               nb::cast<std::string>(nb::str(object.type().attr("__name__"))))
                .c_str());
        }
    }
    ~BufferView() { PyBuffer_Release(&mView); }
    BufferView(const BufferView&) = delete;
    BufferView& operator=(const BufferView&) = delete;

    const void* data() const { return mView.buf; }
    /** For views taken with PyBUF_WRITABLE. */
    void* writableData() { return mView.buf; }
    size_t size() const { return static_cast<size_t>(mView.len); }

  private:
    Py_buffer mView{};
};

/** Throws TypeError when `array`'s elements are not numbers Kompute can
 * store: numpy would drop the imaginary part of complex numbers, or call
 * float() on arbitrary objects, without a word. */
void
checkNumeric(nb::handle array, const char* what)
{
    nb::object dtype = array.attr("dtype");
    std::string kind = nb::cast<std::string>(dtype.attr("kind"));
    const char* problem = nullptr;
    if (kind == "c") {
        problem = "holds complex numbers, whose imaginary part would be lost; pass .real, "
                  ".imag or np.abs() of it, or view it as pairs of floats";
    } else if (kind == "O") {
        problem = "holds Python objects; convert it to a numeric dtype first "
                  "(np.asarray(x, dtype=...))";
    } else if (kind == "U" || kind == "S") {
        problem = "holds strings";
    } else if (kind == "M" || kind == "m") {
        problem = "holds dates or time spans; convert them to integers first";
    }
    if (problem != nullptr) {
        throw nb::type_error((std::string(what) + ": numpy dtype " +
                              nb::cast<std::string>(nb::str(dtype.attr("name"))) +
                              " is not supported: the data " + problem)
                               .c_str());
    }
}

/** A C-contiguous numpy array of `data` in native byte order, converted to
 * `dtype` if given. Complex, object, string and date data throw TypeError
 * (`what` names the call). */
nb::object
contiguousArray(nb::handle data, const char* what, nb::handle dtype = nb::handle())
{
    nb::module_ np = numpy();
    // A structured dtype takes each tuple of a list as one element, which it
    // would not once numpy made a plain array of the list.
    bool structured = dtype.is_valid() && !nb::isinstance<nb::str>(dtype) &&
                      !nb::getattr(dtype, "fields", nb::none()).is_none();
    nb::object given = structured ? np.attr("asarray")(data, nb::arg("dtype") = dtype)
                                  : np.attr("asarray")(data);
    checkNumeric(given, what);
    nb::object array = dtype.is_valid() ? np.attr("ascontiguousarray")(given, nb::arg("dtype") = dtype)
                                        : np.attr("ascontiguousarray")(given);
    nb::object arrayDtype = array.attr("dtype");
    if (nb::cast<std::string>(arrayDtype.attr("byteorder")) == ">") {
        array = np.attr("ascontiguousarray")(
          array, nb::arg("dtype") = arrayDtype.attr("newbyteorder")("="));
    }
    return array;
}

/** The data type of a numpy dtype; throws TypeError naming the dtype if
 * Kompute has none. */
DataTypes
dataTypeOf(nb::handle dtype, const char* what)
{
    std::string name = nb::cast<std::string>(nb::str(dtype.attr("name")));
    std::string kind = nb::cast<std::string>(dtype.attr("kind"));
    if (name == "bfloat16" && nb::cast<size_t>(dtype.attr("itemsize")) == 2) {
        return DataTypes::eBFloat16; // ml_dtypes.bfloat16
    }
    if (kind == "b" || kind == "i" || kind == "u" || kind == "f") {
        for (const auto& info : kDtypes) {
            if (name == info.numpyName) {
                return info.dataType;
            }
        }
    }
    throw nb::type_error((std::string(what) + ": numpy dtype " + name +
                          " is not supported; use one of " + kSupportedDtypes)
                           .c_str());
}

/** Whether Kompute holds elements of the numpy dtype as eCustom: a
 * structured dtype, or raw void elements ('V16'). Other dtypes of kind V
 * (ml_dtypes' float8 types, say) are numbers Kompute has no type for. */
bool
isCustomDtype(nb::handle dtype)
{
    if (nb::cast<std::string>(dtype.attr("kind")) != "V") {
        return false;
    }
    return !dtype.attr("fields").is_none() || dtype.attr("type").is(numpy().attr("void"));
}

/** Throws unless a custom dtype can be the element of a tensor. */
uint32_t
customElementSize(nb::handle dtype, const char* what)
{
    if (nb::cast<bool>(dtype.attr("hasobject"))) {
        throw nb::type_error((std::string(what) + ": the structured dtype " +
                              nb::cast<std::string>(nb::str(dtype)) +
                              " holds Python objects, which cannot live in GPU memory")
                               .c_str());
    }
    size_t size = nb::cast<size_t>(dtype.attr("itemsize"));
    if (size == 0 || size > UINT32_MAX) {
        throw nb::value_error((std::string(what) + ": elements of " + std::to_string(size) +
                               " bytes are not possible")
                                .c_str());
    }
    return static_cast<uint32_t>(size);
}

/** The numpy dtype each eCustom tensor made from Python was given, so that
 * its data() shows those elements (C++ keeps only the element size). Keyed
 * by the object's address and checked against a weak reference, so an entry
 * of a freed tensor is never taken for a new one at the same address. Used
 * with the GIL held; never destroyed, as it holds Python objects. */
struct CustomDtype
{
    std::weak_ptr<Memory> memory;
    nb::object dtype;
    /** Its buffer-protocol (PEP 3118) format, e.g. "T{f:x:I:id:}". */
    std::string format;
};

std::unordered_map<const Memory*, CustomDtype>&
customDtypes()
{
    static auto* dtypes = new std::unordered_map<const Memory*, CustomDtype>();
    return *dtypes;
}

void
rememberCustomDtype(const std::shared_ptr<Memory>& memory, nb::handle dtype)
{
    auto& dtypes = customDtypes();
    static size_t pruneAt = 64;
    if (dtypes.size() >= pruneAt) {
        for (auto it = dtypes.begin(); it != dtypes.end();) {
            it = it->second.memory.expired() ? dtypes.erase(it) : std::next(it);
        }
        pruneAt = std::max<size_t>(64, 2 * dtypes.size());
    }
    nb::object empty = numpy().attr("empty")(0, nb::arg("dtype") = dtype);
    nb::object view = nb::module_::import_("builtins").attr("memoryview")(empty);
    std::string format = nb::cast<std::string>(view.attr("format"));
    view.attr("release")();
    dtypes[memory.get()] = CustomDtype{ memory, nb::borrow(dtype), std::move(format) };
}

/** The entry of a custom tensor made with a dtype, or null. The entry stays
 * (at the same address) while the object lives. */
const CustomDtype*
rememberedCustomDtype(const Memory& memory)
{
    if (memory.dataType() != DataTypes::eCustom) {
        return nullptr;
    }
    auto& dtypes = customDtypes();
    auto it = dtypes.find(&memory);
    if (it == dtypes.end()) {
        return nullptr;
    }
    if (it->second.memory.lock().get() != &memory) {
        dtypes.erase(it); // a freed object's
        return nullptr;
    }
    return &it->second;
}

/** Elements of the host view as numpy sees it: raw custom elements (made
 * without a dtype) are shown as their bytes. */
size_t
hostViewLength(const Memory& memory)
{
    bool rawBytes = memory.dataType() == DataTypes::eCustom && !rememberedCustomDtype(memory);
    return rawBytes ? memory.memorySize() : memory.size();
}

/** Python numbers and numpy scalars: values, not arrays. */
bool
isScalar(nb::handle data)
{
    return PyLong_Check(data.ptr()) || PyFloat_Check(data.ptr()) ||
           PyComplex_Check(data.ptr()) || nb::isinstance(data, numpy().attr("generic"));
}

/** The element type of a tensor: a data type and its size, and for eCustom
 * the numpy dtype of its elements when one is known. */
struct ElementType
{
    DataTypes dataType = DataTypes::eFloat;
    uint32_t size = 4;
    nb::object customDtype;
};

ElementType
elementTypeOf(DataTypes dataType)
{
    return { dataType, Memory::dataTypeMemorySize(dataType), nb::object() };
}

/** The element type named by a dtype argument: what dataTypeFromPython
 * takes, plus structured and void numpy dtypes (eCustom). */
ElementType
elementTypeFromPython(nb::handle dtype, const char* what)
{
    DataTypes dataType;
    if (nb::try_cast(dtype, dataType, false)) {
        if (dataType == DataTypes::eCustom) {
            throw nb::type_error(
              (std::string(what) +
               ": kp.DataTypes.custom does not say how large an element is: pass a numpy "
               "structured dtype (numpy.dtype([('x', numpy.float32), ...], align=True)) or "
               "numpy.dtype('V<bytes>') as dtype")
                .c_str());
        }
        return elementTypeOf(dataType);
    }
    if (!nb::isinstance<nb::str>(dtype) || nb::cast<std::string>(dtype) != "bfloat16") {
        nb::object resolved = numpy().attr("dtype")(dtype);
        if (isCustomDtype(resolved)) {
            return { DataTypes::eCustom, customElementSize(resolved, what), resolved };
        }
    }
    return elementTypeOf(dataTypeFromPython(dtype, what));
}

/** The number of elements of a shape: an int or a sequence of ints (their
 * product, as numpy counts them). */
uint32_t
elementCountOf(nb::handle shape, const char* what)
{
    auto dimension = [what](nb::handle value) {
        if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
            throw nb::type_error(
              (std::string(what) + ": the shape is an int or a tuple of ints, not " +
               nb::cast<std::string>(nb::repr(value)))
                .c_str());
        }
        nb::object index = nb::steal(PyNumber_Index(value.ptr()));
        long long size = index.is_valid() ? PyLong_AsLongLong(index.ptr()) : -1;
        if (PyErr_Occurred()) {
            throw nb::python_error(); // not an int after all, or beyond 64 bits
        }
        if (size < 0) {
            throw nb::value_error(
              (std::string(what) + ": negative dimensions are not allowed").c_str());
        }
        return static_cast<unsigned long long>(size);
    };
    unsigned long long count = 1;
    if (PyIndex_Check(shape.ptr()) || PyBool_Check(shape.ptr())) {
        count = dimension(shape);
    } else if (nb::isinstance<nb::tuple>(shape) || nb::isinstance<nb::list>(shape)) {
        for (nb::handle value : shape) {
            unsigned long long size = dimension(value);
            count = size == 0 || count <= UINT32_MAX / size ? count * size : UINT64_MAX;
        }
    } else {
        dimension(shape); // throws the TypeError
    }
    if (count > UINT32_MAX) {
        throw nb::value_error((std::string(what) + ": a tensor holds at most 2^32-1 elements")
                                .c_str());
    }
    return static_cast<uint32_t>(count);
}

/** The Memory behind a kp.Memory Python object. */
Memory&
memoryOf(nb::handle self)
{
    return *nb::cast<Memory*>(self);
}

/** Shape and strides storage of one exported buffer. */
struct BufferShape
{
    Py_ssize_t shape[1];
    Py_ssize_t strides[1];
};

} // namespace

const char*
numpyDtypeName(Memory::DataTypes dataType)
{
    const DtypeInfo* info = dtypeInfo(dataType);
    return info != nullptr ? info->numpyName : nullptr;
}

nb::object
bfloat16Bits(nb::handle data, const char* what)
{
    nb::module_ np = numpy();
    nb::object given = np.attr("asarray")(data);
    std::string name = nb::cast<std::string>(nb::str(given.attr("dtype").attr("name")));
    if (name == "uint16" || name == "bfloat16") {
        // Raw bits already (or ml_dtypes' bfloat16, whose bytes they are).
        return contiguousArray(given.attr("view")("uint16"), what);
    }
    nb::object floats = contiguousArray(given, what, np.attr("float32"));
    nb::object bits = np.attr("empty")(floats.attr("shape"), nb::arg("dtype") = "uint16");
    BufferView in(floats, PyBUF_C_CONTIGUOUS, "bfloat16 conversion");
    BufferView out(bits, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, "bfloat16 conversion");
    const auto* source = static_cast<const float*>(in.data());
    auto* target = static_cast<uint16_t*>(out.writableData());
    size_t count = in.size() / sizeof(float);
    for (size_t i = 0; i < count; ++i) {
        target[i] = bfloat16_t::fromFloat(source[i]);
    }
    return bits;
}

namespace {

/** float32 values of bfloat16 bits (a uint16 array): exact, as bfloat16 is
 * the upper half of a float32. */
nb::object
bfloat16BitsToFloat32(nb::handle bits)
{
    nb::module_ np = numpy();
    nb::object wide = np.attr("asarray")(bits).attr("astype")("uint32");
    return np.attr("left_shift")(wide, 16).attr("view")("float32");
}

} // namespace

namespace {

/** A tensor of `count` elements of `element` from `bytes` (null: undefined
 * contents), with its custom dtype remembered. Releases the GIL while the
 * tensor is created; `bytes` must stay valid meanwhile. */
std::shared_ptr<Tensor>
makeTensor(Manager& manager,
           const void* bytes,
           size_t count,
           const ElementType& element,
           Memory::MemoryTypes memoryType,
           const char* what)
{
    if (count > UINT32_MAX) {
        throw nb::value_error((std::string(what) + ": " + std::to_string(count) +
                               " elements given; a tensor holds at most 2^32-1")
                                .c_str());
    }
    std::shared_ptr<Tensor> tensor;
    {
        ReleaseGil release;
        tensor = manager.tensor(const_cast<void*>(bytes),
                                static_cast<uint32_t>(count),
                                element.size,
                                element.dataType,
                                memoryType);
    }
    if (element.customDtype.is_valid()) {
        rememberCustomDtype(tensor, element.customDtype);
    }
    return tensor;
}

/** Manager.tensor_t(data, element_size=n): the bytes of `data` (a
 * bytes-like object or an array of any dtype) as elements of n bytes. */
std::shared_ptr<Tensor>
customTensorFromBytes(Manager& manager,
                      nb::handle data,
                      uint32_t elementSize,
                      Memory::MemoryTypes memoryType,
                      const char* what)
{
    if (elementSize == 0) {
        throw nb::value_error((std::string(what) + ": element_size must be at least 1").c_str());
    }
    nb::object source = nb::borrow(data);
    if (nb::isinstance(data, numpy().attr("ndarray"))) {
        source = contiguousArray(data, what); // its bytes in C order
    }
    BufferView view(source, PyBUF_C_CONTIGUOUS, what);
    if (view.size() % elementSize != 0) {
        throw nb::value_error((std::string(what) + ": " + std::to_string(view.size()) +
                               " bytes are not a whole number of elements of element_size " +
                               std::to_string(elementSize) + " bytes")
                                .c_str());
    }
    ElementType element{ DataTypes::eCustom, elementSize, nb::object() };
    return makeTensor(manager, view.data(), view.size() / elementSize, element, memoryType, what);
}

} // namespace

std::shared_ptr<Tensor>
tensorFromPython(Manager& manager,
                 nb::handle data,
                 Memory::MemoryTypes memoryType,
                 bool asFloat32,
                 nb::handle dtype,
                 std::optional<uint32_t> elementSize)
{
    const char* what = asFloat32 ? "Manager.tensor()" : "Manager.tensor_t()";
    bool dtypeGiven = !asFloat32 && dtype.is_valid() && !dtype.is_none();
    if (!asFloat32 && isScalar(data)) {
        // Upstream's tensor_t took arrays only; a number here is most often
        // meant as a size, which it is not.
        std::string text = nb::cast<std::string>(nb::repr(data));
        bool integer = (PyLong_Check(data.ptr()) && !PyBool_Check(data.ptr())) ||
                       nb::isinstance(data, numpy().attr("integer"));
        std::string hint = integer
                             ? "; for a tensor of " + text + " elements use mgr.zeros(" + text +
                                 ", dtype=...) (zero-filled) or mgr.empty(" + text +
                                 ", dtype=...) (contents undefined)"
                             : std::string();
        throw nb::type_error((std::string(what) + ": got the number " + text +
                              ", not an array: pass a list or array of values ([" + text +
                              "] for a one-element tensor holding it)" + hint)
                               .c_str());
    }
    if (elementSize) {
        DataTypes custom;
        if (dtypeGiven && !(nb::try_cast(dtype, custom, false) && custom == DataTypes::eCustom)) {
            throw nb::type_error((std::string(what) +
                                  ": element_size makes elements of raw bytes (kp.DataTypes."
                                  "custom); give it without dtype, or give a structured dtype "
                                  "instead of element_size")
                                   .c_str());
        }
        return customTensorFromBytes(manager, data, *elementSize, memoryType, what);
    }
    std::optional<ElementType> wanted;
    if (dtypeGiven) {
        wanted = elementTypeFromPython(dtype, what);
    }
    nb::object source = nb::borrow(data);
    bool bfloat16Source = false;
    if (std::optional<ImportedArray> imported = importDlpack(data, what)) {
        source = imported->array;
        bfloat16Source = imported->bfloat16Bits;
    }
    // bfloat16 data stays bfloat16 unless another dtype is asked for.
    bool asBfloat16 =
      wanted ? wanted->dataType == DataTypes::eBFloat16 : bfloat16Source && !asFloat32;
    if (bfloat16Source && !asBfloat16) {
        source = bfloat16BitsToFloat32(source);
    }
    nb::object array;
    if (asFloat32) {
        array = contiguousArray(source, what, numpy().attr("float32"));
    } else if (asBfloat16) {
        array = bfloat16Bits(source, what);
    } else if (wanted) {
        nb::object target = wanted->customDtype.is_valid()
                              ? wanted->customDtype
                              : nb::object(nb::str(numpyDtypeName(wanted->dataType)));
        array = contiguousArray(source, what, target);
    } else {
        array = contiguousArray(source, what);
    }
    // bfloat16 elements are held as their bits, in a uint16 array.
    ElementType element;
    nb::object arrayDtype = array.attr("dtype");
    if (asBfloat16) {
        element = elementTypeOf(DataTypes::eBFloat16);
    } else if (isCustomDtype(arrayDtype)) {
        element = { DataTypes::eCustom, customElementSize(arrayDtype, what), arrayDtype };
    } else {
        element = elementTypeOf(dataTypeOf(arrayDtype, what));
    }
    // The view keeps the array alive and unresizable while the GIL is
    // released: the tensor copies it once into its host view.
    BufferView view(array, PyBUF_C_CONTIGUOUS, what);
    return makeTensor(manager, view.data(), view.size() / element.size, element, memoryType, what);
}

std::shared_ptr<Tensor>
tensorOfShape(Manager& manager,
              nb::handle shape,
              nb::handle dtype,
              Memory::MemoryTypes memoryType,
              bool zeroFilled,
              const char* what)
{
    uint32_t count = elementCountOf(shape, what);
    ElementType element = elementTypeFromPython(dtype, what);
    if (!zeroFilled) {
        return makeTensor(manager, nullptr, count, element, memoryType, what);
    }
    size_t bytes = size_t(count) * element.size;
    // calloc: large zeroed blocks come from the system already zeroed.
    std::unique_ptr<void, void (*)(void*)> zeros(std::calloc(std::max<size_t>(bytes, 1), 1),
                                                 std::free);
    if (!zeros) {
        throw std::bad_alloc();
    }
    bool staged = memoryType == Memory::MemoryTypes::eDevice;
    // Host and deviceAndHost tensors' host view is their memory, and
    // storage tensors upload data given at creation: the zeros reach the
    // device. Device tensors copy it into the host view only, so it is
    // uploaded too.
    std::shared_ptr<Tensor> tensor =
      makeTensor(manager, staged ? nullptr : zeros.get(), count, element, memoryType, what);
    if (staged) {
        ReleaseGil release;
        tensor->upload(zeros.get(), bytes);
    }
    return tensor;
}

namespace {

std::string
shapeString(const std::vector<size_t>& shape)
{
    std::string text = "(";
    for (size_t i = 0; i < shape.size(); ++i) {
        text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
    }
    return text + (shape.size() == 1 ? ",)" : ")");
}

uint32_t
checkedSize(size_t value, const char* what, const char* name)
{
    if (value > UINT32_MAX) {
        throw nb::value_error(
          (std::string(what) + ": " + name + " " + std::to_string(value) + " is too large")
            .c_str());
    }
    return static_cast<uint32_t>(value);
}

} // namespace

std::shared_ptr<Image>
imageFromPython(Manager& manager,
                nb::handle data,
                std::optional<uint32_t> width,
                std::optional<uint32_t> height,
                std::optional<uint32_t> numChannels,
                Memory::MemoryTypes memoryType,
                std::optional<vk::ImageTiling> tiling,
                bool asFloat32)
{
    const char* what = asFloat32 ? "Manager.image()" : "Manager.image_t()";
    nb::object array = asFloat32 ? contiguousArray(data, what, numpy().attr("float32"))
                                 : contiguousArray(data, what);
    DataTypes dataType = dataTypeOf(array.attr("dtype"), what);
    std::vector<size_t> shape = nb::cast<std::vector<size_t>>(array.attr("shape"));
    uint32_t w = 0;
    uint32_t h = 0;
    uint32_t c = 0;
    if (shape.size() == 2 || shape.size() == 3) {
        // (height, width) or (height, width, channels), as image code has it.
        h = checkedSize(shape[0], what, "height");
        w = checkedSize(shape[1], what, "width");
        c = shape.size() == 3 ? checkedSize(shape[2], what, "num_channels") : 1;
        if ((width && *width != w) || (height && *height != h) ||
            (numChannels && *numChannels != c)) {
            auto given = [](const std::optional<uint32_t>& v) {
                return v ? std::to_string(*v) : std::string("-");
            };
            throw nb::value_error(
              (std::string(what) + ": the array's shape " + shapeString(shape) +
               " (height, width[, channels]) does not match width=" + given(width) +
               ", height=" + given(height) + ", num_channels=" + given(numChannels))
                .c_str());
        }
    } else if (shape.size() == 1) {
        if (!width || !height) {
            throw nb::value_error((std::string(what) +
                                   ": a flat array needs width and height (and num_channels, "
                                   "default 1); or pass a (height, width[, channels]) array")
                                    .c_str());
        }
        w = *width;
        h = *height;
        c = numChannels.value_or(1);
        uint64_t expected = uint64_t(w) * h * c;
        // More values than the image holds are accepted (the first ones are
        // used, with a warning), as upstream does.
        if (shape[0] < expected) {
            throw nb::value_error((std::string(what) + ": " + std::to_string(shape[0]) +
                                   " elements given, but width x height x num_channels = " +
                                   std::to_string(w) + " x " + std::to_string(h) + " x " +
                                   std::to_string(c) + " = " + std::to_string(expected))
                                    .c_str());
        }
    } else {
        throw nb::value_error((std::string(what) + ": expected a flat array or one of shape "
                                                   "(height, width[, channels]), got shape " +
                               shapeString(shape))
                                .c_str());
    }
    BufferView view(array, PyBUF_C_CONTIGUOUS, what);
    size_t count = view.size() / Memory::dataTypeMemorySize(dataType);
    // The view keeps the array alive while the GIL is released. The raw
    // factory takes an element count, not bytes.
    ReleaseGil release;
    void* pointer = const_cast<void*>(view.data());
    if (tiling) {
        return manager.image(pointer, count, w, h, c, dataType, *tiling, memoryType);
    }
    return manager.image(pointer, count, w, h, c, dataType, memoryType);
}

std::shared_ptr<Image>
emptyImage(Manager& manager,
           uint32_t width,
           uint32_t height,
           uint32_t numChannels,
           Memory::DataTypes dataType,
           Memory::MemoryTypes memoryType,
           std::optional<vk::ImageTiling> tiling)
{
    ReleaseGil release;
    if (tiling) {
        return manager.image(width, height, numChannels, dataType, *tiling, memoryType);
    }
    return manager.image(width, height, numChannels, dataType, memoryType);
}

Memory::DataTypes
dataTypeFromPython(nb::handle dtype, const char* what)
{
    DataTypes dataType;
    if (nb::try_cast(dtype, dataType, false)) {
        return dataType;
    }
    if (nb::isinstance<nb::str>(dtype) && nb::cast<std::string>(dtype) == "bfloat16") {
        return DataTypes::eBFloat16; // without ml_dtypes, numpy does not know the name
    }
    return dataTypeOf(numpy().attr("dtype")(dtype), what);
}

int
memoryGetBuffer(PyObject* self, Py_buffer* view, int flags)
{
    view->obj = nullptr;
    try {
        Memory& memory = memoryOf(self);
        memory.checkInit("Reading the host view (data(), buffer)");
        if (memory.memoryType() == Memory::MemoryTypes::eStorage) {
            throw Error("An eStorage (kp.MemoryTypes.storage) object has no host view: copy it "
                        "with OpCopy into a device or host tensor to read it");
        }
        const DtypeInfo* info = dtypeInfo(memory.dataType());
        // The exported view (memoryview, a numpy array whose base is the
        // object) may be read after destroy() or the Manager's destroy():
        // the memory behind it stays mapped, and unused by other objects,
        // until the object itself goes, which the view keeps alive.
        memory.keepHostViewUntilDeleted();
        void* data = memory.rawData();
        auto* shape = static_cast<BufferShape*>(std::malloc(sizeof(BufferShape)));
        if (shape == nullptr) {
            PyErr_NoMemory();
            return -1;
        }
        uint32_t itemSize = memory.dataTypeMemorySize();
        shape->shape[0] = static_cast<Py_ssize_t>(memory.size());
        shape->strides[0] = static_cast<Py_ssize_t>(itemSize);
        view->buf = data;
        view->obj = Py_NewRef(self);
        view->len = static_cast<Py_ssize_t>(memory.memorySize());
        view->readonly = 0;
        view->itemsize = static_cast<Py_ssize_t>(itemSize);
        view->format = nullptr;
        if (flags & PyBUF_FORMAT) {
            view->format = const_cast<char*>(info != nullptr ? info->bufferFormat : "B");
        }
        if (info == nullptr) {
            if (const CustomDtype* custom = rememberedCustomDtype(memory)) {
                // The structured elements the tensor was made with.
                if (flags & PyBUF_FORMAT) {
                    view->format = const_cast<char*>(custom->format.c_str());
                }
            } else { // raw bytes
                view->itemsize = 1;
                shape->shape[0] = view->len;
                shape->strides[0] = 1;
            }
        }
        view->ndim = 1;
        view->shape = (flags & PyBUF_ND) == PyBUF_ND ? shape->shape : nullptr;
        view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? shape->strides : nullptr;
        view->suboffsets = nullptr;
        view->internal = shape;
        return 0;
    } catch (...) {
        setPythonError(std::current_exception());
        return -1;
    }
}

void
memoryReleaseBuffer(PyObject*, Py_buffer* view)
{
    std::free(view->internal);
    view->internal = nullptr;
}

namespace {

/** The numpy dtype of an object's elements. eCustom: the structured (or
 * void) dtype the tensor was made with, else raw bytes (uint8). */
nb::object
dtypeOf(const Memory& memory)
{
    if (memory.dataType() == DataTypes::eBFloat16) {
        return bfloat16Dtype();
    }
    if (const CustomDtype* custom = rememberedCustomDtype(memory)) {
        return custom->dtype;
    }
    const char* name = numpyDtypeName(memory.dataType());
    return nb::str(name != nullptr ? name : "uint8");
}

/** `values` as a contiguous array of the object's element type (floats
 * rounded to bfloat16 bits for eBFloat16). eCustom objects also take raw
 * bytes: a bytes-like object or a uint8 array; those made without a dtype
 * the bytes of any array. */
nb::object
valuesFor(const Memory& memory, nb::handle values, const char* what)
{
    if (memory.dataType() == DataTypes::eBFloat16) {
        return bfloat16Bits(values, what);
    }
    if (memory.dataType() == DataTypes::eCustom) {
        nb::module_ np = numpy();
        bool raw = rememberedCustomDtype(memory) == nullptr;
        if (nb::isinstance(values, np.attr("ndarray"))) {
            if (raw || nb::cast<std::string>(values.attr("dtype").attr("name")) == "uint8") {
                return contiguousArray(values, what); // its bytes
            }
        } else if (PyObject_CheckBuffer(values.ptr()) != 0) {
            return np.attr("frombuffer")(values, nb::arg("dtype") = "uint8");
        }
    }
    return contiguousArray(values, what, dtypeOf(memory));
}

NdArray
memoryArray(nb::handle self, Memory& memory, nb::tuple shape)
{
    nb::module_ np = numpy();
    // ndarray(buffer=self) keeps `self` as the array's base: the array keeps
    // the tensor alive, as upstream's does.
    return { np.attr("ndarray")(shape, nb::arg("dtype") = dtypeOf(memory), nb::arg("buffer") = self) };
}

} // namespace

NdArray
memoryData(nb::handle self)
{
    Memory& memory = memoryOf(self);
    memory.checkInit(memory.type() == Memory::Type::eImage ? "Image.data()" : "Tensor.data()");
    return memoryArray(self, memory, nb::make_tuple(hostViewLength(memory)));
}

nb::object
memoryArrayInterface(nb::handle self, nb::handle dtype, nb::handle copy)
{
    // numpy asks the buffer protocol first and silently drops its error
    // (making an object array of a destroyed tensor); it then comes here,
    // where the error is raised.
    Memory& memory = memoryOf(self);
    memory.checkInit("numpy.asarray() of a destroyed object");
    if (memory.memoryType() == Memory::MemoryTypes::eStorage) {
        throw Error("An eStorage (kp.MemoryTypes.storage) object has no host view: copy it "
                    "with OpCopy into a device or host tensor to read it");
    }
    nb::object array = memoryArray(self, memory, nb::make_tuple(hostViewLength(memory))).object;
    if (!dtype.is_none()) {
        array = array.attr("astype")(dtype, nb::arg("copy") = copy.is_none() ? nb::bool_(false) : nb::borrow(copy));
    } else if (!copy.is_none() && nb::cast<bool>(copy)) {
        array = array.attr("copy")();
    }
    return array;
}

NdArray
imageDataHwc(nb::handle self)
{
    auto& image = nb::cast<Image&>(self);
    image.checkInit("Image.data_hwc()");
    return memoryArray(
      self, image, nb::make_tuple(image.getHeight(), image.getWidth(), image.getNumChannels()));
}

void
memorySetData(nb::handle self, nb::handle values)
{
    Memory& memory = memoryOf(self);
    memory.checkInit("Tensor.set_data()");
    nb::object array = valuesFor(memory, values, "Tensor.set_data()");
    BufferView view(array, PyBUF_C_CONTIGUOUS, "Tensor.set_data()");
    memory.setData(view.data(), view.size());
}

void
tensorUpload(nb::handle self, nb::handle values)
{
    auto& tensor = static_cast<kp::Tensor&>(memoryOf(self));
    tensor.checkInit("Tensor.upload()");
    nb::object array = valuesFor(tensor, values, "Tensor.upload()");
    BufferView view(array, PyBUF_C_CONTIGUOUS, "Tensor.upload()");
    // The array stays referenced (and its buffer held) while the GIL is
    // released for the copies and the transfer.
    nb::gil_scoped_release release;
    tensor.upload(view.data(), view.size());
}

nb::object
tensorDownload(nb::handle self)
{
    auto& tensor = static_cast<kp::Tensor&>(memoryOf(self));
    tensor.checkInit("Tensor.download()");
    nb::object array = numpy().attr("empty")(hostViewLength(tensor), dtypeOf(tensor));
    {
        BufferView view(array, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, "Tensor.download()");
        nb::gil_scoped_release release;
        tensor.download(view.writableData(), view.size());
    }
    return array;
}

ConstantBytes
constantsFromPython(nb::handle values, const char* what)
{
    if (values.is_none()) {
        return {};
    }
    if (nb::isinstance<nb::list>(values) || nb::isinstance<nb::tuple>(values)) {
        // Upstream treats lists as float32.
        std::vector<float> floats;
        if (!nb::try_cast(values, floats)) {
            throw nb::type_error((std::string(what) +
                                  ": a list of constants must hold numbers (they are passed "
                                  "as float32; use a numpy array for other types)")
                                   .c_str());
        }
        return ConstantBytes::from(floats);
    }
    nb::module_ np = numpy();
    if (!nb::isinstance(values, np.attr("ndarray")) && !nb::isinstance(values, np.attr("generic"))) {
        throw nb::type_error(
          (std::string(what) + ": expected a list of numbers or a numpy array, got " +
           nb::cast<std::string>(nb::str(values.type().attr("__name__"))))
            .c_str());
    }
    nb::object array = contiguousArray(values, what);
    nb::object dtype = array.attr("dtype");
    std::string kind = nb::cast<std::string>(dtype.attr("kind"));
    size_t itemSize = nb::cast<size_t>(dtype.attr("itemsize"));
    BufferView view(array, PyBUF_C_CONTIGUOUS, what);
    ConstantBytes constants;
    if (view.size() == 0) {
        return constants;
    }
    const auto* bytes = static_cast<const uint8_t*>(view.data());
    if (kind == "b") {
        // SPIR-V booleans are 32-bit words.
        constants.kind = ConstantBytes::Kind::eBool;
        constants.elementSize = 4;
        for (size_t i = 0; i < view.size(); ++i) {
            uint32_t word = bytes[i] != 0 ? 1u : 0u;
            const auto* raw = reinterpret_cast<const uint8_t*>(&word);
            constants.bytes.insert(constants.bytes.end(), raw, raw + 4);
        }
        return constants;
    }
    if (kind == "f") {
        constants.kind = ConstantBytes::Kind::eFloat;
    } else if (kind == "i") {
        constants.kind = ConstantBytes::Kind::eInt;
    } else if (kind == "u") {
        constants.kind = ConstantBytes::Kind::eUnsignedInt;
    } else if (kind == "V" && !dtype.attr("fields").is_none()) {
        constants.kind = ConstantBytes::Kind::eStruct;
    } else {
        throw nb::type_error((std::string(what) + ": numpy dtype " +
                              nb::cast<std::string>(nb::str(dtype)) +
                              " cannot be a constant; use bool, int8-64, uint8-64, "
                              "float16/32/64 or a structured dtype")
                               .c_str());
    }
    constants.elementSize = static_cast<uint32_t>(itemSize);
    constants.bytes.assign(bytes, bytes + view.size());
    return constants;
}

NdArray
constantsToNumpy(const ConstantBytes& constants, nb::handle dtype)
{
    nb::module_ np = numpy();
    nb::bytes raw(reinterpret_cast<const char*>(constants.bytes.data()), constants.bytes.size());
    nb::object type = np.attr("dtype")(dtype);
    size_t itemSize = nb::cast<size_t>(type.attr("itemsize"));
    if (itemSize == 0 || constants.bytes.size() % itemSize != 0) {
        throw nb::value_error(("The constants are " + std::to_string(constants.bytes.size()) +
                               " bytes, not a whole number of " +
                               nb::cast<std::string>(nb::str(type)) + " values")
                                .c_str());
    }
    return { np.attr("frombuffer")(raw, nb::arg("dtype") = type).attr("copy")() };
}

std::vector<uint32_t>
spirvFromPython(nb::handle spirv)
{
    if (spirv.is_none()) {
        return {};
    }
    if (PyUnicode_Check(spirv.ptr())) {
        throw nb::type_error("spirv must be SPIR-V bytes, not a str: compile GLSL source "
                             "with kp.compile_source(source) first");
    }
    BufferView view(spirv, PyBUF_C_CONTIGUOUS, "spirv");
    if (view.size() % 4 != 0) {
        throw nb::value_error(("spirv must be a whole number of 32-bit words, but " +
                               std::to_string(view.size()) + " bytes were given (" +
                               std::to_string(view.size() % 4) +
                               " bytes too many or missing): is it SPIR-V?")
                                .c_str());
    }
    std::vector<uint32_t> words(view.size() / 4);
    if (!words.empty()) {
        std::memcpy(words.data(), view.data(), view.size());
    }
    return words;
}

nb::bytes
spirvToBytes(const std::vector<uint32_t>& words)
{
    return nb::bytes(reinterpret_cast<const char*>(words.data()), words.size() * 4);
}

} // namespace python
} // namespace kp
