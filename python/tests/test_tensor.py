"""kp.Tensor and numpy: types, zero-copy views, memory types, lifetime."""

import gc
import re
import sys

import numpy as np
import pytest

import kp

from shaders import TWICE_PLUS_ONE, compile_cached, typed_double_shader

# numpy dtype -> (kp data type, sample values)
DTYPES = {
    "bool": (kp.DataTypes.bool, [True, False, True, True]),
    "int8": (kp.DataTypes.char, [-128, -1, 0, 127]),
    "uint8": (kp.DataTypes.uchar, [0, 1, 200, 255]),
    "int16": (kp.DataTypes.short, [-32768, -2, 3, 32767]),
    "uint16": (kp.DataTypes.ushort, [0, 1, 40000, 65535]),
    "int32": (kp.DataTypes.int, [-2**31, -5, 6, 2**31 - 1]),
    "uint32": (kp.DataTypes.uint, [0, 7, 3_000_000_000, 2**32 - 1]),
    "int64": (kp.DataTypes.long, [-2**63, -9, 2**40, 2**63 - 1]),
    "uint64": (kp.DataTypes.ulong, [0, 9, 2**40, 2**64 - 1]),
    "float16": (kp.DataTypes.half, [-2.5, 0.0, 1.0, 65504.0]),
    "float32": (kp.DataTypes.float, [-1.5, 0.0, 3.25, 1e30]),
    "float64": (kp.DataTypes.double, [-1e300, 0.0, 1.0 / 3.0, 2.5]),
}


def round_trip(mgr, tensor):
    """Host view -> device -> (device copy) -> another tensor's host view."""
    copy = mgr.tensor_t(np.zeros(tensor.size(), dtype=tensor.data().dtype))
    (mgr.sequence()
        .record(kp.OpSyncDevice([tensor]))
        .record(kp.OpCopy([tensor, copy]))
        .record(kp.OpSyncLocal([copy]))
        .eval())
    return copy


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_tensor_t_takes_the_dtype_and_round_trips(mgr, dtype):
    data_type, values = DTYPES[dtype]
    array = np.array(values, dtype=dtype)
    tensor = mgr.tensor_t(array)
    assert tensor.data_type() == data_type
    assert tensor.data().dtype == np.dtype(dtype)
    assert tensor.data_type_memory_size() == np.dtype(dtype).itemsize
    assert tensor.memory_size() == array.nbytes
    np.testing.assert_array_equal(tensor.data(), array)
    copy = round_trip(mgr, tensor)
    assert copy.data_type() == data_type
    np.testing.assert_array_equal(copy.data(), array)


# GLSL element type and extensions for a shader that doubles each element.
SHADER_TYPES = {
    "int8": ("int8_t", "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require"),
    "uint8": ("uint8_t", "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require"),
    "int16": ("int16_t", "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require"),
    "uint16": ("uint16_t", "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require"),
    "int32": ("int", ""),
    "uint32": ("uint", ""),
    "int64": ("int64_t", "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require"),
    "uint64": ("uint64_t", "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require"),
    "float16": ("float16_t",
                "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require"),
    "float32": ("float", ""),
    "float64": ("double", ""),
}


@pytest.mark.parametrize("dtype", list(SHADER_TYPES))
def test_every_dtype_through_a_shader(mgr, dtype):
    glsl_type, extensions = SHADER_TYPES[dtype]
    array = np.array([1, 2, 3, 50], dtype=dtype)
    tensor = mgr.tensor_t(array)
    spirv = compile_cached(typed_double_shader(glsl_type, extensions))
    try:
        algorithm = mgr.algorithm([tensor], spirv)
    except kp.Error as error:
        if "feature" in str(error) or "not support" in str(error):
            pytest.skip(f"device: {error}")
        raise
    (mgr.sequence()
        .record(kp.OpSyncDevice([tensor]))
        .record(kp.OpAlgoDispatch(algorithm))
        .record(kp.OpSyncLocal([tensor]))
        .eval())
    np.testing.assert_array_equal(tensor.data(), array * 2)


def test_bool_tensor_read_by_a_shader_as_bytes(mgr):
    flags = mgr.tensor_t(np.array([True, False, False, True]))
    spirv = compile_cached(typed_double_shader(
        "uint8_t", "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require"))
    algorithm = mgr.algorithm([flags], spirv)
    (mgr.sequence()
        .record(kp.OpSyncDevice([flags]))
        .record(kp.OpAlgoDispatch(algorithm))
        .record(kp.OpSyncLocal([flags]))
        .eval())
    # True (1) doubled is 2, which numpy's bool view shows as True.
    assert flags.data().view(np.uint8).tolist() == [2, 0, 0, 2]


def test_tensor_makes_float32_from_lists_and_arrays(mgr):
    from_list = mgr.tensor([1, 2, 3])
    assert from_list.data_type() == kp.DataTypes.float
    assert from_list.data().dtype == np.float32
    assert from_list.data().tolist() == [1.0, 2.0, 3.0]
    from_ints = mgr.tensor(np.array([4, 5], dtype=np.int64))
    assert from_ints.data().dtype == np.float32
    from_2d = mgr.tensor(np.arange(6).reshape(2, 3))
    assert from_2d.size() == 6 and len(from_2d) == 6
    assert from_2d.data().tolist() == [0, 1, 2, 3, 4, 5]


def test_tensor_t_with_a_list_uses_numpys_dtype(mgr):
    assert mgr.tensor_t([1.5, 2.5]).data_type() == kp.DataTypes.double
    assert mgr.tensor_t([True, False]).data_type() == kp.DataTypes.bool


def test_non_contiguous_and_big_endian_inputs(mgr):
    strided = np.arange(10, dtype=np.int32)[::2]
    assert mgr.tensor_t(strided).data().tolist() == [0, 2, 4, 6, 8]
    big_endian = np.array([1, 256, 65536], dtype=">i4")
    tensor = mgr.tensor_t(big_endian)
    assert tensor.data_type() == kp.DataTypes.int
    assert tensor.data().tolist() == [1, 256, 65536]


def test_tensor_t_copies_the_array_once(mgr):
    array = np.array([1, 2, 3], dtype=np.int32)
    tensor = mgr.tensor_t(array)
    array[0] = 100
    assert tensor.data()[0] == 1
    assert not np.shares_memory(tensor.data(), array)


@pytest.mark.parametrize("bad", [
    np.array([1 + 2j]),
    np.array(["a", "b"]),
    np.array([object()], dtype=object),
    np.array(["2020-01-01"], dtype="datetime64[D]"),
])
def test_unsupported_dtype_raises_type_error(mgr, bad):
    with pytest.raises(TypeError, match=re.escape(f"dtype {bad.dtype.name} is not supported")):
        mgr.tensor_t(bad)


def test_empty_tensor_raises(mgr):
    with pytest.raises(kp.Error, match="zero elements"):
        mgr.tensor([])


def test_data_is_a_zero_copy_view(mgr):
    tensor = mgr.tensor([1, 2, 3])
    view = tensor.data()
    view[1] = 20
    assert tensor.data()[1] == 20
    assert np.shares_memory(view, tensor.data())
    assert view.flags.writeable
    assert view.base is tensor


def test_data_keeps_the_tensor_alive(mgr):
    view = mgr.tensor([7, 8, 9]).data()
    gc.collect()
    assert view.base.is_init()
    assert view.tolist() == [7, 8, 9]


def test_numpy_ownership_as_upstream():
    # Upstream's test_tensor_numpy_ownership.
    manager = kp.Manager()
    tensor = manager.tensor(np.array([1, 2, 3]))
    view = tensor.data()
    assert view.base.is_init()
    del tensor
    assert view.base.is_init()
    assert np.all(view == [1, 2, 3])
    manager.destroy()
    assert not view.base.is_init()
    # The array still shows the last host data (its memory stays mapped while
    # the array lives); the tensor refuses new views.
    assert view.tolist() == [1, 2, 3]
    with pytest.raises(kp.DestroyedError):
        view.base.data()


def test_buffer_protocol(mgr):
    tensor = mgr.tensor_t(np.array([1, 2, 3], dtype=np.int16))
    view = memoryview(tensor)
    assert view.format == "h" and view.itemsize == 2 and view.shape == (3,)
    assert view.tolist() == [1, 2, 3]
    view.release()
    array = np.asarray(tensor)
    assert array.dtype == np.int16
    assert np.shares_memory(array, tensor.data())
    half = mgr.tensor_t(np.array([1.5], dtype=np.float16))
    assert np.asarray(half).dtype == np.float16


def test_set_data(mgr):
    tensor = mgr.tensor_t(np.zeros(3, dtype=np.uint16))
    tensor.set_data([1, 2, 3])
    assert tensor.data().tolist() == [1, 2, 3]
    with pytest.raises(kp.Error, match="bytes"):
        tensor.set_data([1, 2])


def test_upload_and_download(mgr):
    # upload(): set_data and OpSyncDevice in one call; download(): OpSyncLocal
    # and a copy. The device data is checked through a shader.
    spirv = compile_cached(TWICE_PLUS_ONE)
    for memory_type in (kp.MemoryTypes.device, kp.MemoryTypes.host,
                        kp.MemoryTypes.deviceAndHost):
        tensor = mgr.tensor_t(np.zeros(5, dtype=np.float32), memory_type)
        tensor.upload([1, 2, 3, 4, 5])
        assert tensor.data().tolist() == [1, 2, 3, 4, 5]
        algorithm = mgr.algorithm([tensor], spirv)
        mgr.sequence().eval(kp.OpAlgoDispatch(algorithm))
        back = tensor.download()
        assert back.dtype == np.float32
        assert back.tolist() == [3, 5, 7, 9, 11], memory_type
        assert not np.shares_memory(back, tensor.data())
    big = mgr.tensor_t(np.zeros(1 << 20, dtype=np.uint32))
    values = np.arange(1 << 20, dtype=np.uint32)
    big.upload(values)
    assert np.array_equal(big.download(), values)
    with pytest.raises(kp.Error, match="bytes"):
        big.upload(values[:-1])
    storage = mgr.tensor_t(np.zeros(3, dtype=np.float32), kp.MemoryTypes.storage)
    with pytest.raises(kp.Error, match="host view"):
        storage.upload([1, 2, 3])


def test_memory_types(mgr):
    spirv = compile_cached(TWICE_PLUS_ONE)
    for memory_type in (kp.MemoryTypes.device, kp.MemoryTypes.host,
                        kp.MemoryTypes.deviceAndHost):
        tensor = mgr.tensor([1, 2, 3], memory_type)
        assert tensor.memory_type() == memory_type
        algorithm = mgr.algorithm([tensor], spirv)
        (mgr.sequence()
            .record(kp.OpSyncDevice([tensor]))
            .record(kp.OpAlgoDispatch(algorithm))
            .record(kp.OpSyncLocal([tensor]))
            .eval())
        assert tensor.data().tolist() == [3, 5, 7], memory_type


def test_host_tensor_needs_no_sync(mgr):
    tensor = mgr.tensor([1, 2, 3], memory_type=kp.MemoryTypes.host)
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    mgr.sequence().eval(kp.OpAlgoDispatch(algorithm))
    assert tensor.data().tolist() == [3, 5, 7]


def test_storage_tensor_has_no_host_view(mgr):
    storage = mgr.tensor([1, 2, 3], kp.MemoryTypes.storage)
    with pytest.raises(kp.Error, match="no host view"):
        storage.data()
    with pytest.raises(kp.Error, match="no host view"):
        memoryview(storage)
    # Its initial data is there, and it works as an intermediate.
    out = mgr.tensor([0, 0, 0])
    mgr.sequence().record(kp.OpCopy([storage, out])).record(kp.OpSyncLocal([out])).eval()
    assert out.data().tolist() == [1, 2, 3]


def test_tensor_repr(mgr):
    tensor = mgr.tensor_t(np.zeros(5, dtype=np.uint8))
    assert repr(tensor) == "<kp.Tensor uint8[5] eDevice>"
    tensor.destroy()
    assert "destroyed" in repr(tensor)


def test_destroyed_tensor_raises(mgr):
    tensor = mgr.tensor([1, 2, 3])
    tensor.destroy()
    tensor.destroy()
    assert not tensor.is_init()
    with pytest.raises(kp.DestroyedError, match="destroyed"):
        tensor.data()
    with pytest.raises(kp.DestroyedError):
        memoryview(tensor)
    with pytest.raises(kp.DestroyedError):
        tensor.set_data([1, 2, 3])
    with pytest.raises(kp.Error):
        kp.OpSyncDevice([tensor])


def test_tensor_after_manager_destroy_raises():
    manager = kp.Manager()
    tensor = manager.tensor([1, 2, 3])
    sequence = manager.sequence()
    manager.destroy()
    with pytest.raises(kp.DestroyedError):
        tensor.data()
    with pytest.raises(kp.Error):
        sequence.eval(kp.OpSyncDevice([tensor]))
    assert tensor.size() == 3  # plain attributes stay readable


def test_large_tensor(mgr):
    values = np.arange(1 << 20, dtype=np.float32)
    tensor = mgr.tensor(values)
    copy = round_trip(mgr, tensor)
    np.testing.assert_array_equal(copy.data(), values)


def test_refcounts_do_not_leak(mgr):
    tensor = mgr.tensor([1, 2, 3])
    before = sys.getrefcount(tensor)
    for _ in range(10):
        tensor.data()
        memoryview(tensor).release()
    gc.collect()
    assert sys.getrefcount(tensor) == before


# --- Tensors of a size without data: zeros() and empty() ---------------------

ALL_MEMORY_TYPES = (kp.MemoryTypes.device, kp.MemoryTypes.host, kp.MemoryTypes.deviceAndHost,
                    kp.MemoryTypes.storage)


def dirty_the_allocator(mgr, nbytes):
    """Leaves freed device memory holding 0xAB bytes, so that a tensor made
    next may reuse memory that is not zero."""
    for memory_type in ALL_MEMORY_TYPES:
        junk = mgr.tensor_t(np.full(nbytes, 0xAB, dtype=np.uint8), memory_type)
        if memory_type == kp.MemoryTypes.device:
            junk.upload(np.full(nbytes, 0xAB, dtype=np.uint8))
        junk.destroy()
    mgr.sequence().eval(kp.OpSyncDevice([mgr.tensor([0])]))  # lets the frees complete


def device_contents(mgr, tensor):
    """The tensor's device memory as the host sees it after OpSyncLocal, with
    the host view first overwritten (storage tensors: copied into a device
    tensor), so that only what the device holds can come back."""
    if tensor.memory_type() == kp.MemoryTypes.storage:
        target = mgr.empty(tensor.size(), tensor.data_type())
        target.data().view(np.uint8)[:] = 0xCD
        mgr.sequence().record(kp.OpCopy([tensor, target])).record(
            kp.OpSyncLocal([target])).eval()
        return target.data()
    if not tensor.is_host_view_direct():
        tensor.data().view(np.uint8)[:] = 0xCD
    mgr.sequence().eval(kp.OpSyncLocal([tensor]))
    return tensor.data()


@pytest.mark.parametrize("memory_type", ALL_MEMORY_TYPES)
@pytest.mark.parametrize("dtype", ["float32", "uint8", "int64", "float16", "bool"])
def test_zeros_are_zero_on_the_host_and_on_the_device(mgr, dtype, memory_type):
    dirty_the_allocator(mgr, 4096)
    tensor = mgr.zeros(512, dtype=dtype, memory_type=memory_type)
    assert tensor.size() == 512
    assert tensor.data_type() == DTYPES[np.dtype(dtype).name][0]
    assert tensor.memory_type() == memory_type
    if memory_type != kp.MemoryTypes.storage:
        np.testing.assert_array_equal(tensor.data(), np.zeros(512, dtype=dtype))
    np.testing.assert_array_equal(device_contents(mgr, tensor), np.zeros(512, dtype=dtype))


def test_zeros_need_no_sync_before_a_shader_reads_them(mgr):
    dirty_the_allocator(mgr, 64)
    tensor = mgr.zeros(16)
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    mgr.sequence().record(kp.OpAlgoDispatch(algorithm)).record(kp.OpSyncLocal([tensor])).eval()
    np.testing.assert_array_equal(tensor.data(), np.ones(16, dtype=np.float32))


@pytest.mark.parametrize("shape, count", [(4, 4), ((2, 3), 6), ([5], 5), ((), 1),
                                          (np.int64(3), 3), ((2, np.uint8(2)), 4)])
def test_zeros_and_empty_take_numpy_shapes_flattened(mgr, shape, count):
    for make in (mgr.zeros, mgr.empty):
        tensor = make(shape)
        assert tensor.size() == count and len(tensor) == count
        assert tensor.data_type() == kp.DataTypes.float  # float32, as mgr.tensor
        assert tensor.data().shape == (count,)


@pytest.mark.parametrize("dtype, data_type", [
    (np.int32, kp.DataTypes.int),
    ("uint16", kp.DataTypes.ushort),
    (np.dtype(np.float64), kp.DataTypes.double),
    (kp.DataTypes.uint, kp.DataTypes.uint),
    (kp.DataTypes.half, kp.DataTypes.half),
    ("bfloat16", kp.DataTypes.bfloat16),
    (kp.DataTypes.bfloat16, kp.DataTypes.bfloat16),
])
def test_zeros_and_empty_take_every_dtype_of_tensor_t(mgr, dtype, data_type):
    for make in (mgr.zeros, mgr.empty):
        tensor = make(3, dtype=dtype)
        assert tensor.data_type() == data_type
        assert tensor.memory_size() == 3 * tensor.data_type_memory_size()
    assert not mgr.zeros(3, dtype=dtype).data().view(np.uint8).any()


def test_zeros_of_ml_dtypes_bfloat16(mgr):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    tensor = mgr.zeros(4, dtype=ml_dtypes.bfloat16)
    assert tensor.data_type() == kp.DataTypes.bfloat16
    assert tensor.data().dtype == ml_dtypes.bfloat16
    assert tensor.data().astype(np.float32).tolist() == [0.0] * 4


def test_empty_is_a_usable_output(mgr):
    source = mgr.tensor_t(np.arange(8, dtype=np.int32))
    target = mgr.empty(8, dtype=np.int32)
    assert target.data_type() == kp.DataTypes.int
    mgr.sequence().record(kp.OpSyncDevice([source])).record(
        kp.OpCopy([source, target])).record(kp.OpSyncLocal([target])).eval()
    assert target.data().tolist() == list(range(8))


@pytest.mark.parametrize("shape, error", [
    (-1, ValueError),
    ((2, -3), ValueError),
    (2.0, TypeError),
    ((2, 2.5), TypeError),
    ("4", TypeError),
    (None, TypeError),
    (True, TypeError),
    (2**32, ValueError),
    ((2**16, 2**16), ValueError),
])
def test_zeros_refuses_bad_shapes(mgr, shape, error):
    with pytest.raises(error, match="Manager.zeros"):
        mgr.zeros(shape)


def test_zeros_refuses_zero_elements_and_bad_dtypes(mgr):
    with pytest.raises(kp.Error, match="zero elements"):
        mgr.zeros(0)
    with pytest.raises(kp.Error, match="zero elements"):
        mgr.empty((3, 0))
    with pytest.raises(TypeError, match="not supported"):
        mgr.zeros(3, dtype=np.complex64)
    with pytest.raises(TypeError, match="structured dtype"):
        mgr.zeros(3, dtype=kp.DataTypes.custom)


@pytest.mark.parametrize("number", [4, 2.5, True, np.int32(4), np.float32(1.5)])
def test_tensor_t_refuses_a_number_for_an_array(mgr, number):
    # Upstream's tensor_t took numpy arrays only; a number is most often
    # meant as a size, which it is not.
    with pytest.raises(TypeError, match="not an array"):
        mgr.tensor_t(number)


def test_the_number_error_names_the_calls_to_use(mgr):
    with pytest.raises(TypeError, match=re.escape("[4] for a one-element tensor")) as error:
        mgr.tensor_t(4)
    assert "mgr.zeros(4" in str(error.value) and "mgr.empty(4" in str(error.value)


def test_tensor_takes_a_number_as_one_value_as_upstream(mgr):
    # Upstream's tensor() converted any input to a float32 array: a number
    # is a one-element tensor (documented: use zeros(n) for n elements).
    tensor = mgr.tensor(4)
    assert tensor.size() == 1
    assert tensor.data().tolist() == [4.0]
    assert mgr.tensor_t(np.array(4, dtype=np.int32)).data().tolist() == [4]  # a 0-d array
