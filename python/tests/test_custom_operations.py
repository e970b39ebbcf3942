"""Operations written in Python: kp.OpBase subclasses and kp.OpComposite,
their hooks, their errors, their lifetime and threads."""

import gc
import itertools
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import kp

from shaders import MULTIPLY, PUSH_AND_SPEC, TWICE_PLUS_ONE, compile_cached


class CountingComposite(kp.OpComposite):
    """A composite whose own hooks count their calls and check the handle."""

    def __init__(self, operations):
        super().__init__(operations)
        self.records = 0
        self.pre = 0
        self.post = 0
        self.handles = set()

    def record(self, command_buffer):
        self.records += 1
        self.handles.add(command_buffer)
        super().record(command_buffer)

    def pre_eval(self, command_buffer):
        self.pre += 1
        self.handles.add(command_buffer)
        super().pre_eval(command_buffer)

    def post_eval(self, command_buffer):
        self.post += 1
        self.handles.add(command_buffer)
        super().post_eval(command_buffer)


def twice_plus_one(mgr, tensor):
    return kp.OpAlgoDispatch(mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE)))


def test_a_composite_computes_and_counts_its_hooks(mgr):
    values = np.array([1, 2, 3, 4], dtype=np.float32)
    x = mgr.tensor(values)
    op = CountingComposite([kp.OpSyncDevice([x]), twice_plus_one(mgr, x), kp.OpSyncLocal([x])])
    sequence = mgr.sequence().record(op)
    assert op.records == 1 and op.pre == 0 and op.post == 0
    sequence.eval()
    np.testing.assert_array_equal(x.data(), values * 2 + 1)
    assert (op.records, op.pre, op.post) == (1, 1, 1)
    # Each evaluation re-submits the recorded batch, from the host view.
    x.data()[:] = [10, 20, 30, 40]
    sequence.eval().eval()
    np.testing.assert_array_equal(x.data(), (np.array([10, 20, 30, 40]) * 2 + 1) * 2 + 1)
    assert (op.records, op.pre, op.post) == (1, 3, 3)
    # One command buffer, given as a non-zero int to every hook.
    assert len(op.handles) == 1
    handle = op.handles.pop()
    assert isinstance(handle, int) and handle != 0


def test_a_composite_between_operations_of_the_sequence(mgr):
    a = mgr.tensor([1, 2, 3])
    b = mgr.tensor([4, 5, 6])
    out = mgr.zeros(3)
    multiply = kp.OpAlgoDispatch(mgr.algorithm([a, b, out], compile_cached(MULTIPLY)))
    sequence = (mgr.sequence()
                .record(kp.OpSyncDevice([a, b]))
                .record(kp.OpComposite([multiply, twice_plus_one(mgr, out)]))
                .record(kp.OpSyncLocal([out])))
    sequence.eval()
    np.testing.assert_array_equal(out.data(), np.array([4, 10, 18]) * 2 + 1)


def test_a_plain_subclass_delegates_to_built_in_operations(mgr):
    x = mgr.tensor([5, 6])
    calls = []

    class Step(kp.OpBase):
        def __init__(self):
            super().__init__()
            self.dispatch = twice_plus_one(mgr, x)

        def record(self, command_buffer):
            calls.append("record")
            kp.OpSyncDevice([x]).record(command_buffer)
            self.dispatch.record(command_buffer)

        def pre_eval(self, command_buffer):
            calls.append("pre_eval")
            self.dispatch.pre_eval(command_buffer)

        def post_eval(self, command_buffer):
            calls.append("post_eval")

    mgr.sequence().record(Step()).record(kp.OpSyncLocal([x])).eval()
    assert calls == ["record", "pre_eval", "post_eval"]
    assert x.data().tolist() == [11, 13]


def test_pre_and_post_eval_are_optional(mgr):
    x = mgr.tensor([1])

    class RecordOnly(kp.OpBase):
        def record(self, command_buffer):
            kp.OpSyncDevice([x]).record(command_buffer)

    assert not RecordOnly().needs_rerecord()
    mgr.sequence().record(RecordOnly()).record(twice_plus_one(mgr, x)).record(
        kp.OpSyncLocal([x])).eval()
    assert x.data().tolist() == [3]


def test_needs_rerecord_records_the_batch_anew(mgr):
    x = mgr.tensor([1, 2])
    algorithm = mgr.algorithm([x], compile_cached(TWICE_PLUS_ONE))
    op = CountingComposite([kp.OpSyncDevice([x]), kp.OpAlgoDispatch(algorithm),
                            kp.OpSyncLocal([x])])
    sequence = mgr.sequence().record(op)
    sequence.eval()
    assert x.data().tolist() == [3, 5]
    assert not op.needs_rerecord()
    # A rebuilt algorithm: the composite says so, and the sequence records
    # it anew, with the new shader.
    algorithm.rebuild([x], compile_cached(PUSH_AND_SPEC), (2, 1, 1), [2], [10])
    assert op.needs_rerecord()
    x.data()[:] = [1, 2]
    sequence.eval()
    assert op.records == 2
    assert x.data().tolist() == [21, 22]


def test_declared_accesses_give_the_sequence_its_barriers(mgr):
    x = mgr.tensor([1, 2])
    y = mgr.tensor([3, 4])
    mgr.sequence().eval(kp.OpSyncDevice([x, y]))
    # Independent composites that declare their accesses: no barrier.
    sequence = (mgr.sequence()
                .record(kp.OpComposite([twice_plus_one(mgr, x)]))
                .record(kp.OpComposite([twice_plus_one(mgr, y)])))
    assert sequence.recorded_barrier_count() == 0

    class Reads(kp.OpBase):
        def __init__(self, accesses):
            super().__init__()
            self.accesses = accesses

        def record(self, command_buffer):
            pass

        def declare_accesses(self):
            return self.accesses

    # Reading what the dispatch wrote: one barrier; a reference: none.
    sequence.record(Reads([kp.MemoryAccess.shader_read(x)]))
    assert sequence.recorded_barrier_count() == 1
    sequence.record(Reads([kp.MemoryAccess.reference(y)]))
    assert sequence.recorded_barrier_count() == 1
    # Declaring nothing: full barriers around it.
    undeclared = mgr.sequence().record(kp.OpComposite([twice_plus_one(mgr, x)]))
    undeclared.record(Reads(None)).record(kp.OpComposite([twice_plus_one(mgr, y)]))
    assert undeclared.recorded_barrier_count() == 2
    sequence.record(kp.OpSyncLocal([x, y])).eval()
    assert x.data().tolist() == [3, 5] and y.data().tolist() == [7, 9]


def test_memory_access_values():
    manager = kp.Manager()
    t = manager.tensor([1])
    read = kp.MemoryAccess.shader_read(t)
    assert read.memory is t
    assert read.stages == kp.PipelineStageFlagBits.compute_shader
    assert read.access == kp.AccessFlagBits.shader_read
    assert read.part == kp.MemoryAccess.Part.primary and not read.writes()
    write = kp.MemoryAccess.transfer_write(t, kp.MemoryAccess.Part.staging)
    assert write.writes() and write.part == kp.MemoryAccess.Part.staging
    custom = kp.MemoryAccess(t, kp.PipelineStageFlagBits.transfer,
                             kp.AccessFlagBits.transfer_read | kp.AccessFlagBits.transfer_write)
    assert custom.writes() and custom.stages == kp.PipelineStageFlagBits.transfer
    with pytest.raises(TypeError):
        kp.MemoryAccess.shader_read(None)
    manager.destroy()


# --- Errors -------------------------------------------------------------------------


def test_record_must_be_implemented():
    class NoRecord(kp.OpBase):
        def pre_eval(self, command_buffer):
            pass

    with pytest.raises(TypeError, match="Can't instantiate NoRecord.*record"):
        NoRecord()
    with pytest.raises(TypeError, match="Can't instantiate OpBase"):
        kp.OpBase()


def test_an_exception_in_record_is_the_exception_of_the_call(mgr):
    x = mgr.tensor([1, 2])

    class Fails(kp.OpBase):
        def record(self, command_buffer):
            kp.OpSyncDevice([x]).record(command_buffer)  # half-recorded, then
            raise ValueError("record failed on purpose")

    sequence = mgr.sequence().record(kp.OpSyncDevice([x])).record(twice_plus_one(mgr, x))
    with pytest.raises(ValueError, match="on purpose"):
        sequence.record(Fails())
    # The sequence is as before the call: its earlier operations run, the
    # half-recorded commands do not.
    sequence.record(kp.OpSyncLocal([x])).eval()
    assert x.data().tolist() == [3, 5]
    with pytest.raises(ValueError, match="on purpose"):
        mgr.sequence().eval(Fails())


def test_exceptions_in_the_evaluation_hooks(mgr):
    x = mgr.tensor([1])

    class Hooks(kp.OpBase):
        fail_pre = False
        fail_post = False

        def record(self, command_buffer):
            kp.OpSyncDevice([x]).record(command_buffer)

        def pre_eval(self, command_buffer):
            if self.fail_pre:
                raise KeyError("pre_eval")

        def post_eval(self, command_buffer):
            if self.fail_post:
                raise RuntimeError("post_eval")

    op = Hooks()
    sequence = mgr.sequence().record(op)
    op.fail_pre = True
    with pytest.raises(KeyError, match="pre_eval"):
        sequence.eval()
    op.fail_pre = False
    x.data()[:] = [5]
    sequence.eval()  # the refused batch is recorded anew and submitted: 5 uploaded
    x.data()[:] = [0]
    mgr.sequence().eval(kp.OpSyncLocal([x]))
    assert x.data().tolist() == [5]
    op.fail_post = True
    with pytest.raises(RuntimeError, match="post_eval"):
        sequence.eval()
    with pytest.raises(RuntimeError, match="post_eval"):
        sequence.eval_async().eval_await()
    assert not sequence.is_running()
    op.fail_post = False
    sequence.eval()


@pytest.mark.parametrize("method, value, message", [
    ("record", 1, r"record\(\) must return None, not int"),
    ("needs_rerecord", 1, r"needs_rerecord\(\) must return a bool, not int"),
    ("declare_accesses", 5, r"declare_accesses\(\) must return None or a list"),
    ("declare_accesses", ["x"], r"declare_accesses\(\) must return None or a list.*str"),
])
def test_wrong_return_types_raise_type_error(mgr, method, value, message):
    x = mgr.tensor([1])

    def record(self, command_buffer):
        kp.OpSyncDevice([x]).record(command_buffer)
        return value if method == "record" else None

    members = {"record": record}
    if method != "record":
        members[method] = lambda self: value
    op = type("Wrong", (kp.OpBase,), members)()
    with pytest.raises(TypeError, match=message):
        mgr.sequence().record(op).eval()


def test_declaring_itself_is_refused(mgr):
    class Loop(kp.OpBase):
        def record(self, command_buffer):
            pass

        def declare_accesses(self):
            return [self]

    with pytest.raises(TypeError, match="itself"):
        mgr.sequence().record(Loop())
    first = kp.OpComposite([])
    second = kp.OpComposite([first])
    first.operations.append(second)
    with pytest.raises(TypeError, match="its own"):
        mgr.sequence().record(first)


def test_built_in_hooks_only_within_a_python_operations_hook(mgr):
    x = mgr.tensor([1])
    sync = kp.OpSyncDevice([x])
    with pytest.raises(kp.Error, match="only from within the record"):
        sync.record(12345)
    with pytest.raises(kp.Error, match="only from within the pre_eval"):
        sync.pre_eval(0)

    class Misuse(kp.OpBase):
        def __init__(self, how):
            super().__init__()
            self.how = how

        def record(self, command_buffer):
            if self.how == "other handle":
                sync.record(command_buffer + 8)
            elif self.how == "other hook":
                sync.pre_eval(command_buffer)
            elif self.how == "base":
                kp.OpBase.record(self, command_buffer)

    with pytest.raises(kp.Error, match="another command buffer"):
        mgr.sequence().record(Misuse("other handle"))
    with pytest.raises(kp.Error, match="only from within the pre_eval"):
        mgr.sequence().record(Misuse("other hook"))
    with pytest.raises(TypeError, match="abstract"):
        mgr.sequence().record(Misuse("base"))


def test_destroying_from_within_a_hook_is_refused(mgr):
    x = mgr.tensor([1])

    class Destroys(kp.OpBase):
        def __init__(self, target):
            super().__init__()
            self.target = target

        def record(self, command_buffer):
            kp.OpSyncDevice([x]).record(command_buffer)

        def pre_eval(self, command_buffer):
            self.target.destroy()  # would wait for the sequence running this hook

    sequence = mgr.sequence()
    for target in (mgr, sequence):
        sequence.clear()
        sequence.record(Destroys(target))
        with pytest.raises(kp.Error, match="from within an operation"):
            sequence.eval()
    sequence.clear()
    sequence.eval(kp.OpSyncDevice([x]))  # both still work
    assert sequence.is_init() and mgr.tensor([2]).is_init()


def test_objects_of_another_manager_are_refused_before_recording(mgr):
    other = kp.Manager()
    foreign = other.tensor([1, 2])
    x = mgr.tensor([1, 2])
    sequence = mgr.sequence().record(kp.OpSyncDevice([x]))

    class Mixed(kp.OpBase):
        def record(self, command_buffer):
            kp.OpSyncDevice([foreign]).record(command_buffer)

    with pytest.raises(kp.Error, match="another Manager"):
        sequence.record(Mixed())
    # Declared, the sequence refuses it itself.
    with pytest.raises(kp.Error, match="another Manager"):
        sequence.record(kp.OpComposite([kp.OpSyncDevice([foreign])]))
    sequence.record(twice_plus_one(mgr, x)).record(kp.OpSyncLocal([x])).eval()
    assert x.data().tolist() == [3, 5]
    other.destroy()


def test_composite_takes_operations_only():
    with pytest.raises(TypeError, match="takes kp operations"):
        kp.OpComposite([1])


# --- Lifetime and threads ---------------------------------------------------------


def test_the_sequence_keeps_the_operation_alive(mgr):
    x = mgr.tensor([1, 2])
    op = CountingComposite([kp.OpSyncDevice([x]), twice_plus_one(mgr, x), kp.OpSyncLocal([x])])
    alive = weakref.ref(op)
    sequence = mgr.sequence().record(op)
    del op
    gc.collect()
    assert alive() is not None
    sequence.eval()
    assert alive().post == 1 and x.data().tolist() == [3, 5]
    sequence.clear()
    gc.collect()
    assert alive() is None


def test_hooks_run_on_the_thread_that_evaluates(mgr):
    x = mgr.tensor(np.arange(64, dtype=np.float32))
    seen = []

    class Where(kp.OpComposite):
        def pre_eval(self, command_buffer):
            seen.append(threading.get_ident())
            super().pre_eval(command_buffer)

    sequences = []
    for _ in range(4):
        t = mgr.tensor(np.arange(64, dtype=np.float32))
        sequences.append((t, mgr.sequence().record(
            Where([kp.OpSyncDevice([t]), twice_plus_one(mgr, t), kp.OpSyncLocal([t])]))))
    errors = []

    def run(sequence):
        try:
            for _ in range(5):
                sequence.eval()
        except BaseException as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=run, args=(s,)) for _, s in sequences]
    for thread in threads:
        thread.start()
    busy = sum(i * i for i in range(20000))  # the main thread holds the GIL meanwhile
    for thread in threads:
        thread.join(60)
    assert busy > 0 and not errors and not any(t.is_alive() for t in threads)
    assert len(seen) == 20 and set(seen) == {t.ident for t in threads}
    for t, _ in sequences:
        expected = np.arange(64, dtype=np.float32)
        for _ in range(5):
            expected = expected * 2 + 1
        np.testing.assert_array_equal(t.data(), expected)
    del x


PARTS = ("manager", "sequence", "tensor", "operation")


@pytest.mark.parametrize("ending", ["drop", "destroy"])
def test_every_destruction_order_with_a_python_operation(ending):
    for order in itertools.permutations(PARTS):
        m = kp.Manager()
        tensor = m.tensor([1, 2])
        operation = CountingComposite([kp.OpSyncDevice([tensor]), twice_plus_one(m, tensor),
                                       kp.OpSyncLocal([tensor])])
        sequence = m.sequence().record(operation)
        sequence.eval()
        objects = dict(manager=m, sequence=sequence, tensor=tensor, operation=operation)
        del m, tensor, operation, sequence
        destroyed = set()
        try:
            for part in order:
                if ending == "destroy" and part != "operation":
                    objects[part].destroy()
                    destroyed.add(part)
                else:
                    del objects[part]
                gc.collect()
                if "sequence" in objects and "sequence" not in destroyed:
                    if destroyed:
                        with pytest.raises(kp.DestroyedError):
                            objects["sequence"].eval()
                    else:
                        objects["sequence"].eval()
        except BaseException as error:
            raise AssertionError(f"destruction order {order}: {error!r}") from error
        objects.clear()
        gc.collect()


def run_script(script):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result


def test_the_interpreter_exits_with_python_operations_recorded():
    # The operation's class refers to the module's globals, which refer to
    # the sequence: a cycle through C++ that the garbage collector cannot
    # see. kp breaks it at exit; nothing is reported leaked.
    result = run_script(
        """
        import kp
        m = kp.Manager()
        x = m.tensor([1, 2, 3])

        class Sync(kp.OpBase):
            def record(self, command_buffer):
                kp.OpSyncDevice([x]).record(command_buffer)

        s = m.sequence().record(Sync())
        s.eval()
        running = m.sequence().record(kp.OpComposite([kp.OpSyncLocal([x])])).eval_async()
        print("done")
        """
    )
    assert result.stdout.strip().endswith("done")
    assert "leaked" not in result.stderr, result.stderr


def test_manager_destroy_on_a_thread_while_a_sequence_is_deleted():
    # Manager.destroy() on a thread drops each sequence's operations; an
    # operation made in Python takes the GIL to go. The main thread holds
    # the GIL meanwhile and deletes a sequence, whose destructor waits for
    # destroy() to be done with it: that wait must not hold up destroy().
    # In a subprocess, so that a deadlock fails the test.
    result = run_script(
        """
        import sys, threading, time
        import kp
        sys.setswitchinterval(5.0)  # the main thread keeps the GIL while it runs
        for round in range(5):
            m = kp.Manager()
            x = m.tensor([1, 2, 3])
            sequences = [m.sequence().record(kp.OpComposite([kp.OpSyncDevice([x])]))
                         for _ in range(20)]
            destroyer = threading.Thread(target=m.destroy)
            destroyer.start()
            time.sleep(0.001)
            start = time.perf_counter()
            while time.perf_counter() - start < 0.05:
                pass
            del sequences
            destroyer.join(30)
            assert not destroyer.is_alive(), "Manager.destroy() hung"
        print("done")
        """
    )
    assert result.stdout.strip().endswith("done")
