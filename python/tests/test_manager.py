"""kp.Manager: construction, device information, memory statistics, lifetime."""

import gc

import numpy as np
import pytest

import kp

from disable_paths import disable_paths

UPSTREAM_PROPERTY_KEYS = {
    "device_name", "max_work_group_count", "max_work_group_invocations",
    "max_work_group_size", "max_push_constants_size", "timestamps_supported",
}
OUR_PROPERTY_KEYS = {
    "device_type", "vendor_id", "device_id", "api_version", "driver_version",
    "timestamp_period", "max_storage_buffer_range", "max_compute_shared_memory_size",
    "min_storage_buffer_offset_alignment", "shader_float64", "shader_int64", "shader_int16",
}


def test_default_and_explicit_constructors():
    for manager in (kp.Manager(), kp.Manager(0), kp.Manager(0, [], []),
                    kp.Manager(device=0, family_queue_indices=[], desired_extensions=[])):
        assert manager.get_device_properties()["device_name"]
        manager.destroy()


def test_device_properties(mgr):
    properties = mgr.get_device_properties()
    assert UPSTREAM_PROPERTY_KEYS | OUR_PROPERTY_KEYS <= set(properties)
    assert isinstance(properties["device_name"], str) and properties["device_name"]
    assert len(properties["max_work_group_count"]) == 3
    assert len(properties["max_work_group_size"]) == 3
    assert properties["max_push_constants_size"] >= 128
    major, minor, _ = (int(v) for v in properties["api_version"].split("."))
    assert (major, minor) >= (1, 1)
    assert properties["timestamp_period"] > 0
    assert properties["device_type"] in {"integrated_gpu", "discrete_gpu", "virtual_gpu",
                                         "cpu", "other"}


def test_list_devices(mgr):
    devices = mgr.list_devices()
    assert isinstance(devices, list) and devices
    assert [d["index"] for d in devices] == list(range(len(devices)))
    for device in devices:
        assert UPSTREAM_PROPERTY_KEYS <= set(device)
    names = [d["device_name"] for d in devices]
    assert mgr.get_device_properties()["device_name"] in names


# The sections of kompute-info's JSON (tools/kompute-info; checked against the
# program by test/kompute_info_check.py).
KOMPUTE_INFO_KEYS = {
    "index", "vendor", "driver_name", "driver_version_text", "queue_families",
    "memory_heaps", "memory_types", "limits", "subgroup", "arithmetic", "storage",
    "atomics", "integer_dot_product", "cooperative_matrix", "float_controls",
    "timeline_semaphore", "features", "enabled_extensions", "disabled", "fast_paths",
}


def test_device_properties_have_kompute_infos_fields(mgr):
    properties = mgr.get_device_properties()
    assert KOMPUTE_INFO_KEYS <= set(properties)
    # Made by the same function as list_devices() (and kompute-info): same keys.
    listed = mgr.list_devices()[properties["index"]]
    assert set(listed) == set(properties)
    assert listed["device_name"] == properties["device_name"]
    assert properties["max_work_group_count"] == tuple(properties["limits"]["max_compute_work_group_count"])
    assert any("compute" in f["flags"] for f in properties["queue_families"])
    assert all(h["size"] > 0 for h in properties["memory_heaps"])
    assert properties["subgroup"]["size"] >= 1
    float16 = properties["features"]["shaderFloat16"]
    assert float16["vulkan"].endswith("::shaderFloat16")
    assert float16["enabled"] == properties["arithmetic"]["float16"]
    cooperative = properties["cooperative_matrix"]
    assert cooperative["khr"] == bool(cooperative["khr_shapes"])
    assert properties["fast_paths"]["copy"] in ("shader", "copy command")


def test_disabled_capabilities_show_and_refuse_shaders(monkeypatch):
    disabled = disable_paths(monkeypatch, "float16,coopmat")
    with kp.Manager() as manager:
        properties = manager.get_device_properties()
        assert properties["disabled"] == disabled
        assert properties["features"]["shaderFloat16"]["enabled"] is False
        assert properties["arithmetic"]["float16"] is False
        source = """
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { float v[]; };
void main() { v[0] = float(float16_t(v[0]) * float16_t(2.0)); }
"""
        with pytest.raises(kp.Error, match="Float16.*shaderFloat16.*KOMPUTE_ENV_DISABLE=float16"):
            manager.algorithm([manager.tensor([1])], kp.compile_source(source))


def test_device_index_out_of_range_raises(mgr):
    count = len(mgr.list_devices())
    with pytest.raises(kp.Error, match=r"[Dd]evice index %d is out of range" % count):
        kp.Manager(count)
    with pytest.raises(kp.Error, match="out of range"):
        kp.Manager(1000)


def test_negative_device_index_is_a_type_error():
    with pytest.raises(TypeError):
        kp.Manager(-1)


def test_bad_queue_family_raises():
    with pytest.raises(kp.Error, match="[Qq]ueue family 999"):
        kp.Manager(0, [999])


def test_sequence_queue_index_out_of_range_raises(mgr):
    assert mgr.queue_count() == 1
    with pytest.raises(kp.Error, match="1"):
        mgr.sequence(1)


def test_unknown_extension_is_skipped_with_a_warning(caplog):
    with caplog.at_level("WARNING", logger="kp"):
        manager = kp.Manager(0, [], ["VK_KP_not_an_extension"])
    manager.destroy()
    assert any("VK_KP_not_an_extension" in r.getMessage() and r.name == "kp"
               for r in caplog.records)


def test_memory_stats(mgr):
    before = mgr.memory_stats()
    assert {"allocated_bytes", "used_bytes", "device_memory_count", "memory_types"} <= set(before)
    tensor = mgr.tensor(np.zeros(4096, dtype=np.float32))
    after = mgr.memory_stats()
    assert after["used_bytes"] >= before["used_bytes"] + tensor.memory_size()
    assert after["allocated_bytes"] >= after["used_bytes"]
    for entry in after["memory_types"]:
        assert {"memory_type_index", "heap_index", "property_flags", "allocated_bytes",
                "used_bytes", "peak_used_bytes", "device_memory_count",
                "allocation_count"} <= set(entry)
    tensor.destroy()
    assert mgr.memory_stats()["used_bytes"] < after["used_bytes"]


def test_destroy_is_idempotent_and_makes_objects_inert():
    manager = kp.Manager()
    tensor = manager.tensor([1, 2, 3])
    sequence = manager.sequence()
    manager.destroy()
    manager.destroy()
    assert not tensor.is_init()
    assert not sequence.is_init()
    with pytest.raises(kp.DestroyedError, match="destroyed"):
        manager.tensor([1.0])
    with pytest.raises(kp.DestroyedError):
        manager.sequence()
    with pytest.raises(kp.DestroyedError):
        manager.get_device_properties()
    with pytest.raises(kp.DestroyedError):
        sequence.eval()


def test_context_manager_destroys():
    with kp.Manager() as manager:
        tensor = manager.tensor([1, 2, 3])
        assert tensor.is_init()
    assert not tensor.is_init()


def _make_objects():
    manager = kp.Manager()
    tensor = manager.tensor([1, 2, 3])
    sequence = manager.sequence()
    return tensor, sequence


def test_objects_keep_their_manager_alive():
    # Upstream destroys a manager's objects when the Python Manager goes
    # away; here the objects keep it alive, so they stay usable.
    tensor, sequence = _make_objects()
    gc.collect()
    assert tensor.is_init()
    tensor.data()[:] = [4, 5, 6]
    sequence.eval(kp.OpSyncDevice([tensor])).eval(kp.OpSyncLocal([tensor]))
    assert tensor.data().tolist() == [4, 5, 6]


def test_two_managers_at_once():
    first, second = kp.Manager(), kp.Manager()
    a = first.tensor([1, 2])
    b = second.tensor([3, 4])
    first.sequence().eval(kp.OpSyncDevice([a]))
    second.sequence().eval(kp.OpSyncDevice([b]))
    first.destroy()
    assert b.is_init() and not a.is_init()
    second.destroy()


def test_pipeline_cache_round_trip(mgr, tmp_path):
    from shaders import TWICE_PLUS_ONE, compile_cached

    tensor = mgr.tensor([1, 2])
    mgr.algorithm([tensor], compile_cached(TWICE_PLUS_ONE))
    path = tmp_path / "pipelines.bin"
    mgr.save_pipeline_cache(str(path))
    assert path.stat().st_size > 0
    other = kp.Manager()
    assert other.load_pipeline_cache(str(path))
    assert not other.load_pipeline_cache(str(tmp_path / "missing.bin"))
    other.destroy()


def test_clear_is_kept_for_upstream_code(mgr):
    mgr.tensor([1])
    mgr.clear()
