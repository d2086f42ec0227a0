"""table.py DIR... — the Markdown table of one GPT side-by-side run per DIR (run.sh).

Each DIR holds one folder per side (jax, torch_eager, torch_compile, kiln) with the
losses.csv (columns step, loss, ms; kiln's also val_loss) and summary.json the side wrote,
and config.txt (run.sh's line). Prints, per side: the loss at step 0 and at steps
50/100/150/199, the largest |loss - JAX's loss| over the run, the median ms/step and the
memory figure that side can give. Exits 1 when a side's step-0 loss differs from JAX's by
more than 1e-4 (they start from the same weights on the same batch).
"""
import csv
import json
import os
import sys

SIDES = [("jax", "JAX (jit, donated)"), ("torch_eager", "PyTorch eager"),
         ("torch_compile", "torch.compile"), ("kiln", "kiln")]
AT = [50, 100, 150, 199]


def mib(b):
    return f"{b / 2**20:.1f} MiB"


def load(d):
    if not os.path.exists(os.path.join(d, "losses.csv")):
        return None
    with open(os.path.join(d, "losses.csv")) as f:
        losses = [float(r["loss"]) for r in csv.DictReader(f)]
    with open(os.path.join(d, "summary.json")) as f:
        return losses, json.load(f)


def memory(side, s):
    if side == "jax":
        return (f"compiled step: {mib(s['peak_bytes'])} (args {mib(s['argument_bytes'])} + out "
                f"{mib(s['output_bytes'])} + temp {mib(s['temp_bytes'])} - aliased "
                f"{mib(s['alias_bytes'])})")
    if side.startswith("torch"):
        return f"peak RSS delta {mib(s['peak_rss_delta_bytes'])} (process, not tensors)"
    return (f"planned {mib(s['planned_peak_bytes'])} / measured "
            f"{mib(s['measured_peak_bytes'])}")


def table(d):
    bad = 0
    print(f"\n{open(os.path.join(d, 'config.txt')).read().strip()}\n")
    print("| side | loss step 0 | " + " | ".join(f"step {a}" for a in AT) +
          " | max abs loss diff vs JAX | ms/step (median) | vs fastest | memory |")
    print("| --- | ---: | " + " | ".join("---:" for _ in AT) + " | ---: | ---: | ---: | --- |")
    runs = {side: load(os.path.join(d, side)) for side, _ in SIDES}
    ref = runs["jax"]
    fastest = min(r[1]["ms_per_step_median"] for r in runs.values() if r)
    for side, label in SIDES:
        r = runs[side]
        if r is None:
            note = open(os.path.join(d, side, "SKIPPED")).read().strip() if os.path.exists(
                os.path.join(d, side, "SKIPPED")) else "did not run"
            print(f"| {label} | {note} |" + " |" * (len(AT) + 4))
            continue
        losses, s = r
        at = " | ".join(f"{losses[a]:.4f}" if a < len(losses) else "" for a in AT)
        if ref:
            n = min(len(losses), len(ref[0]))
            diff = max(abs(a - b) for a, b in zip(losses[:n], ref[0][:n]))
            d0 = abs(losses[0] - ref[0][0])
            if d0 > 1e-4:
                bad = 1
                print(f"step 0: {label} {losses[0]:.6f} vs JAX {ref[0][0]:.6f}: differs by "
                      f"{d0:.2e} > 1e-4", file=sys.stderr)
            diff_s = f"{diff:.2e}"
        else:
            diff_s = "(no JAX run)"
        ms = s["ms_per_step_median"]
        d0s = f" (diff {abs(losses[0] - ref[0][0]):.0e})" if ref and side != "jax" else ""
        print(f"| {label} | {losses[0]:.5f}{d0s} | {at} | {diff_s} | {ms:.1f} | "
              f"{ms / fastest:.2f}x | {memory(side, s)} |")
    return bad


sys.exit(max(table(d) for d in sys.argv[1:]))
