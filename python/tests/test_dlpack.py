"""DLPack: kp tensors export their host view (np.from_dlpack), and the tensor
factories import any DLPack exporter, checked against numpy."""

import ctypes
import gc

import numpy as np
import pytest

import kp

from shaders import TWICE_PLUS_ONE, compile_cached
from test_tensor import DTYPES

KDL_CPU = 1
KDL_CUDA = 2


class DlpackOnly:
    """An exporter that speaks only DLPack (no buffer protocol, no
    __array__), like a torch or JAX array: what it gives is numpy's export of
    `array`, strides included."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


# --- A hand-made DLPack capsule (ctypes), for what numpy cannot export ---------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),  # none: the test owns the memory
    ]


class HandMadeCapsule:
    """A 1-D DLPack tensor over `array`'s bytes with any device type and
    element type; keeps its structures alive as long as it lives."""

    def __init__(self, array, device_type, code, bits):
        self.array = np.ascontiguousarray(array)
        self.shape = (ctypes.c_int64 * 1)(self.array.nbytes * 8 // bits)
        self.managed = _DLManagedTensor()
        tensor = self.managed.dl_tensor
        tensor.data = self.array.ctypes.data
        tensor.device = _DLDevice(device_type, 0)
        tensor.ndim = 1
        tensor.dtype = _DLDataType(code, bits, 1)
        tensor.shape = self.shape
        capsule_new = ctypes.pythonapi.PyCapsule_New
        capsule_new.restype = ctypes.py_object
        capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.capsule = capsule_new(ctypes.addressof(self.managed), b"dltensor", None)


# --- Export ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_from_dlpack_is_a_zero_copy_view_of_the_host_view(mgr, dtype):
    _, values = DTYPES[dtype]
    tensor = mgr.tensor_t(np.array(values, dtype=dtype))
    assert tensor.__dlpack_device__() == (KDL_CPU, 0)
    view = np.from_dlpack(tensor)
    assert view.dtype == np.dtype(dtype)
    assert view.shape == (len(values),)
    np.testing.assert_array_equal(view, np.array(values, dtype=dtype))
    assert np.shares_memory(view, tensor.data())
    # Writes through the view are the tensor's host data, and reach the
    # device: device copy into another tensor, read back through DLPack.
    view[:] = view[::-1]
    copy = mgr.tensor_t(np.zeros(len(values), dtype=dtype))
    (mgr.sequence()
        .record(kp.OpSyncDevice([tensor]))
        .record(kp.OpCopy([tensor, copy]))
        .record(kp.OpSyncLocal([copy]))
        .eval())
    np.testing.assert_array_equal(np.from_dlpack(copy), np.array(values, dtype=dtype)[::-1])


@pytest.mark.parametrize("memory_type", [kp.MemoryTypes.device, kp.MemoryTypes.host,
                                         kp.MemoryTypes.deviceAndHost])
def test_shader_results_through_dlpack(mgr, memory_type):
    values = np.arange(64, dtype=np.float32) - 20
    tensor = mgr.tensor(values, memory_type)
    algo = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    sequence = mgr.sequence()
    if memory_type == kp.MemoryTypes.device:
        sequence.record(kp.OpSyncDevice([tensor]))
    sequence.record(kp.OpAlgoDispatch(algo))
    if memory_type == kp.MemoryTypes.device:
        sequence.record(kp.OpSyncLocal([tensor]))
    sequence.eval()
    np.testing.assert_array_equal(np.from_dlpack(tensor), values * 2 + 1)


def test_the_view_keeps_the_tensor_alive(mgr):
    tensor = mgr.tensor([1, 2, 3])
    view = np.from_dlpack(tensor)
    del tensor
    gc.collect()
    np.testing.assert_array_equal(view, [1, 2, 3])
    # A capsule not yet consumed keeps it alive too.
    tensor = mgr.tensor([4, 5, 6])
    capsule = tensor.__dlpack__()
    del tensor
    gc.collect()
    np.testing.assert_array_equal(mgr.tensor(capsule).data(), [4, 5, 6])


def test_the_view_stays_readable_after_destroy():
    manager = kp.Manager()
    tensor = manager.tensor([7, 8, 9])
    view = np.from_dlpack(tensor)
    tensor.destroy()
    np.testing.assert_array_equal(view, [7, 8, 9])
    other = manager.tensor([1, 1, 1])
    other_view = np.from_dlpack(other)
    manager.destroy()
    np.testing.assert_array_equal(other_view, [1, 1, 1])


def test_export_of_half_bfloat16_and_custom_types(mgr):
    half = mgr.tensor_t(np.array([0.5, -2.0, 65504.0], dtype=np.float16))
    assert np.from_dlpack(half).dtype == np.float16
    # numpy has no bfloat16: the capsule says bfloat16 (our import reads it
    # back as such), and numpy refuses it rather than misreading the bits.
    bf16 = mgr.tensor_t([1.0, -2.5, 3.140625], dtype=kp.DataTypes.bfloat16)
    again = mgr.tensor_t(bf16)
    assert again.data_type() == kp.DataTypes.bfloat16
    np.testing.assert_array_equal(again.data().view(np.uint16), bf16.data().view(np.uint16))
    np.testing.assert_array_equal(mgr.tensor(bf16).data(), [1.0, -2.5, 3.140625])
    with pytest.raises((BufferError, TypeError, RuntimeError, ValueError)):
        np.from_dlpack(bf16)


def test_image_exports_its_host_view(mgr):
    pixels = np.arange(24, dtype=np.float32).reshape(3, 4, 2)
    image = mgr.image_t(pixels)
    view = np.from_dlpack(image)
    np.testing.assert_array_equal(view, pixels.ravel())
    assert np.shares_memory(view, image.data())


def test_export_errors(mgr):
    storage = mgr.tensor([1, 2, 3], kp.MemoryTypes.storage)
    with pytest.raises(kp.Error, match="no host view"):
        np.from_dlpack(storage)
    tensor = mgr.tensor([1, 2, 3])
    with pytest.raises(BufferError):
        tensor.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        tensor.__dlpack__(dl_device=(KDL_CUDA, 0))
    with pytest.raises(TypeError):
        tensor.__dlpack__(None)  # keyword arguments only
    tensor.destroy()
    with pytest.raises(kp.DestroyedError):
        np.from_dlpack(tensor)


def test_versioned_capsule_for_consumers_that_ask(mgr):
    tensor = mgr.tensor([1, 2])
    assert "dltensor" in repr(tensor.__dlpack__())
    assert "dltensor_versioned" in repr(tensor.__dlpack__(max_version=(1, 0)))


# --- Import ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_tensor_t_imports_any_dlpack_exporter(mgr, dtype):
    data_type, values = DTYPES[dtype]
    source = np.array(values, dtype=dtype)
    exporter = DlpackOnly(source)
    # numpy itself cannot read this object: the DLPack path is what works.
    assert np.asarray(exporter).dtype == object
    tensor = mgr.tensor_t(exporter)
    assert tensor.data_type() == data_type
    np.testing.assert_array_equal(tensor.data(), source)
    # A copy: later changes of the source do not reach the tensor.
    assert not np.shares_memory(tensor.data(), source)
    as_float = mgr.tensor(exporter)
    assert as_float.data_type() == kp.DataTypes.float
    np.testing.assert_array_equal(as_float.data(), source.astype(np.float32))
    converted = mgr.tensor_t(exporter, dtype=np.float64)
    np.testing.assert_array_equal(converted.data(), source.astype(np.float64))


@pytest.mark.parametrize("view", [
    lambda a: a[:, ::2],
    lambda a: a.T,
    lambda a: a[::-1, 1:],
    lambda a: np.broadcast_to(a[:1], (3, 5)),
], ids=["step", "transposed", "reversed", "broadcast"])
def test_strided_exports_are_copied_in_c_order(mgr, view):
    source = view(np.arange(15, dtype=np.int32).reshape(3, 5))
    tensor = mgr.tensor_t(DlpackOnly(source))
    assert tensor.data_type() == kp.DataTypes.int
    np.testing.assert_array_equal(tensor.data(), source.ravel())


def test_bfloat16_import_keeps_the_bits_or_converts_exactly(mgr):
    bits = np.array([0x3F80, 0xC020, 0x4049, 0x7F80], dtype=np.uint16)  # 1, -2.5, 3.140625, inf
    exact = np.array([1.0, -2.5, 3.140625, np.inf], dtype=np.float32)
    capsule = HandMadeCapsule(bits, KDL_CPU, code=4, bits=16)
    tensor = mgr.tensor_t(capsule.capsule)
    assert tensor.data_type() == kp.DataTypes.bfloat16
    np.testing.assert_array_equal(tensor.data().view(np.uint16), bits)
    # (Each capsule is consumed once; its structures live as long as it.)
    second = HandMadeCapsule(bits, KDL_CPU, code=4, bits=16)
    as_float = mgr.tensor(second.capsule)
    np.testing.assert_array_equal(as_float.data(), exact)
    third = HandMadeCapsule(bits, KDL_CPU, code=4, bits=16)
    as_half = mgr.tensor_t(third.capsule, dtype=np.float16)
    np.testing.assert_array_equal(as_half.data(), exact.astype(np.float16))


def test_import_errors_say_what_is_wrong(mgr):
    complex_source = DlpackOnly(np.array([1 + 2j, 3], dtype=np.complex64))
    with pytest.raises(TypeError, match="DLPack dtype complex64 is not supported"):
        mgr.tensor_t(complex_source)
    with pytest.raises(TypeError, match="DLPack dtype complex64 is not supported"):
        mgr.tensor(complex_source)
    float8 = HandMadeCapsule(np.zeros(4, dtype=np.uint8), KDL_CPU, code=10, bits=8)
    with pytest.raises(TypeError, match=r"DLPack dtype \(type code 10, 8 bits\) is not supported"):
        mgr.tensor_t(float8.capsule)

    class OnAnotherDevice(DlpackOnly):
        def __dlpack_device__(self):
            return (KDL_CUDA, 0)

        def __dlpack__(self, **kwargs):
            raise AssertionError("no export may be asked for a device array")

    with pytest.raises(TypeError, match="in the memory of another device .DLPack device type 2"):
        mgr.tensor_t(OnAnotherDevice(np.zeros(3, dtype=np.float32)))
    # A bare capsule has no __dlpack_device__: the imported tensor's device
    # is checked.
    cuda = HandMadeCapsule(np.zeros(3, dtype=np.float32), KDL_CUDA, code=2, bits=32)
    with pytest.raises(TypeError, match="in the memory of another device"):
        mgr.tensor(cuda.capsule)
    used = np.arange(3, dtype=np.float32).__dlpack__()
    mgr.tensor(used)
    with pytest.raises(TypeError, match="could not be read"):
        mgr.tensor(used)


def test_torch_round_trip(mgr):
    torch = pytest.importorskip("torch")
    tensor = mgr.tensor([1, 2, 3])
    view = torch.from_dlpack(tensor)
    assert view.dtype == torch.float32
    view += 1
    np.testing.assert_array_equal(tensor.data(), [2, 3, 4])
    half = mgr.tensor_t(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
    assert half.data_type() == kp.DataTypes.bfloat16
    np.testing.assert_array_equal(mgr.tensor(half).data(), [1.5, -2.0])
