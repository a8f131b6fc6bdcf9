/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * uidshift.h - casync's --uid-shift/--uid-range: user and group ids as
 * stored in an archive are the ids on disk minus a shift, modulo a range
 * (a container's id range, kept in an archive as ids from 0).
 *
 *   make:    stored = (disk - shift) % range; an id below the shift cannot
 *            be stored (-EINVAL, as casync fails)
 *   extract: disk = stored % range + shift; -EINVAL on overflow
 *
 * range 0 means the full 32-bit space. The same mapping applies to owners
 * and to the ids of ACL entries. Pure functions; thread-safe.
 */
#ifndef CA_UIDSHIFT_H
#define CA_UIDSHIFT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

struct ca_uid_shift {
	bool on;        /* false: ids as they are */
	uint32_t shift;
	uint64_t range; /* 1 .. 2^32; 0 taken as 2^32 */
};

static inline int ca_uid_shift_encode(const struct ca_uid_shift *s, uint64_t id, uint64_t *ret)
{
	if (!s || !s->on) {
		*ret = id;
		return 0;
	}
	if (id < s->shift)
		return -EINVAL;
	id -= s->shift;
	*ret = s->range ? id % s->range : id;
	return 0;
}

static inline int ca_uid_shift_decode(const struct ca_uid_shift *s, uint64_t id, uint64_t *ret)
{
	if (!s || !s->on) {
		*ret = id;
		return 0;
	}
	if (s->range)
		id %= s->range;
	id += s->shift;
	if (id > UINT32_MAX - 1) /* (uid_t)-1 is no id */
		return -EINVAL;
	*ret = id;
	return 0;
}

#endif
