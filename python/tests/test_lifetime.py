"""Lifetimes in Python: every destruction order of a manager, a sequence, an
algorithm, a tensor, an image and a recorded operation; objects held only
by recorded operations; numpy views that outlive what they view; and the end
of the interpreter with everything still alive."""

import gc
import itertools
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kp
from shaders import compile_cached

# values[i] += pixel i of a 2 x 2 image.
ADD_IMAGE = """
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
layout(set = 0, binding = 1, r32f) uniform image2D pixels;
void main() {
    uint i = gl_GlobalInvocationID.x;
    values[i] += imageLoad(pixels, ivec2(i % 2, i / 2)).r;
}
"""


def test_destroy_returns_when_a_recorded_temporary_holds_the_last_reference():
    # The repro of issue 11 in Python: this hung in Manager.destroy().
    m = kp.Manager()
    s = m.sequence()
    s.record(kp.OpSyncDevice([m.tensor([1, 2, 3])]))
    m.destroy()
    assert not s.is_init()
    with pytest.raises(kp.DestroyedError):
        s.eval()


def test_the_interpreter_exits_with_recorded_temporaries_alive():
    script = textwrap.dedent(
        """
        import kp
        m = kp.Manager()
        s = m.sequence()
        s.record(kp.OpSyncDevice([m.tensor([1, 2, 3])]))
        a = m.algorithm([m.tensor([1, 2])], kp.compile_source('''
            #version 450
            layout(local_size_x = 1) in;
            layout(set = 0, binding = 0) buffer V { float v[]; };
            void main() { v[gl_GlobalInvocationID.x] += 1.0; }
        '''))
        s.record(kp.OpAlgoDispatch(a)).eval_async()
        view = m.tensor([4, 5, 6]).data()
        print("done")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("done")


def test_an_operation_whose_tensors_hold_the_last_manager_reference_can_be_deleted():
    # Each tensor keeps its Manager alive. Deleting the operation last
    # drops the tensors from inside the algorithm's destructor, which
    # destroys the Manager there: that waited for the algorithm itself and
    # hung. In a subprocess, so that a hang fails the test.
    script = textwrap.dedent(
        """
        import numpy as np
        import kp
        m = kp.Manager()
        x = m.tensor(np.arange(8, dtype=np.float32))
        y = m.tensor(np.zeros(8, dtype=np.float32))
        op = kp.OpUnary([x, y], op=kp.UnaryOp.neg)
        m.sequence().eval(kp.OpSyncDevice([x])).eval(op).eval(kp.OpSyncLocal([y]))
        assert y.data().tolist() == [-v for v in range(8)], y.data()
        del m, x, y
        del op
        print("deleted")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("deleted")


def test_an_algorithm_held_only_by_its_dispatch(mgr):
    tensor = mgr.tensor([1, 2])
    shader = compile_cached(
        """
        #version 450
        layout(local_size_x = 1) in;
        layout(set = 0, binding = 0) buffer V { float v[]; };
        void main() { v[gl_GlobalInvocationID.x] += 10.0; }
        """
    )
    s = mgr.sequence()
    s.record(kp.OpSyncDevice([tensor]))
    s.record(kp.OpAlgoDispatch(mgr.algorithm([tensor], shader)))
    s.record(kp.OpSyncLocal([tensor]))
    s.eval().eval()
    assert tensor.data().tolist() == [21, 22]
    live = mgr.pipeline_stats()["live_pipelines"]
    del s  # the algorithm goes with its operation
    gc.collect()
    assert mgr.pipeline_stats()["live_pipelines"] == live - 1


# --- numpy views -------------------------------------------------------------------


def test_a_view_stays_readable_after_the_manager_is_destroyed():
    m = kp.Manager()
    tensor = m.tensor([1, 2, 3])
    view = tensor.data()
    buffer = memoryview(tensor)
    array = np.asarray(tensor)
    image = m.image(np.arange(4, dtype=np.float32), 2, 2, 1)
    pixels = image.data_hwc()
    m.destroy()
    # The memory stays mapped while the views live: no SIGSEGV.
    assert view.tolist() == [1, 2, 3]
    assert buffer.tolist() == [1, 2, 3]
    assert array.tolist() == [1, 2, 3]
    assert pixels.ravel().tolist() == [0, 1, 2, 3]
    view[0] = 7  # harmless: the memory is nobody else's
    assert array[0] == 7
    buffer.release()
    # New views of the destroyed objects are refused.
    with pytest.raises(kp.DestroyedError):
        tensor.data()
    with pytest.raises(kp.DestroyedError):
        np.asarray(tensor)
    with pytest.raises(kp.DestroyedError):
        memoryview(tensor)
    with pytest.raises(kp.DestroyedError):
        image.data()
    del view, array, pixels
    gc.collect()


def test_a_view_of_a_destroyed_tensor_keeps_its_memory_to_itself(mgr):
    tensor = mgr.tensor(np.arange(64, dtype=np.float32))
    view = tensor.data()
    tensor.destroy()
    # New tensors do not get the memory that the view still shows.
    others = [mgr.tensor(np.full(64, 100 + i, dtype=np.float32)) for i in range(8)]
    assert view.tolist() == list(range(64))
    assert all(o.data()[0] == 100 + i for i, o in enumerate(others))


def test_asarray_of_a_destroyed_tensor_raises(mgr):
    tensor = mgr.tensor([1, 2, 3])
    assert np.asarray(tensor).tolist() == [1, 2, 3]
    assert np.asarray(tensor, dtype=np.float64).dtype == np.float64
    tensor.destroy()
    with pytest.raises(kp.DestroyedError):
        np.asarray(tensor)
    with pytest.raises(kp.DestroyedError):
        np.array(tensor)


# --- Every destruction order --------------------------------------------------------

PARTS = ("manager", "sequence", "algorithm", "tensor", "image", "operation")


class Scene:
    """One object of each kind, the dispatch recorded and submitted, still
    running while the objects go."""

    def __init__(self):
        self.objects = {}
        m = kp.Manager()
        tensor = m.tensor([1, 2, 3, 4])
        image = m.image(np.array([1, 2, 3, 4], dtype=np.float32), 2, 2, 1)
        algorithm = m.algorithm([tensor, image], compile_cached(ADD_IMAGE), (4, 1, 1))
        operation = kp.OpAlgoDispatch(algorithm)
        sequence = m.sequence()
        sequence.record(kp.OpSyncDevice([tensor])).record(operation)
        sequence.record(kp.OpSyncLocal([tensor])).eval()
        assert tensor.data().tolist() == [2, 4, 6, 8]
        self.view = tensor.data()  # a view held through it all
        sequence.eval_async()
        self.objects = dict(manager=m, sequence=sequence, algorithm=algorithm,
                            tensor=tensor, image=image, operation=operation)
        self.destroyed = set()

    def end(self, part, destroy):
        if destroy and part != "operation":
            self.objects[part].destroy()
            self.destroyed.add(part)
        else:
            del self.objects[part]  # reference counting frees it now

    def check_survivors(self):
        o = self.objects
        # Objects keep their Manager alive in Python: dropping it destroys
        # nothing; its destroy() does.
        dead = "manager" in self.destroyed
        assert len(self.view) == 4  # always readable
        if dead:
            if "sequence" in o:
                assert not o["sequence"].is_init()
                with pytest.raises(kp.DestroyedError):
                    o["sequence"].eval()
            for name in ("tensor", "image"):
                if name in o:
                    assert not o[name].is_init()
                    with pytest.raises(kp.DestroyedError):
                        o[name].data()
            if "algorithm" in o:
                assert not o["algorithm"].is_init()
            return
        if "sequence" in o and "sequence" not in self.destroyed:
            o["sequence"].eval_await()
            if self.destroyed & {"tensor", "image", "algorithm"}:
                with pytest.raises(kp.DestroyedError):
                    o["sequence"].eval()
            else:
                o["sequence"].eval()
                o["sequence"].eval_async()
        if "image" in o and "image" not in self.destroyed:
            assert o["image"].data().tolist() == [1, 2, 3, 4]


def orders_taking_every_step(parts):
    """Orders of ending `parts` that between them take every step there is:
    ending part p when exactly the parts of a set S have ended, for every S
    and p outside it. A step does the same whatever order led to S (each
    step's check leaves the scene in the same state), so these orders do
    what all of them do: for 6 parts, 192 steps in 60 orders (the fewest
    possible), where all 720 orders made 720 Managers, minutes on a GPU with
    the validation layer. Built greedily: a step not yet taken where there
    is one, towards the parts with the most steps not yet taken."""
    everything = frozenset(parts)
    untaken = {(frozenset(s), p) for n in range(len(parts))
               for s in itertools.combinations(parts, n) for p in parts if p not in s}

    def untaken_from(ended):
        return sum(1 for s, _ in untaken if ended <= s)

    orders = []
    while untaken:
        ended, order = frozenset(), []
        while ended != everything:
            part = max((p for p in parts if p not in ended),
                       key=lambda p: ((ended, p) in untaken, untaken_from(ended | {p})))
            untaken.discard((ended, part))
            order.append(part)
            ended = ended | {part}
        orders.append(order)
    return orders


@pytest.mark.parametrize("ending", ["drop", "destroy"])
def test_every_destruction_order(ending):
    orders = orders_taking_every_step(PARTS)
    assert len(orders) == 60
    steps = set()
    for order in orders:
        scene = Scene()
        try:
            ended = frozenset()
            for part in order:
                steps.add((ended, part))
                scene.end(part, ending == "destroy")
                scene.check_survivors()
                ended = ended | {part}
        except BaseException as error:
            raise AssertionError(f"destruction order {order}: {error!r}") from error
        del scene
    assert len(steps) == 6 * 32  # every step of every order was taken
