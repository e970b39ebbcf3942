"""GPU-side dependencies between sequences (Sequence.wait_for), submission
counts, and the queue helpers of Manager (compute_queue_families,
queue_count, queue_family_index)."""

import numpy as np
import pytest

import kp
from shaders import compile_cached

# values[i] = values[i] * MUL + ADD, after a busy loop that makes the
# dispatch long enough for a missing dependency to show.
STEP = """
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer Source { float source[]; };
layout(set = 0, binding = 1) writeonly buffer Target { float target[]; };
layout(constant_id = 0) const float MUL = 1.0;
layout(constant_id = 1) const float ADD = 0.0;
layout(constant_id = 2) const float SPIN = 0.0;
void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = source[i];
    float acc = 0.0;
    for (int k = 0; k < int(SPIN); ++k) { acc += sin(float(k) * v); }
    target[i] = v * MUL + ADD + acc * 0.0;
}
"""


def step(mgr, source, target, mul, add, spin=20000):
    return mgr.algorithm([source, target], compile_cached(STEP), (source.size(), 1, 1),
                         spec_consts=[mul, add, spin])


def test_wait_for_chain(mgr):
    values = np.arange(64, dtype=np.float32)
    x = mgr.tensor(values)
    y = mgr.tensor(np.zeros(64))
    z = mgr.tensor(np.zeros(64))
    w = mgr.tensor(np.zeros(64))
    a = (mgr.sequence()
         .record(kp.OpSyncDevice([x]))
         .record(kp.OpAlgoDispatch(step(mgr, x, y, 2, 1))))
    b = mgr.sequence().record(kp.OpAlgoDispatch(step(mgr, y, z, 3, 0)))
    c = (mgr.sequence()
         .record(kp.OpAlgoDispatch(step(mgr, z, w, 1, -5)))
         .record(kp.OpSyncLocal([w])))
    assert b.wait_for(a) is b
    assert c.wait_for(b) is c
    assert (a.submission_count(), b.submission_count(), c.submission_count()) == (0, 0, 0)
    a.eval_async()
    b.eval_async()
    c.eval_async()
    c.eval_await()  # only the last one is awaited
    np.testing.assert_array_equal(w.data(), (values * 2 + 1) * 3 - 5)
    a.eval_await()
    b.eval_await()
    assert (a.submission_count(), b.submission_count(), c.submission_count()) == (1, 1, 1)

    # Again with new input: the dependencies stay.
    x.data()[:] = -values
    for sequence in (a, b, c):
        sequence.eval_async()
    c.eval_await()
    np.testing.assert_array_equal(w.data(), (-values * 2 + 1) * 3 - 5)
    a.eval_await()
    b.eval_await()
    assert c.submission_count() == 2

    # clear_waits drops them; a synchronous chain still works.
    b.clear_waits()
    c.clear_waits()
    a.eval()
    b.eval()
    c.eval()
    np.testing.assert_array_equal(w.data(), (-values * 2 + 1) * 3 - 5)
    assert c.submission_count() == 3


def test_wait_for_a_sequence_never_submitted(mgr):
    x = mgr.tensor([1.0, 2.0])
    y = mgr.tensor([0.0, 0.0])
    never = mgr.sequence()
    sequence = (mgr.sequence()
                .record(kp.OpSyncDevice([x]))
                .record(kp.OpAlgoDispatch(step(mgr, x, y, 10, 0, spin=0)))
                .record(kp.OpSyncLocal([y])))
    sequence.wait_for(never).eval()
    np.testing.assert_array_equal(y.data(), [10, 20])


def test_compute_queue_families():
    families = kp.Manager.compute_queue_families(1)
    assert isinstance(families, list) and len(families) == 1
    with kp.Manager(0, families) as manager:
        assert manager.queue_count() == 1
        assert manager.queue_family_index(0) == families[0]
        if "llvmpipe" in manager.get_device_properties()["device_name"]:
            assert families == [0]
    with pytest.raises(kp.Error):
        kp.Manager.compute_queue_families(100000)


def test_queue_helpers_of_the_default_manager(mgr):
    assert mgr.queue_count() == 1
    assert isinstance(mgr.queue_family_index(0), int)
    with pytest.raises((kp.Error, IndexError)):
        mgr.queue_family_index(5)
