#!/bin/sh
# run.sh — programs exported from JAX, run through kiln's importer (issue 36, docs/import.md):
# bench/import/export.py writes each program's StableHLO and HLO text, its inputs and JAX's
# outputs, XLA's memory_analysis() and JAX's time; bench_import runs both forms in kiln and
# prints one Markdown row per program and form (largest difference from JAX's outputs,
# planned peak beside XLA's, median ms per call beside JAX's), then trains the GPT step
# for STEPS steps through kiln, comparing every loss with JAX's. The programs: the GPT step,
# five small ones, and bench/programs' seventeen at small sizes (export.py).
#
# Usage: bench/import/run.sh [STEPS]   (default 100; build first: cmake --build build)
set -e
cd "$(dirname "$0")/../.."
steps=${1:-100}
out=$(mktemp -d /tmp/kiln-import-XXXXXX)
trap 'rm -rf "$out"' EXIT
bench/.venv/bin/python bench/import/export.py "$out" --steps "$steps"
build/bench_import "$out" --gpt-steps "$steps" gpt_step mlp mlp_train attention layernorm \
    softmax_xent embed rope block block_sdpa attn xent adam cumsum reduce posenc trig math64 \
    transpose fourier axes nhwc embed_grad
