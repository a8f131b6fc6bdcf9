/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * interrupt.h - Ctrl-C and SIGTERM for commands that write files: instead of
 * dying half-way with temporary files left behind, the command is asked to
 * stop (a flag the core pipelines poll), unwinds through its normal error
 * path, and exits 128 + signal.
 *
 * cafs_interrupt_start takes SIGINT, SIGTERM and SIGHUP with
 * ca_stop_signals (core/base/stop_signals.h): on the first one the flag goes
 * up, logging goes quiet, and the calling thread's blocking calls return
 * EINTR until it is done; a second signal ends the process at once. Call
 * start from the main thread before any other thread exists; at most one
 * at a time.
 */
#ifndef CAFS_INTERRUPT_H
#define CAFS_INTERRUPT_H

#include <signal.h>

/* The flag: non-zero once a signal asked us to stop. Never NULL after start. */
const volatile sig_atomic_t *cafs_interrupt_flag(void);

int cafs_interrupt_start(void);
/* Stop watching; returns the signal that was caught, or 0. */
int cafs_interrupt_stop(void);

/* The exit code for a command that ends now: 128 + signal when interrupted
 * (after saying so on stderr), else rc. */
int cafs_interrupt_exit_code(int rc);

#endif
