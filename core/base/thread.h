/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thread.h - starting threads that log where their creator logs.
 *
 * Every thread core/ starts goes through ca_thread_create, so a message
 * from a worker reaches the logger of whoever asked for the work (log.h:
 * the logger is per thread, never process-wide).
 */
#ifndef CA_THREAD_H
#define CA_THREAD_H

#include <pthread.h>

/* pthread_create with default attributes, plus the caller's logger; the
 * thread starts with every signal blocked (signals are the program's: its
 * main thread's, or the thread it sigwaits in). 0 or a negative errno. */
int ca_thread_create(pthread_t *ret, void *(*fn)(void *), void *arg);

/* Run fn(arg) on up to n threads of ca_thread_create (n >= 1) and wait
 * for all of them; when not even one can be started, run it on the
 * calling thread, so the work is done either way. Returns the number of
 * threads that ran it (0: the caller's). */
unsigned ca_thread_pool_run(unsigned n, void *(*fn)(void *), void *arg);

#endif
