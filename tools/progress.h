/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * progress.h - a one-line progress bar on stderr, drawn only when stderr is a
 * terminal; silent otherwise. Thread-safe; redraws at most ten times a second.
 */
#ifndef CAFS_PROGRESS_H
#define CAFS_PROGRESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct cafs_progress {
	const char *label;
	uint64_t total; /* 0 if unknown */
	uint64_t start_ns, last_ns;
	bool enabled, drawn;
	pthread_mutex_t lock;
};

void cafs_progress_init(struct cafs_progress *p, const char *label, uint64_t total);
/* Matches the callback shape of ca_make_opts / ca_extract_opts. */
void cafs_progress_update(void *p, uint64_t done);
/* Erase the bar. */
void cafs_progress_done(struct cafs_progress *p);

#endif
