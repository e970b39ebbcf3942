"""The GGUF block formats beyond Q8_0/Q4_0 (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K,
Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS) against the gguf package: kp.dequantize
bit for bit on random blocks (random bytes, finite scales), kp.quantize
byte for byte where gguf has a quantizer (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and
by its round-trip error elsewhere, and the device kernels on the same
blocks: the embedding lookup bit for bit, the mat-vec and the GEMM (the
paths the device takes, and the tiled fallback) against numpy products of
gguf's dequantized weights (tolerances as test_kernels_matmul.py)."""

import numpy as np
import pytest

import kp

from kernel_helpers import floats_of, run, tensor_of

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402

FORMATS = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs"]
# Byte offsets of each format's f16 scales (d, m, dmin) in a block.
HALVES = {"q4_1": (0, 2), "q5_1": (0, 2), "q4_k": (0, 2), "q5_k": (0, 2), "q2_k": (80, 82), "q3_k": (108,),
          "q6_k": (208,)}


def qtype(name):
    return getattr(gguf.GGMLQuantizationType, name.upper())


def fmt(name):
    return getattr(kp.WeightFormat, name)


def block_shape(name):
    """(weights, bytes) per block, from gguf's table."""
    return gguf.GGML_QUANT_SIZES[qtype(name)]


def random_blocks(name, count, seed):
    """`count` blocks of random bytes, their f16 scales finite (within 1/8)."""
    rng = np.random.default_rng(seed)
    _, size = block_shape(name)
    blocks = rng.integers(0, 256, (count, size), dtype=np.uint8)
    for at in HALVES.get(name, (0,)):
        scales = rng.uniform(-0.125, 0.125, count).astype(np.float16)
        blocks[:, at:at + 2] = scales.view(np.uint8).reshape(count, 2)
    return blocks.reshape(-1)


@pytest.fixture(params=["default", "tiled"])
def path(request, monkeypatch):
    if request.param == "tiled":
        monkeypatch.setenv("KOMPUTE_ENV_DISABLE", "matvec,coopmat")
    else:
        monkeypatch.delenv("KOMPUTE_ENV_DISABLE", raising=False)
    return request.param


@pytest.mark.parametrize("name", FORMATS)
def test_block_sizes_match_gguf(name):
    weights, size = block_shape(name)
    blocks = random_blocks(name, 3, 1)
    assert kp.dequantize(fmt(name), blocks).size == 3 * weights
    with pytest.raises(kp.Error, match=f"not whole {name} blocks"):
        kp.dequantize(fmt(name), blocks[:size + 1])


@pytest.mark.parametrize("name", FORMATS)
def test_dequantize_is_ggufs_bit_for_bit(name):
    weights, _ = block_shape(name)
    blocks = random_blocks(name, 64, 2)
    ours = kp.dequantize(fmt(name), blocks)
    theirs = quants.dequantize(blocks, qtype(name)).astype(np.float32).reshape(-1)
    assert ours.shape == theirs.shape == (64 * weights,)
    assert np.isfinite(theirs).all()
    np.testing.assert_array_equal(ours.view(np.uint32), theirs.view(np.uint32))


@pytest.mark.parametrize("name", ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1"])
def test_quantize_is_ggufs_byte_for_byte(name):
    rng = np.random.default_rng(3)
    values = rng.normal(0, 0.02, 32 * 256).astype(np.float32)
    values[7] = 0.5
    values[40:72] = 0  # an all-zero block
    ours = kp.quantize(fmt(name), values)
    theirs = quants.quantize(values.reshape(1, -1), qtype(name)).reshape(-1)
    np.testing.assert_array_equal(ours, theirs)


# Bounds of the RMS round-trip error relative to the weights' RMS (Gaussian
# weights); gguf has no quantizer for these formats.
ROUND_TRIP = {"q2_k": 0.45, "q3_k": 0.25, "q4_k": 0.12, "q5_k": 0.06, "q6_k": 0.03, "iq4_nl": 0.11,
              "iq4_xs": 0.11}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_quantize_round_trip_error(name):
    rng = np.random.default_rng(4)
    values = rng.normal(0, 0.02, 256 * 32).astype(np.float32)
    blocks = kp.quantize(fmt(name), values)
    assert blocks.size == values.size // block_shape(name)[0] * block_shape(name)[1]
    back = quants.dequantize(blocks, qtype(name)).reshape(-1)  # gguf reads our blocks
    np.testing.assert_array_equal(back, kp.dequantize(fmt(name), blocks))
    error = np.sqrt(np.mean((back - values) ** 2) / np.mean(values ** 2))
    assert error < ROUND_TRIP[name]
    with pytest.raises(kp.Error, match="not whole blocks of"):
        kp.quantize(fmt(name), values[:100])


@pytest.mark.parametrize("name", FORMATS)
def test_get_rows_decodes_bit_for_bit(mgr, name):
    weights, _ = block_shape(name)
    cols, rows = 512, 5
    blocks = random_blocks(name, cols * rows // weights, 5)
    expected = quants.dequantize(blocks, qtype(name)).astype(np.float32).reshape(rows, cols)
    table = mgr.tensor_t(blocks)
    ids_values = np.array([4, 0, 2, 2], np.uint32)
    ids = mgr.tensor_t(ids_values)
    out = mgr.tensor(np.full(ids_values.size * cols, -1, np.float32))
    run(mgr, [table, ids, out], kp.OpGetRows([table, ids, out], rows=ids_values.size, cols=cols,
                                               format_table=fmt(name)), [out])
    got = out.data().reshape(-1, cols)
    np.testing.assert_array_equal(got.view(np.uint32), expected[ids_values].view(np.uint32))


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("m,n,k", [(1, 37, 512), (9, 20, 256)])
@pytest.mark.parametrize("a_dtype", ["float32", "float16"])
def test_matmul_on_gguf_blocks(mgr, path, name, m, n, k, a_dtype):
    rng = np.random.default_rng(m + n)
    weights, _ = block_shape(name)
    blocks = random_blocks(name, n * k // weights, 6)
    W = quants.dequantize(blocks, qtype(name)).astype(np.float64).reshape(n, k)
    a_values = rng.uniform(-1, 1, m * k).astype(np.float32)
    a = tensor_of(mgr, a_dtype, a_values)
    b = mgr.tensor_t(blocks)
    c = mgr.tensor(np.full(m * n, np.nan, np.float32))
    op = kp.OpMatMul([a, b, c], m=m, n=n, k=k, trans_b=True, format_b=fmt(name))
    run(mgr, [a, b, c], op, [c])
    if path == "tiled":
        assert op.path() == "tiled"
    A = floats_of(a).astype(np.float64).reshape(m, k)
    coopmat = op.path().startswith("coopmat")
    if coopmat:  # the matrices take f16 operands
        A = A.astype(np.float16).astype(np.float64)
        W = W.astype(np.float16).astype(np.float64)
    ref = A @ W.T
    magnitude = np.abs(A) @ np.abs(W.T)
    tolerance = 1 / 127 if op.path() == "matvec-int-dot" else (1e-4 if coopmat else 4e-5)
    got = c.data().astype(np.float64).reshape(m, n)
    assert (np.abs(got - ref) <= tolerance * magnitude + 1e-6).all(), op.path()


def test_rows_of_partial_super_blocks_are_errors(mgr):
    a = mgr.tensor(np.ones(128, np.float32))
    b = mgr.tensor_t(np.zeros(144 * 2, np.uint8))
    c = mgr.tensor(np.zeros(4, np.float32))
    with pytest.raises(kp.Error, match="k = 128 is not a multiple of 256"):
        kp.OpMatMul([a, b, c], m=1, n=4, k=128, trans_b=True, format_b=kp.WeightFormat.q4_k)


def numpy_groups(blocks, size):
    """GGUF Q8_0 / Q4_0 blocks regrouped by 8 in numpy: each group's 8 f16
    scales first, then the 8 blocks' quants in order."""
    b = blocks.reshape(-1, 8, size)
    return np.concatenate([b[:, :, :2].reshape(-1, 16), b[:, :, 2:].reshape(-1, 8 * (size - 2))], axis=1).reshape(-1)


@pytest.mark.parametrize("name", ["q8_0", "q4_0"])
def test_grouped_blocks_hold_the_same_weights(mgr, path, name):
    """kp.group_blocks against a numpy regrouping, its values against gguf's
    dequantization of the blocks it came from, and the kernels (GEMM and
    mat-vec: the int-dot modes where the device has integer dot products,
    the tiled GEMM with `path`) on the grouped bytes against numpy."""
    weights, size = block_shape(name)
    n, k = 37, 768
    blocks = random_blocks(name, n * k // weights, 7)
    grouped = kp.group_blocks(fmt(name), blocks)
    np.testing.assert_array_equal(grouped, numpy_groups(blocks, size))
    W = quants.dequantize(blocks, qtype(name)).astype(np.float32).reshape(n, k)
    np.testing.assert_array_equal(kp.dequantize(fmt(name + "x8"), grouped).reshape(n, k), W)
    rng = np.random.default_rng(8)
    for m in (1, 9):
        a = mgr.tensor(rng.uniform(-1, 1, m * k).astype(np.float32))
        b = mgr.tensor_t(grouped)
        c = mgr.tensor(np.full(m * n, np.nan, np.float32))
        op = kp.OpMatMul([a, b, c], m=m, n=n, k=k, trans_b=True, format_b=fmt(name + "x8"))
        run(mgr, [a, b, c], op, [c])
        A = a.data().astype(np.float64).reshape(m, k)
        ref = A @ W.astype(np.float64).T
        magnitude = np.abs(A) @ np.abs(W.astype(np.float64).T)
        tolerance = 1 / 127 if op.path() == "matvec-int-dot" else 1e-4
        got = c.data().astype(np.float64).reshape(m, n)
        assert (np.abs(got - ref) <= tolerance * magnitude + 1e-6).all(), op.path()
    with pytest.raises(kp.Error, match="not whole groups of 8"):
        kp.group_blocks(fmt(name), blocks[:7 * size])
    with pytest.raises(kp.Error, match="groups Q8_0 or Q4_0 blocks"):
        kp.group_blocks(kp.WeightFormat.q4_k, blocks[:144])
