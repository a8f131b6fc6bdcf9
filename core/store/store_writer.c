/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* store_writer.c - the make pipeline's store seam; the local backend (see store_writer.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_writer.h"

struct ca_store_writer {
	const struct ca_store_writer_ops *ops;
	void *be;
	char *location;
};

int ca_store_writer_new(const struct ca_store_writer_ops *ops, void *be, const char *location,
                        struct ca_store_writer **ret)
{
	struct ca_store_writer *w = calloc(1, sizeof(*w));
	if (w)
		w->location = strdup(location);
	if (!w || !w->location) {
		free(w);
		ops->free(be);
		return -ENOMEM;
	}
	w->ops = ops;
	w->be = be;
	*ret = w;
	return 0;
}

void ca_store_writer_free(struct ca_store_writer *w)
{
	if (!w)
		return;
	w->ops->free(w->be);
	free(w->location);
	free(w);
}

const char *ca_store_writer_location(const struct ca_store_writer *w)
{
	return w->location;
}

int ca_store_writer_has(struct ca_store_writer *w, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	return w->ops->has(w->be, id);
}

int ca_store_writer_put(struct ca_store_writer *w, struct ca_codec *codec, const uint8_t id[CA_CHUNK_ID_SIZE],
                        const void *p, size_t n)
{
	return w->ops->put(w->be, codec, id, p, n);
}

int ca_store_writer_finish(struct ca_store_writer *w, uint64_t *ret_skipped, uint64_t *ret_skipped_bytes)
{
	return w->ops->finish(w->be, ret_skipped, ret_skipped_bytes);
}

/* ---- a local store ---- */

static int local_has(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	return ca_store_has(be, id);
}

static int local_put(void *be, struct ca_codec *codec, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n)
{
	(void)codec; /* the file is written as hashed: no network in between */
	return ca_store_put_raw(be, id, p, n);
}

static int local_finish(void *be, uint64_t *ret_skipped, uint64_t *ret_skipped_bytes)
{
	if (ret_skipped)
		*ret_skipped = 0;
	if (ret_skipped_bytes)
		*ret_skipped_bytes = 0;
	return ca_store_sync(be);
}

static void local_free(void *be)
{
	ca_store_free(be);
}

static const struct ca_store_writer_ops local_ops = {
	.kind = "local",
	.has = local_has,
	.put = local_put,
	.finish = local_finish,
	.free = local_free,
};

int ca_store_writer_wrap_local(struct ca_store *s, const char *location, struct ca_store_writer **ret)
{
	return ca_store_writer_new(&local_ops, s, location, ret);
}

int ca_store_writer_open_local(const char *path, struct ca_store_writer **ret)
{
	struct ca_store *s;
	int r = ca_store_open(path, &s);
	if (r < 0)
		return r;
	return ca_store_writer_new(&local_ops, s, path, ret);
}
