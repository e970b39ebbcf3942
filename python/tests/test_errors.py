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
