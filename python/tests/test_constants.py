"""Push and specialization constants from lists and numpy arrays of every
supported scalar dtype, with their sizes checked against the shader."""

import numpy as np
import pytest

import kp

from shaders import PUSH_AND_SPEC, compile_cached

# Writes its spec constant and its push constant to the output, as the
# shader's own type T.
CONSTANTS_SHADER = """
#version 450
{extensions}
layout(local_size_x = 1) in;
layout(constant_id = 0) const {type} specValue = {type}(0);
layout(push_constant) uniform Push {{ {type} value; {type} second; }} push;
layout(set = 0, binding = 0) buffer Out {{ {type} values[]; }};
void main() {{
    values[0] = specValue;
    values[1] = push.value;
    values[2] = push.second;
}}
"""

INT64 = "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require"
INT16 = "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require"
FLOAT16 = "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require"

# numpy dtype -> (GLSL type, extensions, spec value, push value)
CASES = {
    "float32": ("float", "", 1.5, -2.25),
    "int32": ("int", "", -7, 2**31 - 1),
    "uint32": ("uint", "", 7, 2**32 - 1),
    "float64": ("double", "", 1.0 / 3.0, -2.5e100),
    "int64": ("int64_t", INT64, -(2**40), 2**62),
    "uint64": ("uint64_t", INT64, 2**40, 2**64 - 1),
    "int16": ("int16_t", INT16, -300, 32767),
    "uint16": ("uint16_t", INT16, 300, 65535),
    "float16": ("float16_t", FLOAT16, 0.5, -1024.0),
}


@pytest.mark.parametrize("dtype", list(CASES))
def test_numpy_constants_of_each_dtype(mgr, dtype):
    glsl_type, extensions, spec, push = CASES[dtype]
    out = mgr.tensor_t(np.zeros(3, dtype=dtype))
    spirv = compile_cached(CONSTANTS_SHADER.format(type=glsl_type, extensions=extensions))
    try:
        algorithm = mgr.algorithm([out], spirv, (1, 1, 1),
                                  np.array([spec], dtype=dtype),
                                  np.array([push, spec], dtype=dtype))
    except kp.Error as error:
        if "feature" in str(error) or "not support" in str(error):
            pytest.skip(f"device: {error}")
        raise
    (mgr.sequence()
        .record(kp.OpAlgoDispatch(algorithm))
        .record(kp.OpSyncLocal([out]))
        .eval())
    np.testing.assert_array_equal(out.data(), np.array([spec, push, spec], dtype=dtype))
    np.testing.assert_array_equal(algorithm.get_push_constants(dtype),
                                  np.array([push, spec], dtype=dtype))
    np.testing.assert_array_equal(algorithm.get_specialization_constants(dtype), [spec])


def test_lists_are_float32(mgr):
    out = mgr.tensor([0, 0, 0])
    spirv = compile_cached(CONSTANTS_SHADER.format(type="float", extensions=""))
    algorithm = mgr.algorithm([out], spirv, (1, 1, 1), [3], (4, 5.5))
    mgr.sequence().record(kp.OpAlgoDispatch(algorithm)).record(kp.OpSyncLocal([out])).eval()
    assert out.data().tolist() == [3.0, 4.0, 5.5]


def test_bool_spec_constant(mgr):
    shader = """
#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const bool flag = false;
layout(set = 0, binding = 0) buffer Out { uint values[]; };
void main() { values[0] = flag ? 11u : 22u; }
"""
    out = mgr.tensor_t(np.zeros(1, dtype=np.uint32))
    for flag, expected in ((True, 11), (False, 22)):
        algorithm = mgr.algorithm([out], compile_cached(shader), (1, 1, 1), np.array([flag]))
        mgr.sequence().record(kp.OpAlgoDispatch(algorithm)).record(kp.OpSyncLocal([out])).eval()
        assert out.data().tolist() == [expected]


def test_struct_push_constants(mgr):
    shader = """
#version 450
layout(local_size_x = 1) in;
layout(push_constant) uniform Push { float f; uint u; int i; } push;
layout(set = 0, binding = 0) buffer Out { float values[]; };
void main() { values[0] = push.f; values[1] = float(push.u); values[2] = float(push.i); }
"""
    struct = np.dtype([("f", np.float32), ("u", np.uint32), ("i", np.int32)])
    out = mgr.tensor([0, 0, 0])
    algorithm = mgr.algorithm([out], compile_cached(shader), (1, 1, 1), [],
                              np.array([(1.5, 7, -3)], dtype=struct))
    sequence = mgr.sequence()
    sequence.record(kp.OpAlgoDispatch(algorithm)).record(kp.OpSyncLocal([out])).eval()
    assert out.data().tolist() == [1.5, 7.0, -3.0]
    sequence.eval(kp.OpAlgoDispatch(algorithm, np.array([(2.5, 8, -4)], dtype=struct)))
    sequence.eval(kp.OpSyncLocal([out]))
    assert out.data().tolist() == [2.5, 8.0, -4.0]


def test_push_constants_override_with_numpy(mgr):
    shader = CONSTANTS_SHADER.format(type="uint", extensions="")
    out = mgr.tensor_t(np.zeros(3, dtype=np.uint32))
    algorithm = mgr.algorithm([out], compile_cached(shader), (1, 1, 1),
                              np.array([1], dtype=np.uint32), np.array([2, 3], dtype=np.uint32))
    sequence = mgr.sequence()
    sequence.eval(kp.OpAlgoDispatch(algorithm, np.array([99, 98], dtype=np.uint32)))
    sequence.eval(kp.OpSyncLocal([out]))
    assert out.data().tolist() == [1, 99, 98]
    algorithm.set_push_constants(np.array([5, 6], dtype=np.uint32))
    sequence.eval(kp.OpAlgoDispatch(algorithm)).eval(kp.OpSyncLocal([out]))
    assert out.data().tolist() == [1, 5, 6]


def test_wrong_push_constant_size_raises(mgr):
    tensor = mgr.tensor([0])
    spirv = compile_cached(PUSH_AND_SPEC)  # one float of push constants
    with pytest.raises(kp.Error, match="[Pp]ush"):
        mgr.algorithm([tensor], spirv, (1, 1, 1), [1], [1, 2])
    with pytest.raises(kp.Error, match="[Pp]ush"):
        mgr.algorithm([tensor], spirv, (1, 1, 1), [1], np.array([1], dtype=np.float64))
    algorithm = mgr.algorithm([tensor], spirv, (1, 1, 1), [1], [1])
    with pytest.raises(kp.Error, match="[Pp]ush"):
        mgr.sequence().eval(kp.OpAlgoDispatch(algorithm, [1, 2, 3]))
    with pytest.raises(kp.Error, match="[Pp]ush"):
        algorithm.set_push_constants(np.array([1, 2], dtype=np.int32))


def test_wrong_spec_constant_raises(mgr):
    tensor = mgr.tensor([0])
    spirv = compile_cached(PUSH_AND_SPEC)  # one float spec constant
    with pytest.raises(kp.Error, match="[Ss]peciali[sz]ation"):
        mgr.algorithm([tensor], spirv, (1, 1, 1), np.array([1], dtype=np.float64), [1])


@pytest.mark.parametrize("bad", [
    np.array([1 + 1j]),
    np.array(["x"]),
    ["a"],
    {"value": 1},
    "1.0",
    3.0,
])
def test_unsupported_constants_raise_type_error(mgr, bad):
    tensor = mgr.tensor([0])
    with pytest.raises(TypeError, match="push_consts"):
        mgr.algorithm([tensor], compile_cached(PUSH_AND_SPEC), (1, 1, 1), [1], bad)
    with pytest.raises(TypeError, match="spec_consts"):
        mgr.algorithm([tensor], compile_cached(PUSH_AND_SPEC), (1, 1, 1), bad, [1])
