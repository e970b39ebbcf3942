"""OpRoPECache (RoPE fused with the KV-cache write) against numpy: both
layouts, float32/float16 qkv, every cache type, partial rotation with
frequency factors, the bias, positions past the cache, and its errors."""

import numpy as np
import pytest

import kp

from kernel_helpers import FLOAT_DTYPES, assert_near, floats_of, round_to, run, tensor_of

ROWS, HEADS, KV_HEADS, HEAD_DIM, CAPACITY = 4, 4, 2, 8, 10
ROW_HEADS = HEADS + 2 * KV_HEADS


def rotate(heads, positions, rope_dims, theta, freq_scale, neox, factors):
    """heads [rows, n, head_dim] rotated in float64 (OpRoPE's pairs)."""
    y = heads.astype(np.float64).copy()
    half = rope_dims // 2
    freqs = theta ** (-2.0 * np.arange(half) / rope_dims)
    if factors is not None:
        freqs = freqs / factors
    angles = positions[:, None].astype(np.float64) * freq_scale * freqs[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    first = np.arange(half) if neox else np.arange(0, rope_dims, 2)
    second = first + half if neox else first + 1
    a, b = y[..., first].copy(), y[..., second].copy()
    y[..., first] = a * cos - b * sin
    y[..., second] = a * sin + b * cos
    return y


@pytest.mark.parametrize("qkv_dtype", ["float32", "float16"])
@pytest.mark.parametrize("cache_dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mode", [kp.RoPEMode.normal, kp.RoPEMode.neox])
@pytest.mark.parametrize("feature", ["plain", "factors", "bias"])
def test_rope_cache(mgr, qkv_dtype, cache_dtype, mode, feature):
    rng = np.random.default_rng(3)
    qkv_values = round_to(qkv_dtype, rng.uniform(-1, 1, ROWS * ROW_HEADS * HEAD_DIM))
    positions = np.array([7, 0, 9, 50], dtype=np.uint32)  # 50: past the cache, not written
    qkv = tensor_of(mgr, qkv_dtype, qkv_values)
    pos = mgr.tensor_t(positions)
    keys = tensor_of(mgr, cache_dtype, np.full(CAPACITY * KV_HEADS * HEAD_DIM, 42.0))
    values = tensor_of(mgr, cache_dtype, np.full(CAPACITY * KV_HEADS * HEAD_DIM, 42.0))
    tensors = [qkv, pos, keys, values]
    rope_dims, factors, bias = HEAD_DIM, None, None
    kwargs = {}
    if feature == "factors":
        rope_dims, factors = 6, np.array([8.0, 1.0, 2.5], dtype=np.float32)
        tensors.append(mgr.tensor(factors))
        kwargs = {"rope_dims": rope_dims, "has_freq_factors": True}
    if feature == "bias":
        bias = rng.uniform(-0.5, 0.5, ROW_HEADS * HEAD_DIM).astype(np.float32)
        tensors.append(mgr.tensor(bias))
        kwargs = {"has_bias": True}
    op = kp.OpRoPECache(tensors, rows=ROWS, heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM, theta=500000.0,
                        freq_scale=0.5, mode=mode, **kwargs)
    assert op.name() == "OpRoPECache"
    run(mgr, tensors, op, [qkv, keys, values])

    rows = qkv_values.reshape(ROWS, ROW_HEADS, HEAD_DIM).astype(np.float32)
    if bias is not None:
        rows = rows + bias.reshape(ROW_HEADS, HEAD_DIM)  # in float32, as the device
    turned = rotate(rows[:, :HEADS + KV_HEADS], positions, rope_dims, 500000.0, 0.5, mode == kp.RoPEMode.neox,
                    factors)
    expected_qkv = qkv_values.reshape(ROWS, ROW_HEADS, HEAD_DIM).astype(np.float64).copy()
    expected_qkv[:, :HEADS] = turned[:, :HEADS]
    expected_keys = np.full((CAPACITY, KV_HEADS, HEAD_DIM), 42.0)
    expected_values = np.full((CAPACITY, KV_HEADS, HEAD_DIM), 42.0)
    for r, p in enumerate(positions):
        if p < CAPACITY:
            expected_keys[p] = turned[r, HEADS:]
            expected_values[p] = rows[r, HEADS + KV_HEADS:]
    tol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2}
    assert_near(floats_of(qkv), round_to(qkv_dtype, expected_qkv.ravel()), tol[qkv_dtype])
    assert_near(floats_of(keys), round_to(cache_dtype, expected_keys.ravel()), tol[cache_dtype])
    assert_near(floats_of(values), round_to(cache_dtype, expected_values.ravel()), tol[cache_dtype])


def test_rope_cache_errors(mgr):
    qkv = mgr.tensor(np.zeros(ROWS * ROW_HEADS * HEAD_DIM, dtype=np.float32))
    pos = mgr.tensor_t(np.zeros(ROWS, dtype=np.uint32))
    keys = mgr.tensor(np.zeros(CAPACITY * KV_HEADS * HEAD_DIM, dtype=np.float32))
    values = mgr.tensor(np.zeros(CAPACITY * KV_HEADS * HEAD_DIM, dtype=np.float32))
    shape = {"rows": ROWS, "heads": HEADS, "kv_heads": KV_HEADS, "head_dim": HEAD_DIM}
    with pytest.raises(kp.Error, match="3 given"):
        kp.OpRoPECache([qkv, pos, keys], **shape)
    with pytest.raises(kp.Error, match="three different tensors"):
        kp.OpRoPECache([qkv, pos, keys, keys], **shape)
    with pytest.raises(kp.Error, match="hasBias true"):
        kp.OpRoPECache([qkv, pos, keys, values], has_bias=True, **shape)
    with pytest.raises(kp.Error, match="'qkv' has"):
        kp.OpRoPECache([qkv, pos, keys, values], rows=ROWS + 1, heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM)

