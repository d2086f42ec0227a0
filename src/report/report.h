/* report.h — the reports of an executable that print its IR or its memory plan
 * (src/report/): computed from the graph and plans, so most need
 * kiln_compile_options.keep_ir once compiling is over (exec_need_ir). The memory analysis
 * is the exception: compiling computes it (exec_analysis_compute) and the executable keeps
 * the few numbers. KILN_DUMP's files are dump.h. */
#ifndef KILN_REPORT_H
#define KILN_REPORT_H

#include "runtime/executable.h"

/* The memory analysis of e's plan into e->analysis (analysis.c), while compiling. */
void exec_analysis_compute(kiln_executable *e);
/* The memory report (plan_report) with the rematerialisation lines (analysis.c); NULL on
 * host OOM. Reads the IR: the caller checks exec_need_ir or is compiling. */
char *exec_memory_report(const kiln_executable *e);

#endif
