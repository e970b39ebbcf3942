"""The transformer kernels (OpRoPE, OpSetRows, OpAttention) against numpy:
both RoPE layouts, the KV-cache write with casts, decode and prefill
attention with grouped-query heads over float16 and float32 caches, and a
recorded decode step re-run at new positions."""

import numpy as np
import pytest

import kp

from disable_paths import disable_paths
from kernel_helpers import assert_near, floats_of, round_to, run, tensor_of


def rope_reference(x, positions, rope_dims, theta, freq_scale, neox, factors=None):
    y = x.astype(np.float64).copy()
    half = rope_dims // 2
    freqs = theta ** (-2.0 * np.arange(half) / rope_dims)
    if factors is not None:
        freqs = freqs / factors
    angles = positions[:, None].astype(np.float64) * freq_scale * freqs[None, :]  # [rows, half]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    if neox:
        a, b = x[..., :half], x[..., half:rope_dims]
        y[..., :half] = a * cos - b * sin
        y[..., half:rope_dims] = a * sin + b * cos
    else:
        a, b = x[..., 0:rope_dims:2], x[..., 1:rope_dims:2]
        y[..., 0:rope_dims:2] = a * cos - b * sin
        y[..., 1:rope_dims:2] = a * sin + b * cos
    return y


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("mode", [kp.RoPEMode.normal, kp.RoPEMode.neox])
@pytest.mark.parametrize("rope_dims", [0, 4])
def test_rope(mgr, dtype, mode, rope_dims):
    rows, heads, head_dim = 5, 3, 8
    rng = np.random.default_rng(0)
    x_values = round_to(dtype, rng.uniform(-1, 1, rows * heads * head_dim))
    positions = np.array([0, 1, 17, 99, 1000], dtype=np.uint32)
    x = tensor_of(mgr, dtype, x_values)
    pos = mgr.tensor_t(positions)
    y = tensor_of(mgr, dtype, np.zeros_like(x_values))
    run(mgr, [x, pos], kp.OpRoPE([x, pos, y], rows=rows, heads=heads, head_dim=head_dim, rope_dims=rope_dims,
                                 theta=10000.0, freq_scale=0.5, mode=mode), [y])
    expected = rope_reference(x_values.reshape(rows, heads, head_dim), positions, rope_dims or head_dim, 10000.0,
                              0.5, mode == kp.RoPEMode.neox)
    tol = 1e-4 if dtype == "float32" else 2e-3
    assert_near(floats_of(y), round_to(dtype, expected.ravel()), tol)


@pytest.mark.parametrize("mode", [kp.RoPEMode.normal, kp.RoPEMode.neox])
def test_rope_with_frequency_factors(mgr, mode):
    # Llama 3.1's rope_freqs: pair i's angle divided by factors[i].
    rows, heads, head_dim, rope_dims = 4, 2, 16, 12
    rng = np.random.default_rng(1)
    x_values = rng.uniform(-1, 1, rows * heads * head_dim).astype(np.float32)
    positions = np.array([0, 3, 500, 8191], dtype=np.uint32)
    factors = np.array([7.0, 1.0, 1.0, 1.5, 3.0, 8.0, 8.0], dtype=np.float32)  # from offset 1
    x = mgr.tensor(x_values)
    pos = mgr.tensor_t(positions)
    f = mgr.tensor(factors)
    run(mgr, [x, pos, f], kp.OpRoPE([x, pos, x, f], rows=rows, heads=heads, head_dim=head_dim, rope_dims=rope_dims,
                                    theta=500000.0, mode=mode, freq_factors_offset=1), [x])
    expected = rope_reference(x_values.reshape(rows, heads, head_dim), positions, rope_dims, 500000.0, 1.0,
                              mode == kp.RoPEMode.neox, factors[1:].astype(np.float64))
    # Angles in f32 (OpRoPE's documented precision): 1e-4 near the start,
    # position * 2^-22 at position 8191 (the last row).
    got, want = floats_of(x).reshape(rows, -1), expected.reshape(rows, -1).astype(np.float32)
    assert_near(got[:-1], want[:-1], 1e-4)
    assert_near(got[-1], want[-1], max(1e-4, float(positions[-1]) * 2.0 ** -22))
    with pytest.raises(kp.Error, match="'freqFactors' has 7 elements"):
        kp.OpRoPE([x, pos, x, f], rows=rows, heads=heads, head_dim=head_dim, theta=500000.0)


@pytest.mark.parametrize("src_dtype", ["float32", "float16"])
@pytest.mark.parametrize("dst_dtype", ["float32", "float16", "bfloat16"])
def test_set_rows(mgr, src_dtype, dst_dtype):
    rows, cols, capacity = 3, 6, 5
    values = round_to(src_dtype, np.arange(rows * cols, dtype=np.float32) * 1.5 - 7)
    src = tensor_of(mgr, src_dtype, values)
    dst = tensor_of(mgr, dst_dtype, np.full(capacity * cols, -1.0))
    positions = mgr.tensor_t(np.array([3, 0, 9], dtype=np.uint32))  # 9: past the end, skipped
    run(mgr, [src, dst, positions], kp.OpSetRows([src, dst, positions], rows=rows, cols=cols), [dst])
    expected = np.full((capacity, cols), -1.0, dtype=np.float32)
    expected[3] = values[0:cols]
    expected[0] = values[cols:2 * cols]
    np.testing.assert_array_equal(floats_of(dst).reshape(capacity, cols), round_to(dst_dtype, expected))


def attention_reference(q, k, v, positions, causal, group):
    """q [rows, heads, d]; k, v [capacity, kv_heads, d]."""
    rows, heads, d = q.shape
    out = np.zeros((rows, heads, d))
    for r in range(rows):
        last = min(positions[r] if causal else positions[-1], k.shape[0] - 1)
        for h in range(heads):
            kk = k[: last + 1, h // group].astype(np.float64)
            vv = v[: last + 1, h // group].astype(np.float64)
            s = kk @ q[r, h].astype(np.float64) / np.sqrt(d)
            w = np.exp(s - s.max())
            out[r, h] = (w / w.sum()) @ vv
    return out


@pytest.mark.parametrize("cache_dtype", ["float16", "float32"])
@pytest.mark.parametrize("rows,path", [(1, kp.AttentionPath.auto), (3, kp.AttentionPath.decode),
                                       (19, kp.AttentionPath.auto), (6, kp.AttentionPath.prefill)])
@pytest.mark.parametrize("causal", [True, False])
def test_attention(mgr, cache_dtype, rows, path, causal):
    heads, kv_heads, d, capacity = 8, 2, 32, 200
    rng = np.random.default_rng(rows)
    q_values = rng.uniform(-1, 1, (rows, heads, d)).astype(np.float32)
    k_values = round_to(cache_dtype, rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    v_values = round_to(cache_dtype, rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    positions = (np.arange(rows) + 150).astype(np.uint32)
    q = mgr.tensor(q_values.ravel())
    k = tensor_of(mgr, cache_dtype, k_values.ravel())
    v = tensor_of(mgr, cache_dtype, v_values.ravel())
    pos = mgr.tensor_t(positions)
    out = mgr.tensor(np.zeros(q_values.size))
    op = kp.OpAttention([q, k, v, pos, out], rows=rows, heads=heads, kv_heads=kv_heads, head_dim=d,
                        kv_capacity=capacity, causal=causal, path=path)
    decode = path == kp.AttentionPath.decode or (path == kp.AttentionPath.auto and rows <= 4)
    # decode-flash-subgroup where the device has subgroup shuffles (pinned by
    # test_decode_head_128_groups), else decode-split.
    assert op.path().startswith("decode-" if decode else "prefill-tiled")
    run(mgr, [q, k, v, pos], op, [out])
    expected = attention_reference(q_values, k_values, v_values, positions, causal, heads // kv_heads)
    assert_near(out.data(), expected.ravel(), 2e-4)


@pytest.mark.parametrize("rows,path,kv_tile", [(1, kp.AttentionPath.auto, 0), (3, kp.AttentionPath.decode, 0),
                                                (19, kp.AttentionPath.prefill, 0), (70, kp.AttentionPath.prefill, 32)])
def test_attention_float16_out(mgr, rows, path, kv_tile):
    """out may be float16 where the caches are float16 (what the LLM runner's
    prompt steps hand their next product): the same result rounded once, on
    the decode, SIMT prefill and (where the device has it) cooperative-matrix
    prefill paths; with float32 caches it is refused."""
    heads, kv_heads, d, capacity = 8, 2, 64, 200
    rng = np.random.default_rng(rows + 1)
    q_values = rng.uniform(-1, 1, (rows, heads, d)).astype(np.float32)
    k_values = round_to("float16", rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    v_values = round_to("float16", rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    positions = (np.arange(rows) + 100).astype(np.uint32)
    q = mgr.tensor(q_values.ravel())
    k = tensor_of(mgr, "float16", k_values.ravel())
    v = tensor_of(mgr, "float16", v_values.ravel())
    pos = mgr.tensor_t(positions)
    out = tensor_of(mgr, "float16", np.zeros(q_values.size))
    op = kp.OpAttention([q, k, v, pos, out], rows=rows, heads=heads, kv_heads=kv_heads, head_dim=d,
                        kv_capacity=capacity, path=path, prefill_kv_tile=kv_tile)
    run(mgr, [q, k, v, pos], op, [out])
    expected = attention_reference(q_values, k_values, v_values, positions, True, heads // kv_heads)
    # f16's half unit over the f32 paths' 2e-4 (the cooperative-matrix
    # prefill: 2e-3 already).
    assert_near(floats_of(out), expected.ravel(), 2e-3 if op.path().startswith("prefill-coopmat-") else 1e-3)
    k32 = mgr.tensor(k_values.ravel().astype(np.float32))
    with pytest.raises(kp.Error, match="an f16 out needs f16 caches"):
        kp.OpAttention([q, k32, k32, pos, out], rows=rows, heads=heads, kv_heads=kv_heads, head_dim=d,
                       kv_capacity=capacity, path=path)


@pytest.mark.parametrize("head_dim,kv_heads", [(64, 4), (128, 2)])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("pinned", ["default", "asked", "simt"])
def test_prefill_on_each_path(mgr, monkeypatch, head_dim, kv_heads, causal, pinned):
    """The default prefill is the SIMT kernel; asked for (prefill_kv_tile),
    f16 caches at head sizes 64 and 128 take the cooperative-matrix prefill
    where the device has it (f16 q and weights: 2e-3), and the SIMT kernel
    where it does not or KOMPUTE_ENV_DISABLE=attention-coopmat."""
    if pinned == "simt":
        disable_paths(monkeypatch, "attention-coopmat")
    heads, rows, past = 8, 37, 11
    capacity = past + rows
    rng = np.random.default_rng(head_dim + kv_heads)
    q_values = rng.uniform(-1, 1, (rows, heads, head_dim)).astype(np.float32)
    k_values = round_to("float16", rng.uniform(-1, 1, capacity * kv_heads * head_dim)).reshape(capacity, kv_heads, head_dim)
    v_values = round_to("float16", rng.uniform(-1, 1, capacity * kv_heads * head_dim)).reshape(capacity, kv_heads, head_dim)
    positions = (np.arange(rows) + past).astype(np.uint32)
    q = mgr.tensor(q_values.ravel())
    k = tensor_of(mgr, "float16", k_values.ravel())
    v = tensor_of(mgr, "float16", v_values.ravel())
    pos = mgr.tensor_t(positions)
    out = mgr.tensor(np.zeros(q_values.size))
    op = kp.OpAttention([q, k, v, pos, out], rows=rows, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                        kv_capacity=capacity, causal=causal, path=kp.AttentionPath.prefill,
                        prefill_kv_tile=0 if pinned == "default" else 32)
    coopmat = op.path().startswith("prefill-coopmat-")
    # Every device with cooperative matrices known to us has the f16
    # 16x16x16 shape the kernel needs.
    cooperative = mgr.get_device_properties()["cooperative_matrix"]
    has_coopmat = cooperative["khr"] or cooperative["nv"]
    if pinned == "asked" and has_coopmat:
        assert coopmat, op.path()
    else:
        assert op.path() == "prefill-tiled"
    run(mgr, [q, k, v, pos], op, [out])
    expected = attention_reference(q_values, k_values, v_values, positions, causal, heads // kv_heads)
    assert_near(out.data(), expected.ravel(), 2e-3 if coopmat else 2e-4)


@pytest.mark.parametrize("chunk", [16, 64, 256])
def test_decode_chunk_sizes(mgr, chunk):
    heads, kv_heads, d, capacity = 4, 2, 16, 600
    rng = np.random.default_rng(chunk)
    q_values = rng.uniform(-1, 1, (1, heads, d)).astype(np.float32)
    k_values = round_to("float16", rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    v_values = round_to("float16", rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    q = mgr.tensor(q_values.ravel())
    k = tensor_of(mgr, "float16", k_values.ravel())
    v = tensor_of(mgr, "float16", v_values.ravel())
    pos = mgr.tensor_t(np.array([577], dtype=np.uint32))
    out = mgr.tensor(np.zeros(q_values.size))
    run(mgr, [q, k, v, pos], kp.OpAttention([q, k, v, pos, out], heads=heads, kv_heads=kv_heads, head_dim=d,
                                            kv_capacity=capacity, decode_chunk=chunk), [out])
    expected = attention_reference(q_values, k_values, v_values, [577], True, heads // kv_heads)
    assert_near(out.data(), expected.ravel(), 2e-4)
    with pytest.raises(kp.Error, match="decodeChunk = 48"):
        kp.OpAttention([q, k, v, pos, out], heads=heads, kv_heads=kv_heads, head_dim=d, kv_capacity=capacity,
                       decode_chunk=48)


@pytest.mark.parametrize("cache_dtype", ["float16", "float32"])
@pytest.mark.parametrize("group", [1, 4, 8])
@pytest.mark.parametrize("kv_offset", [0, 3])
@pytest.mark.parametrize("kernel", ["decode-flash-subgroup", "decode-split-subgroup"])
def test_decode_head_128_groups(mgr, monkeypatch, cache_dtype, group, kv_offset, kernel):
    # The benchmark's head size, an odd context length, rows starting at
    # multiples of 8 elements (16-byte f16 loads) or not; evaluated three
    # times with new queries, as the chunks' counters must be back at 0
    # after each; on the subgroup kernel and on the split kernel.
    if kernel == "decode-split-subgroup":
        disable_paths(monkeypatch, "attention-decode-flash")
    kv_heads, d, capacity, position = 2, 128, 203, 196
    heads = kv_heads * group
    rng = np.random.default_rng(group + kv_offset)
    q_values = rng.uniform(-1, 1, (1, heads, d)).astype(np.float32)
    k_values = round_to(cache_dtype, rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    v_values = round_to(cache_dtype, rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    pad = np.zeros(kv_offset, dtype=np.float32)
    q = mgr.tensor(q_values.ravel())
    k = tensor_of(mgr, cache_dtype, np.concatenate([pad, k_values.ravel()]))
    v = tensor_of(mgr, cache_dtype, np.concatenate([pad, v_values.ravel()]))
    pos = mgr.tensor_t(np.array([position], dtype=np.uint32))
    out = mgr.tensor(np.zeros(q_values.size))
    op = kp.OpAttention([q, k, v, pos, out], heads=heads, kv_heads=kv_heads, head_dim=d, kv_capacity=capacity,
                        kv_offset=kv_offset, decode_chunk=16)
    assert op.path() == kernel
    mgr.sequence().record(kp.OpSyncDevice([k, v, pos])).eval()
    seq = mgr.sequence()
    seq.record(kp.OpSyncDevice([q]))
    seq.record(op)
    seq.record(kp.OpSyncLocal([out]))
    for _ in range(3):
        seq.eval()
        expected = attention_reference(q_values, k_values, v_values, [position], True, group)
        assert_near(out.data(), expected.ravel(), 2e-4)
        q_values = rng.uniform(-1, 1, (1, heads, d)).astype(np.float32)
        q.data()[:] = q_values.ravel()


@pytest.mark.parametrize("cache_dtype", ["float16", "float32"])
@pytest.mark.parametrize("rows", [1, 12])
def test_unwritten_cache_positions_do_not_leak_into_the_output(mgr, cache_dtype, rows):
    # A fresh KV cache holds whatever its memory held before (NaN and Inf
    # patterns included): positions past every row's limit must not reach
    # the output, on either path (the runner caught the prefill tiles
    # weighting them by zero, which NaN survives).
    heads, kv_heads, d, capacity = 4, 2, 16, 64
    rng = np.random.default_rng(rows)
    q_values = rng.uniform(-1, 1, (rows, heads, d)).astype(np.float32)
    k_values = round_to(cache_dtype, rng.uniform(-1, 1, capacity * kv_heads * d)).reshape(capacity, kv_heads, d)
    v_values = k_values[::-1].copy()
    k_values[rows:], v_values[rows:] = np.nan, np.inf
    positions = np.arange(rows, dtype=np.uint32)
    q = mgr.tensor(q_values.ravel())
    k = tensor_of(mgr, cache_dtype, k_values.ravel())
    v = tensor_of(mgr, cache_dtype, v_values.ravel())
    pos = mgr.tensor_t(positions)
    out = mgr.tensor(np.zeros(q_values.size))
    run(mgr, [q, k, v, pos], kp.OpAttention([q, k, v, pos, out], rows=rows, heads=heads, kv_heads=kv_heads,
                                            head_dim=d, kv_capacity=capacity), [out])
    expected = attention_reference(q_values, k_values, v_values, positions, True, heads // kv_heads)
    assert_near(out.data(), expected.ravel(), 2e-4)


def test_recorded_decode_step_follows_the_position(mgr):
    heads, kv_heads, d, capacity = 4, 1, 16, 32
    rng = np.random.default_rng(5)
    q = mgr.tensor(np.zeros(heads * d), kp.MemoryTypes.deviceAndHost)
    k_new = mgr.tensor(np.zeros(kv_heads * d), kp.MemoryTypes.deviceAndHost)
    v_new = mgr.tensor(np.zeros(kv_heads * d), kp.MemoryTypes.deviceAndHost)
    position = mgr.tensor_t(np.zeros(1, dtype=np.uint32), kp.MemoryTypes.deviceAndHost)
    k_cache = mgr.tensor_t(np.zeros(capacity * kv_heads * d, dtype=np.float16))
    v_cache = mgr.tensor_t(np.zeros(capacity * kv_heads * d, dtype=np.float16))
    out = mgr.tensor(np.zeros(heads * d), kp.MemoryTypes.deviceAndHost)
    seq = mgr.sequence()
    seq.record(kp.OpSetRows([k_new, k_cache, position], cols=kv_heads * d))
    seq.record(kp.OpSetRows([v_new, v_cache, position], cols=kv_heads * d))
    seq.record(kp.OpAttention([q, k_cache, v_cache, position, out], heads=heads, kv_heads=kv_heads, head_dim=d,
                              kv_capacity=capacity))
    ks, vs = [], []
    for step in range(10):
        qv = rng.uniform(-1, 1, heads * d).astype(np.float32)
        kv = rng.uniform(-1, 1, kv_heads * d).astype(np.float16).astype(np.float32)
        vv = rng.uniform(-1, 1, kv_heads * d).astype(np.float16).astype(np.float32)
        q.data()[:] = qv
        k_new.data()[:] = kv
        v_new.data()[:] = vv
        position.data()[:] = step
        ks.append(kv)
        vs.append(vv)
        seq.eval()
        expected = attention_reference(qv.reshape(1, heads, d), np.array(ks).reshape(-1, kv_heads, d),
                                       np.array(vs).reshape(-1, kv_heads, d), [step], True, heads)
        assert_near(out.data(), expected.ravel(), 2e-4)


def test_bad_input_raises_kp_error(mgr):
    q = mgr.tensor(np.zeros(64))
    cache = mgr.tensor_t(np.zeros(256, dtype=np.float16))
    pos = mgr.tensor_t(np.zeros(1, dtype=np.uint32))
    with pytest.raises(kp.Error, match="kv_heads|kvHeads = 3 must divide"):
        kp.OpAttention([q, cache, cache, pos, q], heads=4, kv_heads=3, head_dim=16, kv_capacity=8)
    with pytest.raises(kp.Error, match="'kCache' has 256 elements"):
        kp.OpAttention([q, cache, cache, pos, q], heads=4, kv_heads=2, head_dim=16, kv_capacity=9)
    with pytest.raises(kp.Error, match="'positions' holds eFloat"):
        kp.OpRoPE([q, q, q], heads=4, head_dim=16)
