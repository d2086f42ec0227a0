#!/usr/bin/env bash
# gpu-check.sh — the one prepared run on a machine with an NVIDIA GPU (issues 13 and 31):
# builds kiln (Release), runs the GPU conformance tests, then the GPU benchmarks
# (bench_cuda: the chain, softmax and layer norm 8192^2 in f32 and bf16, log_softmax and
# RMS norm in f32, and an elementwise op over rows of 64 against the device copy, the MLP
# step in f32, TF32 and bf16 against cuBLAS alone, the fused attention (bf16 on tensor
# cores and on CUDA cores) against the written-out products; bench/gpt/gpu.sh: the GPT
# step B16 T256 L6 H8 C512 at f32, TF32 and bf16 mixed precision side by side with JAX on
# the same GPU, when bench/.venv has JAX for CUDA, and kiln's bf16 step with
# --fused-attention beside them, then with PyTorch eager and torch.compile; the step's
# profile at f32, bf16 and bf16 --fused-attention), and prints one summary. Made to finish in under 8 minutes: each step has its own time limit, and steps
# still to come are skipped (and said so) once the overall budget is spent. A failing step
# never stops the script: the summary says what passed, what failed and why.
#
# Usage: scripts/gpu-check.sh            (from anywhere; builds in build-gpu/)
# On a lent machine with no OpenBLAS or cJSON installed (the 2026-12-04 runs): download
# libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5
# libquadmath0 libcjson-dev libcjson1 into .gpudeps/ here with apt-get download, carry it
# (run's carry: [".gpudeps"]), and there `GPU_CHECK_BUDGET=500 OUT=/tmp/gout
# scripts/gpu-check.sh` unpacks them itself and finds a Python with JAX (and torch); then
# bring back /tmp/gout/summary.txt and /tmp/gout/logs.tgz (copy them under $OUT).
# Environment:
#   OUT=DIR               logs and the summary are written there too (default build-gpu/out)
#   KILN_DEPS_PREFIX=DIR  Debian packages unpacked with dpkg -x (libopenblas-dev and its
#                         dependencies) on a machine where they are not installed: passed
#                         to CMake and added to LD_LIBRARY_PATH
#   GPU_CHECK_BUDGET=S    overall budget in seconds (default 450)
#   GPT_STEPS=N           steps of each GPT side (default 20: 5 warm-up, 15 timed)
#   GPU_CHECK_ONLY="a b"  run only these steps (the build always runs, a no-op when it is
#                         up to date): a second call on a machine still warm finishes what
#                         the first call's budget left NOT RUN
#   PYTHON=PATH           the Python with JAX for CUDA (and torch) for bench/gpt/gpu.sh
#                         (default: found, as below)
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-gpu
out=${OUT:-$build/out}
budget=${GPU_CHECK_BUDGET:-450}
mkdir -p "$out" "$build"
start=$(date +%s)
summary=()

note() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"

# step NAME LIMIT_S CMD...: runs CMD with its output in $out/NAME.log (tail shown), records
# PASS / FAIL / SKIP(77) / TIMEOUT and the time taken.
step() {
    local name=$1 limit=$2
    shift 2
    if [ -n "${GPU_CHECK_ONLY:-}" ] && [ "$name" != build ]; then
        case " $GPU_CHECK_ONLY " in *" $name "*) ;; *) return ;; esac
    fi
    local now left
    now=$(date +%s)
    left=$((budget - (now - start)))
    if [ "$left" -le 20 ]; then
        summary+=("NOT RUN  $name (the ${budget}s budget is spent)")
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "=== $name (limit ${limit}s) ==="
    local t0 rc
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    local t=$(($(date +%s) - t0)) status
    case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124 | 137) status=TIMEOUT ;;
    *) status=FAIL ;;
    esac
    tail -n 25 "$out/$name.log"
    summary+=("$(printf '%-8s %s (%ss, exit %s)' "$status" "$name" "$t" "$rc")")
}

# ---- environment -------------------------------------------------------------------------
# A lent machine may lack OpenBLAS and cJSON: Debian packages carried in .gpudeps/ (ignored
# by git; `apt-get download` them here) are unpacked once and used, unless KILN_DEPS_PREFIX
# says otherwise or the system has the headers
if [ -z "${KILN_DEPS_PREFIX:-}" ] && ls "$root"/.gpudeps/*.deb >/dev/null 2>&1 &&
    ! [ -e /usr/include/cjson/cJSON.h ]; then
    KILN_DEPS_PREFIX=${TMPDIR:-/tmp}/kiln-gpudeps
    mkdir -p "$KILN_DEPS_PREFIX"
    for f in "$root"/.gpudeps/*.deb; do dpkg -x "$f" "$KILN_DEPS_PREFIX"; done
fi
# The Python for the JAX and torch sides: PYTHON, else the first of bench/.venv's, the
# machine's virtual environments' (/opt/*/.venv) and python3 whose JAX sees the GPU,
# preferring one that also imports torch (the 2026-12-04 machines had both in
# /opt/torch/.venv)
if [ -z "${PYTHON:-}" ]; then
    for want in "jax, torch" "jax"; do
        for py in "$root/bench/.venv/bin/python" /opt/*/.venv/bin/python3 python3; do
            command -v "$py" >/dev/null 2>&1 || continue
            if "$py" -c "import $want; import jax; assert jax.devices()[0].platform == 'gpu'" \
                >/dev/null 2>&1; then
                PYTHON=$py
                break 2
            fi
        done
    done
    [ -n "${PYTHON:-}" ] && export PYTHON
fi
cmake_deps=()
if [ -n "${KILN_DEPS_PREFIX:-}" ]; then
    p=$(cd "$KILN_DEPS_PREFIX" && pwd)
    cmake_deps=(-DKILN_DEPS_PREFIX="$p")
    for arch in x86_64-linux-gnu aarch64-linux-gnu; do
        for d in "$p/usr/lib/$arch/openblas-pthread" "$p/usr/lib/$arch"; do
            [ -d "$d" ] && LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        done
    done
    # dpkg -x does not run update-alternatives: make the soname the linker and loader want
    for d in "$p"/usr/lib/*/openblas-pthread; do
        [ -d "$d" ] || continue
        real=$(ls "$d"/libopenblasp-r*.so 2>/dev/null | head -n 1)
        [ -n "$real" ] && [ ! -e "$d/libopenblas.so.0" ] && ln -s "$(basename "$real")" "$d/libopenblas.so.0"
        [ -n "$real" ] && [ ! -e "$d/libopenblas.so" ] && ln -s "$(basename "$real")" "$d/libopenblas.so"
    done
fi
# NVRTC and cuBLAS are dlopen'd: the toolkit's library folders must be on the loader's path
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/targets/sbsa-linux/lib; do
    [ -d "$d" ] && LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
export LD_LIBRARY_PATH
# NCCL is dlopen'd as well: pip's wheel (nvidia-nccl-cu13 / -cu12) keeps libnccl.so.2 inside
# site-packages, where the loader does not look, so KILN_NCCL_LIBRARY names the file
if [ -z "${KILN_NCCL_LIBRARY:-}" ]; then
    for py in python3 "$root/bench/.venv/bin/python"; do
        command -v "$py" >/dev/null || continue
        for d in $("$py" -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null); do
            f=$(find "$d" -name 'libnccl.so.2*' 2>/dev/null | head -n 1)
            [ -n "$f" ] && KILN_NCCL_LIBRARY=$f && break 2
        done
    done
fi
if [ -z "${KILN_NCCL_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2'; then
    f=$(find /opt /usr/local /usr/lib -name 'libnccl.so.2*' 2>/dev/null | head -n 1)
    [ -n "$f" ] && KILN_NCCL_LIBRARY=$f
fi
[ -n "${KILN_NCCL_LIBRARY:-}" ] && export KILN_NCCL_LIBRARY
mkdir -p "$build/kcache" && chmod 700 "$build/kcache"
export KILN_CACHE_DIR=$build/kcache

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "host: $(uname -srm), $(nproc) cores"
    echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
            sed 's/^/gpu: /'
    else
        echo "gpu: no nvidia-smi on PATH"
    fi
    command -v nvcc >/dev/null && nvcc --version | tail -n 1 | sed 's/^/nvcc: /'
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    echo "KILN_NCCL_LIBRARY=${KILN_NCCL_LIBRARY:-(unset: libnccl.so.2 from the loader path)}"
} | tee "$out/machine.txt"

# ---- build ---------------------------------------------------------------------------------
# timeout runs programs, not shell functions: the build is one bash -c with its arguments
step build 300 bash -c 'cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release "${@:4}" &&
    cmake --build "$2" -j"$3" --target test_cuda test_cuda_nvrtc bench_cuda test_registry \
        test_compile_ops test_autodiff test_backend test_gpt test_nccl test_control \
        test_control_grad test_sort test_gather test_vmap test_conv test_half_forms test_linalg \
        kiln_tool' \
    build "$root" "$build" "$(nproc)" "${cmake_deps[@]}"

# ---- conformance, then the figures, then the broader suites with the time left ---------
# In order of what a short lease needs most: correctness on the device, the GPT step beside
# JAX and where its time goes, the kernel figures, then the wider suites (NVRTC's sm_90
# compile last: CI runs it too, without a GPU).
if [ -x "$build/test_cuda" ]; then
    # every op, composite, kernel form, library kernel, random programs, gradients, models,
    # copies, errors, the disk cache and the memory modes, one PASS/FAIL line each
    step conformance 180 "$build/test_cuda"
else
    summary+=("NOT RUN  the conformance tests (the build did not make test_cuda)")
fi
if [ -x "$build/kiln" ]; then
    # JAX and kiln train, each precision in turn; SKIP (77) when JAX cannot see the GPU
    step gpt_vs_jax 300 "$root/bench/gpt/gpu.sh" "$build" "$out/gpt" "${GPT_STEPS:-20}"
    # where the step's time goes, kernel by kernel (KILN_PROFILE's report at exit), f32,
    # bf16 mixed precision and bf16 with attention as the op (--fused-attention: the
    # tensor-core forward kernel): each report whole in profile_<run>.log, its head here
    step gpt_profile 130 bash -c 'for r in f32 bf16 bf16fa; do
        w=$(mktemp -d) d=${r%fa} fa=""
        [ "$r" = bf16fa ] && fa=--fused-attention
        KILN_PROFILE=1 "$1/kiln" train --overwrite --device cuda --batch 16 --context 256 --layers 6 \
            --heads 8 --channels 512 --steps 8 --seed 1337 --eval-every 0 --no-summary \
            --dtype $d $fa --out "$w" >"$2/profile_$r.log" 2>&1 || echo "kiln train --dtype $d $fa failed"
        rm -rf "$w"
        echo "=== profile, --dtype $d $fa (whole report: profile_$r.log)"
        grep -A 45 "KILN_PROFILE" "$2/profile_$r.log" | head -n 120
    done' profile "$build" "$out"
else
    summary+=("NOT RUN  gpt_vs_jax (the build did not make kiln)")
fi
if [ -x "$build/bench_cuda" ]; then
    step bench 150 "$build/bench_cuda"
    # the convolution layer's step with PyTorch (cuDNN) beside bench_cuda's two kiln rows
    [ -n "${PYTHON:-}" ] && step conv_vs_torch 60 "$PYTHON" "$root/bench/cnn/conv_layer_torch.py"
else
    summary+=("NOT RUN  bench (the build did not make bench_cuda)")
fi
if [ -x "$build/kiln" ]; then
    # host offload on the GPU (issue 34): activations, optimiser state, parameters in
    # pinned_host memory, each against everything on the device (target: the JAX policy's
    # offload at <= 1.1x the time of keeping the values)
    step offload_gpu 120 "$root/bench/gpt/offload.sh" "$build/kiln" cuda 20
    # the JAX policy's offloaded step profiled (each kernel and copy timed alone): its
    # "transfers" line is what the copies cost unoverlapped, to set beside offload_gpu's
    # excess over keeping the values (equal: the copies overlap nothing; smaller: the
    # excess is elsewhere, and the kernels' lines say where)
    step offload_profile 45 bash -c 'w=$(mktemp -d)
        KILN_PROFILE=1 "$1/kiln" train --overwrite --device cuda --batch 8 --context 128 --layers 4 \
            --heads 4 --channels 256 --steps 8 --seed 1337 --eval-every 0 --no-summary \
            --remat offload_dot_with_no_batch_dims --out "$w" >"$2/profile_offload.log" 2>&1 ||
            echo "kiln train --remat offload_dot_with_no_batch_dims failed"
        rm -rf "$w"
        grep -A 40 "KILN_PROFILE" "$2/profile_offload.log" | head -n 60' profile "$build" "$out"
fi
if [ -x "$build/test_nccl" ]; then
    # one rank on cuda:0 (NCCL puts one rank on a GPU): load, init, all-reduce on the
    # compute stream between kernels, destroy; SKIP says why when libnccl is not found
    step nccl_one_rank 60 "$build/test_nccl"
else
    summary+=("NOT RUN  nccl_one_rank (the build did not make test_nccl)")
fi
# the GPT training step of the main job (forward, backward, clipping, AdamW, donated) on
# every device against the reference interpreter
[ -x "$build/test_gpt" ] && step gpt_all_devices 90 "$build/test_gpt"
# convolutions on the device's implicit-GEMM kernel (every layout, stride, dilation, padding
# and group case, both gradients; the four floats, i32 through the im2col form) against the
# reference
[ -x "$build/test_conv" ] && step conv_all_devices 60 "$build/test_conv"
if [ -x "$build/test_registry" ]; then
    # the existing suites compare every device present through cmp_graph (tests/compare.h)
    step registry_all_devices 60 "$build/test_registry"
    step compile_ops_all_devices 90 "$build/test_compile_ops"
    step autodiff_all_devices 60 "$build/test_autodiff"
fi
# control flow on the GPU (the host drives the loop; flags and indices read back) and its
# gradients, sorting's bitonic kernel: every device against the reference
[ -x "$build/test_control" ] && step control_all_devices 30 "$build/test_control"
[ -x "$build/test_control_grad" ] && step control_grad_all_devices 40 "$build/test_control_grad"
[ -x "$build/test_sort" ] && step sort_all_devices 30 "$build/test_sort"
# cholesky and triangular solves as the GPU runs them (their row loop, expand.c), random
# shapes and a blocked-size factor: every device against the reference
[ -x "$build/test_linalg" ] && step linalg_all_devices 60 "$build/test_linalg"
# gather and scatter (expanded to take_rows / scatter_add_rows / fused loops) and kiln_vmap's
# batched programs (per-example gradients among them): every device against the reference
[ -x "$build/test_gather" ] && step gather_all_devices 40 "$build/test_gather"
[ -x "$build/test_vmap" ] && step vmap_all_devices 60 "$build/test_vmap"
# every form of the printers in bf16 and f16 (prologue rows, fast trig, staged stores, ...):
# every device against the reference
[ -x "$build/test_half_forms" ] && step half_forms_all_devices 60 "$build/test_half_forms"
# the same GPT step beside PyTorch eager and torch.compile (issue 31's further columns):
# last but NVRTC, since torch.compile's own compile takes minutes of a short lease
[ -x "$build/kiln" ] && step gpt_vs_torch 240 env GPU_SH_SIDES=torch "$root/bench/gpt/gpu.sh" \
    "$build" "$out/gpt_torch" "${GPT_STEPS:-20}"
[ -x "$build/test_cuda_nvrtc" ] && step nvrtc_sm90 90 "$build/test_cuda_nvrtc"

# ---- summary -------------------------------------------------------------------------------
note ""
note "================ gpu-check summary ($(($(date +%s) - start))s) ================"
while IFS= read -r l; do note "$l"; done <"$out/machine.txt"
note ""
for s in "${summary[@]}"; do note "$s"; done
if [ -f "$out/conformance.log" ]; then
    note ""
    note "conformance: $(grep -c '^PASS' "$out/conformance.log") PASS, $(grep -c '^FAIL' "$out/conformance.log") FAIL"
    grep '^FAIL' "$out/conformance.log" | head -n 40 | while IFS= read -r l; do note "  $l"; done
fi
for t in registry_all_devices compile_ops_all_devices autodiff_all_devices gpt_all_devices \
    control_all_devices control_grad_all_devices sort_all_devices gather_all_devices \
    vmap_all_devices conv_all_devices half_forms_all_devices nvrtc_sm90 nccl_one_rank; do
    [ -f "$out/$t.log" ] && note "$t: $(grep -E 'passed, [0-9]+ failed' "$out/$t.log" | tail -n 1)"
done
if [ -f "$out/bench.log" ]; then
    note ""
    grep -E '^(RESULT|bench_cuda:)' "$out/bench.log" | while IFS= read -r l; do note "$l"; done
fi
if [ -f "$out/conv_vs_torch.log" ]; then
    grep -E '^RESULT' "$out/conv_vs_torch.log" | while IFS= read -r l; do note "$l"; done
fi
if [ -f "$out/gpt_vs_jax.log" ]; then
    note ""
    grep -E '^(RESULT|gpu.sh:)' "$out/gpt_vs_jax.log" | while IFS= read -r l; do note "$l"; done
fi
if [ -f "$out/gpt_vs_torch.log" ]; then
    note ""
    grep -E '^(RESULT|gpu.sh:)' "$out/gpt_vs_torch.log" | while IFS= read -r l; do note "$l"; done
fi
if [ -f "$out/offload_gpu.log" ]; then
    note ""
    while IFS= read -r l; do note "$l"; done <"$out/offload_gpu.log"
fi
if [ -f "$out/offload_profile.log" ]; then
    grep -E '^(profile:|  (loops|products|transfers|scatters) )' "$out/offload_profile.log" |
        while IFS= read -r l; do note "offload profile: $l"; done
fi
# the text alone in one file, small enough to carry back from a lent machine (the GPT
# side's inputs and checkpoints stay behind)
(cd "$out" && find . -name '*.log' -o -name '*.txt' -o -name '*.json' -o -name '*.csv' |
    tar czf logs.tgz -T -) 2>/dev/null
note ""
note "logs: $out (the text of them all: $out/logs.tgz)"
