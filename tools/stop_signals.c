/* stop_signals.c — how `kiln train` takes SIGINT and SIGTERM.
 *
 * A signal handler runs on whatever thread the kernel picks, in the middle of whatever it
 * was doing: with oneDNN's GEMM on the main thread, even a handler that only set a flag
 * ended runs in heap corruption about one Ctrl-C in four. So no thread of the run ever
 * takes these signals: they are blocked before the first thread (kiln's pool, oneDNN's,
 * the replicas) is made, and every thread inherits the mask; one thread of this file
 * takes them with sigwait, where any code may run.
 *
 * Threads that libraries start before main (OpenBLAS's, from its constructor) never had
 * the mask, and the kernel gives a process's signal to any thread that does not block it.
 * On those the handler below runs: it only sends the signal on to the waiting thread
 * (pthread_kill is async-signal-safe), where sigwait takes it. They are idle: kiln runs
 * BLAS on its own threads, with OpenBLAS's count set to one.
 *
 * The first SIGINT or SIGTERM asks the run to stop after the step in progress (it saves,
 * then the tool exits 128 + the signal: 130, 143, as a shell reports a process that a
 * signal ended). A second one ends the process at once: the checkpoint being written, if
 * any, is a temporary file next to the last good one (kiln_safetensors_save renames it
 * into place only when whole), as are the summaries and pictures written at the end, so
 * every temporary file of this process in the out folder is removed and the last good
 * files stay. The thread that saves is parked first (a signal of its own
 * whose handler never returns): otherwise it could create its next temporary file between
 * the folder's scan and the exit, and leave it behind. */
#include "kiln_train.h"

#include "gpt.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The tool's mutable globals: the waiting thread reaches nothing else. */
static volatile sig_atomic_t first_signal;
static char out_dir[4200];
static sigset_t stop_set;
static pthread_t waiter, saver;
static bool have_saver;
static pthread_mutex_t saver_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t saver_parked;

/* The saver's parking signal: a real-time one, which no library here uses. */
static int park_signal(void) {
    return SIGRTMAX - 1;
}

/* Runs on the saving thread and never returns: the process ends while it waits here. */
static void park(int sig) {
    (void)sig;
    saver_parked = 1;
    for (;;) pause();
}

/* Stops the saving thread where it is (a file it already created stays visible to the
 * scan). A thread that does not answer within a second is busy in an uninterruptible
 * call; the scan then goes ahead as before. */
static void park_saver(void) {
    pthread_mutex_lock(&saver_lock);
    bool sent = have_saver && !pthread_kill(saver, park_signal());
    pthread_mutex_unlock(&saver_lock);
    if (!sent) return;
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 1000 && !saver_parked; i++) nanosleep(&ms, NULL);
}

static void forward(int sig) {
    int e = errno;
    pthread_kill(waiter, sig);
    errno = e;
}

static void *wait_signals(void *arg) {
    (void)arg;
    for (;;) {
        int sig = 0;
        if (sigwait(&stop_set, &sig)) continue;
        if (!first_signal) {
            first_signal = sig;
            continue;
        }
        /* the second one: whatever is half written goes, the last good checkpoint stays */
        static const char msg[] = "\nkiln train: interrupted again: stopping now, without "
                                  "saving (the last checkpoint is kept)\n";
        if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) { /* nothing more can be said */
        }
        park_saver();
        if (out_dir[0]) gpt_remove_temps_of(out_dir, getpid());
        _exit(128 + first_signal);
    }
    return NULL;
}

int kiln_tool_block_stop_signals(void) {
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    if (pthread_sigmask(SIG_BLOCK, &stop_set, NULL)) return -1;
    pthread_attr_t at;
    if (pthread_attr_init(&at)) return -1;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&waiter, &at, wait_signals, NULL);
    pthread_attr_destroy(&at);
    if (rc) return -1;
    struct sigaction sa = {0};
    sa.sa_handler = forward;
    sa.sa_flags = SA_RESTART;
    sigfillset(&sa.sa_mask);
    struct sigaction pa = sa;
    pa.sa_handler = park;
    pa.sa_flags = 0;
    return sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL) ||
                   sigaction(park_signal(), &pa, NULL)
               ? -1
               : 0;
}

void kiln_tool_set_checkpoint_path(const char *path) {
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!path || !path[0])
        out_dir[0] = 0;
    else if (!slash)
        snprintf(out_dir, sizeof out_dir, ".");
    else
        snprintf(out_dir, sizeof out_dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    kiln_tool_set_saver_thread();
}

void kiln_tool_set_saver_thread(void) {
    pthread_mutex_lock(&saver_lock);
    saver = pthread_self();
    have_saver = true;
    pthread_mutex_unlock(&saver_lock);
}

volatile sig_atomic_t *kiln_tool_stop_flag(void) {
    return &first_signal;
}
