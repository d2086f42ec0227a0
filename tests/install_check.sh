#!/bin/sh
# install_check.sh BUILD CC CMAKE — installs the build into a temporary prefix and builds a
# program outside the tree against it, as a user would: through pkg-config (shared, then
# static with Libs.private) and through find_package(kiln) (kiln::kiln, kiln::kiln_static).
# Each program checks the version it was built with against the library it runs with and
# evaluates a small graph. Exit 77 (skipped) when pkg-config is missing.
set -eu
build=$1 cc=$2 cmake=$3
command -v pkg-config >/dev/null 2>&1 || { echo "pkg-config not found: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
# The installed tree is moved before use: both package files must find it where it is.
mv "$prefix" "$tmp/moved" && prefix=$tmp/moved
export KILN_CACHE_DIR="$tmp/cache"

cat >"$tmp/consumer.c" <<'C'
#include <kiln.h>
#include <stdio.h>
#include <string.h>
#define STR2(x) #x
#define STR(x) STR2(x)
int main(void) {
    const char *want = STR(KILN_VERSION_MAJOR) "." STR(KILN_VERSION_MINOR) "." STR(KILN_VERSION_PATCH);
    if (strcmp(kiln_version(), want) != 0) {
        fprintf(stderr, "header says %s, library says %s\n", want, kiln_version());
        return 1;
    }
    kiln_context *ctx;
    kiln_graph *g;
    char err[256];
    if (kiln_context_create(NULL, &ctx, err, sizeof err) != KILN_STATUS_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (kiln_graph_create(ctx, "consumer", &g) != KILN_STATUS_OK) return 1;
    int64_t n = 3;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value y = kiln_mul(g, x, x);
    if (kiln_graph_finish(g, 1, &y) != KILN_STATUS_OK) return 1;
    float in[3] = {1, 2, 3}, out[3];
    kiln_array *a, *r;
    if (kiln_array_create(ctx, KILN_DTYPE_F32, 1, &n, in, &a) != KILN_STATUS_OK) return 1;
    if (kiln_interpret(g, 1, &a, 1, &r) != KILN_STATUS_OK) {
        fprintf(stderr, "%s\n", kiln_last_error(ctx));
        return 1;
    }
    kiln_array_copy_to_host(r, out, sizeof out);
    kiln_array_destroy(a);
    kiln_array_destroy(r);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    if (out[0] != 1 || out[1] != 4 || out[2] != 9) return 1;
    printf("kiln %s ok\n", kiln_version());
    return 0;
}
C

pcdir=$(dirname "$(find "$prefix" -name kiln.pc)")
export PKG_CONFIG_PATH="$pcdir"
libdir=$(pkg-config --variable=libdir kiln)

# pkg-config, shared: the program needs libkiln.so.MAJOR at run time.
"$cc" "$tmp/consumer.c" -o "$tmp/shared" $(pkg-config --cflags --libs kiln)
LD_LIBRARY_PATH="$libdir" "$tmp/shared"
LD_LIBRARY_PATH="$libdir" ldd "$tmp/shared" | grep -q "libkiln.so.[0-9]" || {
    echo "the shared consumer does not load libkiln.so.MAJOR"
    exit 1
}

# pkg-config, static: libkiln.a with Libs.private, and no libkiln.so at run time.
libs=$(pkg-config --static --libs kiln | sed 's/-lkiln\b/-l:libkiln.a/')
"$cc" "$tmp/consumer.c" -o "$tmp/static" $(pkg-config --cflags kiln) $libs
"$tmp/static"
if ldd "$tmp/static" | grep -q libkiln; then
    echo "the static consumer still loads libkiln.so"
    exit 1
fi

# find_package(kiln): both imported targets.
mkdir "$tmp/proj"
cp "$tmp/consumer.c" "$tmp/proj/"
cat >"$tmp/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(kiln 0 REQUIRED)
add_executable(consumer_shared consumer.c)
target_link_libraries(consumer_shared PRIVATE kiln::kiln)
add_executable(consumer_static consumer.c)
target_link_libraries(consumer_static PRIVATE kiln::kiln_static)
CM
"$cmake" -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
"$cmake" --build "$tmp/proj/build" >/dev/null
# No path of the machine kiln was built on in the package: its dependencies are found anew.
! grep -q "/libopenblas\|/libcjson" "$(find "$prefix" -name kilnConfig.cmake)" || {
    echo "kilnConfig.cmake names a library path of the build machine"
    exit 1
}
"$tmp/proj/build/consumer_shared"
"$tmp/proj/build/consumer_static"
echo "install check: pkg-config (shared, static) and find_package (kiln::kiln, kiln::kiln_static) ok"
