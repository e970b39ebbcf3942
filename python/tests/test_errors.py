"""Bad input raises a Python exception with a clear message, never crashes."""

import numpy as np
import pytest

import kp

from shaders import MULTIPLY, PUSH_AND_SPEC, TWICE_PLUS_ONE, compile_cached


@pytest.mark.parametrize("length", [1, 2, 3, 5, 21])
def test_spirv_not_a_whole_number_of_words_raises(mgr, length):
    tensor = mgr.tensor([1])
    spirv = compile_cached(TWICE_PLUS_ONE)
    with pytest.raises(ValueError, match=f"{length} bytes"):
        mgr.algorithm([tensor], spirv[:length])
    with pytest.raises(ValueError, match="32-bit words"):
        mgr.algorithm([tensor], spirv + b"\x00" * (length % 4 or 1))


def test_garbage_spirv_raises(mgr):
    tensor = mgr.tensor([1])
    with pytest.raises(kp.Error, match="SPIR-V"):
        mgr.algorithm([tensor], b"\x00" * 20)
    with pytest.raises(kp.Error, match="SPIR-V"):
        mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE)[:40])


def test_glsl_source_instead_of_spirv_raises(mgr):
    with pytest.raises(TypeError, match="compile_source"):
        mgr.algorithm([mgr.tensor([1])], TWICE_PLUS_ONE)


def test_spirv_of_the_wrong_type_raises(mgr):
    with pytest.raises(TypeError, match="spirv"):
        mgr.algorithm([mgr.tensor([1])], 1234)


def test_spirv_from_other_bytes_like_objects(mgr):
    tensor = mgr.tensor([1])
    spirv = compile_cached(TWICE_PLUS_ONE)
    for value in (bytearray(spirv), memoryview(spirv), np.frombuffer(spirv, dtype=np.uint32)):
        assert mgr.algorithm([tensor], value).is_init()


def test_compile_error_has_line_numbers():
    source = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {\n  undefined_name = 1;\n}\n"
    with pytest.raises(kp.Error, match="4") as info:
        kp.compile_source(source)
    assert "undefined_name" in str(info.value)


def test_bindings_must_match_the_shader(mgr):
    spirv = compile_cached(MULTIPLY)  # three float buffers
    with pytest.raises(kp.Error, match="binding"):
        mgr.algorithm([mgr.tensor([1]), mgr.tensor([1])], spirv)


def test_workgroup_beyond_the_device_limit_raises(mgr, device_properties):
    too_many = device_properties["max_work_group_count"][0] + 1
    with pytest.raises(kp.Error, match="[Ww]orkgroup|group count"):
        mgr.algorithm([mgr.tensor([1])], compile_cached(TWICE_PLUS_ONE), (too_many, 1, 1))


def test_bad_workgroup_type_raises(mgr):
    with pytest.raises(TypeError):
        mgr.algorithm([mgr.tensor([1])], compile_cached(TWICE_PLUS_ONE), (1, 2))
    with pytest.raises(TypeError):
        mgr.algorithm([mgr.tensor([1])], compile_cached(TWICE_PLUS_ONE), (-1, 1, 1))


def test_wrong_argument_types_raise_type_error(mgr):
    with pytest.raises(TypeError):
        mgr.algorithm([1, 2, 3], compile_cached(TWICE_PLUS_ONE))
    with pytest.raises(TypeError):
        kp.OpSyncDevice([mgr.tensor([1]), "not a tensor"])
    with pytest.raises(TypeError):
        mgr.sequence().record("not an op")
    with pytest.raises(TypeError):
        mgr.tensor([1], memory_type="device")
    with pytest.raises(TypeError):
        kp.Tensor()
    with pytest.raises(TypeError):
        kp.OpBase()


def test_wrong_dtype_for_the_shader_is_not_silent(mgr):
    spirv = compile_cached(PUSH_AND_SPEC)
    tensor = mgr.tensor([0])
    with pytest.raises(kp.Error):
        mgr.algorithm([tensor], spirv, (1, 1, 1), [1], np.array([1], dtype=np.int64))


def test_destroyed_objects_raise(mgr):
    tensor = mgr.tensor([1, 2, 3])
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    sequence = mgr.sequence()
    mgr.destroy()
    for action in (tensor.data,
                   lambda: tensor.set_data([1, 2, 3]),
                   lambda: kp.OpSyncDevice([tensor]),
                   lambda: sequence.eval(),
                   lambda: sequence.eval_async(),
                   lambda: sequence.record(kp.OpAlgoDispatch(algorithm)),
                   lambda: mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE)),
                   lambda: mgr.tensor([1])):
        with pytest.raises(kp.DestroyedError, match="destroyed"):
            action()
    # Destroying again is harmless.
    tensor.destroy()
    algorithm.destroy()
    sequence.destroy()


def test_out_of_range_device(mgr):
    count = len(mgr.list_devices())
    with pytest.raises(kp.Error, match="out of range"):
        kp.Manager(count + 5)


def test_errors_carry_vulkan_free_messages_into_python(mgr):
    # A C++ exception's message arrives whole.
    with pytest.raises(kp.Error) as info:
        mgr.sequence(7)
    assert str(info.value)


# --- Inputs that used to crash or succeed silently ----------------------------------


def test_vulkan_error_types_and_codes():
    assert issubclass(kp.OutOfMemoryError, kp.VulkanError)
    assert issubclass(kp.OutOfMemoryError, MemoryError)
    assert issubclass(kp.DeviceLostError, kp.VulkanError)
    assert issubclass(kp.VulkanError, kp.Error)
    assert kp.OutOfMemoryError.__module__ == "kp"
    with pytest.raises(kp.DeviceLostError, match="Waiting for the GPU") as lost:
        kp._kp._throw_vulkan_error(-4, "Waiting for the GPU")
    assert (lost.value.code, lost.value.result) == (-4, "VK_ERROR_DEVICE_LOST")
    with pytest.raises(kp.OutOfMemoryError) as oom:
        kp._kp._throw_vulkan_error(-1, "Allocating")
    assert (oom.value.code, oom.value.result) == (-1, "VK_ERROR_OUT_OF_HOST_MEMORY")
    with pytest.raises(kp.VulkanError) as other:
        kp._kp._throw_vulkan_error(-3, "Initializing")
    assert type(other.value) is kp.VulkanError
    assert (other.value.code, other.value.result) == (-3, "VK_ERROR_INITIALIZATION_FAILED")
    # Made by hand: no code.
    assert kp.VulkanError("x").code is None


def test_tensor_larger_than_its_heap_is_out_of_memory(mgr):
    caps = mgr.get_device_properties()
    heaps = [h["size"] for h in caps["memory_heaps"] if "device_local" in h["flags"]]
    limit = min(max(heaps), caps["limits"]["max_memory_allocation_size"])
    count = (limit + (64 << 20)) // 4
    if count * 4 >= 4 << 30:
        pytest.skip("the device's limits are beyond what one tensor holds")
    # np.zeros is not written to: no host memory is used for it.
    data = np.zeros(count, dtype=np.float32)
    with pytest.raises(kp.OutOfMemoryError, match="before the driver") as error:
        mgr.tensor_t(data)
    assert error.value.result == "VK_ERROR_OUT_OF_DEVICE_MEMORY"
    assert error.value.code == -2
    with pytest.raises(MemoryError):
        mgr.tensor_t(data, kp.MemoryTypes.storage)
    tensor = mgr.tensor([1, 2])
    mgr.sequence().eval(kp.OpSyncDevice([tensor])).eval(kp.OpSyncLocal([tensor]))
    assert tensor.data().tolist() == [1, 2]


def test_objects_of_two_managers_in_one_operation_raise(mgr):
    with kp.Manager() as other:
        mine = mgr.tensor([1, 2, 3])
        theirs = other.tensor([4, 5, 6])
        for op in (kp.OpCopy, kp.OpSyncDevice, kp.OpSyncLocal):
            with pytest.raises(kp.Error, match="belongs to another Manager"):
                op([mine, theirs])
        with pytest.raises(kp.Error, match="belongs to another Manager"):
            kp.OpMult([mine, theirs, mine], mgr.algorithm())
        with pytest.raises(kp.Error, match="another Manager"):
            mgr.algorithm([mine, theirs], compile_cached(MULTIPLY))


@pytest.mark.parametrize(
    "values",
    [
        np.array([1 + 5j, 2, 3]),
        [1 + 5j, 2.0, 3.0],
        np.array([1, "a", 2], dtype=object),
        np.array([1.0, 2.0, 3.0], dtype=object),
        np.array(["1", "2", "3"]),
    ],
    ids=["complex-array", "complex-list", "object-mixed", "object-floats", "strings"],
)
def test_complex_and_object_data_is_a_type_error(mgr, values):
    with pytest.raises(TypeError, match=r"Manager\.tensor\(\)"):
        mgr.tensor(values)
    with pytest.raises(TypeError, match=r"Manager\.tensor_t\(\)"):
        mgr.tensor_t(values)
    tensor = mgr.tensor([7, 8, 9])
    with pytest.raises(TypeError, match=r"Tensor\.set_data\(\)"):
        tensor.set_data(values)
    with pytest.raises(TypeError, match=r"Tensor\.upload\(\)"):
        tensor.upload(values)
    assert tensor.data().tolist() == [7, 8, 9]  # nothing was changed


def test_complex_data_names_what_would_be_lost(mgr):
    with pytest.raises(TypeError, match="imaginary part"):
        mgr.tensor(np.array([1 + 5j]))
    with pytest.raises(TypeError, match="Python objects"):
        mgr.tensor(np.array([None, 1], dtype=object))
