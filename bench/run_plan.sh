#!/bin/sh
# run_plan.sh — the memory planner's figures side by side with JAX, in one run.
# Usage: bench/run_plan.sh
# Builds kiln (Release), makes bench/.venv with NumPy and JAX (CPU) if they are missing,
# runs bench_plan and bench/plan_jax.py on the same programs and prints a Markdown table
# (bench/RESULTS.md, "Memory planner").
set -e
cd "$(dirname "$0")/.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_plan >/dev/null
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import numpy, jax' 2>/dev/null || bench/.venv/bin/pip install -q numpy jax
cache=$(mktemp -d)
figures=$(mktemp)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
KILN_CACHE_DIR=$cache ./build-bench/bench_plan >"$figures"
bench/.venv/bin/python bench/plan_jax.py "$figures"
rm -rf "$cache" "$figures"
