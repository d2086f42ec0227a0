/* deprecated.c — the functions of kiln.h's "Deprecated names" section: each old name calls
 * the function that replaced it and does nothing else, so old and new cannot drift apart.
 * They are real exported functions rather than macros so that a program may take their
 * address and a program linked against an older libkiln.so.0 finds its symbols. Built
 * from the public header only; a name goes from here and from kiln.h together, no sooner
 * than a release after it was deprecated (CHANGELOG.md). */

/* The whole build hides the section (KILN_NO_DEPRECATED, CMakeLists.txt) so that kiln's own
 * code uses only current names; this file defines them, so it needs the declarations. */
#undef KILN_NO_DEPRECATED
#include "kiln.h"

void kiln_array_free(kiln_array *a) {
    kiln_array_destroy(a);
}

size_t kiln_dtype_size(kiln_dtype t) {
    return kiln_dtype_itemsize(t);
}

kiln_status kiln_device_memory_stats(kiln_context *ctx, int device, kiln_memory_stats *out) {
    return kiln_device_get_memory_stats(ctx, device, out);
}

char *kiln_device_memory_summary(kiln_context *ctx, int device) {
    return kiln_device_memory_report(ctx, device);
}

kiln_status kiln_executable_memory_analysis(const kiln_executable *e, kiln_memory_analysis *out) {
    return kiln_executable_get_memory_analysis(e, out);
}

kiln_status kiln_executable_buffer_info(const kiln_executable *e, int i, kiln_buffer_info *out) {
    return kiln_executable_get_buffer_info(e, i, out);
}
