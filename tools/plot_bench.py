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

    figure, axes = plt.subplots(len(runs), 1, figsize=(16, 6 * len(runs)), squeeze=False)
    for (path, run), axis in zip(runs, axes[:, 0]):
        groups = {}
        for m in run["measurements"]:
            if m.get("median"):
                groups.setdefault((m["case"], m["metric"]), []).append(m)
        # One colour per variant, the same in every group.
        variants = sorted({m["variant"] for items in groups.values() for m in items})
        palette = plt.get_cmap("tab20").colors + plt.get_cmap("tab20b").colors
        colour = {v: palette[i % len(palette)] for i, v in enumerate(variants)}
        labels, labelled = [], set()
        for (case, metric), items in groups.items():
            kompute = next((m["median"] for m in items if m["variant"] == "kompute"), None)
            if not kompute:
                continue
            x = len(labels)
            labels.append(f"{case}\n{metric}")
            # The variants of this group side by side, centred on x.
            items = sorted(items, key=lambda m: m["variant"])
            width = 0.8 / len(items)
            for j, m in enumerate(items):
                variant = m["variant"]
                axis.bar(x - 0.4 + (j + 0.5) * width, m["median"] / kompute, width,
                         color=colour[variant],
                         label=None if variant in labelled else variant)
                labelled.add(variant)
        axis.set_xticks(range(len(labels)))
        axis.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
        axis.axhline(1.0, color="black", linewidth=0.8)
        axis.set_ylabel("median / Kompute's median")
        axis.set_yscale("log")
        axis.set_title(f"{run.get('device', '?')} ({path}): each variant over Kompute's figure; "
                       "times: lower is better, rates: higher is better", fontsize=9)
        axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
