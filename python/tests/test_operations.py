"""Every operation: OpSyncDevice, OpSyncLocal, OpCopy, OpAlgoDispatch, OpMult,
OpMemoryBarrier, and how a Sequence records them."""

import numpy as np
import pytest

import kp

from shaders import MULTIPLY, PUSH_AND_SPEC, TWICE_PLUS_ONE, compile_cached

def test_sync_device_and_local(mgr):
    tensor = mgr.tensor([1, 2, 3])
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    sequence = mgr.sequence()
    sequence.eval(kp.OpSyncDevice([tensor]))
    sequence.eval(kp.OpAlgoDispatch(algorithm))
    # A device tensor's host view is a copy of its own, on every device:
    # untouched until OpSyncLocal.
    assert not tensor.is_host_view_direct()
    assert tensor.data().tolist() == [1, 2, 3]
    sequence.eval(kp.OpSyncLocal([tensor]))
    assert tensor.data().tolist() == [3, 5, 7]


def test_ranged_sync(mgr):
    tensor = mgr.tensor([0, 0, 0, 0])
    sequence = mgr.sequence().eval(kp.OpSyncDevice([tensor]))
    tensor.data()[:] = [1, 2, 3, 4]
    sequence.eval(kp.OpSyncDevice([tensor], 1, 2))
    tensor.data()[:] = [9, 9, 9, 9]
    sequence.eval(kp.OpSyncLocal([tensor], 0, 3))
    assert tensor.data().tolist() == [0, 2, 3, 9]


def test_host_tensors_are_zero_copy(mgr):
    for memory_type in (kp.MemoryTypes.host, kp.MemoryTypes.deviceAndHost):
        tensor = mgr.tensor([1, 2, 3], memory_type)
        assert tensor.is_host_view_direct()
        target = mgr.tensor([0, 0, 0])
        tensor.data()[:] = [4, 5, 6]  # the memory itself: no OpSyncDevice needed
        mgr.sequence().eval(kp.OpCopy([tensor, target]))
        assert target.data().tolist() == [4, 5, 6]


def test_ranged_sync_out_of_range_raises(mgr):
    tensor = mgr.tensor([1, 2, 3])
    with pytest.raises(kp.Error):
        mgr.sequence().eval(kp.OpSyncDevice([tensor], 2, 5))


def test_sync_needs_tensors():
    with pytest.raises(kp.Error):
        kp.OpSyncDevice([])
    with pytest.raises(kp.Error):
        kp.OpSyncLocal([])


def test_copy(mgr):
    source = mgr.tensor([1, 2, 3])
    first = mgr.tensor([0, 0, 0])
    second = mgr.tensor([0, 0, 0], kp.MemoryTypes.host)
    (mgr.sequence()
        .record(kp.OpSyncDevice([source]))
        .record(kp.OpCopy([source, first, second]))
        .eval())
    assert first.data().tolist() == [1, 2, 3]
    assert second.data().tolist() == [1, 2, 3]


def test_copy_needs_two_tensors_of_one_type(mgr):
    with pytest.raises(kp.Error):
        kp.OpCopy([mgr.tensor([1])])
    source = mgr.tensor([1, 2])
    other = mgr.tensor_t(np.array([1, 2], dtype=np.int32))
    with pytest.raises(kp.Error, match="data types differ"):
        mgr.sequence().eval(kp.OpCopy([source, other]))


def test_algo_dispatch_push_constants_override_and_persist(mgr):
    tensor = mgr.tensor([0, 0])
    algorithm = mgr.algorithm([tensor], compile_cached(PUSH_AND_SPEC), (2, 1, 1), [10], [1])
    sequence = mgr.sequence()
    sequence.eval(kp.OpSyncDevice([tensor]))
    sequence.eval(kp.OpAlgoDispatch(algorithm))  # += 1 * 10
    sequence.eval(kp.OpAlgoDispatch(algorithm, [2]))  # += 2 * 10
    sequence.eval(kp.OpAlgoDispatch(algorithm))  # the override stays: += 20
    sequence.eval(kp.OpSyncLocal([tensor]))
    assert tensor.data().tolist() == [50, 50]
    assert algorithm.get_push_constants().tolist() == [2]


def test_seed_example_semantics(mgr):
    # record after eval starts a new batch: the second eval runs only the
    # last recorded op.
    tensor = mgr.tensor([0, 0, 0])
    algorithm = mgr.algorithm([tensor], compile_cached(PUSH_AND_SPEC), (3, 1, 1), [1], [1])
    (mgr.sequence()
        .record(kp.OpSyncDevice([tensor]))
        .record(kp.OpAlgoDispatch(algorithm))
        .eval()
        .record(kp.OpAlgoDispatch(algorithm, [5]))
        .eval()
        .record(kp.OpSyncLocal([tensor]))
        .eval())
    assert tensor.data().tolist() == [6, 6, 6]


def test_eval_resubmits_the_recorded_batch(mgr):
    tensor = mgr.tensor([1])
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    mgr.sequence().eval(kp.OpSyncDevice([tensor]))
    sequence = mgr.sequence().record(kp.OpAlgoDispatch(algorithm))
    for _ in range(3):
        sequence.eval()
    mgr.sequence().eval(kp.OpSyncLocal([tensor]))
    assert tensor.data().tolist() == [15]  # 1 -> 3 -> 7 -> 15


def test_chaining_returns_the_same_sequence(mgr):
    sequence = mgr.sequence()
    tensor = mgr.tensor([1])
    assert sequence.record(kp.OpSyncDevice([tensor])) is sequence
    assert sequence.eval() is sequence
    assert sequence.eval_async() is sequence
    assert sequence.eval_await() is sequence


def test_op_mult(mgr):
    a = mgr.tensor([2, 2, 2])
    b = mgr.tensor([1, 2, 3])
    out = mgr.tensor([0, 0, 0])
    (mgr.sequence()
        .record(kp.OpSyncDevice([a, b]))
        .record(kp.OpMult([a, b, out], mgr.algorithm()))
        .record(kp.OpSyncLocal([out]))
        .eval())
    assert out.data().tolist() == [2, 4, 6]


def test_op_mult_needs_three_tensors(mgr):
    with pytest.raises(kp.Error):
        kp.OpMult([mgr.tensor([1]), mgr.tensor([1])], mgr.algorithm())


def test_memory_barrier_between_dispatches(mgr):
    a = mgr.tensor([1, 2, 3])
    b = mgr.tensor([2, 2, 2])
    out = mgr.tensor([0, 0, 0])
    double_a = mgr.algorithm([a], compile_cached(TWICE_PLUS_ONE))
    multiply = mgr.algorithm([a, b, out], compile_cached(MULTIPLY))
    (mgr.sequence()
        .record(kp.OpSyncDevice([a, b]))
        .record(kp.OpAlgoDispatch(double_a))
        .record(kp.OpMemoryBarrier([a],
                                   kp.AccessFlagBits.shader_write,
                                   kp.AccessFlagBits.shader_read,
                                   kp.PipelineStageFlagBits.compute_shader,
                                   kp.PipelineStageFlagBits.compute_shader))
        .record(kp.OpAlgoDispatch(multiply))
        .record(kp.OpSyncLocal([out]))
        .eval())
    assert out.data().tolist() == [6, 10, 14]


def test_memory_barrier_on_staging(mgr):
    tensor = mgr.tensor([1, 2])
    (mgr.sequence()
        .record(kp.OpMemoryBarrier([tensor],
                                   kp.AccessFlagBits.host_write,
                                   kp.AccessFlagBits.transfer_read,
                                   kp.PipelineStageFlagBits.host,
                                   kp.PipelineStageFlagBits.transfer,
                                   barrier_on_primary=False))
        .record(kp.OpSyncDevice([tensor]))
        .eval())


@pytest.mark.expect_validation_errors
def test_validation_errors_reach_the_kp_logger(mgr, fail_on_validation_errors):
    # Zero stage masks are invalid without synchronization2: the layer's
    # errors must arrive at the "kp" logger, where the fixture sees them.
    tensor = mgr.tensor([1])
    mgr.sequence().eval(kp.OpMemoryBarrier([tensor], 0, 0, 0, 0))
    kp.flush_log()
    assert any("[validation]" in m and "StageMask" in m for m in fail_on_validation_errors)


def test_clear_begin_end_rerecord(mgr):
    tensor = mgr.tensor([1])
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    sequence = mgr.sequence()
    sequence.eval(kp.OpSyncDevice([tensor]))
    sequence.record(kp.OpAlgoDispatch(algorithm))
    assert sequence.is_recording()
    sequence.clear()
    assert not sequence.is_recording()
    sequence.eval()  # nothing recorded: nothing runs
    sequence.begin()
    sequence.record(kp.OpAlgoDispatch(algorithm))
    sequence.end()
    assert not sequence.is_recording()
    sequence.eval()
    sequence.rerecord()
    sequence.eval()
    mgr.sequence().eval(kp.OpSyncLocal([tensor]))
    assert tensor.data().tolist() == [7]


def test_algorithm_rebuild_and_rebind(mgr):
    first = mgr.tensor([1, 2])
    second = mgr.tensor([10, 20])
    algorithm = mgr.algorithm([first], compile_cached(TWICE_PLUS_ONE))
    assert algorithm.is_init()
    assert algorithm.get_mem_objects() == [first]
    assert algorithm.get_mem_objects()[0] is first
    sequence = mgr.sequence()
    sequence.eval(kp.OpSyncDevice([first, second]))
    dispatch = mgr.sequence().record(kp.OpAlgoDispatch(algorithm))
    dispatch.eval()
    algorithm.set_mem_objects([second])
    dispatch.eval()  # re-records itself with the new binding
    algorithm.rebuild([first], compile_cached(PUSH_AND_SPEC), (2, 1, 1), [1], [100])
    dispatch.eval()
    sequence.eval(kp.OpSyncLocal([first, second]))
    assert first.data().tolist() == [103, 105]
    assert second.data().tolist() == [21, 41]


def test_clear_constants_moves_an_algorithm_to_a_shader_without_constants(mgr):
    tensor = mgr.tensor([1, 2])
    algorithm = mgr.algorithm([tensor], compile_cached(PUSH_AND_SPEC), (2, 1, 1), [2], [10])
    mgr.sequence().eval(kp.OpSyncDevice([tensor]))
    dispatch = mgr.sequence().record(kp.OpAlgoDispatch(algorithm))
    dispatch.eval()  # values += 10 * 2
    # rebuild() with empty constants keeps the previous ones, which the new
    # shader does not declare.
    with pytest.raises(kp.Error, match="[Pp]ush"):
        algorithm.rebuild([tensor], compile_cached(TWICE_PLUS_ONE))
    algorithm.clear_constants()
    assert not algorithm.is_init()
    assert algorithm.get_push_constants().size == 0
    assert algorithm.get_specialization_constants().size == 0
    with pytest.raises(kp.DestroyedError, match="not built"):
        mgr.sequence().eval(kp.OpAlgoDispatch(algorithm))
    algorithm.rebuild([tensor], compile_cached(TWICE_PLUS_ONE))
    assert algorithm.is_init()
    dispatch.eval()  # the sequence that recorded the old pipeline records the new one
    mgr.sequence().eval(kp.OpSyncLocal([tensor]))
    expected = (np.array([1, 2], dtype=np.float32) + 20) * 2 + 1
    np.testing.assert_array_equal(tensor.data(), expected)


def test_workgroup(mgr):
    tensor = mgr.tensor(np.zeros(8))
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    assert algorithm.get_workgroup() == (8, 1, 1)  # x = 0: the tensor's size
    algorithm.set_workgroup((4, 0, 0))
    assert algorithm.get_workgroup() == (4, 1, 1)
    mgr.sequence().record(kp.OpSyncDevice([tensor])).record(
        kp.OpAlgoDispatch(algorithm)).record(kp.OpSyncLocal([tensor])).eval()
    assert tensor.data().tolist() == [1, 1, 1, 1, 0, 0, 0, 0]


def test_algorithm_destroy(mgr):
    tensor = mgr.tensor([1])
    algorithm = mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    algorithm.destroy()
    algorithm.destroy()
    assert not algorithm.is_init()
    with pytest.raises(kp.Error):
        mgr.sequence().eval(kp.OpAlgoDispatch(algorithm))


def test_empty_algorithm(mgr):
    algorithm = mgr.algorithm()
    assert not algorithm.is_init()
    assert algorithm.get_mem_objects() == []
