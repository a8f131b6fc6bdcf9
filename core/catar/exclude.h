/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exclude.h - `.caexclude` rules, with casync's semantics, for the catar
 * encoder.
 *
 * A .caexclude file holds one glob per line (fnmatch with FNM_PERIOD);
 * surrounding blanks (space, tab) are dropped, empty lines and lines
 * starting with '#' are ignored, lines end at '\n' or NUL.
 *   - "!pat" re-includes; a match by any '!' rule wins over every positive
 *     rule in force, whichever .caexclude file it came from.
 *   - A pattern with a '/' anywhere is anchored at the directory holding the
 *     file ("a/b", "/a", even "a/"); one without applies at every depth.
 *   - A component followed by '/' matches directories only.
 *   - Empty, "." and ".." components make the line (and the make) fail
 *     with -EINVAL; a line of 65536 characters or more fails with -ENOBUFS.
 *
 * Patterns live in a ca_exclude_rules arena for the whole walk; a
 * ca_exclude_set is the list of patterns in force inside one directory
 * (pointers into the arena). Nothing here is thread-safe.
 */
#ifndef CA_EXCLUDE_H
#define CA_EXCLUDE_H

#include <stdbool.h>
#include <stddef.h>

struct ca_exclude_rules;
struct ca_exclude_pat;

struct ca_exclude_set {
	const struct ca_exclude_pat **v;
	size_t n, cap;
};

#define CA_EXCLUDE_SET_INIT { NULL, 0, 0 }

int ca_exclude_rules_new(struct ca_exclude_rules **ret);
void ca_exclude_rules_free(struct ca_exclude_rules *rules); /* accepts NULL */

/* Parse one line (already stripped, non-empty, not a comment) and add its
 * top-level pattern to set. 0, -EINVAL, -ENOMEM. */
int ca_exclude_add_line(struct ca_exclude_rules *rules, const char *line, struct ca_exclude_set *set);
/* Read a whole .caexclude file from fd (not closed) into set. 0 or
 * negative errno (-EINVAL bad line, -ENOBUFS line too long, -EFBIG file
 * above 64 MiB, read errors). */
int ca_exclude_load_fd(struct ca_exclude_rules *rules, int fd, struct ca_exclude_set *set);

/* Is `name` (a directory if is_dir) excluded by set? Returns 1 excluded,
 * 0 kept, negative errno (-ENOMEM, -EINVAL for a bad glob). When child is
 * non-NULL it receives (appended) the patterns in force inside `name`. */
int ca_exclude_test(const struct ca_exclude_set *set, const char *name, bool is_dir, struct ca_exclude_set *child);

void ca_exclude_set_clear(struct ca_exclude_set *set); /* keeps the memory */
void ca_exclude_set_release(struct ca_exclude_set *set);

#endif
