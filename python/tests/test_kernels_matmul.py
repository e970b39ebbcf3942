"""The matrix kernels (OpMatMul, OpGetRows) and kp.quantize/dequantize against
numpy: every dtype combination, GGUF Q8_0/Q4_0 weights, transposes,
alpha/beta, batches with strides and offsets, on the paths the device runs
(lavapipe: the mat-vec and, with KOMPUTE_ENV_DISABLE=matvec, the tiled GEMM).

Tolerances: |c - ref| <= 4e-5 * sum|a b| (f32 accumulation) plus the output
rounding (2^-10 |ref| for float16 C), against the reference on the operands
as stored (rounded to float16/bfloat16, dequantized blocks); the
cooperative-matrix paths round float32 operands and dequantized blocks to
float16 (1e-4), the int-dot
mat-vec rounds activations to int8 (1/127)."""

import numpy as np
import pytest

import kp

from disable_paths import disable_paths
from kernel_helpers import FLOAT_DTYPES, floats_of, round_to, run, tensor_of


@pytest.fixture(params=["default", "tiled"])
def path(request, monkeypatch):
    """The kernels operations are built with ("tiled": the fallback forced)."""
    disable_paths(monkeypatch, "matvec,coopmat" if request.param == "tiled" else "")
    return request.param


def operand(mgr, dtype, values):
    """A tensor of values stored as dtype (or GGUF blocks), and the values as stored."""
    if dtype in ("q8_0", "q4_0"):
        blocks = kp.quantize(getattr(kp.WeightFormat, dtype), values)
        return mgr.tensor_t(blocks), kp.dequantize(getattr(kp.WeightFormat, dtype), blocks)
    return tensor_of(mgr, dtype, values), round_to(dtype, values)


def matmul(mgr, m, n, k, a_dtype="float32", b_dtype="float32", c_dtype="float32", trans_a=False,
           trans_b=False, alpha=1.0, beta=0.0, seed=1, **extra):
    """Runs one product of packed matrices and checks it; returns the op."""
    rng = np.random.default_rng(seed)
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    a, a_stored = operand(mgr, a_dtype, rng.uniform(-1, 1, m * k).astype(np.float32))
    b, b_stored = operand(mgr, b_dtype, rng.uniform(-1, 1, k * n).astype(np.float32))
    c0 = rng.uniform(-1, 1, m * n).astype(np.float32) if beta != 0 else np.full(m * n, np.nan, np.float32)
    c, c_stored = operand(mgr, c_dtype, c0)
    fmt = getattr(kp.WeightFormat, b_dtype) if b_dtype in ("q8_0", "q4_0") else kp.WeightFormat.none
    op = kp.OpMatMul([a, b, c], m=m, n=n, k=k, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta,
                     format_b=fmt, **extra)
    run(mgr, [a, b, c], op, [c])
    coopmat = op.path().startswith("coopmat")
    rounded = "bfloat16" if op.path() == "coopmat-khr-bf16" else "float16"  # what the matrices take
    # f32 operands and dequantized blocks (d * q is not exact in 16 bits)
    # enter the cooperative matrices rounded.
    seen_a = round_to(rounded, a_stored) if coopmat and a_dtype == "float32" else a_stored
    seen_b = round_to(rounded, b_stored) if coopmat and b_dtype in ("float32", "q8_0", "q4_0") else b_stored
    A = seen_a.astype(np.float64).reshape(a_shape)
    B = seen_b.astype(np.float64).reshape(b_shape)
    A = A.T if trans_a else A
    B = B.T if trans_b else B
    ref = alpha * (A @ B)
    magnitude = abs(alpha) * (np.abs(A) @ np.abs(B))
    if beta != 0:
        old = c_stored.astype(np.float64).reshape(m, n)
        ref += beta * old
        magnitude += abs(beta * old)
    tolerance = 1 / 127 if op.path() == "matvec-int-dot" else (1e-4 if coopmat else 4e-5)
    rounding = 2.0 ** -10 if c_dtype == "float16" else 0.0
    got = floats_of(c).astype(np.float64).reshape(m, n)
    bound = tolerance * magnitude + rounding * np.abs(ref) + 1e-6
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), (
        f"{op.path()}: {bad.sum()} of {m * n} entries off, first at {np.argwhere(bad)[0]}: "
        f"{got[bad][0]} vs {ref[bad][0]}")
    return op


@pytest.mark.parametrize("a_dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("b_dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("c_dtype", ["float32", "float16"])
@pytest.mark.parametrize("m,n,k", [(1, 37, 45), (37, 1, 45), (33, 65, 17)])
def test_every_dtype(mgr, path, a_dtype, b_dtype, c_dtype, m, n, k):
    op = matmul(mgr, m, n, k, a_dtype, b_dtype, c_dtype, seed=m + n)
    if path == "tiled":
        assert op.path() == "tiled"


@pytest.mark.parametrize("weights", ["q8_0", "q4_0"])
@pytest.mark.parametrize("a_dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("m,n,k", [(1, 45, 96), (1, 9, 2304), (33, 70, 160)])
def test_quantized_weights(mgr, path, weights, a_dtype, m, n, k):
    matmul(mgr, m, n, k, a_dtype, weights, trans_b=True, seed=n)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("m,n,k", [(1, 50, 33), (41, 1, 70), (35, 67, 29)])
def test_transposes(mgr, path, trans_a, trans_b, m, n, k):
    matmul(mgr, m, n, k, "float16", "float32", trans_a=trans_a, trans_b=trans_b)


@pytest.mark.parametrize("alpha,beta", [(0.5, 1.0), (-2.0, 0.25)])
@pytest.mark.parametrize("m,n", [(1, 40), (30, 50)])
def test_alpha_beta(mgr, path, alpha, beta, m, n):
    matmul(mgr, m, n, 64, "float32", "q8_0", trans_b=True, alpha=alpha, beta=beta)


def test_batches_strides_and_offsets(mgr, path):
    rng = np.random.default_rng(7)
    batch, m, n, k = 3, 5, 6, 32
    lda, ldc = k + 2, n + 3
    stride_a, stride_c = m * lda + 4, m * ldc + 1
    a_values = rng.uniform(-1, 1, 3 + batch * stride_a).astype(np.float32)
    w_values = rng.uniform(-1, 1, batch * n * k).astype(np.float32)
    a = mgr.tensor(a_values)
    w = mgr.tensor_t(kp.quantize(kp.WeightFormat.q4_0, w_values))
    w_stored = kp.dequantize(kp.WeightFormat.q4_0, w.data())
    c = mgr.tensor(np.zeros(5 + batch * stride_c, np.float32))
    op = kp.OpMatMul([a, w, c], m=m, n=n, k=k, trans_b=True, lda=lda, ldc=ldc, batch=batch, stride_a=stride_a,
                     stride_c=stride_c, offset_a=3, offset_c=5, format_b=kp.WeightFormat.q4_0)
    run(mgr, [a, w, c], op, [c])
    if op.path().startswith("coopmat"):  # what the matrices take (see matmul)
        a_values = round_to("float16", a_values)
        w_stored = round_to("float16", w_stored)
    got = c.data()
    for b in range(batch):
        A = np.stack([a_values[3 + b * stride_a + i * lda:][:k] for i in range(m)]).astype(np.float64)
        W = w_stored[b * n * k:(b + 1) * n * k].reshape(n, k).astype(np.float64)
        out = np.stack([got[5 + b * stride_c + i * ldc:][:n] for i in range(m)])
        np.testing.assert_allclose(out, A @ W.T, rtol=1e-4, atol=1e-4)


def test_quantize_round_trip():
    values = np.linspace(-3, 3, 64, dtype=np.float32)
    for fmt, size, step in [(kp.WeightFormat.q8_0, 34, 3 / 127), (kp.WeightFormat.q4_0, 18, 3 / 8)]:
        blocks = kp.quantize(fmt, values)
        assert blocks.dtype == np.uint8 and blocks.size == 2 * size
        np.testing.assert_allclose(kp.dequantize(fmt, blocks), values, atol=step)
    with pytest.raises(kp.Error, match="not whole blocks"):
        kp.quantize(kp.WeightFormat.q8_0, np.zeros(33, np.float32))
    with pytest.raises(kp.Error, match="not whole q4_0 blocks"):
        kp.dequantize(kp.WeightFormat.q4_0, np.zeros(17, np.uint8))


def test_blocks_match_the_gguf_package():
    """kp.quantize/dequantize (the reference of every quantized test here)
    against the gguf package's own Q8_0/Q4_0 code: the same bytes, the same
    values."""
    gguf = pytest.importorskip("gguf")
    from gguf import quants
    rng = np.random.default_rng(7)
    values = rng.standard_normal(32 * 64).astype(np.float32) * 3
    values[:32] = 0  # an all-zero block: scale 0
    for fmt, qtype in [(kp.WeightFormat.q8_0, gguf.GGMLQuantizationType.Q8_0),
                       (kp.WeightFormat.q4_0, gguf.GGMLQuantizationType.Q4_0)]:
        ours = kp.quantize(fmt, values)
        theirs = quants.quantize(values.reshape(64, 32), qtype).reshape(-1)
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(kp.dequantize(fmt, ours),
                                      quants.dequantize(theirs, qtype).reshape(-1).astype(np.float32))


def test_bad_input_is_a_clear_error(mgr):
    a, b, c = mgr.tensor(np.ones(24)), mgr.tensor(np.ones(20)), mgr.tensor(np.ones(29))
    with pytest.raises(kp.Error, match="C holds 29 elements"):
        kp.OpMatMul([a, b, c], m=6, n=5, k=4)
    with pytest.raises(kp.Error, match="C must be a tensor of its own"):
        kp.OpMatMul([a, b, a], m=6, n=5, k=4)
    blocks = mgr.tensor_t(np.zeros(34 * 2 + 1, np.uint8))
    with pytest.raises(kp.Error, match="not whole q8_0 blocks"):
        kp.OpMatMul([mgr.tensor(np.ones(32)), blocks, mgr.tensor(np.ones(2))], m=1, n=2, k=32, trans_b=True,
                    format_b=kp.WeightFormat.q8_0)
    with pytest.raises(kp.Error, match="k = 48 is not a multiple of 32"):
        kp.OpMatMul([mgr.tensor(np.ones(48)), mgr.tensor_t(np.zeros(18 * 3, np.uint8)), mgr.tensor(np.ones(2))],
                    m=1, n=2, k=48, trans_b=True, format_b=kp.WeightFormat.q4_0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + ["q8_0", "q4_0"])
def test_get_rows(mgr, dtype):
    rng = np.random.default_rng(3)
    rows, cols = 11, 64
    table, stored = operand(mgr, dtype, rng.uniform(-1, 1, rows * cols).astype(np.float32))
    ids = mgr.tensor_t(np.array([3, 0, 10, 3, 12], dtype=np.uint32))
    out = mgr.tensor(np.zeros(5 * cols, np.float32))
    fmt = getattr(kp.WeightFormat, dtype) if dtype in ("q8_0", "q4_0") else kp.WeightFormat.none
    op = kp.OpGetRows([table, ids, out], rows=5, cols=cols, format_table=fmt)
    run(mgr, [table, ids, out], op, [out])
    got = out.data().reshape(5, cols)
    expected = stored.reshape(rows, cols)[[3, 0, 10, 3]]
    np.testing.assert_array_equal(got[:4], expected)
    assert np.isnan(got[4]).all(), "an id past the table gives NaN"
