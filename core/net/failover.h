/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * failover.h - a failover group: one store slot "STORE1|STORE2|..."
 * (desync's syntax) whose members are mirrors of one another, used one at
 * a time. The one place that knows about groups: source.c builds them
 * from a store string, fs/ and tools/ only pass the string on.
 *
 * A group is a chunk backend (chunksrc.h). fetch() asks the active member:
 *   - the chunk, or "missing" (-ENOENT): that is the group's answer. The
 *     members are mirrors, so a 404 is a miss for the whole group and the
 *     chain goes on to the next store slot;
 *   - a failure (could not connect, timeout, 5xx, any error but missing):
 *     the next member becomes the active one, for this request and every
 *     later one (sticky, as desync's FailoverGroup), and the request is
 *     asked of it; a request fails only when every member failed it.
 * The active member stays active while it answers; the group goes back to
 * the first member only by going round (when the last one fails), never
 * on a timer, so a member that is down costs one failed request per
 * switch and not one per interval. Concurrent requests that fail on the
 * same member move the group on once.
 *
 * An http(s) member's own retries are left to the group (a group of two
 * or more members makes its members' engines retry nothing): the next
 * member is the retry, and a refused connection switches at once instead
 * of after the back-off. Its per-chunk failure memory (remote.h) stays.
 *
 * Thread-safe; ca_failover_free must not race with the rest (chunksrc
 * guarantees that for its backends).
 */
#ifndef CA_FAILOVER_H
#define CA_FAILOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/chunksrc.h"

#define CA_FAILOVER_MAX_MEMBERS 16

/* true if the store string s names a group (holds '|'). */
bool ca_failover_is_group(const char *s);

/* The members of a group string, split at '|' (empty members refused:
 * -EINVAL; more than CA_FAILOVER_MAX_MEMBERS: -E2BIG). *ret is a malloc'd
 * NULL-terminated array of malloc'd strings, freed with ca_failover_strv_free. */
int ca_failover_split(const char *s, char ***ret, size_t *ret_n);
void ca_failover_strv_free(char **v); /* accepts NULL */

/* s with fn applied to each member (to s itself when it is no group),
 * joined again with '|': e.g. to make local members absolute. malloc'd;
 * NULL when fn returns NULL or on ENOMEM. */
char *ca_failover_map(const char *s, char *(*fn)(const char *member));

struct ca_failover;

int ca_failover_new(struct ca_failover **ret);
void ca_failover_free(struct ca_failover *g); /* accepts NULL; frees the members */

/* Append a member (a chunk backend the group then owns, freed even when
 * this fails) named name (shown redacted in messages and stats). */
int ca_failover_add(struct ca_failover *g, const char *name, const struct ca_chunk_backend_ops *ops, void *be);

/* The chunk backend; its be pointer is a struct ca_failover *. */
extern const struct ca_chunk_backend_ops ca_failover_ops;

struct ca_failover_stats {
	size_t active;      /* index of the active member */
	size_t n_members;
	uint64_t switches;  /* times the active member changed */
	uint64_t failures;  /* member requests that failed (and moved on) */
};
void ca_failover_get_stats(struct ca_failover *g, struct ca_failover_stats *ret);
/* The active member's name, redacted (location.h), into out (cap > 0). */
void ca_failover_active_name(struct ca_failover *g, char *out, size_t cap);

#endif
