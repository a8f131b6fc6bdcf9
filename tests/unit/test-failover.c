/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-failover.c - failover groups: splitting and mapping group strings,
 * and a group in a real chunk source whose members are a real local store
 * and real HTTP stores on a 127.0.0.1 port that refuses connections (a
 * socket bound and never listened on): a refused member moves the group
 * on and the next member answers; a miss is the group's answer and moves
 * nothing; every member failing is that error, not "missing".
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/chunksrc.h"
#include "base/digest.h"
#include "net/failover.h"
#include "net/remote.h"
#include "store/store.h"
#include "tap.h"
#include "testdata.h"

static char tmpdir[] = "/tmp/cafs-test-failover.XXXXXX";

static char *prefixed(const char *m)
{
	char *s = NULL;
	if (!strcmp(m, "fail"))
		return NULL;
	return asprintf(&s, "/x/%s", m) < 0 ? NULL : s;
}

static void test_strings(void)
{
	char **v = NULL;
	size_t n = 0;

	check(!ca_failover_is_group("http://a/s"));
	check(ca_failover_is_group("http://a/s|http://b/s"));
	check_int(ca_failover_split("http://a/s|/b/s|c", &v, &n), ==, 0);
	check_int(n, ==, 3);
	check_str(v[0], "http://a/s");
	check_str(v[1], "/b/s");
	check_str(v[2], "c");
	check(v[3] == NULL);
	ca_failover_strv_free(v);
	check_int(ca_failover_split("a||b", &v, &n), ==, -EINVAL);
	check_int(ca_failover_split("|a", &v, &n), ==, -EINVAL);
	check_int(ca_failover_split("a|", &v, &n), ==, -EINVAL);
	char many[64] = "a";
	for (int i = 1; i < CA_FAILOVER_MAX_MEMBERS; i++)
		strcat(many, "|a");
	check_int(ca_failover_split(many, &v, &n), ==, 0);
	check_int(n, ==, CA_FAILOVER_MAX_MEMBERS);
	ca_failover_strv_free(v);
	strcat(many, "|a");
	check_int(ca_failover_split(many, &v, &n), ==, -E2BIG);

	char *m = ca_failover_map("a|b", prefixed);
	check_str(m, "/x/a|/x/b");
	free(m);
	m = ca_failover_map("a", prefixed);
	check_str(m, "/x/a");
	free(m);
	check(ca_failover_map("a|fail|b", prefixed) == NULL); /* and nothing leaks (ASan) */
	m = ca_failover_map("a||b", prefixed);                /* left for the open to refuse */
	check_str(m, "a||b");
	free(m);
}

/* A chunk written bare (its data as it is) into a local store directory. */
static void put_bare(const char *store, const uint8_t *id, const void *p, size_t n)
{
	char rel[CA_STORE_REL_PATH_LEN + 1], path[4096];
	ca_store_rel_path(id, rel);
	rel[CA_STORE_REL_PATH_LEN - 6] = 0; /* no .cacnk: bare */
	snprintf(path, sizeof(path), "%s/%.4s", store, rel);
	mkdir(store, 0755);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s", store, rel);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
		abort();
}

/* A 127.0.0.1 port that refuses connections while fd stays open. */
static int refusing_port(int *ret_fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		abort();
	*ret_fd = fd;
	return ntohs(a.sin_port);
}

struct group_src {
	struct ca_chunksrc *src;
	struct ca_failover *g;
};

/* A chunk source with one group of members: "dead" (an HTTP store on the
 * refusing port) or a local store path. */
static void group_open(struct group_src *gs, const char *const *members, size_t n, int port)
{
	struct ca_http_opts o;
	ca_http_opts_init(&o);
	o.retries = 0;
	if (ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &gs->src) < 0 || ca_failover_new(&gs->g) < 0)
		abort();
	for (size_t i = 0; i < n; i++) {
		char url[64];
		if (!strcmp(members[i], "dead")) {
			struct ca_remote_store *rs;
			snprintf(url, sizeof(url), "http://127.0.0.1:%d/s", port);
			if (ca_remote_store_new(url, &o, &rs) < 0 ||
			    ca_failover_add(gs->g, url, &ca_remote_store_ops, rs) < 0)
				abort();
		} else {
			struct ca_store *s;
			if (ca_store_open(members[i], &s) < 0 ||
			    ca_failover_add(gs->g, members[i], ca_chunksrc_store_backend(), s) < 0)
				abort();
		}
	}
	if (ca_chunksrc_add_backend(gs->src, &ca_failover_ops, gs->g) < 0)
		abort();
}

static int get(struct group_src *gs, const uint8_t *id, const uint8_t *want, size_t size)
{
	const struct ca_chunk *c = NULL;
	int r = ca_chunksrc_get(gs->src, id, size, &c);
	if (r == 0 && (c->size != size || memcmp(c->data, want, size)))
		r = -EBADMSG;
	ca_chunksrc_put(gs->src, c);
	return r;
}

static void test_group(void)
{
	uint8_t a[5000], b[3000], ida[CA_CHUNK_ID_SIZE], idb[CA_CHUNK_ID_SIZE];
	char full[4200], onlya[4200];
	struct ca_failover_stats st;
	struct group_src gs;
	char name[256];
	int fd, port = refusing_port(&fd);

	testdata_xorshift(a, sizeof(a), 1);
	testdata_xorshift(b, sizeof(b), 2);
	struct ca_digest *d = NULL;
	if (ca_digest_new(CA_DIGEST_SHA512_256, &d) < 0)
		abort();
	ca_digest_once(d, a, sizeof(a), ida);
	ca_digest_once(d, b, sizeof(b), idb);
	ca_digest_free(d);
	snprintf(full, sizeof(full), "%s/full", tmpdir);
	snprintf(onlya, sizeof(onlya), "%s/onlya", tmpdir);
	put_bare(full, ida, a, sizeof(a));
	put_bare(full, idb, b, sizeof(b));
	put_bare(onlya, ida, a, sizeof(a));

	/* the first member refuses: the second answers, and stays active */
	const char *m1[] = { "dead", onlya };
	group_open(&gs, m1, 2, port);
	check_int(get(&gs, ida, a, sizeof(a)), ==, 0);
	ca_failover_get_stats(gs.g, &st);
	check_int(st.active, ==, 1);
	check_int(st.switches, ==, 1);
	check_int(st.failures, ==, 1);
	ca_failover_active_name(gs.g, name, sizeof(name));
	check_str(name, onlya);
	/* missing at the active member: the group's miss, the dead one not asked */
	check_int(get(&gs, idb, b, sizeof(b)), ==, -ENOENT);
	ca_failover_get_stats(gs.g, &st);
	check_int(st.switches, ==, 1);
	check_int(st.failures, ==, 1);
	ca_chunksrc_free(gs.src);

	/* a miss never moves the group, even when a later member has it */
	const char *m2[] = { onlya, full };
	group_open(&gs, m2, 2, port);
	check_int(get(&gs, idb, b, sizeof(b)), ==, -ENOENT);
	ca_failover_get_stats(gs.g, &st);
	check_int(st.active, ==, 0);
	check_int(st.switches, ==, 0);
	ca_chunksrc_free(gs.src);

	/* every member fails: that error, not "missing" */
	const char *m3[] = { "dead", "dead" };
	group_open(&gs, m3, 2, port);
	check_int(get(&gs, ida, a, sizeof(a)), ==, -ECONNREFUSED);
	ca_failover_get_stats(gs.g, &st);
	check_int(st.failures, ==, 2);
	ca_chunksrc_free(gs.src);
	close(fd);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	test_strings();
	test_group();
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		tap_diag("could not remove the temporary directory");
	return tap_done();
}
