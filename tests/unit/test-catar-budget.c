/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-catar-budget.c - the streaming decoder's memory budget, on archives
 * generated on the fly (never held in memory):
 *  - 40 nested directories with ~8 MiB of xattrs each (320 MiB held before
 *    the budget): refused after two levels, peak RSS grows by < 64 MiB;
 *  - a directory with CA_CATAR_DEC_CHILDREN_MAX + 1 empty files: refused
 *    at the child past the cap, not at the GOODBYE;
 *  - the accepted side: the same shapes under each limit decode up to the
 *    point where the generated stream ends; 4096 plain directories deep
 *    meet only the depth limit.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "catar/catar_dec.h"
#include "tap.h"

#define FLAGS (CA_FORMAT_WITH_32BIT_UIDS | CA_FORMAT_WITH_NSEC_TIME | CA_FORMAT_WITH_PERMISSIONS | CA_FORMAT_WITH_XATTRS)
#define HDR 16u

static size_t put_hdr(uint8_t *p, uint64_t size, uint64_t type)
{
	ca_le64_write(p, size);
	ca_le64_write(p + 8, type);
	return HDR;
}

static size_t put_entry(uint8_t *p, uint64_t mode)
{
	size_t n = put_hdr(p, 64, CA_FORMAT_ENTRY);
	uint64_t v[6] = { FLAGS, mode, 0, 0, 0, UINT64_C(1000000000000000000) };
	for (int i = 0; i < 6; i++)
		ca_le64_write(p + n + 8 * i, v[i]);
	return 64;
}

/* A stream made of a head then one template repeated (at offset head_len,
 * every tmpl_len bytes), with child names patched in by patch(). */
struct gen {
	uint8_t *head, *tmpl;
	size_t head_len, tmpl_len;
	void (*patch)(uint8_t *rec, uint64_t i);
	uint64_t size;
	uint8_t *scratch;
};

static ssize_t gen_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	struct gen *g = userdata;
	size_t done = 0;
	if (off >= g->size)
		return 0;
	if (len > g->size - off)
		len = (size_t)(g->size - off);
	while (done < len) {
		uint64_t at = off + done;
		const uint8_t *src;
		size_t avail;
		if (at < g->head_len) {
			src = g->head + at;
			avail = g->head_len - (size_t)at;
		} else {
			uint64_t i = (at - g->head_len) / g->tmpl_len, in = (at - g->head_len) % g->tmpl_len;
			if (g->patch) {
				memcpy(g->scratch, g->tmpl, g->tmpl_len);
				g->patch(g->scratch, i);
				src = g->scratch + in;
			} else {
				src = g->tmpl + in;
			}
			avail = g->tmpl_len - (size_t)in;
		}
		if (avail > len - done)
			avail = len - done;
		memcpy((uint8_t *)buf + done, src, avail);
		done += avail;
	}
	return (ssize_t)len;
}

/* Peak RSS growth is only meaningful without ASan (its quarantine keeps
 * freed memory resident): there, memory errors are what it checks. */
#ifdef __SANITIZE_ADDRESS__
#define RSS_CHECKED 0
#else
#define RSS_CHECKED 1
#endif

static long maxrss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return RSS_CHECKED ? ru.ru_maxrss : 0;
}

/* Decode until an error or the end; counts NODE events. */
static int decode(struct gen *g, unsigned *ret_nodes)
{
	struct ca_catar_source src = { gen_read, NULL, g, g->size, UINT64_MAX };
	struct ca_catar_dec *d;
	int r = ca_catar_dec_new(&src, &d);
	*ret_nodes = 0;
	if (r < 0)
		return r;
	while ((r = ca_catar_dec_next(d, NULL)) > 0)
		if (r == CA_CATAR_DEC_NODE)
			(*ret_nodes)++;
	ca_catar_dec_free(d);
	return r;
}

/* A directory level: FILENAME "d", ENTRY, n_x xattrs of 64 KiB. */
static void deep(unsigned n_x, unsigned depth, int *ret_r, unsigned *ret_nodes)
{
	size_t xrec = HDR + 12 + 65536;
	size_t len = HDR + 2 + 64 + n_x * xrec;
	struct gen g = { 0 };
	uint8_t *t = malloc(len);
	size_t n = put_hdr(t, HDR + 2, CA_FORMAT_FILENAME);
	memcpy(t + n, "d", 2);
	n += 2;
	n += put_entry(t + n, S_IFDIR | 0755);
	for (unsigned i = 0; i < n_x; i++) {
		n += put_hdr(t + n, xrec, CA_FORMAT_XATTR);
		snprintf((char *)t + n, 12, "user.x%05u", i);
		n += 12;
		memset(t + n, 'v', 65536);
		n += 65536;
	}
	g.head = t + HDR + 2; /* the root: the same without its FILENAME */
	g.head_len = len - HDR - 2;
	g.tmpl = t;
	g.tmpl_len = len;
	g.size = g.head_len + (uint64_t)depth * len + 4096;
	*ret_r = decode(&g, ret_nodes);
	free(t);
}

static void patch_name(uint8_t *rec, uint64_t i)
{
	char name[9];
	snprintf(name, sizeof(name), "%07llx", (unsigned long long)i);
	memcpy(rec + HDR, name, 8);
}

/* A root with n empty files "0000000", "0000001", ... and no GOODBYE. */
static int wide(uint64_t n, unsigned *ret_nodes)
{
	uint8_t head[64], t[HDR + 8 + 64 + HDR];
	struct gen g = { .head = head, .head_len = sizeof(head), .tmpl = t, .tmpl_len = sizeof(t),
		         .patch = patch_name };
	put_entry(head, S_IFDIR | 0755);
	size_t k = put_hdr(t, HDR + 8, CA_FORMAT_FILENAME);
	memset(t + k, 0, 8);
	k += 8;
	k += put_entry(t + k, S_IFREG | 0644);
	put_hdr(t + k, HDR, CA_FORMAT_PAYLOAD);
	g.scratch = malloc(sizeof(t));
	g.size = sizeof(head) + n * sizeof(t); /* ends before any GOODBYE */
	int r = decode(&g, ret_nodes);
	free(g.scratch);
	return r;
}

int main(void)
{
	int r;
	unsigned nodes;
	long before = maxrss_kib();

	/* 127 x 64 KiB of xattrs: just under 8 MiB a level */
	deep(127, 40, &r, &nodes);
	check_int(r, ==, -EBADMSG);
	check_int(nodes, <=, 3);
	check_int(maxrss_kib() - before, <, 64 * 1024);
	/* one level and its child fit: the stream then ends (truncated) */
	deep(127, 1, &r, &nodes);
	check_int(r, ==, -EBADMSG);
	check_int(nodes, ==, 2);
	/* plain directories go deep: refused only by the depth limit */
	deep(0, CA_CATAR_DEPTH_MAX + 1, &r, &nodes);
	check_int(r, ==, -EBADMSG);
	check_int(nodes, ==, CA_CATAR_DEPTH_MAX);
	/* 64 KiB of xattrs a level: 16 MiB is 256 levels */
	deep(1, 1000, &r, &nodes);
	check_int(r, ==, -EBADMSG);
	check_int(nodes, >=, 250);
	check_int(nodes, <=, 256);

	/* children: the one past the cap is refused where it ends */
	r = wide(CA_CATAR_DEC_CHILDREN_MAX + 10, &nodes);
	check_int(r, ==, -EBADMSG);
	check_int(nodes, ==, CA_CATAR_DEC_CHILDREN_MAX + 2); /* the root, the cap, and the one refused */
	r = wide(CA_CATAR_DEC_CHILDREN_MAX, &nodes);
	check_int(r, ==, -EBADMSG); /* truncated: no GOODBYE */
	check_int(nodes, ==, CA_CATAR_DEC_CHILDREN_MAX + 1);
	check_int(maxrss_kib() - before, <, 128 * 1024);
	return tap_done();
}
