/*
 * watchdog.c - a kernel launch that does not return stops ndrun with the kernel's name, rather than
 * hanging it (a template that loops, a specialization gone wrong). The launches ndrun makes are
 * bracketed by nr_watch_begin and nr_watch_end; a thread started at the first begin wakes every 250 ms
 * and, when one launch has run past the limit (--watchdog, default NR_WATCHDOG_DEFAULT seconds; 0:
 * off), prints what it was and ends the process with status 1. Its kernels' threads cannot be stopped
 * from outside while they run, so ending the process is the one sound way out.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ndrun.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double limit = NR_WATCHDOG_DEFAULT; /* seconds; 0: off */
static double started;                     /* of the launch running, or 0 */
static char what[512];                     /* what it is */
static bool running;                       /* the thread */

static void *watch(void *unused)
{
    (void)unused;
    const struct timespec quarter = {0, 250 * 1000 * 1000};
    for (;;) {
        nanosleep(&quarter, NULL);
        pthread_mutex_lock(&lock);
        if (limit > 0 && started > 0 && nr_now() - started > limit) {
            fprintf(stderr, "ndrun: %s has not returned after %.0f s (--watchdog); stopping\n", what, limit);
            fflush(stderr);
            _exit(1);
        }
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

void nr_watchdog_set(double seconds)
{
    pthread_mutex_lock(&lock);
    limit = seconds;
    pthread_mutex_unlock(&lock);
}

void nr_watch_begin(const char *kind, const char *op, const char *symbol)
{
    pthread_mutex_lock(&lock);
    snprintf(what, sizeof what, "op '%s': the %s kernel %s", op, kind, symbol ? symbol : "(being picked)");
    started = nr_now();
    if (!running && limit > 0) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        running = pthread_create(&t, &attr, watch, NULL) == 0;
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&lock);
}

void nr_watch_picked(void *ctx, const nd_kernel_pick *pick)
{
    (void)ctx;
    pthread_mutex_lock(&lock);
    const char *op = pick->entry->op, *kind = pick->specialized ? "specialized" : "generic";
    snprintf(what, sizeof what, "op '%s': the %s kernel %s", op, kind, pick->symbol);
    started = nr_now(); /* the launch starts now: picking (a JIT build) had its own time */
    pthread_mutex_unlock(&lock);
}

void nr_watch_end(void)
{
    pthread_mutex_lock(&lock);
    started = 0;
    pthread_mutex_unlock(&lock);
}
