// The public header must be usable from C++ (extern "C", no C-only constructs), its
// "Deprecated names" section included (the build hides it elsewhere).
#undef KILN_NO_DEPRECATED
#include "kiln.h"

#include <cstdio>

int main() {
    kiln_context *ctx = nullptr;
    kiln_context_options opts = {};
    opts.ignore_environment = true;
    if (kiln_context_create(&opts, &ctx, nullptr, 0) != KILN_STATUS_OK) return 1;
    kiln_graph *g = nullptr;
    if (kiln_graph_create(ctx, "cxx", &g) != KILN_STATUS_OK) return 1;
    int64_t dims[1] = {3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, dims);
    kiln_value y = kiln_add(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1.0));
    kiln_value none = KILN_VALUE_NONE; /* the C++ spelling of the macro */
    y = kiln_layer_norm(g, y, none, KILN_VALUE_NONE, 1e-5);
    int ok = !kiln_value_ok(none) && kiln_graph_finish(g, 1, &y) == KILN_STATUS_OK;
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    std::printf("cxx_header: %d passed, %d failed\n", ok, !ok);
    return ok ? 0 : 1;
}
