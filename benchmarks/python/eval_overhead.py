#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the Python module adds to each evaluation: the fixture of
kompute-bench's case (a) (one 1-invocation dispatch that increments a uint32
counter in an eDeviceAndHost tensor), built through kp, and
``seq.eval()`` of the recorded sequence timed in a loop; then, as in case
(b), the one-liner ``mgr.sequence().record(kp.OpAlgoDispatch(algo)).eval()``.

kompute-bench's case (i) runs this script as a subprocess, between runs of
the same loops in C++, and reads its output; it also runs on its own.

usage: eval_overhead.py [--iterations N] [--one-liner-iterations N]
                        [--repetitions N] [--warmup N] [--device N]
                        [--quick] [--check]

Output, one line each, nothing else on stdout:
  device NAME                   the Vulkan device used
  spirv WORDS CHECKSUM          the shader's SPIR-V: word count, 32-bit FNV-1a
                                (hex) of its bytes; case (i) compares it with
                                its own, so the two fixtures cannot differ
  sample us_per_eval X          one per repetition: microseconds per eval
  sample cpu_us_per_eval X      the same repetition's CPU time (the process's)
  sample us_per_one_liner X     one per repetition: microseconds per one-liner
  sample cpu_us_per_one_liner X the same in CPU time
  skip REASON                   numpy or kp cannot be imported (exit status 3)
Any other failure raises (exit status 1, traceback on stderr).
"""
import argparse
import gc
import sys
import time

EXIT_UNAVAILABLE = 3

# Must stay identical to kIncrement in benchmarks/cases/Fixtures.hpp (the
# SPIR-V checksum printed below lets case (i) check that it is).
INCREMENT = """
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Counter { uint counter[]; };
void main() { counter[0] += 1u; }
"""


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # The defaults are case (a)'s and case (b)'s; --quick takes their quick
    # sizes, and options given explicitly win over both.
    parser.add_argument("--iterations", type=int, help="evals per sample (default 2000; quick 20)")
    parser.add_argument(
        "--one-liner-iterations",
        type=int,
        help="one-liners per sample, 0 for none (default 1000; quick 10)",
    )
    parser.add_argument("--repetitions", type=int, help="samples of each (default 7; quick 2)")
    parser.add_argument("--warmup", type=int, help="unmeasured samples first (default 2; quick 1)")
    parser.add_argument("--device", type=int, default=0, help="Vulkan device index (default 0)")
    parser.add_argument("--quick", action="store_true", help="sanity sizes (CI on lavapipe)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="only build the fixture and evaluate once: prints the device and spirv lines",
    )
    options = parser.parse_args()
    quick = options.quick
    defaults = {
        "iterations": 20 if quick else 2000,
        "one_liner_iterations": 10 if quick else 1000,
        "repetitions": 2 if quick else 7,
        "warmup": 1 if quick else 2,
    }
    for name, value in defaults.items():
        if getattr(options, name) is None:
            setattr(options, name, value)
    if options.iterations < 1 or options.repetitions < 1:
        parser.error("--iterations and --repetitions must be at least 1")
    if options.one_liner_iterations < 0 or options.warmup < 0:
        parser.error("--one-liner-iterations and --warmup must not be negative")
    return options


def fnv1a(data):
    """32-bit FNV-1a, as bench::spirvChecksum computes it."""
    value = 2166136261
    for byte in data:
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value


def emit(line):
    # Flushed at once, so that what was measured before a crash still
    # reaches the reader of the pipe.
    print(line, flush=True)


def microseconds_per_iteration(loop, iterations):
    """Elapsed and CPU microseconds (the whole process's, the driver's
    threads included, as kompute-bench counts them) per iteration."""
    # Collection is off while timing, as timeit does, so that a collection
    # triggered by earlier garbage lands in no sample.
    gc.collect()
    gc.disable()
    try:
        cpu = time.process_time_ns()
        start = time.perf_counter_ns()
        loop(iterations)
        elapsed = time.perf_counter_ns() - start
        cpu = time.process_time_ns() - cpu
    finally:
        gc.enable()
    return elapsed / 1e3 / iterations, cpu / 1e3 / iterations


def main():
    options = parse_arguments()
    try:
        import numpy as np

        import kp
    except Exception as error:  # noqa: BLE001 (any failure to import means unavailable)
        emit(f"skip cannot import numpy and kp with {sys.executable}: "
             f"{type(error).__name__}: {error}".replace("\n", " "))
        return EXIT_UNAVAILABLE

    mgr = kp.Manager(options.device)
    emit(f"device {mgr.get_device_properties()['device_name']}")
    spirv = kp.Shader.compile_source(INCREMENT)
    emit(f"spirv {len(spirv) // 4} {fnv1a(spirv):08x}")

    counter = mgr.tensor_t(np.zeros(1, dtype=np.uint32), kp.MemoryTypes.deviceAndHost)
    algo = mgr.algorithm([counter], spirv, (1, 1, 1))
    seq = mgr.sequence().record(kp.OpAlgoDispatch(algo))

    # Written as a user writes them: the attribute lookups per call are part
    # of what Python costs.
    def evals(iterations):
        for _ in range(iterations):
            seq.eval()

    def one_liners(iterations):
        for _ in range(iterations):
            mgr.sequence().record(kp.OpAlgoDispatch(algo)).eval()

    expected = 0
    if options.check:
        seq.eval()
        expected = 1
    else:
        for _ in range(options.warmup):
            evals(options.iterations)
            one_liners(options.one_liner_iterations)
            expected += options.iterations + options.one_liner_iterations
        # Interleaved, as in the C++ cases, so that drift affects both alike.
        for _ in range(options.repetitions):
            value, cpu = microseconds_per_iteration(evals, options.iterations)
            emit(f"sample us_per_eval {value:.6f}")
            emit(f"sample cpu_us_per_eval {cpu:.6f}")
            if options.one_liner_iterations:
                value, cpu = microseconds_per_iteration(one_liners, options.one_liner_iterations)
                emit(f"sample us_per_one_liner {value:.6f}")
                emit(f"sample cpu_us_per_one_liner {cpu:.6f}")
            expected += options.iterations + options.one_liner_iterations

    # Every eval must have reached the device: the tensor's host view is
    # its memory itself (eDeviceAndHost), so no sync operation is needed.
    got = int(counter.data()[0])
    if got != expected % 2**32:
        raise RuntimeError(f"the counter is {got} after {expected} evaluations")
    mgr.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
