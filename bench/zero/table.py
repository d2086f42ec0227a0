"""bench/zero/table.py DIR: the markdown table of bench/zero/run.sh's runs
(DIR/n<N>-zero<stage>-r<round>/summary.json, stage 0: unsharded): per-rank memory of the step and
its time, sharded against unsharded at the same number of ranks."""
import json
import os
import statistics
import sys

MIB = 1 << 20


def load(d, n, stage):
    """The rounds' summaries of one configuration."""
    out = []
    r = 1
    while True:
        p = os.path.join(d, "n%d-zero%d-r%d" % (n, stage, r), "summary.json")
        if not os.path.exists(p):
            return out
        out.append(json.load(open(p)))
        r += 1


def main():
    d = sys.argv[1]
    print("| ranks | optimiser state | per-rank optimiser state (MiB) | planned peak (MiB) "
          "| measured peak (MiB) | x unsharded peak | params / grads / opt. / saved act. / temps "
          "at the peak (MiB) | ms/step (median of rounds) | x unsharded time (rounds) |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|")
    for n in (1, 2, 4):
        base = load(d, n, 0)
        for stage in (0, 2, 1):
            runs = load(d, n, stage)
            if not runs:
                continue
            s = runs[0]
            m = s["memory_at_peak"]
            parts = " / ".join("%.1f" % (m[k] / MIB) for k in
                               ("parameter", "gradient", "optimizer_state", "activation",
                                "temporary"))
            ms = statistics.median(r["ms_per_step_median"] for r in runs)
            ratios = [r["ms_per_step_median"] / b["ms_per_step_median"] for r, b in zip(runs, base)]
            print("| %d | %s | %.2f | %.1f | %.1f | %.2f | %s | %.0f | %.2f (%s) |" % (
                n, "ZeRO-%d, 1/%d" % (stage, n) if stage else "whole",
                s["optimizer_state_bytes_per_rank"] / MIB, s["planned_peak_bytes"] / MIB,
                max(r["measured_peak_bytes"] for r in runs) / MIB,
                s["planned_peak_bytes"] / base[0]["planned_peak_bytes"], parts, ms,
                statistics.median(ratios), ", ".join("%.2f" % x for x in ratios)))


main()
