"""The element-wise kernels (OpUnary with its casts, OpBinary, OpFma,
OpSwiGLU) against numpy, over float32/float16/bfloat16 tensors, and the
bfloat16 data type's numpy views."""

import subprocess
import sys

import numpy as np
import pytest

import kp

from kernel_helpers import FLOAT_DTYPES, TOLERANCE, TYPE_PAIRS, assert_near, floats_of, round_to, run, tensor_of

UNARY = {
    kp.UnaryOp.cast: lambda x: x,
    kp.UnaryOp.scale: lambda x: 0.5 * x,
    kp.UnaryOp.relu: lambda x: np.maximum(x, 0),
    kp.UnaryOp.gelu: lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    kp.UnaryOp.silu: lambda x: x / (1 + np.exp(-x)),
    kp.UnaryOp.sigmoid: lambda x: 1 / (1 + np.exp(-x)),
    kp.UnaryOp.tanh: np.tanh,
    kp.UnaryOp.exp: np.exp,
    kp.UnaryOp.neg: lambda x: -x,
    kp.UnaryOp.abs: np.abs,
    kp.UnaryOp.sqrt: lambda x: np.sqrt(np.abs(x)),
    kp.UnaryOp.square: lambda x: x * x,
}


@pytest.mark.parametrize("x_dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("y_dtype", FLOAT_DTYPES)
def test_unary_ops(mgr, x_dtype, y_dtype):
    rng = np.random.default_rng(1)
    n = 259  # one workgroup and a few more
    for op, reference in UNARY.items():
        x_values = round_to(x_dtype, rng.uniform(-4, 4, n))
        if op == kp.UnaryOp.sqrt:
            x_values = np.abs(x_values)
        x = tensor_of(mgr, x_dtype, x_values)
        y = tensor_of(mgr, y_dtype, np.zeros(n))
        run(mgr, [x], kp.OpUnary([x, y], op=op, scale=0.5), [y])
        expected = round_to(y_dtype, reference(x_values.astype(np.float64)))
        assert_near(floats_of(y), expected, TOLERANCE[y_dtype], floor=1e-3)


def test_casts_match_numpy_rounding(mgr):
    values = np.array([0, 1, 1.0009765625, 1.00048828125, 65504, 3.14159265, -2.71828, 1.00390625,
                       1.005859375, 300.5, -1e30, np.inf, -np.inf], dtype=np.float32)
    for x_dtype in FLOAT_DTYPES:
        for y_dtype in FLOAT_DTYPES:
            source = round_to(x_dtype, values)
            x = tensor_of(mgr, x_dtype, source)
            y = tensor_of(mgr, y_dtype, np.zeros(len(values)))
            run(mgr, [x], kp.OpUnary([x, y]), [y])
            with np.errstate(over="ignore"):
                expected = round_to(y_dtype, source)
            np.testing.assert_array_equal(floats_of(y), expected, err_msg=f"{x_dtype} -> {y_dtype}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", [kp.BinaryOp.add, kp.BinaryOp.sub, kp.BinaryOp.mul, kp.BinaryOp.div])
def test_binary_ops_with_broadcast(mgr, dtype, op):
    rng = np.random.default_rng(2)
    rows, cols = 3, 257
    a_values = round_to(dtype, rng.uniform(-3, 3, rows * cols))
    b_values = round_to(dtype, rng.uniform(0.5, 2, cols))
    a = tensor_of(mgr, dtype, a_values)
    b = tensor_of(mgr, dtype, b_values)
    y = tensor_of(mgr, dtype, np.zeros(rows * cols))
    run(mgr, [a, b], kp.OpBinary([a, b, y], op=op, b_count=cols), [y])
    ops = {kp.BinaryOp.add: np.add, kp.BinaryOp.sub: np.subtract, kp.BinaryOp.mul: np.multiply,
           kp.BinaryOp.div: np.divide}
    expected = ops[op](a_values.reshape(rows, cols), b_values).ravel()
    assert_near(floats_of(y), round_to(dtype, expected), TOLERANCE[dtype], floor=1e-2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fma_and_swiglu(mgr, dtype):
    rng = np.random.default_rng(3)
    n = 1000
    a_v, b_v, c_v = (round_to(dtype, rng.uniform(-3, 3, n)) for _ in range(3))
    a, b, c = (tensor_of(mgr, dtype, v) for v in (a_v, b_v, c_v))
    y = tensor_of(mgr, dtype, np.zeros(n))
    run(mgr, [a, b, c], kp.OpFma([a, b, c, y]), [y])
    assert_near(floats_of(y), round_to(dtype, a_v * b_v + c_v), TOLERANCE[dtype], floor=1e-2)
    run(mgr, [], kp.OpSwiGLU([a, b, y]), [y])
    expected = a_v / (1 + np.exp(-a_v.astype(np.float64))) * b_v
    assert_near(floats_of(y), round_to(dtype, expected), TOLERANCE[dtype], floor=1e-2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_swiglu_over_the_halves_of_rows(mgr, dtype):
    """gate and up as the two halves of each row of one [rows][2 cols] tensor
    (cols=, row strides), y packed, then strided."""
    rng = np.random.default_rng(5)
    rows, cols = 9, 40
    both_v = round_to(dtype, rng.uniform(-3, 3, (rows, 2 * cols)))
    both = tensor_of(mgr, dtype, both_v.ravel())
    gate, up = both_v[:, :cols].astype(np.float64), both_v[:, cols:]
    expected = (gate / (1 + np.exp(-gate)) * up).ravel()
    y = tensor_of(mgr, np.float32, np.zeros(rows * cols))
    run(mgr, [both], kp.OpSwiGLU([both, both, y], count=rows * cols, cols=cols, up_offset=cols,
                                 gate_row_stride=2 * cols, up_row_stride=2 * cols), [y])
    assert_near(floats_of(y), expected, TOLERANCE[dtype], floor=1e-2)
    wide = tensor_of(mgr, np.float32, np.full(rows * 2 * cols, -1.0))
    run(mgr, [wide], kp.OpSwiGLU([both, both, wide], count=rows * cols, cols=cols, up_offset=cols,
                             gate_row_stride=2 * cols, up_row_stride=2 * cols, y_row_stride=2 * cols), [wide])
    got = floats_of(wide).reshape(rows, 2 * cols)
    assert_near(got[:, :cols].ravel(), expected, TOLERANCE[dtype], floor=1e-2)
    assert np.all(got[:, cols:] == -1.0)
    with pytest.raises(kp.Error, match="is not whole rows of cols"):
        kp.OpSwiGLU([both, both, y], count=rows * cols - 1, cols=cols)


@pytest.mark.parametrize("dtype,y_dtype", TYPE_PAIRS)
def test_binary_fma_and_swiglu_into_another_dtype(mgr, dtype, y_dtype):
    rng = np.random.default_rng(4)
    n = 300
    a_v, b_v, c_v = (round_to(dtype, rng.uniform(-3, 3, n)) for _ in range(3))
    a, b, c = (tensor_of(mgr, dtype, v) for v in (a_v, b_v, c_v))
    y = tensor_of(mgr, y_dtype, np.zeros(n))
    tol = TOLERANCE[y_dtype]
    run(mgr, [a, b, c], kp.OpBinary([a, b, y], op=kp.BinaryOp.mul), [y])
    assert_near(floats_of(y), round_to(y_dtype, a_v * b_v), tol, floor=1e-2)
    run(mgr, [], kp.OpFma([a, b, c, y]), [y])
    assert_near(floats_of(y), round_to(y_dtype, a_v * b_v + c_v), tol, floor=1e-2)
    run(mgr, [], kp.OpSwiGLU([a, b, y]), [y])
    expected = a_v / (1 + np.exp(-a_v.astype(np.float64))) * b_v
    assert_near(floats_of(y), round_to(y_dtype, expected), tol, floor=1e-2)


def test_offsets_and_in_place(mgr):
    values = np.linspace(-1, 1, 64, dtype=np.float32)
    t = mgr.tensor(values)
    run(mgr, [t], kp.OpUnary([t, t], op=kp.UnaryOp.relu, count=32, x_offset=16, y_offset=16), [t])
    expected = values.copy()
    expected[16:48] = np.maximum(values[16:48], 0)
    np.testing.assert_array_equal(t.data(), expected)


def test_kernel_op_reports_its_path(mgr):
    x = mgr.tensor([1, 2, 3])
    op = kp.OpUnary([x, x], op=kp.UnaryOp.neg)
    assert isinstance(op, kp.KernelOp)
    assert op.name() == "OpUnary"
    assert op.path() == "element-wise"
    assert len(op.algorithms()) == 1


def test_bad_input_raises_kp_error(mgr):
    f = mgr.tensor(np.zeros(16))
    small = mgr.tensor(np.zeros(8))
    ints = mgr.tensor_t(np.zeros(16, dtype=np.int32))
    with pytest.raises(kp.Error, match="needs 2 tensors"):
        kp.OpUnary([f])
    with pytest.raises(kp.Error, match="'x' holds eInt"):
        kp.OpUnary([ints, f])
    with pytest.raises(kp.Error, match="'y' has 8 elements"):
        kp.OpUnary([f, small], count=16)
    with pytest.raises(kp.Error, match="must divide"):
        kp.OpBinary([f, small, f], b_count=5)
    with pytest.raises(TypeError):
        kp.OpUnary([f, f], 16)  # parameters are keyword-only
    other = kp.Manager()
    try:
        foreign = other.tensor(np.zeros(16))
        with pytest.raises(kp.Error, match="another Manager"):
            kp.OpUnary([f, foreign])
    finally:
        other.destroy()


# --- The bfloat16 data type ---------------------------------------------------


def test_bfloat16_tensors_round_and_view(mgr):
    values = np.array([1.0, 1.00390625, 1.005859375, -2.5, 3.0e38], dtype=np.float32)
    t = mgr.tensor_t(values, dtype=kp.DataTypes.bfloat16)
    assert t.data_type() == kp.DataTypes.bfloat16
    np.testing.assert_array_equal(floats_of(t), round_to("bfloat16", values))
    # uint16 data is taken as the raw bits.
    bits = mgr.tensor_t(np.array([0x3F80, 0xC020], dtype=np.uint16), dtype="bfloat16")
    np.testing.assert_array_equal(floats_of(bits), [1.0, -2.5])
    # set_data rounds floats too.
    bits.set_data(np.array([0.5, 2.0], dtype=np.float32))
    np.testing.assert_array_equal(floats_of(bits), [0.5, 2.0])


def test_bfloat16_views_are_ml_dtypes_where_installed(mgr):
    t = mgr.tensor_t(np.ones(4, dtype=np.float32), dtype=kp.DataTypes.bfloat16)
    try:
        import ml_dtypes
    except ImportError:
        assert t.data().dtype == np.uint16
    else:
        assert t.data().dtype == ml_dtypes.bfloat16
        back = mgr.tensor_t(np.array([1.5, -3], dtype=ml_dtypes.bfloat16))
        assert back.data_type() == kp.DataTypes.bfloat16
        np.testing.assert_array_equal(floats_of(back), [1.5, -3])


def test_bfloat16_views_are_uint16_without_ml_dtypes():
    # In a fresh interpreter where ml_dtypes cannot be imported.
    code = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import numpy as np, kp\n"
        "m = kp.Manager()\n"
        "t = m.tensor_t(np.array([1.0, -2.5], dtype=np.float32), dtype=kp.DataTypes.bfloat16)\n"
        "assert t.data().dtype == np.uint16, t.data().dtype\n"
        "assert t.data().tolist() == [0x3F80, 0xC020], t.data()\n"
        "m.destroy()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
