"""kp.Image: creation from numpy, round trips for every element type and
channel count in every memory type, copies between images and tensors,
storage images in shaders, and bad inputs."""

import numpy as np
import pytest

import kp
from shaders import compile_cached

# Every dtype a storage image can hold.
IMAGE_DTYPES = ["float32", "float16", "uint32", "int32", "uint16", "int16", "uint8", "int8"]
CHANNELS = [1, 2, 4]
HOST_VIEW_TYPES = [kp.MemoryTypes.device, kp.MemoryTypes.host, kp.MemoryTypes.deviceAndHost]


def sample(dtype, height, width, channels):
    """Distinct values representable in `dtype`, shape (height, width, channels)."""
    count = height * width * channels
    values = np.arange(count) % 100 - (50 if np.dtype(dtype).kind in "if" else 0)
    return values.astype(dtype).reshape(height, width, channels)


def device_values(mgr, image):
    """The image's device data, read without its host view: OpCopy into a
    fresh tensor (whose host view OpCopy updates)."""
    tensor = mgr.tensor_t(np.zeros(image.size(), dtype=image.data().dtype))
    mgr.sequence().eval(kp.OpCopy([image, tensor]))
    return tensor.data().copy()


@pytest.mark.parametrize("memory_type", HOST_VIEW_TYPES, ids=str)
@pytest.mark.parametrize("channels", CHANNELS)
@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
def test_round_trip(mgr, dtype, channels, memory_type):
    data = sample(dtype, 3, 5, channels)
    image = mgr.image_t(data, memory_type=memory_type)
    assert isinstance(image, kp.Image) and isinstance(image, kp.Memory)
    assert (image.height(), image.width(), image.num_channels()) == (3, 5, channels)
    assert image.size() == len(image) == data.size
    assert image.memory_type() == memory_type
    assert image.data().dtype == np.dtype(dtype)
    # Data given at creation is on the device already.
    np.testing.assert_array_equal(device_values(mgr, image), data.ravel())
    # Device -> host: clear the host view, then read back.
    image.data()[:] = 0
    mgr.sequence().eval(kp.OpSyncLocal([image]))
    np.testing.assert_array_equal(image.data_hwc(), data)
    # Host -> device: new values through the shaped view.
    image.data_hwc()[:] = data[::-1]
    mgr.sequence().eval(kp.OpSyncDevice([image]))
    np.testing.assert_array_equal(device_values(mgr, image), data[::-1].ravel())


def test_data_types(mgr):
    expected = {"float32": kp.DataTypes.float, "float16": kp.DataTypes.half,
                "uint32": kp.DataTypes.uint, "int32": kp.DataTypes.int,
                "uint16": kp.DataTypes.ushort, "int16": kp.DataTypes.short,
                "uint8": kp.DataTypes.uchar, "int8": kp.DataTypes.char}
    for dtype, data_type in expected.items():
        assert mgr.image_t(np.zeros((2, 2), dtype=dtype)).data_type() == data_type
        assert mgr.image_t(2, 2, 1, dtype).data_type() == data_type
    assert mgr.image_t(2, 2, 4, kp.DataTypes.uchar).data().dtype == np.uint8


def test_views_are_zero_copy(mgr):
    image = mgr.image(np.zeros((2, 3, 4)), 3, 2, 4)
    flat = image.data()
    shaped = image.data_hwc()
    assert flat.base is image and shaped.base is image
    assert flat.shape == (24,) and shaped.shape == (2, 3, 4)
    shaped[1, 2, 3] = 7
    assert flat[(1 * 3 + 2) * 4 + 3] == 7
    assert np.asarray(image)[23] == 7
    assert "kp.Image float32[2x3x4]" in repr(image)


def test_image_float32_forms(mgr):
    values = np.arange(16, dtype=np.float64)
    flat = mgr.image(values, 4, 2, 2)
    assert flat.data_type() == kp.DataTypes.float
    np.testing.assert_array_equal(flat.data(), values.astype(np.float32))
    listed = mgr.image(list(range(8)), 2, 4, 1)
    np.testing.assert_array_equal(listed.data_hwc()[:, :, 0], np.arange(8).reshape(4, 2))
    shaped = mgr.image(values.reshape(2, 4, 2), 4, 2, 2, kp.MemoryTypes.host,
                       kp.ImageTiling.linear)
    assert shaped.tiling() == kp.ImageTiling.linear
    empty = mgr.image(8, 8, 4)
    assert empty.size() == 256 and empty.data_type() == kp.DataTypes.float
    assert mgr.image(4, 4, 1, tiling=kp.ImageTiling.optimal).tiling() == kp.ImageTiling.optimal


def test_image_t_flat_needs_sizes(mgr):
    flat = mgr.image_t(np.arange(8, dtype=np.uint8), 2, 2, 2)
    assert (flat.width(), flat.height(), flat.num_channels()) == (2, 2, 2)
    one = mgr.image_t(np.arange(6, dtype=np.int32), width=3, height=2)
    assert one.num_channels() == 1
    with pytest.raises(ValueError, match="flat array needs width and height"):
        mgr.image_t(np.arange(8, dtype=np.uint8))


def test_storage_image_via_copies(mgr):
    data = sample("float32", 4, 4, 4)
    source = mgr.image(data, 4, 4, 4)
    stored = mgr.image(4, 4, 4, kp.MemoryTypes.storage)
    back = mgr.image(4, 4, 4)
    mgr.sequence().eval(kp.OpCopy([source, stored])).eval(kp.OpCopy([stored, back]))
    np.testing.assert_array_equal(back.data_hwc(), data)
    with pytest.raises(kp.Error):
        stored.data()


def test_copies_between_images_and_tensors(mgr):
    data = sample("int16", 3, 4, 2)
    image = mgr.image_t(data)
    tensor = mgr.tensor_t(np.zeros(data.size, dtype=np.int16))
    other = mgr.image_t(np.zeros_like(data))
    mgr.sequence().eval(kp.OpCopy([image, tensor]))
    np.testing.assert_array_equal(tensor.data(), data.ravel())
    # tensor -> image
    tensor.data()[:] = -tensor.data()
    (mgr.sequence()
        .record(kp.OpSyncDevice([tensor]))
        .record(kp.OpCopy([tensor, other]))
        .record(kp.OpSyncLocal([other]))
        .eval())
    np.testing.assert_array_equal(other.data_hwc(), -data)
    # image -> image
    third = mgr.image_t(np.zeros_like(data), memory_type=kp.MemoryTypes.host)
    mgr.sequence().eval(kp.OpCopy([other, third]))
    np.testing.assert_array_equal(third.data_hwc(), -data)


def test_copy_size_mismatch_raises(mgr):
    image = mgr.image(np.zeros((2, 2, 1)), 2, 2, 1)
    tensor = mgr.tensor(np.zeros(5))
    with pytest.raises(kp.Error):
        mgr.sequence().eval(kp.OpCopy([image, tensor]))


INVERT = """
#version 450
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0, rgba8ui) uniform readonly uimage2D source;
layout(set = 0, binding = 1, rgba8ui) uniform writeonly uimage2D target;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    uvec4 v = imageLoad(source, p);
    imageStore(target, p, uvec4(255u - v.rgb, v.a));
}
"""

BLUR = """
#version 450
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0, r32f) uniform readonly image2D source;
layout(set = 0, binding = 1, r32f) uniform writeonly image2D target;
layout(set = 0, binding = 2) buffer Weights { float weights[]; };
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    ivec2 size = imageSize(source);
    float sum = 0.0;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            ivec2 q = clamp(p + ivec2(dx, dy), ivec2(0), size - 1);
            sum += imageLoad(source, q).r * weights[(dy + 1) * 3 + dx + 1];
        }
    }
    imageStore(target, p, vec4(sum));
}
"""


def test_invert_shader(mgr):
    rng = np.random.default_rng(1)
    data = rng.integers(0, 256, size=(6, 7, 4), dtype=np.uint8)
    source = mgr.image_t(data)
    target = mgr.image_t(7, 6, 4, np.uint8)
    algorithm = mgr.algorithm([source, target], compile_cached(INVERT), (7, 6, 1))
    (mgr.sequence()
        .record(kp.OpAlgoDispatch(algorithm))
        .record(kp.OpSyncLocal([target]))
        .eval())
    expected = data.copy()
    expected[..., :3] = 255 - data[..., :3]
    np.testing.assert_array_equal(target.data_hwc(), expected)


def test_blur_shader_with_a_tensor_and_reevaluation(mgr):
    rng = np.random.default_rng(2)
    data = rng.random((5, 8)).astype(np.float32)
    weights = np.array([1, 2, 1, 2, 4, 2, 1, 2, 1], dtype=np.float32) / 16
    source = mgr.image(data, 8, 5, 1)
    target = mgr.image(8, 5, 1)
    weight_tensor = mgr.tensor(weights)
    algorithm = mgr.algorithm([source, target, weight_tensor], compile_cached(BLUR), (8, 5, 1))
    sequence = (mgr.sequence()
                .record(kp.OpSyncDevice([source, weight_tensor]))
                .record(kp.OpAlgoDispatch(algorithm))
                .record(kp.OpSyncLocal([target])))

    def expected(image):
        padded = np.pad(image, 1, mode="edge")
        out = np.zeros_like(image)
        for dy in range(3):
            for dx in range(3):
                out += padded[dy:dy + 5, dx:dx + 8] * weights[dy * 3 + dx]
        return out

    sequence.eval()
    np.testing.assert_allclose(target.data_hwc()[:, :, 0], expected(data), rtol=1e-5, atol=1e-6)
    # Re-evaluated with new data.
    source.data_hwc()[:, :, 0] = data[::-1]
    sequence.eval()
    np.testing.assert_allclose(target.data_hwc()[:, :, 0], expected(data[::-1]), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("dtype", ["bool", "float64", "int64"])
def test_unsupported_dtypes_raise(mgr, dtype):
    with pytest.raises(kp.Error, match="Images cannot hold"):
        mgr.image_t(np.zeros((2, 2, 1), dtype=dtype))
    with pytest.raises(kp.Error, match="Images cannot hold"):
        mgr.image_t(2, 2, 1, dtype)


def test_three_channels_raise(mgr):
    with pytest.raises(kp.Error, match="1, 2 or 4 channels, not 3"):
        mgr.image_t(np.zeros((2, 2, 3), dtype=np.uint8))
    with pytest.raises(kp.Error, match="1, 2 or 4 channels, not 3"):
        mgr.image(2, 2, 3)


def test_shape_mismatch_raises(mgr):
    with pytest.raises(ValueError, match=r"shape \(2, 3, 4\).*does not match width=2"):
        mgr.image(np.zeros((2, 3, 4)), 2, 3, 4)
    with pytest.raises(ValueError, match="does not match"):
        mgr.image_t(np.zeros((2, 3), dtype=np.uint8), num_channels=2)
    with pytest.raises(ValueError, match="3 elements given, but width x height x num_channels"):
        mgr.image(np.zeros(3), 2, 2, 1)
    with pytest.raises(ValueError, match="flat array or one of shape"):
        mgr.image_t(np.zeros((1, 2, 2, 1), dtype=np.uint8))
    with pytest.raises(kp.Error):
        mgr.image(0, 2, 1)


def test_flat_data_larger_than_the_image_is_cut_with_a_warning(mgr, caplog):
    # As upstream (its TestImage.LargeVectorSize): the first width x height x
    # channels values are used.
    with caplog.at_level("WARNING", logger="kp"):
        image = mgr.image(np.arange(6, dtype=np.float32), 2, 2, 1)
        kp.flush_log()
    assert image.data().tolist() == [0, 1, 2, 3]
    assert any("the first 4 are used" in r.getMessage() for r in caplog.records)


def test_data_after_destroy_raises(mgr):
    image = mgr.image(np.zeros((2, 2, 1)), 2, 2, 1)
    image.destroy()
    assert not image.is_init()
    with pytest.raises(kp.DestroyedError):
        image.data()
    with pytest.raises(kp.DestroyedError):
        image.data_hwc()
    other = mgr.image(2, 2, 1)
    mgr.destroy()
    with pytest.raises(kp.DestroyedError):
        other.data()
    assert "(destroyed)" in repr(other)
