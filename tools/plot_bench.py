#!/usr/bin/env python3
"""Plots kompute-bench results: one bar group per case and metric, one bar
per variant, each normalised to the Kompute figure of its case (so 1.0 is
Kompute; for times lower is better, for rates higher is better).

usage: plot_bench.py OUT.png RESULTS.json [MORE.json ...]
Several JSON files (e.g. runs on different machines) are drawn side by side.
"""
import json
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = sys.argv[1]
    runs = []
    for path in sys.argv[2:]:
        with open(path) as handle:
            runs.append((path, json.load(handle)))

    figure, axes = plt.subplots(len(runs), 1, figsize=(14, 5 * len(runs)), squeeze=False)
    for (path, run), axis in zip(runs, axes[:, 0]):
        groups = {}
        for m in run["measurements"]:
            groups.setdefault((m["case"], m["metric"]), []).append(m)
        labels, bars = [], {}
        for (case, metric), items in groups.items():
            kompute = next((m["median"] for m in items if m["variant"] == "kompute"), None)
            if not kompute:
                continue
            labels.append(f"{case}\n{metric}")
            for m in items:
                ratio = m["median"] / kompute
                bars.setdefault(m["variant"], {})[len(labels) - 1] = ratio
        width = 0.8 / max(1, len(bars))
        for index, (variant, values) in enumerate(sorted(bars.items())):
            xs = [x + index * width for x in values]
            axis.bar(xs, list(values.values()), width, label=variant)
        axis.set_xticks([x + 0.4 - width / 2 for x in range(len(labels))])
        axis.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        axis.axhline(1.0, color="black", linewidth=0.8)
        axis.set_ylabel("median / Kompute's median")
        axis.set_yscale("log")
        axis.set_title(f"{run.get('device', '?')} ({path})")
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
