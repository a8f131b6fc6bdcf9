/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store_verify.h - check every chunk file of a store against its name:
 * read it, decompress it (a bare chunk is taken as is) and hash it; with
 * repair, remove the ones that do not match, so the chunk source fetches
 * them again. Runs a pool of threads of its own over the list the walker
 * made; returns when all are done.
 *
 * Safe against concurrent users of the store: a chunk removed since the
 * walk (by prune, by a mount replacing a corrupt copy) is skipped.
 */
#ifndef CA_STORE_VERIFY_H
#define CA_STORE_VERIFY_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/digest.h"
#include "format/format.h"

struct ca_store;

struct ca_store_verify_opts {
	unsigned threads;            /* 0: one per CPU, at most 16; never more than 64 */
	bool any_digest;             /* true: a chunk is good if it matches under SHA-512/256 or SHA-256 */
	enum ca_digest_type digest;  /* the one digest when !any_digest */
	bool repair;                 /* remove chunks that do not match */
	/* Called for each chunk that is corrupt (err -EBADMSG; removed says
	 * whether repair removed it) or could not be checked (another errno),
	 * from the worker threads, possibly concurrently. May be NULL. */
	void (*on_bad)(void *userdata, const uint8_t id[CA_CHUNK_ID_SIZE], int err, bool removed);
	void *userdata;
	/* optional: once set (a signal handler may set it), no further chunk
	 * is checked and the call returns -ECANCELED */
	const volatile sig_atomic_t *cancel;
};

struct ca_store_verify_stats {
	uint64_t ok;      /* chunk files that match their id */
	uint64_t corrupt; /* that do not */
	uint64_t removed; /* corrupt ones repair removed */
	uint64_t errors;  /* that could not be read or checked (I/O, memory) */
};

/* Verify every chunk file (compressed and bare) of s; *ret_stats is set
 * whenever the walk succeeded. Returns 0 (even if chunks are corrupt: see
 * the stats), or a negative errno if the store could not be walked. */
int ca_store_verify(struct ca_store *s, const struct ca_store_verify_opts *opts,
                    struct ca_store_verify_stats *ret_stats);

#endif
