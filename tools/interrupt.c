/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* interrupt.c - turn termination signals into a polled stop flag. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "interrupt.h"
#include "base/log.h"
#include "base/stop_signals.h"

/* Signal state is process-wide by nature; this is the command's (main's)
 * side of it, never touched by core/ except through the flag pointer. */
static struct ca_stop_signals *stop;
static const volatile sig_atomic_t not_stopping;

const volatile sig_atomic_t *cafs_interrupt_flag(void)
{
	return stop ? ca_stop_signals_flag(stop) : &not_stopping;
}

static void on_stop(void *userdata, int sig)
{
	(void)userdata;
	(void)sig;
	/* what fails from here on fails because we asked it to: one line at
	 * exit says so instead */
	ca_log_set_level(CA_LOG_SILENT);
}

int cafs_interrupt_start(void)
{
	return ca_stop_signals_start(on_stop, NULL, true, &stop);
}

int cafs_interrupt_stop(void)
{
	int sig = ca_stop_signals_end(stop);
	stop = NULL;
	return sig;
}

int cafs_interrupt_exit_code(int rc)
{
	int sig = cafs_interrupt_stop();
	if (!sig)
		return rc;
	fprintf(stderr, "cafs: interrupted by %s\n", strsignal(sig));
	return 128 + sig;
}
