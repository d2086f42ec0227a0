"""table.py — folds the Markdown rows of bench_gemm and jax_gemm.py runs into one table:
a row per shape, a column per (provider, threads, mode), each cell the median GFLOP/s
over the runs; then the best library per shape at 1 and 2 threads against XLA.
Usage: table.py FILE..."""
import collections
import statistics
import sys

cells = collections.OrderedDict()
for path in sys.argv[1:]:
    for line in open(path):
        p = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(p) != 5 or p[0] in ("shape", "---"):
            continue
        try:
            v = float(p[4])
        except ValueError:
            continue
        col = f"{p[1]} {p[3]}t" + ("" if p[2] == "-" else f" {p[2]}")
        cells.setdefault(p[0], collections.OrderedDict()).setdefault(col, []).append(v)

cols = []
for d in cells.values():
    for c in d:
        if c not in cols:
            cols.append(c)
# kiln runs products split over its pool: the "lib" columns are for reference only
order = sorted(cols, key=lambda c: (c.split()[1], c.split()[0] == "xla", c))
print("| shape | " + " | ".join(order) + " |")
print("| --- |" + " ---: |" * len(order))
for shape, d in cells.items():
    print(f"| {shape} | " + " | ".join(
        f"{statistics.median(d[c]):.0f}" if c in d else "" for c in order) + " |")
