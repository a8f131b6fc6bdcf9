/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* idset.c - open-addressing set of chunk ids with values. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "format/idset.h"
#include "format/index.h"

struct slot {
	uint8_t id[CA_CHUNK_ID_SIZE];
	uint64_t value;
	bool used;
};

struct ca_idset {
	struct slot *slots;
	size_t cap; /* power of two */
	size_t n;
};

static size_t hash_of(const uint8_t *id)
{
	uint64_t v;
	memcpy(&v, id, sizeof(v));
	return (size_t)v;
}

static struct slot *find(const struct ca_idset *s, const uint8_t *id)
{
	size_t mask = s->cap - 1;
	for (size_t i = hash_of(id) & mask;; i = (i + 1) & mask) {
		struct slot *sl = &s->slots[i];
		if (!sl->used || !memcmp(sl->id, id, CA_CHUNK_ID_SIZE))
			return sl;
	}
}

static int grow(struct ca_idset *s, size_t cap)
{
	struct slot *old = s->slots;
	size_t old_cap = s->cap;
	if (cap > SIZE_MAX / sizeof(struct slot))
		return -ENOMEM;
	s->slots = calloc(cap, sizeof(struct slot));
	if (!s->slots) {
		s->slots = old;
		return -ENOMEM;
	}
	s->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].used)
			*find(s, old[i].id) = old[i];
	free(old);
	return 0;
}

int ca_idset_new(size_t hint, struct ca_idset **ret)
{
	struct ca_idset *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	size_t cap = 64;
	while (cap < hint * 2 && cap < (SIZE_MAX >> 2))
		cap <<= 1;
	if (grow(s, cap) < 0) {
		free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

void ca_idset_free(struct ca_idset *s)
{
	if (!s)
		return;
	free(s->slots);
	free(s);
}

int ca_idset_add(struct ca_idset *s, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t value)
{
	struct slot *sl = find(s, id);
	if (sl->used)
		return 0;
	/* keep the load under 1/2 so probes stay short */
	if ((s->n + 1) * 2 > s->cap) {
		if (grow(s, s->cap * 2) < 0)
			return -ENOMEM;
		sl = find(s, id);
	}
	memcpy(sl->id, id, CA_CHUNK_ID_SIZE);
	sl->value = value;
	sl->used = true;
	s->n++;
	return 1;
}

int ca_idset_get(const struct ca_idset *s, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t *ret_value)
{
	const struct slot *sl = find(s, id);
	if (!sl->used)
		return 0;
	if (ret_value)
		*ret_value = sl->value;
	return 1;
}

int ca_idset_set(struct ca_idset *s, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t value)
{
	struct slot *sl = find(s, id);
	if (!sl->used)
		return -ENOENT;
	sl->value = value;
	return 0;
}

int ca_idset_remove(struct ca_idset *s, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct slot *sl = find(s, id);
	if (!sl->used)
		return 0;
	/* backward shift, no tombstones: an entry after the hole moves into
	 * it unless its home slot lies cyclically in (hole, entry], so that
	 * every probe still meets its entry before an empty slot */
	size_t mask = s->cap - 1, hole = (size_t)(sl - s->slots);
	for (size_t j = (hole + 1) & mask; s->slots[j].used; j = (j + 1) & mask) {
		size_t home = hash_of(s->slots[j].id) & mask;
		bool stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
		if (stays)
			continue;
		s->slots[hole] = s->slots[j];
		hole = j;
	}
	s->slots[hole].used = false;
	s->n--;
	return 1;
}

size_t ca_idset_size(const struct ca_idset *s)
{
	return s->n;
}

int ca_idset_next(const struct ca_idset *s, size_t *pos, const uint8_t **ret_id, uint64_t *ret_value)
{
	for (size_t i = *pos; i < s->cap; i++)
		if (s->slots[i].used) {
			*pos = i + 1;
			*ret_id = s->slots[i].id;
			if (ret_value)
				*ret_value = s->slots[i].value;
			return 1;
		}
	*pos = s->cap;
	return 0;
}

int ca_idset_add_index(struct ca_idset *s, const struct ca_index *idx)
{
	for (size_t i = 0; i < ca_index_n_chunks(idx); i++) {
		uint64_t a, b;
		const uint8_t *id;
		ca_index_chunk(idx, i, &a, &b, &id);
		int r = ca_idset_add(s, id, b - a);
		if (r < 0)
			return r;
	}
	return 0;
}
