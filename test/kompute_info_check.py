#!/usr/bin/env python3
"""Runs kompute-info and checks what it reports (a CTest test).

usage: kompute_info_check.py PATH_TO_KOMPUTE_INFO

The JSON is parsed and checked for every field the README promises (device,
queue families, memory, compute limits, the capability table, cooperative
matrices, fast paths); --device and the readable report are checked too, and
KOMPUTE_ENV_DISABLE must show in the table. Exits non-zero on any failure.
"""

import json
import os
import subprocess
import sys

PROGRAM = sys.argv[1]
FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)


def run(*args, env=None):
    result = subprocess.run(
        [PROGRAM, *args], capture_output=True, text=True, env=env, timeout=120
    )
    check(
        "[validation]" not in result.stderr,
        f"validation messages from {args}: {result.stderr[-2000:]}",
    )
    return result


def devices_of(args, env=None):
    result = run("--json", *args, env=env)
    check(result.returncode == 0, f"--json {args} exited {result.returncode}: {result.stderr}")
    report = json.loads(result.stdout)
    return report, report["devices"]


report, devices = devices_of([])
check(isinstance(report["kompute_version"], str) and report["kompute_version"], "kompute_version")
check(report["vulkan_loader_version"].count(".") == 2, "vulkan_loader_version")
check(len(devices) >= 1, "no device listed")

for device in devices:
    name = device.get("device_name", "?")
    for key, kind in [
        ("device_name", str), ("vendor", str), ("vendor_id", int), ("device_id", int),
        ("driver_version", int), ("driver_version_text", str), ("driver_name", str),
        ("api_version", str), ("device_type", str), ("max_work_group_count", list),
        ("max_work_group_size", list), ("max_work_group_invocations", int),
        ("max_push_constants_size", int), ("timestamps_supported", bool),
        ("timeline_semaphore", bool), ("enabled_extensions", list), ("disabled", list),
    ]:
        check(isinstance(device.get(key), kind), f"{name}: {key} should be a {kind.__name__}")
    check(device["device_type"] in ("cpu", "integrated_gpu", "discrete_gpu", "virtual_gpu", "other"),
          f"{name}: device_type {device['device_type']}")
    families = device["queue_families"]
    check(len(families) >= 1, f"{name}: no queue family")
    check(any("compute" in f["flags"] for f in families), f"{name}: no compute family")
    for family in families:
        check(family["queue_count"] >= 1, f"{name}: family without queues")
        check(isinstance(family["timestamp_valid_bits"], int), f"{name}: timestamp bits")
    check(len(device["memory_heaps"]) >= 1 and all(h["size"] > 0 for h in device["memory_heaps"]),
          f"{name}: memory heaps")
    check(all(t["heap_index"] < len(device["memory_heaps"]) for t in device["memory_types"]),
          f"{name}: memory types point at missing heaps")
    check(any("device_local" in t["flags"] for t in device["memory_types"]),
          f"{name}: no device-local memory type")
    limits = device["limits"]
    for key in ("max_compute_work_group_count", "max_compute_work_group_size"):
        check(len(limits[key]) == 3 and all(v >= 1 for v in limits[key]), f"{name}: {key}")
    for key in ("max_compute_work_group_invocations", "max_compute_shared_memory_size",
                "max_push_constants_size", "max_storage_buffer_range",
                "max_memory_allocation_size", "max_per_stage_descriptor_storage_buffers"):
        check(limits[key] > 0, f"{name}: limits.{key}")
    check(limits["max_compute_work_group_count"] == device["max_work_group_count"],
          f"{name}: the upstream key and the limit differ")
    subgroup = device["subgroup"]
    check(subgroup["size"] >= 1 and subgroup["min_size"] <= subgroup["size"] <= subgroup["max_size"],
          f"{name}: subgroup sizes {subgroup}")
    features = device["features"]
    for row in ("shaderFloat16", "shaderInt8", "shaderInt64", "storageBuffer16BitAccess",
                "shaderBufferInt64Atomics", "shaderBufferFloat32AtomicAdd", "shaderBFloat16Type",
                "shaderIntegerDotProduct", "cooperativeMatrix", "cooperativeMatrixNV",
                "cooperativeMatrixFlexibleDimensions", "timelineSemaphore", "bufferDeviceAddress",
                "vulkanMemoryModel", "subgroupSizeControl"):
        feature = features.get(row)
        check(feature is not None, f"{name}: the table has no row {row}")
        if feature:
            check(isinstance(feature["supported"], bool) and isinstance(feature["enabled"], bool),
                  f"{name}: {row} states")
            check(not feature["enabled"] or feature["supported"], f"{name}: {row} enabled unsupported")
            check("::" in feature["vulkan"] or feature["vulkan"].startswith("VK_"),
                  f"{name}: {row} vulkan name {feature['vulkan']}")
            check(bool(feature["disable"]), f"{name}: {row} has no KOMPUTE_ENV_DISABLE name")
    check(device["arithmetic"]["float16"] == features["shaderFloat16"]["enabled"],
          f"{name}: arithmetic.float16 and the table differ")
    check(device["timeline_semaphore"] == features["timelineSemaphore"]["enabled"],
          f"{name}: timeline_semaphore and the table differ")
    cooperative = device["cooperative_matrix"]
    for api in ("khr", "nv"):
        shapes = cooperative[f"{api}_shapes"]
        check(cooperative[api] == bool(shapes), f"{name}: {api} flag and shapes disagree")
        for shape in shapes:
            check(all(shape[k] > 0 for k in "mnk"), f"{name}: shape {shape}")
            check(all(isinstance(shape[k], str) for k in ("a", "b", "c", "result", "scope")),
                  f"{name}: shape types {shape}")
    check(isinstance(device["integer_dot_product"]["supported"], bool), f"{name}: integer dot")
    paths = device["fast_paths"]
    check(paths.get("copy") in ("shader", "copy command"), f"{name}: fast_paths.copy {paths}")
    check(paths.get("reductions") in ("subgroup", "shared-memory"), f"{name}: reductions {paths}")

# --device N
one, listed = devices_of(["--device", "0"])
check(len(listed) == 1 and listed[0]["index"] == 0, "--device 0 lists one device, index 0")
missing = run("--device", str(len(devices)))
check(missing.returncode != 0 and "no device" in missing.stderr, "--device beyond the last")
bad = run("--frobnicate")
check(bad.returncode == 2 and "usage" in bad.stderr, "an unknown argument shows the usage")

# KOMPUTE_ENV_DISABLE reaches the table.
env = dict(os.environ, KOMPUTE_ENV_DISABLE="float16,coopmat")
_, disabled = devices_of(["--device", "0"], env=env)
check(disabled[0]["disabled"] == ["float16", "coopmat"], f"disabled: {disabled[0]['disabled']}")
check(not disabled[0]["features"]["shaderFloat16"]["enabled"], "float16 still enabled")
check(not disabled[0]["cooperative_matrix"]["khr"] and not disabled[0]["cooperative_matrix"]["nv"],
      "cooperative matrices still on")
check(disabled[0]["features"]["shaderFloat16"]["supported"] == devices[0]["features"]["shaderFloat16"]["supported"],
      "disabling changed what is supported")

# The readable report.
text = run()
check(text.returncode == 0, f"the report exited {text.returncode}: {text.stderr}")
for fragment in (devices[0]["device_name"], "Queue families", "Memory", "Compute limits",
                 "Capability table", "Cooperative matrices", "Fast paths", "shaderFloat16"):
    check(fragment in text.stdout, f"the report lacks '{fragment}'")

if FAILURES:
    print("kompute-info check failed:")
    for failure in FAILURES:
        print("  -", failure)
    sys.exit(1)
print(f"kompute-info: {len(devices)} device(s) checked")
