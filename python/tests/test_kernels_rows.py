"""The row kernels (OpReduce, OpSoftmax, OpRMSNorm, OpLayerNorm) against
numpy over float32/float16/bfloat16, on both reduction paths (subgroup and
shared memory: KOMPUTE_ENV_DISABLE=subgroup)."""

import numpy as np
import pytest

import kp

from disable_paths import disable_paths
from kernel_helpers import FLOAT_DTYPES, TOLERANCE, TYPE_PAIRS, assert_near, floats_of, round_to, run, tensor_of

SHAPES = [(1, 1), (3, 5), (2, 257), (5, 1000), (1, 4096)]


@pytest.fixture(params=["default", "shared-memory"])
def path(request, monkeypatch):
    """The reduction path operations are built with."""
    disable_paths(monkeypatch, "subgroup" if request.param == "shared-memory" else "")
    return request.param


def check_path(op, path):
    assert op.path() in ("subgroup", "shared-memory")
    if path == "shared-memory":
        assert op.path() == "shared-memory"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("rows,cols", SHAPES)
def test_reduce(mgr, path, dtype, rows, cols):
    rng = np.random.default_rng(rows * cols)
    x_values = round_to(dtype, rng.uniform(-2, 2, rows * cols)).reshape(rows, cols)
    x = tensor_of(mgr, dtype, x_values.ravel())
    for op, reference in [(kp.ReduceOp.sum, np.sum), (kp.ReduceOp.mean, np.mean), (kp.ReduceOp.max, np.max)]:
        y = mgr.tensor(np.zeros(rows))
        reduce = kp.OpReduce([x, y], op=op, rows=rows, cols=cols)
        check_path(reduce, path)
        run(mgr, [x], reduce, [y])
        expected = reference(x_values.astype(np.float64), axis=1)
        np.testing.assert_allclose(y.data(), expected, rtol=1e-4, atol=1e-4 * (1 + cols * 1e-3))
    indices = mgr.tensor_t(np.zeros(rows, dtype=np.uint32))
    run(mgr, [x], kp.OpReduce([x, indices], op=kp.ReduceOp.argmax, rows=rows, cols=cols), [indices])
    np.testing.assert_array_equal(indices.data(), np.argmax(x_values, axis=1))


def test_argmax_of_one_long_row(mgr):
    # A decode step's logits, over up to 1024 workgroups, 7, one and the
    # device's choice: the first of equal maxima every time.
    cols = 128256
    rng = np.random.default_rng(5)
    values = rng.uniform(-4, 4, cols).astype(np.float32)
    values[[100000, 5000, 127000]] = 9.0
    values[3] = np.nan
    x = mgr.tensor(values)
    y = mgr.tensor_t(np.zeros(1, dtype=np.uint32))
    for groups in (1024, 7, 1, 0):  # 0: the device's choice
        op = kp.OpReduce([x, y], op=kp.ReduceOp.argmax, rows=1, cols=cols, argmax_groups=groups)
        if groups != 0:
            assert op.path().startswith("split-") == (groups > 1)
        run(mgr, [x], op, [y])
        assert y.data()[0] == 5000
    with pytest.raises(kp.Error, match="argmaxGroups = 2000 is more than 1024"):
        kp.OpReduce([x, y], op=kp.ReduceOp.argmax, rows=1, cols=cols, argmax_groups=2000)


def softmax_reference(x, scale, causal, rows_per_matrix, shift):
    rows, cols = x.shape
    z = scale * x.astype(np.float64)
    if causal:
        limit = (np.arange(rows) % rows_per_matrix) + shift
        z = np.where(np.arange(cols)[None, :] <= limit[:, None], z, -np.inf)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("rows,cols", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_softmax(mgr, path, dtype, rows, cols, causal):
    rng = np.random.default_rng(rows + cols)
    x_values = round_to(dtype, rng.uniform(-30, 90, rows * cols)).reshape(rows, cols)
    x = tensor_of(mgr, dtype, x_values.ravel())
    y = tensor_of(mgr, dtype, np.zeros(rows * cols))
    per_matrix = 2 if rows > 2 else rows
    op = kp.OpSoftmax([x, y], rows=rows, cols=cols, scale=0.7, causal=causal,
                      rows_per_matrix=per_matrix, causal_shift=1)
    check_path(op, path)
    run(mgr, [x], op, [y])
    expected = softmax_reference(x_values, 0.7, causal, per_matrix, 1)
    assert_near(floats_of(y).reshape(rows, cols), round_to(dtype, expected), 4 * TOLERANCE[dtype], floor=1e-3)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("rows,cols", SHAPES)
def test_rmsnorm_and_layernorm(mgr, path, dtype, rows, cols):
    rng = np.random.default_rng(cols)
    x_values = round_to(dtype, rng.uniform(2, 6, rows * cols)).reshape(rows, cols)
    weight = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    bias = rng.uniform(-1, 1, cols).astype(np.float32)
    x = tensor_of(mgr, dtype, x_values.ravel())
    w = mgr.tensor(weight)
    b = mgr.tensor(bias)
    y = tensor_of(mgr, dtype, np.zeros(rows * cols))
    x64 = x_values.astype(np.float64)
    eps = 1e-5

    op = kp.OpRMSNorm([x, w, y], rows=rows, cols=cols, eps=eps)
    check_path(op, path)
    run(mgr, [x, w], op, [y])
    expected = x64 / np.sqrt((x64**2).mean(axis=1, keepdims=True) + eps) * weight
    tol = max(TOLERANCE[dtype], 2e-4)
    assert_near(floats_of(y).reshape(rows, cols), round_to(dtype, expected), tol, floor=1e-2)

    run(mgr, [b], kp.OpLayerNorm([x, w, b, y], rows=rows, cols=cols, eps=eps), [y])
    centred = x64 - x64.mean(axis=1, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + eps) * weight + bias
    assert_near(floats_of(y).reshape(rows, cols), round_to(dtype, expected), tol, floor=1e-2)


@pytest.mark.parametrize("dtype,y_dtype", TYPE_PAIRS)
def test_rmsnorm_and_layernorm_into_another_dtype(mgr, dtype, y_dtype):
    rows, cols = 3, 4096
    rng = np.random.default_rng(5)
    x_values = round_to(dtype, rng.uniform(-2, 6, rows * cols)).reshape(rows, cols)
    weight = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    bias = rng.uniform(-1, 1, cols).astype(np.float32)
    x, w, b = tensor_of(mgr, dtype, x_values.ravel()), mgr.tensor(weight), mgr.tensor(bias)
    y = tensor_of(mgr, y_dtype, np.zeros(rows * cols))
    x64 = x_values.astype(np.float64)
    tol = max(TOLERANCE[y_dtype], 2e-4)
    run(mgr, [x, w], kp.OpRMSNorm([x, w, y], rows=rows, cols=cols, eps=1e-5), [y])
    expected = x64 / np.sqrt((x64**2).mean(axis=1, keepdims=True) + 1e-5) * weight
    assert_near(floats_of(y).reshape(rows, cols), round_to(y_dtype, expected), tol, floor=1e-2)
    run(mgr, [b], kp.OpLayerNorm([x, w, b, y], rows=rows, cols=cols, eps=1e-5), [y])
    centred = x64 - x64.mean(axis=1, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5) * weight + bias
    assert_near(floats_of(y).reshape(rows, cols), round_to(y_dtype, expected), tol, floor=1e-2)


def test_rmsnorm_in_place_without_weight(mgr):
    values = np.random.default_rng(0).uniform(-1, 1, 3 * 100).astype(np.float32)
    t = mgr.tensor(values)
    run(mgr, [t], kp.OpRMSNorm([t, t], rows=3, cols=100, eps=1e-6), [t])
    rows = values.reshape(3, 100).astype(np.float64)
    expected = rows / np.sqrt((rows**2).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(t.data().reshape(3, 100), expected, rtol=1e-5, atol=1e-6)


def test_rmsnorm_per_head_in_fused_rows(mgr):
    # Qwen3's key norm: the key heads of rows [q | k | v], in place.
    rows, q_heads, kv_heads, head_dim = 3, 4, 2, 16
    width = (q_heads + 2 * kv_heads) * head_dim
    values = np.random.default_rng(2).uniform(-2, 2, rows * width).astype(np.float32)
    weight = np.random.default_rng(3).uniform(0.5, 1.5, head_dim).astype(np.float32)
    t = mgr.tensor(values)
    w = mgr.tensor(weight)
    run(mgr, [t, w], kp.OpRMSNorm([t, w, t], rows=rows, cols=head_dim, heads=kv_heads, eps=1e-6,
                                  x_row_stride=width, y_row_stride=width, x_offset=q_heads * head_dim,
                                  y_offset=q_heads * head_dim), [t])
    expected = values.reshape(rows, width).astype(np.float64)
    keys = expected[:, q_heads * head_dim:(q_heads + kv_heads) * head_dim].reshape(rows, kv_heads, head_dim)
    keys = keys / np.sqrt((keys**2).mean(axis=2, keepdims=True) + 1e-6) * weight
    expected[:, q_heads * head_dim:(q_heads + kv_heads) * head_dim] = keys.reshape(rows, -1)
    np.testing.assert_allclose(t.data().reshape(rows, width), expected, rtol=1e-5, atol=1e-5)

    # Query and key heads in one operation, each head with its own weight.
    per_head = np.random.default_rng(4).uniform(0.5, 1.5, (q_heads + kv_heads, head_dim)).astype(np.float32)
    w2 = mgr.tensor(per_head.ravel())
    before = t.data().reshape(rows, width).astype(np.float64)
    run(mgr, [t, w2], kp.OpRMSNorm([t, w2, t], rows=rows, cols=head_dim, heads=q_heads + kv_heads, eps=1e-6,
                                   x_row_stride=width, y_row_stride=width, weight_head_stride=head_dim), [t])
    qk = before[:, :(q_heads + kv_heads) * head_dim].reshape(rows, q_heads + kv_heads, head_dim)
    qk = qk / np.sqrt((qk**2).mean(axis=2, keepdims=True) + 1e-6) * per_head
    before[:, :(q_heads + kv_heads) * head_dim] = qk.reshape(rows, -1)
    np.testing.assert_allclose(t.data().reshape(rows, width), before, rtol=1e-5, atol=1e-5)


def test_bad_input_raises_kp_error(mgr):
    x = mgr.tensor(np.zeros(64))
    small = mgr.tensor(np.zeros(4))
    with pytest.raises(kp.Error, match="'weight' has 4 elements"):
        kp.OpRMSNorm([x, small, x], rows=8, cols=8)
    with pytest.raises(kp.Error, match="'y' holds eFloat"):
        kp.OpReduce([x, small], op=kp.ReduceOp.argmax, rows=4, cols=8)
    with pytest.raises(kp.Error, match="9 rows of 8"):
        kp.OpSoftmax([x, x], rows=9, cols=8)
    with pytest.raises(TypeError):
        kp.OpSoftmax([x, x])  # cols is required
