/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* caremote.c - casync's remoting protocol (caremote.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/buf.h"
#include "net/caremote.h"
#include "chunk/compress.h"
#include "base/digest.h"
#include "format/feature.h"
#include "base/fdio.h"
#include "format/format.h"
#include "format/idset.h"
#include "format/index.h"
#include "base/log.h"
#include "store/store.h"

#define HEADER 16u
#define FILE_PIECE (64u * 1024u)
/* idset values: the chunk's size, and where its request stands */
#define V_SIZE ((UINT64_C(1) << 40) - 1)
#define V_ASKED (UINT64_C(1) << 62)
#define V_DONE (UINT64_C(1) << 63)

struct ca_remote {
	int in_fd, out_fd;
	int timeout_ms;
	char *name;
	uint64_t peer_flags;
	bool hangup_ok; /* a puller we serve may go away at any time */
	bool idle_ok;   /* a client we serve may think between messages */
	const volatile sig_atomic_t *cancel;
	struct ca_buf msg; /* the last message read, header included */
	struct ca_buf tmp; /* chunk data: decoded, compressed or read from a store */
	struct ca_codec *codec;
};

int ca_remote_new(int in_fd, int out_fd, const char *name, unsigned timeout_s, struct ca_remote **ret)
{
	struct ca_remote *r = calloc(1, sizeof(*r));
	if (!r || !(r->name = strdup(name))) {
		free(r);
		return -ENOMEM;
	}
	r->in_fd = in_fd;
	r->out_fd = out_fd;
	r->timeout_ms = timeout_s > 86400 ? 86400000 : (int)timeout_s * 1000;
	/* a peer that stops reading must not block a write past the timeout */
	int fl = fcntl(in_fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(in_fd, F_SETFL, fl | O_NONBLOCK);
	fl = fcntl(out_fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(out_fd, F_SETFL, fl | O_NONBLOCK);
	*ret = r;
	return 0;
}

void ca_remote_free(struct ca_remote *r)
{
	if (!r)
		return;
	ca_buf_release(&r->msg);
	ca_buf_release(&r->tmp);
	ca_codec_free(r->codec);
	free(r->name);
	free(r);
}

void ca_remote_set_cancel(struct ca_remote *r, const volatile sig_atomic_t *flag)
{
	r->cancel = flag;
}

uint64_t ca_remote_peer_flags(const struct ca_remote *r)
{
	return r->peer_flags;
}

static const char *type_name(uint64_t t)
{
	switch (t) {
	case CA_PROTOCOL_HELLO: return "HELLO";
	case CA_PROTOCOL_INDEX: return "INDEX";
	case CA_PROTOCOL_INDEX_EOF: return "INDEX_EOF";
	case CA_PROTOCOL_ARCHIVE: return "ARCHIVE";
	case CA_PROTOCOL_ARCHIVE_EOF: return "ARCHIVE_EOF";
	case CA_PROTOCOL_REQUEST: return "REQUEST";
	case CA_PROTOCOL_CHUNK: return "CHUNK";
	case CA_PROTOCOL_MISSING: return "MISSING";
	case CA_PROTOCOL_GOODBYE: return "GOODBYE";
	case CA_PROTOCOL_ABORT: return "ABORT";
	default: return "unknown";
	}
}

static int unexpected(struct ca_remote *r, uint64_t type, const char *during)
{
	ca_log_error("%s: protocol error: unexpected %s message %s", r->name, type_name(type), during);
	return -EPROTO;
}

/* Waits until fd is ready for ev, at most the timeout (forever when
 * forever: a client between two messages). */
static int wait_fd(struct ca_remote *r, int fd, short ev, bool forever)
{
	struct pollfd p = { .fd = fd, .events = ev };
	for (;;) {
		int k = poll(&p, 1, forever ? -1 : r->timeout_ms);
		if (k > 0)
			return 0;
		if (k == 0)
			return ca_log_error_errno(ETIMEDOUT, "%s: no answer for %d s", r->name, r->timeout_ms / 1000);
		if (errno == EINTR && r->cancel && *r->cancel)
			return -ECANCELED;
		if (errno != EINTR)
			return ca_log_error_errno(errno, "%s", r->name);
	}
}

static int send_bytes(struct ca_remote *r, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t k = write(r->out_fd, b, n);
		if (k > 0) {
			b += k;
			n -= (size_t)k;
		} else if (k < 0 && errno == EAGAIN) {
			int e = wait_fd(r, r->out_fd, POLLOUT, false);
			if (e < 0)
				return e;
		} else if (k < 0 && errno == EPIPE && r->hangup_ok) {
			return -EPIPE;
		} else if (k < 0 && errno != EINTR) {
			return ca_log_error_errno(errno, "%s: sending", r->name);
		}
	}
	return 0;
}

static int send_msg(struct ca_remote *r, uint64_t type, const void *a, size_t an, const void *b, size_t bn)
{
	uint8_t h[HEADER];
	int e;
	ca_le64_write(h, HEADER + an + bn);
	ca_le64_write(h + 8, type);
	e = send_bytes(r, h, HEADER);
	if (e == 0 && an)
		e = send_bytes(r, a, an);
	if (e == 0 && bn)
		e = send_bytes(r, b, bn);
	return e;
}

/* Reads n bytes into p: 0, 1 at end of input before the first byte,
 * negative errno (a message cut short included) */
static int recv_bytes(struct ca_remote *r, void *p, size_t n)
{
	uint8_t *b = p;
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(r->in_fd, b + got, n - got);
		if (k > 0) {
			got += (size_t)k;
		} else if (k == 0) {
			if (got == 0)
				return 1;
			return ca_log_error_errno(ECONNRESET, "%s: connection closed in the middle of a message", r->name);
		} else if (errno == EAGAIN) {
			int e = wait_fd(r, r->in_fd, POLLIN, got == 0 && r->idle_ok);
			if (e < 0)
				return e;
		} else if (errno != EINTR) {
			return ca_log_error_errno(errno, "%s: receiving", r->name);
		}
	}
	return 0;
}

/* The peer's ABORT: its reason, made printable and short, in one line. */
static int peer_abort(struct ca_remote *r)
{
	const uint8_t *m = r->msg.data;
	size_t n = r->msg.size;
	char why[201];
	size_t k = 0;
	uint64_t err = n >= HEADER + 8 ? ca_le64_read(m + HEADER) : 0;
	for (size_t i = HEADER + 8; i < n && m[i] && k < sizeof(why) - 1; i++)
		why[k++] = m[i] >= 0x20 && m[i] < 0x7f ? (char)m[i] : '?';
	why[k] = 0;
	ca_log_error("%s: the other end gave up: %s", r->name, k ? why : "(no reason given)");
	return err > 0 && err < 4096 ? -(int)err : -ECONNABORTED;
}

/* Reads one message into r->msg: 1 and its type, 0 at end of input when
 * eof_ok (else -EPIPE), negative errno. ABORT is returned as its error. */
static int recv_msg(struct ca_remote *r, uint64_t *ret_type, bool eof_ok)
{
	uint8_t h[HEADER];
	uint64_t size;
	int e = recv_bytes(r, h, HEADER);
	if (e == 1) {
		if (eof_ok)
			return 0;
		return ca_log_error_errno(EPIPE, "%s: connection closed before the transfer ended", r->name);
	}
	if (e < 0)
		return e;
	size = ca_le64_read(h);
	if (size < CA_PROTOCOL_SIZE_MIN || size > CA_PROTOCOL_SIZE_MAX)
		return ca_log_error_errno(EPROTO, "%s: protocol error: a message of %llu bytes (allowed: 16 to 16 MiB)",
		                          r->name, (unsigned long long)size);
	r->msg.size = 0;
	e = ca_buf_reserve(&r->msg, (size_t)size, CA_PROTOCOL_SIZE_MAX);
	if (e < 0)
		return ca_log_error_errno(e, "%s", r->name);
	memcpy(r->msg.data, h, HEADER);
	e = recv_bytes(r, r->msg.data + HEADER, (size_t)size - HEADER);
	if (e == 1)
		e = ca_log_error_errno(ECONNRESET, "%s: connection closed in the middle of a message", r->name);
	if (e < 0)
		return e;
	r->msg.size = (size_t)size;
	*ret_type = ca_le64_read(h + 8);
	if (*ret_type == CA_PROTOCOL_ABORT)
		return peer_abort(r);
	return 1;
}

static int malformed(struct ca_remote *r, uint64_t type)
{
	ca_log_error("%s: protocol error: malformed %s message (%zu bytes)", r->name, type_name(type), r->msg.size);
	return -EPROTO;
}

/* Does a side offering services do all that ops asks? */
static bool provides(uint64_t ops, uint64_t services)
{
	static const uint64_t pairs[][2] = {
		{ CA_PROTOCOL_PULL_CHUNKS, CA_PROTOCOL_READABLE_STORE },
		{ CA_PROTOCOL_PULL_INDEX, CA_PROTOCOL_READABLE_INDEX },
		{ CA_PROTOCOL_PULL_ARCHIVE, CA_PROTOCOL_READABLE_ARCHIVE },
		{ CA_PROTOCOL_PUSH_CHUNKS, CA_PROTOCOL_WRITABLE_STORE },
		{ CA_PROTOCOL_PUSH_INDEX, CA_PROTOCOL_WRITABLE_INDEX },
		{ CA_PROTOCOL_PUSH_ARCHIVE, CA_PROTOCOL_WRITABLE_ARCHIVE },
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if ((ops & pairs[i][0]) && !(services & pairs[i][1]))
			return false;
	return true;
}

int ca_remote_hello(struct ca_remote *r, uint64_t local_flags)
{
	const uint64_t ops = CA_PROTOCOL_PULL_CHUNKS | CA_PROTOCOL_PULL_INDEX | CA_PROTOCOL_PULL_ARCHIVE |
	                     CA_PROTOCOL_PUSH_CHUNKS | CA_PROTOCOL_PUSH_INDEX | CA_PROTOCOL_PUSH_ARCHIVE;
	uint8_t f[8];
	uint64_t type, peer;
	int e;
	ca_le64_write(f, local_flags);
	e = send_msg(r, CA_PROTOCOL_HELLO, f, 8, NULL, 0);
	if (e == 0)
		e = recv_msg(r, &type, false);
	if (e < 0)
		return e;
	if (type != CA_PROTOCOL_HELLO)
		return unexpected(r, type, "before HELLO");
	if (r->msg.size != HEADER + 8)
		return malformed(r, type);
	peer = ca_le64_read(r->msg.data + HEADER);
	if (peer == 0 || (peer & ~CA_PROTOCOL_FEATURE_FLAGS_MAX))
		return ca_log_error_errno(EPROTO, "%s: protocol error: feature flags %#llx", r->name,
		                          (unsigned long long)peer);
	if ((peer & CA_PROTOCOL_PUSH_INDEX_CHUNKS) &&
	    (peer & (CA_PROTOCOL_PUSH_INDEX | CA_PROTOCOL_PUSH_CHUNKS)) != (CA_PROTOCOL_PUSH_INDEX | CA_PROTOCOL_PUSH_CHUNKS))
		return ca_log_error_errno(EPROTO, "%s: protocol error: feature flags %#llx", r->name,
		                          (unsigned long long)peer);
	if (!provides(peer, local_flags) || !provides(local_flags, peer) || !((peer | local_flags) & ops))
		return ca_log_error_errno(EPROTO, "%s: the other end cannot do what is asked (flags %#llx, ours %#llx)",
		                          r->name, (unsigned long long)peer, (unsigned long long)local_flags);
	r->peer_flags = peer;
	return 0;
}

int ca_remote_recv_file(struct ca_remote *r, bool archive, int fd, uint64_t limit)
{
	const uint64_t piece = archive ? CA_PROTOCOL_ARCHIVE : CA_PROTOCOL_INDEX;
	const uint64_t eof = archive ? CA_PROTOCOL_ARCHIVE_EOF : CA_PROTOCOL_INDEX_EOF;
	const char *what = archive ? "the archive" : "the index";
	uint64_t total = 0, type;
	for (;;) {
		int e = recv_msg(r, &type, false);
		if (e < 0)
			return e;
		if (type == eof)
			return r->msg.size == HEADER ? 0 : malformed(r, type);
		if (type != piece)
			return unexpected(r, type, archive ? "while receiving the archive" : "while receiving the index");
		if (r->msg.size <= HEADER)
			return malformed(r, type);
		total += r->msg.size - HEADER;
		if (total > limit)
			return ca_log_error_errno(EFBIG, "%s: %s is larger than %llu bytes", r->name, what,
			                          (unsigned long long)limit);
		e = ca_write_all(fd, r->msg.data + HEADER, r->msg.size - HEADER);
		if (e < 0)
			return ca_log_error_errno(e, "%s: writing %s", r->name, what);
	}
}

int ca_remote_send_file(struct ca_remote *r, bool archive, int fd)
{
	uint8_t *buf = malloc(FILE_PIECE);
	int e = buf ? 0 : -ENOMEM;
	while (e == 0) {
		ssize_t k = ca_read_full(fd, buf, FILE_PIECE);
		if (k < 0) {
			e = ca_log_error_errno((int)k, "%s: reading %s", r->name, archive ? "the archive" : "the index");
		} else if (k == 0) {
			e = send_msg(r, archive ? CA_PROTOCOL_ARCHIVE_EOF : CA_PROTOCOL_INDEX_EOF, NULL, 0, NULL, 0);
			break;
		} else {
			e = send_msg(r, archive ? CA_PROTOCOL_ARCHIVE : CA_PROTOCOL_INDEX, buf, (size_t)k, NULL, 0);
		}
	}
	free(buf);
	return e;
}

int ca_remote_goodbye(struct ca_remote *r)
{
	return send_msg(r, CA_PROTOCOL_GOODBYE, NULL, 0, NULL, 0);
}

/* Best effort: the peer may be gone. */
static void send_abort(struct ca_remote *r, int err, const char *reason)
{
	uint8_t e[8];
	ca_le64_write(e, (uint64_t)(err < 0 ? -err : err));
	(void)send_msg(r, CA_PROTOCOL_ABORT, e, 8, reason, strlen(reason) + 1);
}

static int use_codec(struct ca_remote *r, enum ca_digest_type t)
{
	if (r->codec && ca_digest_get_type(ca_codec_digest(r->codec)) == t)
		return 0;
	ca_codec_free(r->codec);
	r->codec = NULL;
	return ca_codec_new(t, &r->codec);
}

/* One CHUNK answer into store: it must be asked for and not yet answered,
 * hash to its id and be as long as the index says. */
static int take_chunk(struct ca_remote *r, struct ca_idset *want, struct ca_store *store)
{
	const uint8_t *m = r->msg.data;
	const uint8_t *id = m + HEADER + 8, *data = m + HEADER + 8 + CA_CHUNK_ID_SIZE;
	size_t n = r->msg.size - (HEADER + 8 + CA_CHUNK_ID_SIZE);
	uint64_t flags = ca_le64_read(m + HEADER), v;
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	int e;
	if (r->msg.size <= HEADER + 8 + CA_CHUNK_ID_SIZE || (flags & ~UINT64_C(1)))
		return malformed(r, CA_PROTOCOL_CHUNK);
	ca_id_to_hex(id, hex);
	if (ca_idset_get(want, id, &v) != 1 || !(v & V_ASKED) || (v & V_DONE))
		return ca_log_error_errno(EPROTO, "%s: protocol error: chunk %s was not asked for", r->name, hex);
	if (flags & 1) {
		e = ca_codec_decode_chunk(r->codec, data, n, id, v & V_SIZE, &r->tmp);
		if (e == 0)
			e = ca_store_put_raw(store, id, data, n);
	} else {
		uint8_t got[CA_CHUNK_ID_SIZE];
		e = ca_digest_once(ca_codec_digest(r->codec), data, n, got);
		if (e == 0 && (n != (v & V_SIZE) || memcmp(got, id, CA_CHUNK_ID_SIZE)))
			e = -EBADMSG;
		if (e == 0)
			e = ca_codec_compress(r->codec, data, n, &r->tmp);
		if (e == 0)
			e = ca_store_put_raw(store, id, r->tmp.data, r->tmp.size);
	}
	if (e == -EBADMSG)
		return ca_log_error_errno(e, "%s: chunk %s: its data does not match its id", r->name, hex);
	if (e < 0)
		return ca_log_error_errno(e, "%s: chunk %s", r->name, hex);
	return ca_idset_set(want, id, v | V_DONE);
}

/* Asks for want's chunks (those not marked V_DONE), CA_REMOTE_WINDOW at a
 * time, and takes the answers into store. */
static int fetch_chunks(struct ca_remote *r, struct ca_idset *want, size_t n_want, struct ca_store *store)
{
	uint8_t req[8 + CA_REMOTE_WINDOW * CA_CHUNK_ID_SIZE];
	size_t pos = 0, asked = 0, got = 0;
	uint64_t type;
	int e = 0;
	while (got < n_want) {
		size_t outstanding = asked - got, k = 0;
		const uint8_t *id;
		uint64_t v;
		if (outstanding <= CA_REMOTE_WINDOW / 2) {
			ca_le64_write(req, 0);
			while (k < CA_REMOTE_WINDOW - outstanding && ca_idset_next(want, &pos, &id, &v) == 1) {
				if (v & (V_DONE | V_ASKED))
					continue;
				memcpy(req + 8 + k * CA_CHUNK_ID_SIZE, id, CA_CHUNK_ID_SIZE);
				if ((e = ca_idset_set(want, id, v | V_ASKED)) < 0)
					return e;
				k++;
			}
			if (k > 0 && (e = send_msg(r, CA_PROTOCOL_REQUEST, req, 8 + k * CA_CHUNK_ID_SIZE, NULL, 0)) < 0)
				return e;
			asked += k;
		}
		e = recv_msg(r, &type, false);
		if (e < 0)
			return e;
		if (type == CA_PROTOCOL_CHUNK) {
			e = take_chunk(r, want, store);
		} else if (type == CA_PROTOCOL_MISSING) {
			char hex[2 * CA_CHUNK_ID_SIZE + 1];
			if (r->msg.size != HEADER + CA_CHUNK_ID_SIZE)
				return malformed(r, type);
			ca_id_to_hex(r->msg.data + HEADER, hex);
			return ca_log_error_errno(ENOENT, "%s: chunk %s is missing in the remote store", r->name, hex);
		} else {
			return unexpected(r, type, "while receiving chunks");
		}
		if (e < 0)
			return e;
		got++;
	}
	return 0;
}

/* The chunks of idx that no store of stores[0..n) holds: a set, all
 * values without V_DONE; *ret_n of them. */
static int missing_chunks(const struct ca_index *idx, struct ca_store *const *stores, size_t n, struct ca_idset **ret,
                          size_t *ret_n)
{
	struct ca_idset *all = NULL, *want = NULL;
	size_t pos = 0, k = 0;
	const uint8_t *id;
	uint64_t v;
	int e = ca_idset_new(ca_index_n_chunks(idx), &all);
	if (e == 0)
		e = ca_idset_add_index(all, idx);
	if (e == 0)
		e = ca_idset_new(ca_idset_size(all), &want);
	while (e == 0 && ca_idset_next(all, &pos, &id, &v) == 1) {
		int has = 0;
		for (size_t i = 0; has == 0 && i < n; i++)
			has = ca_store_has(stores[i], id);
		if (has < 0)
			e = ca_log_error_errno(has, "%s", ca_store_path(stores[0]));
		else if (has == 0 && (e = ca_idset_add(want, id, v & V_SIZE)) > 0)
			e = 0, k++;
	}
	ca_idset_free(all);
	if (e < 0) {
		ca_idset_free(want);
		return e;
	}
	*ret = want;
	*ret_n = k;
	return 0;
}

int ca_remote_pull_chunks(struct ca_remote *r, const struct ca_index *idx, struct ca_store *store, size_t *ret_n)
{
	struct ca_idset *want = NULL;
	size_t n = 0;
	int e = use_codec(r, ca_digest_type_from_flags(ca_index_feature_flags(idx)));
	if (e == 0)
		e = missing_chunks(idx, &store, 1, &want, &n);
	if (e == 0)
		e = fetch_chunks(r, want, n, store);
	ca_idset_free(want);
	if (e == 0 && ret_n)
		*ret_n = n;
	return e;
}

/* Answers one REQUEST from stores (the first that has each chunk). */
static int answer_request(struct ca_remote *r, struct ca_store *const *stores, size_t n)
{
	const uint8_t *m = r->msg.data;
	size_t count;
	if (r->msg.size < HEADER + 8 + CA_CHUNK_ID_SIZE || (r->msg.size - HEADER - 8) % CA_CHUNK_ID_SIZE ||
	    (ca_le64_read(m + HEADER) & ~UINT64_C(1)))
		return malformed(r, CA_PROTOCOL_REQUEST);
	count = (r->msg.size - HEADER - 8) / CA_CHUNK_ID_SIZE;
	/* r->msg is reused by nothing below: the ids stay valid */
	for (size_t i = 0; i < count; i++) {
		const uint8_t *id = m + HEADER + 8 + i * CA_CHUNK_ID_SIZE;
		bool compressed = false;
		int e = -ENOENT;
		for (size_t s = 0; e == -ENOENT && s < n; s++)
			e = ca_store_get_raw(stores[s], id, &r->tmp, &compressed);
		if (e == 0 && r->tmp.size > CA_PROTOCOL_SIZE_MAX - HEADER - 8 - CA_CHUNK_ID_SIZE)
			e = -EFBIG; /* casync cannot send it either */
		if (e == -ENOENT) {
			e = send_msg(r, CA_PROTOCOL_MISSING, id, CA_CHUNK_ID_SIZE, NULL, 0);
		} else if (e == 0) {
			uint8_t head[8 + CA_CHUNK_ID_SIZE];
			ca_le64_write(head, compressed ? 1 : 0);
			memcpy(head + 8, id, CA_CHUNK_ID_SIZE);
			e = send_msg(r, CA_PROTOCOL_CHUNK, head, sizeof(head), r->tmp.data, r->tmp.size);
		} else {
			char hex[2 * CA_CHUNK_ID_SIZE + 1];
			ca_id_to_hex(id, hex);
			return ca_log_error_errno(e, "chunk %s", hex);
		}
		if (e < 0)
			return e;
	}
	return 0;
}

int ca_remote_push_chunks(struct ca_remote *r, struct ca_store *store)
{
	for (;;) {
		uint64_t type;
		int e = recv_msg(r, &type, false);
		if (e < 0)
			return e;
		if (type == CA_PROTOCOL_GOODBYE)
			return r->msg.size == HEADER ? 0 : malformed(r, type);
		if (type != CA_PROTOCOL_REQUEST)
			return unexpected(r, type, "while sending chunks");
		if ((e = answer_request(r, &store, store ? 1 : 0)) < 0)
			return e;
	}
}

int ca_remote_pull_index_chunks(struct ca_remote *r, const char *index_path, const char *store)
{
	struct ca_index *idx = NULL;
	struct ca_store *s = NULL;
	int e = ca_index_open(index_path, &idx);
	if (e < 0) {
		ca_log_error_errno(e, "%s", index_path);
		goto out;
	}
	e = ca_store_open(store, &s);
	if (e < 0) {
		ca_log_error_errno(e, "%s", store);
		goto out;
	}
	e = ca_remote_pull_chunks(r, idx, s, NULL);
	if (e == 0)
		e = ca_remote_goodbye(r);
out:
	ca_store_free(s);
	ca_index_free(idx);
	return e;
}

int ca_remote_push_store_chunks(struct ca_remote *r, const char *store)
{
	struct ca_store *s = NULL;
	int e = store ? ca_store_open(store, &s) : 0;
	if (e < 0)
		return ca_log_error_errno(e, "%s", store);
	e = ca_remote_push_chunks(r, s);
	ca_store_free(s);
	return e;
}

/* ---- the remote end ---- */

static int open_input(const char *path, int *ret)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return ca_log_error_errno(errno, "%s", path);
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return ca_log_error_errno(e, "%s", path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return ca_log_error_errno(EINVAL, "%s: not a regular file", path);
	}
	/* a regular file: reads never block; back to blocking for ca_read_full */
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	*ret = fd;
	return 0;
}

static int serve_pull(struct ca_remote *r, const char *archive, const char *index, struct ca_store *const *stores,
                      size_t n)
{
	int ifd = -1, afd = -1, e = 0;
	uint64_t type;
	if (index)
		e = open_input(index, &ifd);
	if (e == 0 && archive)
		e = open_input(archive, &afd);
	if (e == 0)
		e = ca_remote_hello(r, (n ? CA_PROTOCOL_READABLE_STORE : 0) | (index ? CA_PROTOCOL_READABLE_INDEX : 0) |
		                           (archive ? CA_PROTOCOL_READABLE_ARCHIVE : 0));
	/* the puller may hang up whenever it has what it wants, and take
	 * its time between requests (casync extracts as it pulls) */
	r->hangup_ok = r->idle_ok = e == 0;
	if (e == 0 && (r->peer_flags & CA_PROTOCOL_PULL_INDEX))
		e = ca_remote_send_file(r, false, ifd);
	if (e == 0 && (r->peer_flags & CA_PROTOCOL_PULL_ARCHIVE))
		e = ca_remote_send_file(r, true, afd);
	while (e == 0 && (e = recv_msg(r, &type, true)) > 0) {
		if (type == CA_PROTOCOL_GOODBYE)
			e = 0;
		else if (type == CA_PROTOCOL_REQUEST && (r->peer_flags & CA_PROTOCOL_PULL_CHUNKS))
			e = answer_request(r, stores, n);
		else
			e = unexpected(r, type, "from a puller");
		if (e == 0 && type == CA_PROTOCOL_GOODBYE)
			break;
	}
	if (ifd >= 0)
		close(ifd);
	if (afd >= 0)
		close(afd);
	return e == -EPIPE && r->hangup_ok ? 0 : e;
}

static int serve_push(struct ca_remote *r, const char *archive, const char *index, struct ca_store *wstore)
{
	struct ca_atomic_file f = { .fd = -1 };
	struct ca_index *idx = NULL;
	struct ca_idset *want = NULL;
	size_t n = 0;
	int e = ca_remote_hello(r, (wstore ? CA_PROTOCOL_WRITABLE_STORE : 0) |
	                               (index ? CA_PROTOCOL_WRITABLE_INDEX : 0) |
	                               (archive ? CA_PROTOCOL_WRITABLE_ARCHIVE : 0));
	/* casync's pusher sends the index as it makes it: pieces may be far
	 * apart */
	r->idle_ok = e == 0;
	if (e == 0 && (r->peer_flags & CA_PROTOCOL_PUSH_INDEX)) {
		e = ca_atomic_file_open(&f, index, 0666);
		if (e < 0)
			ca_log_error_errno(e, "%s", index);
		if (e == 0)
			e = ca_remote_recv_file(r, false, f.fd, CA_REMOTE_INDEX_MAX);
		if (e == 0 && (e = ca_index_open(f.tmp_path, &idx)) < 0)
			ca_log_error_errno(e, "%s: what was sent is not an index", r->name);
		if (e == 0 && wstore && (r->peer_flags & CA_PROTOCOL_PUSH_INDEX_CHUNKS)) {
			e = use_codec(r, ca_digest_type_from_flags(ca_index_feature_flags(idx)));
			if (e == 0)
				e = missing_chunks(idx, &wstore, 1, &want, &n);
			if (e == 0)
				e = fetch_chunks(r, want, n, wstore);
			if (e == 0 && (e = ca_store_sync(wstore)) < 0)
				ca_log_error_errno(e, "%s", ca_store_path(wstore));
		}
		f.durable = true;
		if (e == 0 && (e = ca_atomic_file_commit(&f)) < 0)
			ca_log_error_errno(e, "%s", index);
	}
	if (e == 0 && (r->peer_flags & CA_PROTOCOL_PUSH_ARCHIVE)) {
		ca_atomic_file_abort(&f);
		f = (struct ca_atomic_file){ .fd = -1 };
		e = ca_atomic_file_open(&f, archive, 0666);
		if (e < 0)
			ca_log_error_errno(e, "%s", archive);
		if (e == 0)
			e = ca_remote_recv_file(r, true, f.fd, UINT64_MAX);
		f.durable = true;
		if (e == 0 && (e = ca_atomic_file_commit(&f)) < 0)
			ca_log_error_errno(e, "%s", archive);
	}
	if (e == 0) {
		/* casync's pusher may hang up once it sent all, without
		 * waiting for this: a pipe closed here is no error */
		uint8_t h[HEADER];
		ssize_t k;
		ca_le64_write(h, HEADER);
		ca_le64_write(h + 8, CA_PROTOCOL_GOODBYE);
		k = write(r->out_fd, h, HEADER);
		if (k < 0 && errno == EPIPE)
			k = HEADER;
		if (k != HEADER)
			e = send_bytes(r, h + (k > 0 ? k : 0), HEADER - (size_t)(k > 0 ? k : 0));
	}
	ca_atomic_file_abort(&f);
	ca_idset_free(want);
	ca_index_free(idx);
	return e;
}

int ca_remote_serve(struct ca_remote *r, bool push, const char *archive, const char *index, const char *wstore,
                    char *const *rstores, size_t n_rstores)
{
	struct ca_store **stores = calloc(n_rstores + 1, sizeof(*stores));
	size_t n = 0;
	int e = stores ? 0 : -ENOMEM;
	if (e == 0 && wstore && (e = ca_store_open(wstore, &stores[n++])) < 0)
		ca_log_error_errno(e, "%s", wstore), n--;
	for (size_t i = 0; e == 0 && !push && i < n_rstores; i++)
		if ((e = ca_store_open(rstores[i], &stores[n++])) < 0)
			ca_log_error_errno(e, "%s", rstores[i]), n--;
	if (e == 0 && !push)
		e = serve_pull(r, archive, index, stores, n);
	else if (e == 0)
		e = serve_push(r, archive, index, wstore ? stores[0] : NULL);
	if (e < 0 && e != -EPIPE) {
		char why[128];
		send_abort(r, e, ca_strerror(-e, why, sizeof(why)));
	}
	for (size_t i = 0; stores && i < n; i++)
		ca_store_free(stores[i]);
	free(stores);
	return e;
}
