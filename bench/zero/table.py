"""bench/zero/table.py DIR: the markdown table of bench/zero/run.sh's runs
(DIR/n<N>-zero<stage>/summary.json, stage 0: unsharded): per-rank memory of the step and
its time, sharded against unsharded at the same number of ranks."""
import json
import os
import sys

MIB = 1 << 20


def load(d, name):
    p = os.path.join(d, name, "summary.json")
    return json.load(open(p)) if os.path.exists(p) else None


def main():
    d = sys.argv[1]
    base_peak = {}
    base_ms = {}
    print("| ranks | optimiser state | per-rank optimiser state (MiB) | planned peak (MiB) "
          "| measured peak (MiB) | x unsharded peak | params / grads / opt. / saved act. / temps "
          "at the peak (MiB) | ms/step (median) | x unsharded time |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|")
    for n in (1, 2, 4):
        for stage in (0, 2, 1):
            zero = stage > 0
            s = load(d, "n%d-zero%d" % (n, stage))
            if not s:
                continue
            if not zero:
                base_peak[n], base_ms[n] = s["planned_peak_bytes"], s["ms_per_step_median"]
            m = s["memory_at_peak"]
            parts = " / ".join("%.1f" % (m[k] / MIB) for k in
                               ("parameter", "gradient", "optimizer_state", "activation",
                                "temporary"))
            print("| %d | %s | %.2f | %.1f | %.1f | %.2f | %s | %.0f | %.2f |" % (
                n, "ZeRO-%d, 1/%d" % (s["zero_stage"], n) if zero else "whole",
                s["optimizer_state_bytes_per_rank"] / MIB, s["planned_peak_bytes"] / MIB,
                s["measured_peak_bytes"] / MIB, s["planned_peak_bytes"] / base_peak[n],
                parts, s["ms_per_step_median"], s["ms_per_step_median"] / base_ms[n]))


main()
