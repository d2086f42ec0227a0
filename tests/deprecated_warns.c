/* deprecated_warns.c — compiled (never run) by check_deprecated.cmake, which wants a
 * deprecation warning naming the replacement at each marked use below. Not part of any
 * target: it must compile with warnings allowed. */
#include "kiln.h"

void old_program(kiln_array *a);
void old_program(kiln_array *a) {
    kiln_compare_dir dir = KILN_CMP_LT; /* wants: use kiln_cmp */
    (void)dir;
    kiln_array_free(a); /* wants: use kiln_array_destroy */
    /* wants: use kiln_dtype_itemsize (and, from clang 14 on: use KILN_DTYPE_F32) */
    if (kiln_dtype_size(KILN_F32) != 4) return;
}
