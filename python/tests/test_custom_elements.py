"""Tensors of custom elements (kp.DataTypes.custom): numpy structured dtypes
and raw elements of a given size, read and written by shaders as structs."""

import numpy as np
import pytest

import kp

from shaders import compile_cached

# std430 layout of the shader's struct: vec2 at 0, float at 8, uint at 12;
# 16 bytes per element. numpy's align=True gives the same offsets here.
PARTICLE = np.dtype([("position", np.float32, (2,)), ("mass", np.float32), ("id", np.uint32)],
                    align=True)

MOVE_PARTICLES = """
#version 450
layout(local_size_x = 1) in;
struct Particle { vec2 position; float mass; uint id; };
layout(set = 0, binding = 0) buffer Particles { Particle particles[]; };
layout(set = 0, binding = 1) writeonly buffer Momentum { float momentum[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    Particle p = particles[i];
    momentum[i] = p.mass * length(p.position);
    p.position *= p.mass;
    p.id += 100u;
    particles[i] = p;
}
"""


def particles(count):
    values = np.zeros(count, dtype=PARTICLE)
    values["position"] = np.arange(2 * count, dtype=np.float32).reshape(count, 2) - 3
    values["mass"] = np.linspace(0.5, 2.0, count, dtype=np.float32)
    values["id"] = np.arange(count, dtype=np.uint32) * 7
    return values


def run_particles(mgr, tensor, count):
    momentum = mgr.zeros(count)
    algorithm = mgr.algorithm([tensor, momentum], compile_cached(MOVE_PARTICLES))
    (mgr.sequence()
        .record(kp.OpSyncDevice([tensor]))
        .record(kp.OpAlgoDispatch(algorithm))
        .record(kp.OpSyncLocal([tensor, momentum]))
        .eval())
    return momentum


def expected_after_move(values):
    moved = values.copy()
    moved["position"] *= values["mass"][:, None]
    moved["id"] += 100
    momentum = values["mass"] * np.linalg.norm(values["position"], axis=1)
    return moved, momentum


@pytest.mark.parametrize("memory_type", [kp.MemoryTypes.device, kp.MemoryTypes.host])
def test_a_structured_array_is_a_tensor_of_structs(mgr, memory_type):
    values = particles(6)
    tensor = mgr.tensor_t(values, memory_type)
    assert tensor.data_type() == kp.DataTypes.custom
    assert tensor.size() == 6 and len(tensor) == 6
    assert tensor.data_type_memory_size() == PARTICLE.itemsize == 16
    assert tensor.memory_size() == values.nbytes
    assert "custom[6]" in repr(tensor)
    view = tensor.data()
    assert view.dtype == PARTICLE and view.shape == (6,)
    np.testing.assert_array_equal(view, values)

    momentum = run_particles(mgr, tensor, 6)
    moved, expected_momentum = expected_after_move(values)
    np.testing.assert_array_equal(tensor.data()["id"], moved["id"])
    np.testing.assert_allclose(tensor.data()["position"], moved["position"], rtol=1e-6)
    np.testing.assert_array_equal(tensor.data()["mass"], values["mass"])
    np.testing.assert_allclose(momentum.data(), expected_momentum, rtol=1e-5)
    # The view is zero-copy, as every tensor's.
    tensor.data()["id"][0] = 12345
    assert tensor.data()["id"][0] == 12345


def test_dtype_converts_lists_of_tuples_and_zeros_makes_structs(mgr):
    tensor = mgr.tensor_t([((1, 2), 0.5, 3), ((4, 5), 2.0, 6)], dtype=PARTICLE)
    assert tensor.data_type() == kp.DataTypes.custom
    assert tensor.data().dtype == PARTICLE
    assert tensor.data()["id"].tolist() == [3, 6]
    empty = mgr.zeros(5, dtype=PARTICLE)
    assert empty.data().dtype == PARTICLE and empty.size() == 5
    assert not empty.data().view(np.uint8).any()
    # What a zero particle becomes on the device: the zeros are there too.
    run_particles(mgr, empty, 5)
    assert empty.data()["id"].tolist() == [100] * 5


def test_raw_elements_of_a_given_size(mgr):
    values = particles(4)
    raw = mgr.tensor_t(values.tobytes(), element_size=PARTICLE.itemsize)
    assert raw.data_type() == kp.DataTypes.custom
    assert raw.size() == 4 and raw.data_type_memory_size() == 16
    # Without a dtype, the host view shows the elements' bytes.
    assert raw.data().dtype == np.uint8 and raw.data().size == values.nbytes
    np.testing.assert_array_equal(raw.data().view(PARTICLE), values)
    np.testing.assert_array_equal(np.asarray(raw), raw.data())
    raw.set_data(values[::-1])  # the bytes of any array
    np.testing.assert_array_equal(raw.data().view(PARTICLE), values[::-1])
    raw.set_data(values)
    run_particles(mgr, raw, 4)
    moved, _ = expected_after_move(values)
    np.testing.assert_array_equal(raw.data().view(PARTICLE)["id"], moved["id"])
    # Any bytes-like object or array gives its bytes.
    assert mgr.tensor_t(bytearray(b"\1\2\3\4\5\6"), element_size=3).size() == 2
    words = mgr.tensor_t(np.arange(8, dtype=np.uint32), element_size=16,
                         dtype=kp.DataTypes.custom)
    assert words.size() == 2
    assert words.data().view(np.uint32).tolist() == list(range(8))


def test_custom_tensors_keep_their_dtype_through_other_handles(mgr):
    values = particles(3)
    tensor = mgr.tensor_t(values)
    algorithm = mgr.algorithm([tensor, mgr.zeros(3)], compile_cached(MOVE_PARTICLES))
    del tensor
    again = algorithm.get_mem_objects()[0]
    assert again.data().dtype == PARTICLE
    np.testing.assert_array_equal(again.data(), values)
    assert np.asarray(again).dtype == PARTICLE


def test_set_data_upload_and_download_of_structs(mgr):
    tensor = mgr.zeros(3, dtype=PARTICLE)
    values = particles(3)
    tensor.set_data(values)
    np.testing.assert_array_equal(tensor.data(), values)
    tensor.set_data(values[::-1].tobytes())  # raw bytes of the whole tensor
    np.testing.assert_array_equal(tensor.data(), values[::-1])
    tensor.upload(values)
    tensor.data()[:] = np.zeros(3, dtype=PARTICLE)
    back = tensor.download()
    assert back.dtype == PARTICLE
    np.testing.assert_array_equal(back, values)
    with pytest.raises(kp.Error, match="bytes"):
        tensor.set_data(values[:2])
    with pytest.raises(kp.Error, match="bytes"):
        tensor.set_data(b"\0" * 17)


def test_custom_host_views_through_the_buffer_protocol_and_dlpack(mgr):
    values = particles(2)
    tensor = mgr.tensor_t(values)
    # The buffer protocol carries the struct (PEP 3118 format)...
    view = memoryview(tensor)
    assert view.nbytes == values.nbytes and view.itemsize == 16 and view.shape == (2,)
    assert view.format == memoryview(values).format
    assert np.asarray(tensor).dtype == PARTICLE
    np.testing.assert_array_equal(np.asarray(tensor), values)
    # ...DLPack has no struct types: it gives the bytes.
    exported = np.from_dlpack(tensor)
    assert exported.dtype == np.uint8 and exported.size == values.nbytes
    np.testing.assert_array_equal(exported.view(PARTICLE), values)


def test_custom_element_errors(mgr):
    with pytest.raises(ValueError, match="whole number of elements"):
        mgr.tensor_t(b"\0" * 10, element_size=4)
    with pytest.raises(ValueError, match="at least 1"):
        mgr.tensor_t(b"\0" * 4, element_size=0)
    with pytest.raises(TypeError, match="element_size"):
        mgr.tensor_t(b"\0" * 8, element_size=4, dtype=np.float32)
    with pytest.raises(TypeError, match="bytes-like"):
        mgr.tensor_t([1, 2, 3, 4], element_size=4)
    with pytest.raises(TypeError, match="Python objects"):
        mgr.tensor_t(np.zeros(2, dtype=[("x", np.float32), ("o", object)]))
    with pytest.raises(TypeError, match="structured dtype"):
        mgr.tensor_t([1, 2], dtype=kp.DataTypes.custom)
    with pytest.raises(kp.Error, match="zero elements"):
        mgr.tensor_t(b"", element_size=4)
