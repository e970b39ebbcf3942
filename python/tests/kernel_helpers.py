"""Helpers of the kernel-library suites (test_kernels_*.py): tensors of
float32 / float16 / bfloat16 made from numpy arrays, results read back as
float32, host rounding to a dtype, tolerances per dtype, and running one
operation between the syncs it needs."""

import numpy as np

import kp

FLOAT_DTYPES = ["float32", "float16", "bfloat16"]
# (x, y) pairs of two different float types: results written in another type.
TYPE_PAIRS = [(x, y) for x in FLOAT_DTYPES for y in FLOAT_DTYPES if x != y]

# Relative tolerances of results stored in each dtype (about two units in
# the last place of its mantissa).
TOLERANCE = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


def bf16_round(values):
    """float32 values rounded to the nearest bfloat16 (ties to even)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return rounded.astype(np.uint32).view(np.float32)


def round_to(dtype, values):
    values = np.asarray(values, dtype=np.float32)
    if dtype == "float16":
        with np.errstate(over="ignore"):  # beyond 65504: infinity, as on the device
            return values.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return bf16_round(values)
    return values.copy()


def tensor_of(mgr, dtype, values):
    """A tensor of `dtype` ("float32", "float16", "bfloat16") holding values."""
    values = np.asarray(values, dtype=np.float32)
    if dtype == "bfloat16":
        return mgr.tensor_t(values, dtype=kp.DataTypes.bfloat16)
    return mgr.tensor_t(values.astype(dtype))


def floats_of(tensor):
    """The host view of a float tensor as float32 (bfloat16: its bits widened)."""
    data = tensor.data()
    if tensor.data_type() == kp.DataTypes.bfloat16:
        return (data.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return data.astype(np.float32)


def run(mgr, inputs, op, outputs):
    """OpSyncDevice(inputs), op, OpSyncLocal(outputs), evaluated; the sequence."""
    seq = mgr.sequence()
    if inputs:
        seq.record(kp.OpSyncDevice(inputs))
    seq.record(op)
    seq.record(kp.OpSyncLocal(outputs))
    seq.eval()
    return seq


def assert_near(actual, expected, tol, floor=1.0):
    """|actual - expected| <= tol * (|expected| + floor), element-wise."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * floor)
