#!/bin/sh
# deps.sh — checks for what kiln's build needs on Debian/Ubuntu and installs what is
# missing when run as root; otherwise prints the exact apt-get line. Called by make;
# `deps.sh fuzz` also wants clang (libFuzzer and the sanitizer runtimes come with it).
set -e
missing=""
optional=""
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

have_cmd cmake || missing="$missing cmake"
have_cmd cc || missing="$missing gcc"
have_cmd c++ || missing="$missing g++"
have_cmd make || missing="$missing make"
if [ "$1" = fuzz ]; then
    have_cmd clang || missing="$missing clang"
fi
# OpenBLAS: the CPU backend's matrix products (linked; f64, and f32 without oneDNN).
# oneDNN's runtime: the default provider of f32 products (KILN_BLAS), loaded at run time;
# kiln builds and runs without it, on OpenBLAS. `deps.sh blis` adds BLIS for KILN_BLAS=blis.
if have_cmd dpkg-query; then
    have_pkg libopenblas-dev || missing="$missing libopenblas-dev"
    # cJSON: the safetensors header (src/io/safetensors.c); found through pkg-config.
    have_pkg libcjson-dev || missing="$missing libcjson-dev"
    have_cmd pkg-config || missing="$missing pkg-config"
    have_pkg libdnnl2 || missing="$missing libdnnl2"
    # MPICH: data-parallel training across processes (kiln_comm_create_mpi, mpirun -np N
    # kiln train). Optional: kiln builds without it; installed when run as root, else noted.
    have_pkg libmpich-dev || optional="$optional libmpich-dev"
    have_cmd mpiexec || optional="$optional mpich"
    if [ "$1" = blis ]; then
        have_pkg libblis4-pthread || missing="$missing libblis4-pthread"
    fi
fi

if [ "$(id -u)" = 0 ] && have_cmd apt-get; then
    missing="$missing$optional"
elif [ -n "$optional" ]; then
    echo "kiln: optional, for data parallelism over MPI: sudo apt-get install -y$optional" >&2
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && have_cmd apt-get; then
    echo "kiln: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
    exit 0
fi
echo "kiln: missing build dependencies. Install them with:" >&2
echo "  sudo apt-get install -y$missing" >&2
exit 1
