"""The matrix kernels (OpMatMul, OpGetRows) and kp.quantize/dequantize against
numpy: every dtype combination, GGUF Q8_0/Q4_0 weights, transposes,
alpha/beta, batches with strides and offsets, on the paths the device runs
(lavapipe: the mat-vec and, with KOMPUTE_ENV_DISABLE=matvec, the tiled GEMM);
the fused forms of an LLM's layers (swiglu_a, norm_a, rope_c with
kp.RoPECacheParams, swiglu_c) and what each refuses.

Tolerances: |c - ref| <= 4e-5 * sum|a b| (f32 accumulation) plus the output
rounding (2^-10 |ref| for float16 C), against the reference on the operands
as stored (rounded to float16/bfloat16, dequantized blocks); the
cooperative-matrix paths round float32 operands and dequantized blocks to
float16 (1e-4), the int-dot
mat-vec rounds activations to int8 (1/127)."""

import functools
import json

import numpy as np
import pytest

import kp

from disable_paths import disable_paths
from kernel_helpers import FLOAT_DTYPES, floats_of, round_to, run, tensor_of
from test_kernels_rope import rotate


@pytest.fixture(params=["default", "tiled"])
def path(request, monkeypatch):
    """The kernels operations are built with ("tiled": the fallback forced)."""
    disable_paths(monkeypatch, "matvec,coopmat" if request.param == "tiled" else "")
    return request.param


def weight_format(dtype):
    """The kp.WeightFormat of an operand dtype ("q8_0", "q4_0" or a float dtype: none)."""
    return getattr(kp.WeightFormat, dtype) if dtype in ("q8_0", "q4_0") else kp.WeightFormat.none


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
    op = kp.OpMatMul([a, b, c], m=m, n=n, k=k, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta,
                     format_b=weight_format(b_dtype), **extra)
    run(mgr, [a, b, c], op, [c])
    A = as_seen(op, a_dtype, a_stored).astype(np.float64).reshape(a_shape)
    B = as_seen(op, b_dtype, b_stored).astype(np.float64).reshape(b_shape)
    A = A.T if trans_a else A
    B = B.T if trans_b else B
    ref = alpha * (A @ B)
    magnitude = abs(alpha) * (np.abs(A) @ np.abs(B))
    if beta != 0:
        old = c_stored.astype(np.float64).reshape(m, n)
        ref += beta * old
        magnitude += abs(beta * old)
    assert_product(op, floats_of(c).astype(np.float64).reshape(m, n), ref, magnitude, c_dtype)
    return op


def as_seen(op, dtype, stored):
    """An operand's values as op's kernel multiplies them: f32 operands and
    dequantized blocks (d * q is not exact in 16 bits) enter the cooperative
    matrices rounded to float16 (bfloat16 on coopmat-khr-bf16)."""
    if op.path().startswith("coopmat") and dtype in ("float32", "q8_0", "q4_0"):
        return round_to("bfloat16" if op.path() == "coopmat-khr-bf16" else "float16", stored)
    return stored


def assert_product(op, got, ref, magnitude, c_dtype="float32"):
    """got within the tolerance of op's path (see the module docstring) of
    ref, magnitude being the sum of |a b| the error scales with."""
    coopmat = op.path().startswith("coopmat")
    tolerance = 1 / 127 if op.path() == "matvec-int-dot" else (1e-4 if coopmat else 4e-5)
    rounding = 2.0 ** -10 if c_dtype == "float16" else 0.0
    bound = tolerance * magnitude + rounding * np.abs(ref) + 1e-6
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), (
        f"{op.path()}: {bad.sum()} of {bad.size} entries off, first at {np.argwhere(bad)[0]}: "
        f"{got[bad][0]} vs {ref[bad][0]}")


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


def test_tuning_table_replaces_the_rules(mgr, monkeypatch, tmp_path, device_properties):
    """A tuning table (KOMPUTE_ENV_TUNING_FILE) that names this device gives
    the tiled GEMM its tile: op.tuning() says where it came from, the grid
    follows, and the product matches numpy; another device's block, and no
    file, leave the rules."""
    disable_paths(monkeypatch, "matvec,coopmat")
    rules = matmul(mgr, 33, 65, 64).tuning()
    assert rules["kernel"] == "tiled" and rules["source"] == "rules"
    name = device_properties["device_name"]
    table = tmp_path / "tuning.json"
    entry = {"kernel": "tiled", "a": "f32", "b": "f32", "m": 32, "n": 65, "k": 64, "config": "16:16:16:4:4:2"}
    table.write_text(json.dumps({"devices": [
        {"device": "no such device", "entries": [dict(entry, config="64:64:16:4:4:1")]},
        {"device": name, "entries": [entry]}]}))
    monkeypatch.setenv("KOMPUTE_ENV_TUNING_FILE", str(table))
    op = matmul(mgr, 33, 65, 64)
    assert op.tuning() == {"kernel": "tiled", "config": "16:16:16:4:4:2",
                           "source": f"table {table} (device '{name}', driver any)"}
    assert op.algorithms()[0].get_workgroup() == (5, 3, 1)
    assert matmul(mgr, 31, 65, 64).tuning() == rules  # m below the entry's
    monkeypatch.delenv("KOMPUTE_ENV_TUNING_FILE")
    assert matmul(mgr, 33, 65, 64).tuning() == rules


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


# --- The fused forms (MatMulParams' swigluA, normA, ropeC, swigluC) ----------


def silu(values):
    return values / (1 + np.exp(-values))


def has_shuffles(device_properties):
    return "shuffle" in device_properties["subgroup"]["operations"]


@pytest.mark.parametrize("b_dtype", ["float32", "float16", "q8_0", "q4_0"])
@pytest.mark.parametrize("a_dtype,lda", [("float32", 0), ("float16", 0), ("float32", 3)])
def test_swiglu_a(mgr, a_dtype, b_dtype, lda):
    """swiglu_a: the mat-vec's x is silu(gate) * up, two vectors of A (an
    LLM's down projection); two batches, and strided vectors (trans_a, lda
    3)."""
    rng = np.random.default_rng(21 + lda)
    n, k, batch = 19, 512, 2
    step = lda or 1
    vector = (k - 1) * step + 1
    up_offset = (vector + 15) // 8 * 8  # per batch: the gate from 0, the up after it
    stride_a = 2 * up_offset + 16
    a, a_stored = operand(mgr, a_dtype, rng.uniform(-3, 3, batch * stride_a).astype(np.float32))
    b, b_stored = operand(mgr, b_dtype, rng.uniform(-1, 1, batch * n * k).astype(np.float32))
    c = mgr.tensor(np.zeros(batch * n, np.float32))
    op = kp.OpMatMul([a, b, c], m=1, n=n, k=k, trans_a=lda != 0, trans_b=True, lda=lda, batch=batch,
                     stride_a=stride_a, offset_a=up_offset, swiglu_a=True, gate_offset_a=0,
                     format_b=weight_format(b_dtype))
    assert op.path().startswith("matvec"), op.path()
    run(mgr, [a, b], op, [c])
    A = a_stored.astype(np.float64)
    x = np.stack([silu(A[i * stride_a:][:vector:step]) * A[i * stride_a + up_offset:][:vector:step]
                  for i in range(batch)])
    W = b_stored.astype(np.float64).reshape(batch, n, k)
    ref = np.einsum("bk,bnk->bn", x, W)
    magnitude = np.einsum("bk,bnk->bn", np.abs(x), np.abs(W))
    assert_product(op, c.data().astype(np.float64).reshape(batch, n), ref, magnitude)


def test_swiglu_a_refused(mgr, monkeypatch):
    x, w, c = mgr.tensor(np.ones(128, np.float32)), mgr.tensor(np.ones(4 * 64, np.float32)), mgr.tensor(np.zeros(8))
    with pytest.raises(kp.Error, match="swigluA is an input of the mat-vec"):
        kp.OpMatMul([x, w, c], m=2, n=4, k=64, trans_b=True, swiglu_a=True)
    with pytest.raises(kp.Error, match=r"A \(its gate, from gateOffsetA\) holds 128"):
        kp.OpMatMul([x, w, c], m=1, n=4, k=64, trans_b=True, swiglu_a=True, gate_offset_a=100)
    disable_paths(monkeypatch, "matvec")
    with pytest.raises(kp.Error, match="swigluA needs the mat-vec"):
        kp.OpMatMul([x, w, c], m=1, n=4, k=64, trans_b=True, swiglu_a=True, gate_offset_a=64)


# (B's dtype, the paths turned off, the path taken): float rows; Q8_0/Q4_0
# rows not staged (the mode normA needs on the float mat-vec, staged by
# default on some devices); the int-dot mat-vec's quantized-x mode.
NORM_MODES = [("float32", "", "matvec"), ("float16", "", "matvec"), ("bfloat16", "", "matvec"),
              ("q8_0", "int-dot,staged", "matvec"), ("q4_0", "int-dot,staged", "matvec"),
              ("q8_0", "matvec-float", "matvec-int-dot"), ("q4_0", "matvec-float", "matvec-int-dot")]


@pytest.mark.parametrize("b_dtype,disabled,expected_path", NORM_MODES)
@pytest.mark.parametrize("a_dtype,norm_dtype", [("float32", "float32"), ("float16", "float16"),
                                                ("float32", "bfloat16")])
@pytest.mark.parametrize("residual", [False, True])
def test_norm_a(mgr, monkeypatch, device_properties, b_dtype, disabled, expected_path, a_dtype, norm_dtype,
                residual):
    """norm_a: the mat-vec's row of A RMS-normalized with the weights of a
    4th tensor, then the product; `residual`: alpha 0.5 and beta 1 (C added
    to), eps 0.5, k past a multiple of 256 (k = 300 for float B)."""
    if expected_path == "matvec-int-dot" and not device_properties["integer_dot_product"]["supported"]:
        pytest.skip("no integer dot products: no quantized-x mode")
    disable_paths(monkeypatch, disabled)
    quantized = b_dtype in ("q8_0", "q4_0")
    n, k = (21, 768 if quantized else 300) if residual else (37, 256)
    alpha, beta, eps = (0.5, 1.0, 0.5) if residual else (1.0, 0.0, 1e-5)
    norm_offset = 8 if residual else 5  # 4-wide loads of the weights, and scalar ones
    rng = np.random.default_rng(n + k)
    a, a_stored = operand(mgr, a_dtype, rng.uniform(-2, 2, 8 + k).astype(np.float32))
    b, b_stored = operand(mgr, b_dtype, rng.uniform(-1, 1, n * k).astype(np.float32))
    g, g_stored = operand(mgr, norm_dtype, rng.uniform(0.5, 1.5, norm_offset + k).astype(np.float32))
    c0 = rng.uniform(-1, 1, n).astype(np.float32)
    c = mgr.tensor(c0)
    op = kp.OpMatMul([a, b, c, g], m=1, n=n, k=k, trans_b=True, alpha=alpha, beta=beta, offset_a=8,
                     format_b=weight_format(b_dtype), norm_a=True, norm_eps=eps, norm_offset=norm_offset)
    assert op.path() == expected_path
    run(mgr, [a, b, c, g], op, [c])
    row = a_stored[8:].astype(np.float64)
    x = row * g_stored[norm_offset:] / np.sqrt(np.mean(row * row) + eps)
    W = b_stored.astype(np.float64).reshape(n, k)
    ref = alpha * (W @ x) + beta * c0
    magnitude = abs(alpha) * (np.abs(W) @ np.abs(x)) + abs(beta * c0)
    assert_product(op, c.data().astype(np.float64), ref, magnitude)


def test_norm_a_refused(mgr, monkeypatch, device_properties):
    x, c, norm = mgr.tensor(np.ones(2 * 256, np.float32)), mgr.tensor(np.zeros(8)), mgr.tensor(np.ones(256))
    w = mgr.tensor(np.ones(8 * 256, np.float32))
    shape = {"n": 8, "k": 256, "norm_a": True}
    if device_properties["integer_dot_product"]["supported"]:
        blocks = mgr.tensor_t(kp.quantize(kp.WeightFormat.q8_0, np.full(8 * 256, 0.5, np.float32)))
        with monkeypatch.context() as staged:
            disable_paths(staged, "matvec-qx,matvec-float")  # the int-dot mat-vec, staging the rows
            with pytest.raises(kp.Error, match="normA needs a mat-vec mode that reads the whole row of A.*staged"):
                kp.OpMatMul([x, blocks, c, norm], m=1, trans_b=True, format_b=kp.WeightFormat.q8_0, **shape)
    with pytest.raises(kp.Error, match=r"needs 4 tensors \{A, B, C, normWeights\}"):
        kp.OpMatMul([x, w, c], m=1, trans_b=True, **shape)
    with pytest.raises(kp.Error, match="normA normalizes the one row of A of a mat-vec.*m = 2"):
        kp.OpMatMul([x, w, mgr.tensor(np.zeros(16)), norm], m=2, trans_b=True, **shape)
    with pytest.raises(kp.Error, match="normA needs a mat-vec mode that reads the whole row of A"):
        kp.OpMatMul([x, w, c, norm], m=1, trans_b=False, **shape)
    with pytest.raises(kp.Error, match="normEps must be finite"):
        kp.OpMatMul([x, w, c, norm], m=1, trans_b=True, norm_eps=-1.0, **shape)
    disable_paths(monkeypatch, "matvec")
    with pytest.raises(kp.Error, match="normA needs the mat-vec"):
        kp.OpMatMul([x, w, c, norm], m=1, trans_b=True, **shape)


# The qkv projection of a decode step: heads, KV heads and head size of the
# product's row, k, and the caches (rows CACHE_STRIDE apart from CACHE_OFFSET).
QKV_HEADS, QKV_KV_HEADS, QKV_HEAD_DIM, QKV_K = 4, 2, 16, 512
QKV_N = (QKV_HEADS + 2 * QKV_KV_HEADS) * QKV_HEAD_DIM
CACHE_STRIDE, CACHE_OFFSET, CAPACITY = 40, 3, 10
CACHE_SIZE = CACHE_OFFSET + (CAPACITY - 1) * CACHE_STRIDE + QKV_KV_HEADS * QKV_HEAD_DIM


@pytest.mark.parametrize("b_dtype", ["float32", "q8_0"])
@pytest.mark.parametrize("cache_dtype", ["float32", "float16"])
@pytest.mark.parametrize("variant", ["plain", "norm,factors,bias", "past the cache"])
def test_rope_c(mgr, monkeypatch, device_properties, b_dtype, cache_dtype, variant):
    """rope_c: the qkv mat-vec rotates its query heads in C and writes the
    rotated keys and the values into the caches at the position (with
    norm_a, partial rotation with frequency factors, and the bias; a
    position past the caches writes nothing), against the product then the
    RoPE of test_kernels_rope on the host. On a device without subgroup
    shuffles it is refused, naming them."""
    if b_dtype == "q8_0":
        disable_paths(monkeypatch, "int-dot,staged")  # the float mat-vec's mode that takes norm_a
    norm, factors, bias = variant == "norm,factors,bias", variant == "norm,factors,bias", variant != "plain"
    position = CAPACITY + 2 if variant == "past the cache" else 7
    rope_dims = 12 if factors else QKV_HEAD_DIM
    rng = np.random.default_rng(31)
    x_values = rng.uniform(-2, 2, QKV_K).astype(np.float32)
    x = mgr.tensor(x_values)
    w, w_stored = operand(mgr, b_dtype, rng.uniform(-1, 1, QKV_N * QKV_K).astype(np.float32))
    c = mgr.tensor(np.zeros(QKV_N, np.float32))
    positions = mgr.tensor_t(np.array([1, position], dtype=np.uint32))
    keys = tensor_of(mgr, cache_dtype, np.full(CACHE_SIZE, 100.0))
    values = tensor_of(mgr, cache_dtype, np.full(CACHE_SIZE, 100.0))
    tensors = [x, w, c]
    if norm:
        norm_values = rng.uniform(0.5, 1.5, QKV_K).astype(np.float32)
        tensors.append(mgr.tensor(norm_values))
    tensors += [positions, keys, values]
    if factors:
        factor_values = rng.uniform(1, 4, rope_dims // 2).astype(np.float32)
        tensors.append(mgr.tensor(factor_values))
    if bias:
        bias_values = rng.uniform(-1, 1, QKV_N).astype(np.float32)
        tensors.append(mgr.tensor(bias_values))
    rope = kp.RoPECacheParams(heads=QKV_HEADS, kv_heads=QKV_KV_HEADS, head_dim=QKV_HEAD_DIM,
                              rope_dims=rope_dims if factors else 0, theta=500.0, freq_scale=0.75,
                              has_freq_factors=factors, has_bias=bias, cache_row_stride=CACHE_STRIDE,
                              cache_offset=CACHE_OFFSET, positions_offset=1)
    assert (rope.heads, rope.kv_heads, rope.head_dim, rope.mode) == (QKV_HEADS, QKV_KV_HEADS, QKV_HEAD_DIM,
                                                                     kp.RoPEMode.normal)
    make = functools.partial(kp.OpMatMul, tensors, m=1, n=QKV_N, k=QKV_K, trans_b=True,
                             format_b=weight_format(b_dtype), norm_a=norm, norm_eps=1e-3, rope_c=True, rope=rope)
    if not has_shuffles(device_properties):
        with pytest.raises(kp.Error, match="ropeC needs subgroup shuffles"):
            make()
        return
    op = make()
    assert op.path().startswith("matvec") and len(op.algorithms()) == 1, (op.path(), op.algorithms())
    run(mgr, tensors, op, [c, keys, values])

    xs = x_values.astype(np.float64)
    if norm:
        xs = xs * norm_values / np.sqrt(np.mean(xs * xs) + 1e-3)
    W = w_stored.astype(np.float64).reshape(QKV_N, QKV_K)
    product = W @ xs
    scale = (np.abs(W) @ np.abs(xs)).max()  # what the errors scale with
    row = product + bias_values if bias else product
    row = row.reshape(1, -1, QKV_HEAD_DIM)
    turned = rotate(row[:, :QKV_HEADS + QKV_KV_HEADS], np.array([position]), rope_dims, 500.0, 0.75, False,
                    factor_values if factors else None)[0]
    expected_c = product.reshape(-1, QKV_HEAD_DIM).copy()
    expected_c[:QKV_HEADS] = turned[:QKV_HEADS]  # the key and value heads as the product gives them
    expected_keys, expected_values = np.full(CACHE_SIZE, 100.0), np.full(CACHE_SIZE, 100.0)
    if position < CAPACITY:
        at = slice(CACHE_OFFSET + position * CACHE_STRIDE, CACHE_OFFSET + position * CACHE_STRIDE +
                   QKV_KV_HEADS * QKV_HEAD_DIM)
        expected_keys[at] = turned[QKV_HEADS:].ravel()
        expected_values[at] = row[0, QKV_HEADS + QKV_KV_HEADS:].ravel()
    np.testing.assert_allclose(c.data(), expected_c.ravel(), rtol=0, atol=1e-4 * scale)
    cache_tolerance = 1e-4 * scale + (2.0 ** -11 * (scale + 1) if cache_dtype == "float16" else 0)
    np.testing.assert_allclose(floats_of(keys), expected_keys, rtol=0, atol=cache_tolerance)
    np.testing.assert_allclose(floats_of(values), expected_values, rtol=0, atol=cache_tolerance)


def test_rope_c_refused(mgr, monkeypatch, device_properties):
    x, c = mgr.tensor(np.ones(QKV_K, np.float32)), mgr.tensor(np.zeros(QKV_N, np.float32))
    w = mgr.tensor(np.full(QKV_N * QKV_K, 0.5, np.float32))
    positions = mgr.tensor_t(np.array([3], dtype=np.uint32))
    keys, values = mgr.tensor(np.zeros(CACHE_SIZE, np.float32)), mgr.tensor(np.zeros(CACHE_SIZE, np.float32))
    tensors = [x, w, c, positions, keys, values]
    shape = {"m": 1, "n": QKV_N, "k": QKV_K, "trans_b": True, "rope_c": True}

    def rope(**changes):
        return kp.RoPECacheParams(heads=QKV_HEADS, kv_heads=QKV_KV_HEADS, head_dim=QKV_HEAD_DIM, **changes)

    with pytest.raises(kp.Error, match=r"rope_c needs rope=kp.RoPECacheParams"):
        kp.OpMatMul(tensors, **shape)
    with pytest.raises(kp.Error, match=r"needs 6 tensors \{A, B, C, positions, keyCache, valueCache\}"):
        kp.OpMatMul([x, w, c], rope=rope(), **shape)
    with pytest.raises(kp.Error, match="rope.mode must be RoPEMode::eNormal"):
        kp.OpMatMul(tensors, rope=rope(mode=kp.RoPEMode.neox), **shape)
    with pytest.raises(kp.Error, match="ropeC takes rope.rows = 1"):
        kp.OpMatMul(tensors, rope=rope(rows=2), **shape)
    with pytest.raises(kp.Error, match="ropeC rotates the one row of C of a mat-vec.*beta = 1"):
        kp.OpMatMul(tensors, rope=rope(), beta=1.0, **shape)
    wide = rope()
    wide.heads = 3  # (the fields are writable)
    with pytest.raises(kp.Error, match="is not one row of qkv"):
        kp.OpMatMul(tensors, rope=wide, **shape)
    bf16 = [tensor_of(mgr, "bfloat16", np.zeros(CACHE_SIZE)) for _ in range(2)]
    with pytest.raises(kp.Error, match="not bf16 ones"):
        kp.OpMatMul([x, w, c, positions] + bf16, rope=rope(), **shape)
    disable_paths(monkeypatch, "matvec")
    why = "ropeC needs the mat-vec" if has_shuffles(device_properties) else "ropeC needs subgroup shuffles"
    with pytest.raises(kp.Error, match=why):
        kp.OpMatMul(tensors, rope=rope(), **shape)


@pytest.mark.parametrize("m,n,k,batch,gap,ldb_pad,a_dtype,b_dtype,c_dtype,alpha", [
    (1, 24, 64, 1, 0, 0, "float32", "float16", "float32", 1.0),  # m = 1: the GEMM kernels too (matvec-glu off)
    (33, 70, 128, 2, 3, 0, "float16", "q4_0", "float16", 0.75),
    (20, 40, 64, 1, 8, 0, "float32", "q8_0", "float32", 1.0),
    (9, 17, 40, 1, 1, 8, "float16", "float32", "float16", 0.75),
])
def test_swiglu_c(mgr, monkeypatch, path, m, n, k, batch, gap, ldb_pad, a_dtype, b_dtype, c_dtype, alpha):
    """swiglu_c: C = silu(G) * U of the products over B's gate rows and its
    up rows (from up_row_b, a gap after the gate's), in one GEMM dispatch:
    batches, padded rows of B, partial tiles."""
    if m == 1:
        disable_paths(monkeypatch, "matvec-glu")  # (else the mat-vec takes it: test_swiglu_c_on_the_float_matvec)
    up_row_b, ldb = n + gap, k + ldb_pad
    b_rows = up_row_b + n
    rng = np.random.default_rng(40 + m)
    a, a_stored = operand(mgr, a_dtype, rng.uniform(-1, 1, batch * m * k).astype(np.float32))
    b, b_stored = operand(mgr, b_dtype, rng.uniform(-1, 1, batch * b_rows * ldb).astype(np.float32))
    c = tensor_of(mgr, c_dtype, np.full(batch * m * n, np.nan))
    op = kp.OpMatMul([a, b, c], m=m, n=n, k=k, trans_b=True, alpha=alpha, ldb=ldb if ldb_pad else 0, batch=batch,
                     format_b=weight_format(b_dtype), swiglu_c=True, up_row_b=up_row_b)
    assert not op.path().startswith("matvec") and len(op.algorithms()) == 1, (op.path(), op.algorithms())
    if path == "tiled":
        assert op.path() == "tiled"
    run(mgr, [a, b], op, [c])
    A = as_seen(op, a_dtype, a_stored).astype(np.float64).reshape(batch, m, k)
    B = as_seen(op, b_dtype, b_stored).astype(np.float64).reshape(batch, b_rows, ldb)[:, :, :k]
    gate, up = B[:, :n], B[:, up_row_b:]
    G, U = alpha * A @ gate.transpose(0, 2, 1), alpha * A @ up.transpose(0, 2, 1)
    magnitude_g = abs(alpha) * np.abs(A) @ np.abs(gate).transpose(0, 2, 1)
    magnitude_u = abs(alpha) * np.abs(A) @ np.abs(up).transpose(0, 2, 1)
    # An error e in G moves C by at most 1.1 e |U| (|silu'| < 1.1), one in U
    # by |silu(G)| e <= |G| e.
    assert_product(op, floats_of(c).astype(np.float64).reshape(batch, m, n), silu(G) * U,
                   1.1 * magnitude_g * np.abs(U) + np.abs(G) * magnitude_u, c_dtype)


@pytest.mark.parametrize("b_dtype", ["float32", "float16"])
def test_swiglu_c_on_the_float_matvec(mgr, device_properties, b_dtype):
    """swiglu_c with m = 1 and float weights: the float mat-vec's row mode
    (an f16 model's decode gate and up projections), one dispatch, against
    numpy."""
    if not has_shuffles(device_properties):
        pytest.skip("no subgroup shuffles: the mat-vec takes no swigluC")
    n, k, up_row_b = 40, 96, 43
    rng = np.random.default_rng(61)
    a, a_stored = operand(mgr, "float32", rng.uniform(-1, 1, k).astype(np.float32))
    b, b_stored = operand(mgr, b_dtype, rng.uniform(-1, 1, (up_row_b + n) * k).astype(np.float32))
    c = tensor_of(mgr, "float32", np.full(n, np.nan))
    op = kp.OpMatMul([a, b, c], m=1, n=n, k=k, trans_b=True, alpha=0.5, swiglu_c=True, up_row_b=up_row_b)
    assert op.path() == "matvec" and len(op.algorithms()) == 1, (op.path(), op.algorithms())
    run(mgr, [a, b], op, [c])
    A = np.asarray(a_stored, np.float64)
    B = np.asarray(b_stored, np.float64).reshape(up_row_b + n, k)
    G, U = 0.5 * B[:n] @ A, 0.5 * B[up_row_b:] @ A
    np.testing.assert_allclose(floats_of(c), silu(G) * U, rtol=1e-4, atol=1e-5)


def test_swiglu_c_refused(mgr, monkeypatch):
    a, b, c = mgr.tensor(np.ones(4 * 64, np.float32)), mgr.tensor(np.ones(10 * 64, np.float32)), mgr.tensor(
        np.zeros(4 * 5, np.float32))
    shape = {"m": 4, "n": 5, "k": 64, "swiglu_c": True}
    kp.OpMatMul([a, b, c], trans_b=True, up_row_b=5, **shape)  # what the refusals change
    with pytest.raises(kp.Error, match="upRowB = 4.*after the gate's n = 5 rows"):
        kp.OpMatMul([a, b, c], trans_b=True, up_row_b=4, **shape)
    with pytest.raises(kp.Error, match="B holds 640 elements"):
        kp.OpMatMul([a, b, c], trans_b=True, up_row_b=6, **shape)
    with pytest.raises(kp.Error, match="swigluC multiplies.*beta 0"):
        kp.OpMatMul([a, b, c], trans_b=True, up_row_b=5, beta=1.0, **shape)
    with pytest.raises(kp.Error, match="swigluC multiplies.*transposed B"):
        kp.OpMatMul([a, b, c], trans_b=False, up_row_b=5, **shape)
    disable_paths(monkeypatch, "gemm-swiglu")
    with pytest.raises(kp.Error, match="swigluC is turned off"):
        kp.OpMatMul([a, b, c], trans_b=True, up_row_b=5, **shape)


@pytest.mark.parametrize("b_dtype", ["q8_0", "q4_0"])
def test_swiglu_c_quantized_on_the_mat_vec(mgr, monkeypatch, device_properties, b_dtype):
    """swiglu_c with m = 1 on the int-dot mat-vec, with the norm inside
    (norm_a) and quantize_c: C = silu(G) * U, then its row as int8 blocks
    after it, which a second product reads as its x (quantized_a)."""
    if not device_properties["integer_dot_product"]["supported"] or not has_shuffles(device_properties):
        pytest.skip("no integer dot products or subgroup shuffles: no int-dot mat-vec with swiglu_c")
    disable_paths(monkeypatch, "matvec-float")
    n, k, up_row_b, outs = 256, 256, 264, 24
    rng = np.random.default_rng(50)
    x = rng.uniform(-2, 2, k).astype(np.float32)
    g = rng.uniform(0.5, 1.5, k).astype(np.float32)
    a, norm = mgr.tensor(x), mgr.tensor(g)
    b, b_stored = operand(mgr, b_dtype, rng.uniform(-1, 1, (up_row_b + n) * k).astype(np.float32))
    c = mgr.tensor(np.zeros(n + kp.quantized_row_words(n), np.float32))
    op = kp.OpMatMul([a, b, c, norm], m=1, n=n, k=k, trans_b=True, format_b=weight_format(b_dtype),
                     swiglu_c=True, up_row_b=up_row_b, norm_a=True, quantize_c=True)
    assert op.path() == "matvec-int-dot" and len(op.algorithms()) == 1
    d, d_stored = operand(mgr, b_dtype, rng.uniform(-1, 1, outs * n).astype(np.float32))
    y = mgr.tensor(np.zeros(outs, np.float32))
    down = kp.OpMatMul([c, d, y], m=1, n=outs, k=n, trans_b=True, format_b=weight_format(b_dtype),
                       quantized_a=True, offset_a=n)
    seq = mgr.sequence()
    seq.record(kp.OpSyncDevice([a, norm, b, d])).record(op).record(down).record(kp.OpSyncLocal([c, y])).eval()
    xn = x.astype(np.float64) / np.sqrt(np.mean(x.astype(np.float64) ** 2) + 1e-5) * g
    B = b_stored.astype(np.float64).reshape(up_row_b + n, k)
    G, U = B[:n] @ xn, B[up_row_b:] @ xn
    mag_g, mag_u = np.abs(B[:n]) @ np.abs(xn), np.abs(B[up_row_b:]) @ np.abs(xn)
    h = floats_of(c)[:n].astype(np.float64)
    # x rounded to int8 (each sum within its magnitude / 127; |silu'| < 1.1)
    np.testing.assert_array_less(np.abs(h - silu(G) * U),
                                 2 * (1.1 * mag_g * np.abs(U) + np.abs(G) * mag_u + mag_g * mag_u / 127) / 127 + 1e-5)
    words = floats_of(c)[n:].view(np.uint32)
    blocks = n // 32
    q = words[:8 * blocks].view(np.int8).reshape(blocks, 32).astype(np.float64)
    pairs = words[8 * blocks:].view(np.float32).reshape(blocks, 2).astype(np.float64)
    row = (pairs[:, :1] * q).reshape(n)
    np.testing.assert_array_less(np.abs(row - h), 0.501 * np.repeat(pairs[:, 0], 32) + 1e-7)
    np.testing.assert_allclose(pairs[:, 1], pairs[:, 0] * q.sum(axis=1), rtol=1e-5, atol=1e-7)
    D = d_stored.astype(np.float64).reshape(outs, n)
    np.testing.assert_array_less(np.abs(floats_of(y) - D @ row), 1e-4 * (np.abs(D) @ np.abs(row)) + 1e-6)
    with pytest.raises(kp.Error, match="quantizeC writes the SwiGLU row"):
        kp.OpMatMul([a, b, c, norm], m=1, n=n, k=k, trans_b=True, format_b=weight_format(b_dtype), norm_a=True,
                    quantize_c=True)
    with pytest.raises(kp.Error, match="quantizedA gives the one row of A.*m = 2"):
        kp.OpMatMul([c, d, mgr.tensor(np.zeros(2 * outs, np.float32))], m=2, n=outs, k=n, trans_b=True,
                    format_b=weight_format(b_dtype), quantized_a=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + ["q8_0", "q4_0"])
def test_get_rows(mgr, dtype):
    rng = np.random.default_rng(3)
    rows, cols = 11, 64
    table, stored = operand(mgr, dtype, rng.uniform(-1, 1, rows * cols).astype(np.float32))
    ids = mgr.tensor_t(np.array([3, 0, 10, 3, 12], dtype=np.uint32))
    out = mgr.tensor(np.zeros(5 * cols, np.float32))
    op = kp.OpGetRows([table, ids, out], rows=5, cols=cols, format_table=weight_format(dtype))
    run(mgr, [table, ids, out], op, [out])
    got = out.data().reshape(5, cols)
    expected = stored.reshape(rows, cols)[[3, 0, 10, 3]]
    np.testing.assert_array_equal(got[:4], expected)
    assert np.isnan(got[4]).all(), "an id past the table gives NaN"
