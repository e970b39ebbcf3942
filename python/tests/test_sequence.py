"""Sequences: real asynchrony, 64-bit timeouts, the GIL, timestamps,
threads, destroy."""

import threading
import time

import numpy as np
import pytest

import kp

from shaders import (HEAVY, HEAVY_STEPS_PER_ROUND, MULTIPLY, TWICE_PLUS_ONE, compile_cached,
                     heavy_expected)

COUNT = 16384  # invocations of the heavy shader (256 workgroups of 64)


class Heavy:
    """A batch of dispatches that keeps the device busy for at least `target`
    seconds (calibrated on this device): first more steps per invocation,
    then more dispatches in the batch."""

    MAX_ROUNDS = 60  # 60,000 steps: llvmpipe ends a shader's loops after 65535

    def __init__(self, mgr, target=0.3):
        self.mgr = mgr
        self.out = mgr.tensor_t(np.zeros(COUNT, dtype=np.uint32))
        self.rounds = 1
        self.repeats = 1
        self.algorithm = mgr.algorithm([self.out], compile_cached(HEAVY), (COUNT // 64, 1, 1),
                                       [], np.array([self.rounds], dtype=np.uint32))
        while True:
            self.sequence = self._record()
            start = time.perf_counter()
            self.sequence.eval()
            elapsed = time.perf_counter() - start
            if elapsed >= target or self.repeats >= 100_000:
                break
            factor = max(2, min(16, int(target / max(elapsed, 1e-4)) + 1))
            if self.rounds < self.MAX_ROUNDS:
                self.rounds = min(self.rounds * factor, self.MAX_ROUNDS)
                self.algorithm.set_push_constants(np.array([self.rounds], dtype=np.uint32))
            else:
                self.repeats *= factor
        self.duration = elapsed

    def _record(self):
        sequence = self.mgr.sequence()
        for _ in range(self.repeats):
            sequence.record(kp.OpAlgoDispatch(self.algorithm))
        return sequence.record(kp.OpSyncLocal([self.out]))

    def check(self):
        expected = heavy_expected(COUNT, self.rounds * HEAVY_STEPS_PER_ROUND)
        np.testing.assert_array_equal(self.out.data(), expected)


@pytest.fixture
def heavy(mgr):
    return Heavy(mgr)


def test_eval_async_without_argument_is_asynchronous(heavy):
    heavy.out.data()[:] = 0
    start = time.perf_counter()
    heavy.sequence.eval_async()
    submitted = time.perf_counter() - start
    assert heavy.sequence.is_running()
    # Host work while the device computes.
    host_iterations = 0
    while heavy.sequence.is_running() and time.perf_counter() - start < heavy.duration / 2:
        host_iterations += 1
    assert heavy.sequence.is_running(), "the device finished before the host worked"
    assert host_iterations > 0
    heavy.sequence.eval_await()
    total = time.perf_counter() - start
    assert not heavy.sequence.is_running()
    assert submitted < total / 2, (submitted, total)
    heavy.check()


def test_eval_async_with_an_op_is_asynchronous(heavy):
    sequence = heavy.mgr.sequence()
    start = time.perf_counter()
    sequence.eval_async(kp.OpAlgoDispatch(heavy.algorithm))
    submitted = time.perf_counter() - start
    assert sequence.is_running()
    sequence.eval_await()
    sequence.eval(kp.OpSyncLocal([heavy.out]))
    heavy.check()
    assert submitted < 0.05


def test_eval_await_timeout_leaves_the_sequence_running(heavy):
    heavy.sequence.eval_async()
    heavy.sequence.eval_await(0)
    assert heavy.sequence.is_running()
    heavy.sequence.eval_await(1000)  # 1 microsecond
    assert heavy.sequence.is_running()
    with pytest.raises(kp.Error):
        heavy.sequence.eval_async()
    assert heavy.sequence.is_running()
    # A timeout above 2**32 ns (upstream's 32-bit limit): 60 s.
    heavy.sequence.eval_await(60_000_000_000)
    assert not heavy.sequence.is_running()
    heavy.check()


def test_eval_await_timeout_must_fit_64_bits(mgr):
    sequence = mgr.sequence()
    sequence.eval_await(2**64 - 1)
    with pytest.raises(TypeError):
        sequence.eval_await(2**64)
    with pytest.raises(TypeError):
        sequence.eval_await(-1)


def test_second_eval_async_before_await_raises(heavy):
    heavy.sequence.eval_async()
    with pytest.raises(kp.Error):
        heavy.sequence.eval_async()
    with pytest.raises(kp.Error):
        heavy.sequence.record(kp.OpSyncLocal([heavy.out]))
    heavy.sequence.eval_await()
    heavy.check()


def _count_while(busy):
    """Runs `busy` in the main thread while another Python thread counts;
    returns how far it counted."""
    stop = threading.Event()
    counter = [0]

    def count():
        while not stop.is_set():
            counter[0] += 1

    thread = threading.Thread(target=count)
    thread.start()
    time.sleep(0.05)
    try:
        before = counter[0]
        busy()
        during = counter[0] - before
    finally:
        stop.set()
        thread.join()
    return during


def test_eval_releases_the_gil(heavy):
    # With the GIL held during eval, the counting thread could not run.
    during = _count_while(heavy.sequence.eval)
    assert during > 1000
    heavy.check()


def test_eval_await_releases_the_gil(heavy):
    def submit_and_wait():
        heavy.sequence.eval_async()
        heavy.sequence.eval_await()

    assert _count_while(submit_and_wait) > 1000


def test_threads_share_a_manager(mgr):
    spirv = compile_cached(TWICE_PLUS_ONE)
    results = {}
    errors = []

    def work(index):
        try:
            tensor = mgr.tensor(np.full(64, index, dtype=np.float32))
            algorithm = mgr.algorithm([tensor], spirv)
            sequence = (mgr.sequence()
                        .record(kp.OpSyncDevice([tensor]))
                        .record(kp.OpAlgoDispatch(algorithm))
                        .record(kp.OpSyncLocal([tensor])))
            for _ in range(5):
                sequence.eval()
                tensor.data()[:] = index
            sequence.eval()
            results[index] = tensor.data().copy()
        except Exception as error:  # pragma: no cover (reported below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for index in range(4):
        np.testing.assert_array_equal(results[index], np.full(64, index * 2 + 1))


def test_timestamps(mgr, device_properties):
    if not device_properties["timestamps_supported"]:
        pytest.skip("the device has no timestamps")
    tensor = mgr.tensor(np.arange(1000))
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    sequence = mgr.sequence(0, 3)
    (sequence.record(kp.OpSyncDevice([tensor]))
        .record(kp.OpAlgoDispatch(algorithm))
        .record(kp.OpSyncLocal([tensor]))
        .eval())
    ticks = sequence.get_timestamps()
    assert len(ticks) == 4
    assert all(isinstance(t, int) for t in ticks)
    assert ticks == sorted(ticks)
    nanoseconds = sequence.get_timestamps_ns()
    assert len(nanoseconds) == 4
    period = device_properties["timestamp_period"]
    for a, b, na, nb in zip(ticks, ticks[1:], nanoseconds, nanoseconds[1:]):
        # Nanoseconds are doubles: large absolute values (NVIDIA's counters
        # are ~1e17) are only exact to a few ulps.
        ulps = 4 * float(np.spacing(max(abs(na), abs(nb), 1.0)))
        assert nb - na == pytest.approx((b - a) * period, rel=1e-6, abs=max(1.0, ulps))
    # A second evaluation gives new timestamps.
    sequence.eval()
    assert sequence.get_timestamps()[0] >= ticks[0]


def test_timestamps_errors(mgr):
    tensor = mgr.tensor([1])
    with pytest.raises(kp.Error, match="[Tt]imestamp"):
        mgr.sequence().eval(kp.OpSyncDevice([tensor])).get_timestamps()
    limited = mgr.sequence(0, 1)
    limited.record(kp.OpSyncDevice([tensor]))
    with pytest.raises(kp.Error, match="[Tt]imestamp"):
        limited.record(kp.OpSyncLocal([tensor]))


def test_sequence_destroy(mgr):
    sequence = mgr.sequence()
    tensor = mgr.tensor([1])
    sequence.eval(kp.OpSyncDevice([tensor]))
    sequence.destroy()
    sequence.destroy()
    assert not sequence.is_init()
    with pytest.raises(kp.DestroyedError, match="destroyed"):
        sequence.eval()
    with pytest.raises(kp.DestroyedError):
        sequence.record(kp.OpSyncDevice([tensor]))


def test_destroy_while_running_waits(heavy):
    heavy.sequence.eval_async()
    heavy.sequence.destroy()
    assert not heavy.sequence.is_init()


def test_manager_destroy_while_running_waits(heavy):
    heavy.sequence.eval_async()
    heavy.mgr.destroy()
    assert not heavy.sequence.is_init()
    assert not heavy.out.is_init()


# --- Wait strategy (ours) -----------------------------------------------------


def test_wait_strategy_defaults_to_auto_and_can_be_changed(mgr, monkeypatch):
    monkeypatch.delenv("KOMPUTE_ENV_WAIT", raising=False)
    with kp.Manager() as manager:
        assert manager.get_wait_strategy() == kp.WaitStrategy.auto
        assert manager.get_auto_spin_limit_ns() == 100_000
        manager.set_wait_strategy(kp.WaitStrategy.spin)
        assert manager.get_wait_strategy() == kp.WaitStrategy.spin
        manager.set_wait_strategy(kp.WaitStrategy.auto, auto_spin_limit_ns=5000)
        assert manager.get_auto_spin_limit_ns() == 5000


@pytest.mark.parametrize("name", ["auto", "spin", "block"])
def test_kompute_env_wait_chooses_the_strategy(monkeypatch, name):
    monkeypatch.setenv("KOMPUTE_ENV_WAIT", name)
    with kp.Manager() as manager:
        assert manager.get_wait_strategy() == getattr(kp.WaitStrategy, name)


def test_kompute_env_wait_rejects_other_values(monkeypatch):
    monkeypatch.setenv("KOMPUTE_ENV_WAIT", "sometimes")
    with pytest.raises(kp.Error, match="KOMPUTE_ENV_WAIT"):
        kp.Manager()


@pytest.mark.parametrize("strategy", [kp.WaitStrategy.auto, kp.WaitStrategy.spin,
                                      kp.WaitStrategy.block])
def test_every_wait_strategy_gives_the_results(mgr, strategy):
    mgr.set_wait_strategy(strategy)
    values = np.arange(1, 9, dtype=np.float32)
    a = mgr.tensor(values)
    out = mgr.tensor(np.zeros(8, dtype=np.float32))
    sequence = mgr.sequence().record(kp.OpSyncDevice([a]))
    sequence.record(kp.OpMult([a, a, out], mgr.algorithm()))
    sequence.record(kp.OpSyncLocal([out]))
    for _ in range(3):
        out.data()[:] = 0
        sequence.eval()
        np.testing.assert_array_equal(out.data(), values * values)
    sequence.eval_async()
    sequence.eval_await()
    np.testing.assert_array_equal(out.data(), values * values)


@pytest.mark.parametrize("strategy", [kp.WaitStrategy.spin, kp.WaitStrategy.auto])
def test_polling_waits_honour_the_timeout(heavy, strategy):
    heavy.mgr.set_wait_strategy(strategy)
    heavy.sequence.eval_async()
    heavy.sequence.eval_await(1000)  # 1 microsecond, polling or not
    assert heavy.sequence.is_running()
    heavy.sequence.eval_await()
    assert not heavy.sequence.is_running()
    heavy.check()


# --- Barriers (ours) ----------------------------------------------------------


def test_independent_dispatches_record_no_barrier(mgr):
    values = np.arange(8, dtype=np.float32)
    tensors = [mgr.tensor(values + i) for i in range(6)]
    sequence = mgr.sequence()
    for tensor in tensors:
        sequence.record(kp.OpAlgoDispatch(mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE),
                                                        (8, 1, 1))))
    assert sequence.recorded_barrier_count() == 0
    mgr.sequence().eval(kp.OpSyncDevice(tensors))
    sequence.eval()
    mgr.sequence().eval(kp.OpSyncLocal(tensors))
    for i, tensor in enumerate(tensors):
        np.testing.assert_array_equal(tensor.data(), (values + i) * 2 + 1)


def test_dependent_dispatches_record_one_barrier_each(mgr):
    values = np.arange(8, dtype=np.float32)
    tensor = mgr.tensor(values)
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE), (8, 1, 1))
    sequence = mgr.sequence()
    for _ in range(5):
        sequence.record(kp.OpAlgoDispatch(algorithm))
    assert sequence.recorded_barrier_count() == 4
    mgr.sequence().eval(kp.OpSyncDevice([tensor]))
    sequence.eval()
    mgr.sequence().eval(kp.OpSyncLocal([tensor]))
    expected = values
    for _ in range(5):
        expected = expected * 2 + 1
    np.testing.assert_array_equal(tensor.data(), expected)


def test_readers_of_readonly_bindings_share_without_barriers(mgr):
    a = mgr.tensor(np.arange(4, dtype=np.float32))
    b = mgr.tensor(np.full(4, 3, dtype=np.float32))
    outs = [mgr.tensor(np.zeros(4, dtype=np.float32)) for _ in range(3)]
    sequence = mgr.sequence().record(kp.OpSyncDevice([a, b]))
    base = sequence.recorded_barrier_count()
    for out in outs:
        sequence.record(kp.OpAlgoDispatch(mgr.algorithm([a, b, out], compile_cached(MULTIPLY),
                                                        (4, 1, 1))))
    # One barrier after the upload, none between the three readers of a and b.
    assert sequence.recorded_barrier_count() - base == 1
    sequence.record(kp.OpSyncLocal(outs)).eval()
    for out in outs:
        np.testing.assert_array_equal(out.data(), np.arange(4) * 3)


def test_objects_of_another_manager_are_refused_when_recorded(mgr):
    with kp.Manager() as other:
        theirs = other.tensor([1, 2, 3])
        mine = mgr.tensor([0, 0, 0])
        sequence = mgr.sequence()
        with pytest.raises(kp.Error, match="another Manager"):
            sequence.eval(kp.OpCopy([theirs, mine]))
        their_algorithm = other.algorithm([theirs], compile_cached(TWICE_PLUS_ONE), (3, 1, 1))
        with pytest.raises(kp.Error, match="another Manager"):
            sequence.record(kp.OpAlgoDispatch(their_algorithm))
        assert not sequence.is_recording()
        # The sequence works on with its own objects.
        sequence.eval(kp.OpCopy([mgr.tensor([4, 5, 6], kp.MemoryTypes.host), mine]))
        np.testing.assert_array_equal(mine.data(), [4, 5, 6])
