/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stop_signals.h - SIGINT, SIGTERM and SIGHUP turned into a stop that
 * cannot be lost, for a command that must unwind cleanly and for the
 * mount's session loop.
 *
 * ca_stop_signals_start blocks the three signals in the calling thread
 * (every thread it starts afterwards inherits the block; core threads block
 * all signals anyway, thread.h) and takes them in a thread of its own with
 * sigwait. On the first one it raises the flag, calls on_stop(userdata,
 * sig) in that thread, and from then on wakes the calling thread with
 * SIGUSR1 (a no-op handler installed without SA_RESTART, so its blocking
 * read, wait or semaphore returns EINTR) every 50 ms until
 * ca_stop_signals_end: a single wake-up landing between the thread's look
 * at its flag and a blocking call would be lost, and it would block on
 * (seen: make reading a stalled FIFO; libfuse's loop sleeping on its
 * semaphore). With second_kills, a second signal ends the process as that
 * signal would (the user insists); otherwise it is ignored.
 *
 * Signal dispositions are process-wide: one of these at a time, started by
 * a program's main side (a command, the mount), never by library code on
 * its own.
 */
#ifndef CA_STOP_SIGNALS_H
#define CA_STOP_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

struct ca_stop_signals;
typedef void (*ca_stop_fn)(void *userdata, int sig);

/* 0 or a negative errno. on_stop may be NULL. */
int ca_stop_signals_start(ca_stop_fn on_stop, void *userdata, bool second_kills, struct ca_stop_signals **ret);

/* Non-zero once a signal asked to stop (for code that polls a flag). */
const volatile sig_atomic_t *ca_stop_signals_flag(const struct ca_stop_signals *s);

/* Stop waking the caller and end the thread; the signals stay blocked (one
 * arriving later stays pending). Returns the signal that was caught, or 0.
 * Accepts NULL. */
int ca_stop_signals_end(struct ca_stop_signals *s);

#endif
