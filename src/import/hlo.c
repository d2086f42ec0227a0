/* hlo.c — placeholder, replaced below */
#include "import.h"
kiln_status imp_hlo(imp_lex *L, kiln_graph **out) {
    (void)out;
    imp_fail_at(L, imp_here(L), KILN_STATUS_UNIMPLEMENTED, "HLO text is not read yet");
    return L->status;
}
