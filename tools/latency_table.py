#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A short table of the latency figures of kompute-bench runs (cases a, b, c
and i) and of benchmarks/cuda/latency.cu's output: per case, each variant's
median (and the smallest sample, which shows whether the runs fell into the
slower regime of a lightly loaded GPU), then CUDA's lines.

usage: latency_table.py BENCH.json [BENCH.json ...] [CUDA.txt ...]
"""
import json
import sys


def main(paths):
    rows = []
    cuda = []
    for path in paths:
        try:
            if path.endswith(".json"):
                with open(path) as source:
                    rows += json.load(source)["measurements"]
            else:
                with open(path) as source:
                    cuda += [line.split() for line in source if len(line.split()) == 4]
        except (OSError, ValueError, KeyError) as error:
            print(f"{path}: {error}")
    print(f"{'case':24} {'metric':26} {'variant':42} {'median':>9} {'min':>9}")
    for row in rows:
        samples = row["samples"]
        if not samples:
            print(f"{row['case']:24} {row['metric']:26} {row['variant']:42} {'skipped':>9}")
            continue
        notes = row.get("notes", {})
        extra = f"  barriers: {notes['barriers']}" if "barriers" in notes and row["variant"] == "kompute" else ""
        print(f"{row['case']:24} {row['metric']:26} {row['variant']:42} {row['median']:9.3f} "
              f"{min(samples):9.3f}{extra}")
    for variant, case, metric, value in cuda:
        print(f"{case:24} {metric:26} {variant:42} {float(value):9.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
