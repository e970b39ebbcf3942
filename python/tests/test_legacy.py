"""Programs written for the released Kompute 0.9.0 run unchanged: its names
(kp.OpTensorSyncDevice, kp.OpTensorSyncLocal, kp.OpTensorCopy,
kp.TensorTypes, the tensor_type= keyword, Tensor.tensor_type(),
Algorithm.get_tensors()) are aliases of the current ones, and each use
raises a DeprecationWarning that names the current spelling. The current
names raise none."""

import warnings

import numpy as np
import pytest

import kp
from shaders import compile_cached

# Upstream's README example (the seed's).
ARRAY_MULTIPLICATION = """
#version 450
layout (local_size_x = 1) in;
layout(set = 0, binding = 0) buffer buf_in_a { float in_a[]; };
layout(set = 0, binding = 1) buffer buf_in_b { float in_b[]; };
layout(set = 0, binding = 2) buffer buf_out_a { uint out_a[]; };
layout(set = 0, binding = 3) buffer buf_out_b { uint out_b[]; };
layout(push_constant) uniform PushConstants { float val; } push_const;
layout(constant_id = 0) const float const_one = 0;
void main() {
    uint index = gl_GlobalInvocationID.x;
    out_a[index] += uint( in_a[index] * in_b[index] );
    out_b[index] += uint( const_one * push_const.val );
}
"""


def test_array_multiplication_written_for_0_9_0_runs_and_warns(mgr):
    with pytest.warns(DeprecationWarning) as caught:
        tensor_in_a = mgr.tensor([2, 2, 2], tensor_type=kp.TensorTypes.device)
        tensor_in_b = mgr.tensor([1, 2, 3])
        tensor_out_a = mgr.tensor_t(np.array([0, 0, 0], dtype=np.uint32))
        tensor_out_b = mgr.tensor_t(np.array([0, 0, 0], dtype=np.uint32),
                                    tensor_type=kp.TensorTypes.device)
        params = [tensor_in_a, tensor_in_b, tensor_out_a, tensor_out_b]
        algo = mgr.algorithm(params, compile_cached(ARRAY_MULTIPLICATION), (3, 1, 1), [2], [2])
        (mgr.sequence()
            .record(kp.OpTensorSyncDevice(params))
            .record(kp.OpAlgoDispatch(algo))
            .eval()
            .record(kp.OpAlgoDispatch(algo, [3]))
            .eval())
        sq = mgr.sequence()
        sq.eval_async(kp.OpTensorSyncLocal(params))
        sq.eval_await()
        assert tensor_in_a.tensor_type() == kp.MemoryTypes.device
        assert algo.get_tensors() == params
    np.testing.assert_array_equal(tensor_out_a.data(), [4, 8, 12])
    np.testing.assert_array_equal(tensor_out_b.data(), [10, 10, 10])

    messages = [str(w.message) for w in caught]
    for old, new in [("kp.TensorTypes", "kp.MemoryTypes"),
                     ("Manager.tensor(tensor_type=)", "memory_type="),
                     ("Manager.tensor_t(tensor_type=)", "memory_type="),
                     ("kp.OpTensorSyncDevice", "kp.OpSyncDevice"),
                     ("kp.OpTensorSyncLocal", "kp.OpSyncLocal"),
                     ("Tensor.tensor_type()", "Tensor.memory_type()"),
                     ("Algorithm.get_tensors()", "Algorithm.get_mem_objects()")]:
        assert f"{old} is Kompute 0.9.0's name: use {new}" in messages, (old, messages)
    # The warnings point at this file, the caller of the old names.
    assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]


def test_op_tensor_copy_is_op_copy(mgr):
    source = mgr.tensor([1, 2, 3])
    target = mgr.tensor([0, 0, 0])
    with pytest.warns(DeprecationWarning, match="kp.OpTensorCopy is Kompute 0.9.0's name"):
        copy = kp.OpTensorCopy([source, target])
    assert isinstance(copy, kp.OpCopy)
    mgr.sequence().record(kp.OpSyncDevice([source])).record(copy).eval()
    np.testing.assert_array_equal(target.data(), [1, 2, 3])


def test_tensor_types_is_memory_types_with_upstreams_values():
    with pytest.warns(DeprecationWarning):
        tensor_types = kp.TensorTypes
    assert tensor_types is kp.MemoryTypes
    assert [tensor_types.device, tensor_types.host, tensor_types.storage] == \
        [kp.device, kp.host, kp.storage]


def test_tensor_type_and_memory_type_together_are_refused(mgr):
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="both"):
        mgr.tensor([1], tensor_type=kp.host, memory_type=kp.host)


def test_unknown_module_attributes_still_raise():
    with pytest.raises(AttributeError, match="no attribute 'OpTensorSyncRegion'"):
        kp.OpTensorSyncRegion  # noqa: B018


def test_current_names_raise_no_deprecation_warning(mgr):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = mgr.tensor([2, 2, 2], memory_type=kp.MemoryTypes.device)
        b = mgr.tensor_t(np.array([1, 2, 3], dtype=np.float32), memory_type=kp.device)
        out_a = mgr.tensor_t(np.zeros(3, dtype=np.uint32))
        out_b = mgr.tensor_t(np.zeros(3, dtype=np.uint32))
        params = [a, b, out_a, out_b]
        algo = mgr.algorithm(params, compile_cached(ARRAY_MULTIPLICATION), (3, 1, 1), [2], [2])
        (mgr.sequence()
            .record(kp.OpSyncDevice(params))
            .record(kp.OpAlgoDispatch(algo))
            .record(kp.OpSyncLocal(params))
            .eval())
        assert a.memory_type() == kp.MemoryTypes.device
        assert algo.get_mem_objects() == params
    np.testing.assert_array_equal(out_a.data(), [2, 4, 6])
    np.testing.assert_array_equal(out_b.data(), [4, 4, 4])
