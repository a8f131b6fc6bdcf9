/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * atomic_file.h - write a file under a temporary name beside its final
 * name and rename it into place only when complete, so no reader ever sees
 * half a file under the final name. Temporary names are ".#<name><16 hex>",
 * as casync's.
 */
#ifndef CA_ATOMIC_FILE_H
#define CA_ATOMIC_FILE_H

#include <stdbool.h>
#include <sys/types.h>

struct ca_atomic_file {
	int fd;
	char *tmp_path;
	char *final_path;
	/* set by the caller after open: commit fsyncs the file before the
	 * rename and the directory after it, so that after a crash the final
	 * name holds either the old file or the whole new one */
	bool durable;
};

/* Creates the temporary file (O_EXCL) with mode. 0 or negative errno. */
int ca_atomic_file_open(struct ca_atomic_file *f, const char *path, mode_t mode);
/* Closes and renames over the final name. On failure the temp is removed. */
int ca_atomic_file_commit(struct ca_atomic_file *f);
/* Closes and removes the temporary; accepts a zeroed or committed struct. */
void ca_atomic_file_abort(struct ca_atomic_file *f);
/* The three above for a file whose bytes are all in memory: p[0..n) as
 * path, with mode. 0 or negative errno (nothing left behind). */
int ca_atomic_file_write(const char *path, mode_t mode, const void *p, size_t n);

/* 16 random lowercase hex digits and a NUL. */
int ca_random_hex16(char out[17]);

#endif
