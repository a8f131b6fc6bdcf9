/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * caremote.h - casync's remoting protocol (HOST:PATH over ssh), both ends.
 * Not HTTP: that is remote.h.
 *
 * casync reaches HOST:PATH by running `ssh HOST casync pull|push - ARCHIVE
 * INDEX WSTORE [RSTORE...]` ("-" for what is not asked) and speaking this
 * protocol over the command's standard input and output. The transport is
 * the caller's (two file descriptors); this module is the protocol.
 *
 * The stream, as casync's src/caprotocol.h documents it: messages of a
 * 16-byte header, le64 size (header included, 16 B .. 16 MiB) and le64
 * type, then the body:
 *   HELLO        le64 feature flags: services offered (READABLE_STORE,
 *                WRITABLE_INDEX, ...) and operations wanted (PULL_INDEX,
 *                PUSH_CHUNKS, ...). Both sides send one first; each checks
 *                the other offers what it wants.
 *   INDEX, ARCHIVE        a piece (>= 1 byte) of the file;
 *   INDEX_EOF, ARCHIVE_EOF  its end.
 *   REQUEST      le64 flags (1: high priority), then >= 1 chunk ids.
 *   CHUNK        le64 flags (1: compressed, as a .cacnk), the id, the data.
 *   MISSING      an id the store does not have.
 *   GOODBYE      the end. ABORT: le64 errno, then a NUL-terminated reason.
 * Pull: the server sends the index (or archive), then answers requests,
 * until the client says goodbye or closes. Push: the client sends the
 * index (or archive); when it set PUSH_INDEX_CHUNKS the server requests
 * the chunks of that index it lacks; the server says goodbye when it has
 * everything, and has installed the index or archive before it exits.
 *
 * Everything from the peer is hostile: a size outside 16 B .. 16 MiB, a
 * type out of turn, a malformed body, a chunk not asked for or whose data
 * does not hash to its id, or silence longer than the timeout are errors
 * (the remote end, once past HELLO, waits for a client's next message as
 * long as the client keeps the connection: its session, its choice; a
 * message cut short or a client that stops reading still times out).
 * Memory is one message (at most 16 MiB) plus the set of ids of one index.
 * Requests are kept at most CA_REMOTE_WINDOW ids ahead of the answers, so
 * neither side can fill the other's pipe while both write.
 *
 * Errors are logged here, one line naming the peer ("HOST: why"), and
 * returned as a negative errno; an ABORT from the peer is logged with its
 * reason (control characters replaced). Not thread-safe: one thread per
 * ca_remote. The descriptors are made non-blocking. SIGPIPE must be
 * ignored by the caller (a peer that went away is -EPIPE).
 */
#ifndef CA_CAREMOTE_H
#define CA_CAREMOTE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* message types (casync's caprotocol.h) */
#define CA_PROTOCOL_HELLO       UINT64_C(0x3c71d0948ca5fbee)
#define CA_PROTOCOL_INDEX       UINT64_C(0xb32a91dd2b3e27f8)
#define CA_PROTOCOL_INDEX_EOF   UINT64_C(0x4f0932f1043718f5)
#define CA_PROTOCOL_ARCHIVE     UINT64_C(0x95d6428a69eddcc5)
#define CA_PROTOCOL_ARCHIVE_EOF UINT64_C(0x450bef663f24cbad)
#define CA_PROTOCOL_REQUEST     UINT64_C(0x8ab427e0f89d9210)
#define CA_PROTOCOL_CHUNK       UINT64_C(0x5213dd180a84bc8c)
#define CA_PROTOCOL_MISSING     UINT64_C(0xd010f9fac82b7b6c)
#define CA_PROTOCOL_GOODBYE     UINT64_C(0xad205dbf1a3686c3)
#define CA_PROTOCOL_ABORT       UINT64_C(0xe7d9136b7efea352)

#define CA_PROTOCOL_SIZE_MIN 16u
#define CA_PROTOCOL_SIZE_MAX (16u * 1024u * 1024u)

/* HELLO's feature flags */
#define CA_PROTOCOL_READABLE_STORE    UINT64_C(0x1)
#define CA_PROTOCOL_WRITABLE_STORE    UINT64_C(0x2)
#define CA_PROTOCOL_READABLE_INDEX    UINT64_C(0x4)
#define CA_PROTOCOL_WRITABLE_INDEX    UINT64_C(0x8)
#define CA_PROTOCOL_READABLE_ARCHIVE  UINT64_C(0x10)
#define CA_PROTOCOL_WRITABLE_ARCHIVE  UINT64_C(0x20)
#define CA_PROTOCOL_PULL_CHUNKS       UINT64_C(0x40)
#define CA_PROTOCOL_PULL_INDEX        UINT64_C(0x80)
#define CA_PROTOCOL_PULL_ARCHIVE      UINT64_C(0x100)
#define CA_PROTOCOL_PUSH_CHUNKS       UINT64_C(0x200)
#define CA_PROTOCOL_PUSH_INDEX        UINT64_C(0x400)
#define CA_PROTOCOL_PUSH_INDEX_CHUNKS UINT64_C(0x800)
#define CA_PROTOCOL_PUSH_ARCHIVE      UINT64_C(0x1000)
#define CA_PROTOCOL_FEATURE_FLAGS_MAX UINT64_C(0x1fff)

/* chunk ids asked for and not yet answered, at most */
#define CA_REMOTE_WINDOW 64

/* the largest index a peer may send (a 1 GiB table is 25 M chunks) */
#define CA_REMOTE_INDEX_MAX (UINT64_C(1) << 30)

struct ca_remote;
struct ca_index;
struct ca_store;

/* A protocol end on in_fd (read) and out_fd (written; may equal in_fd).
 * name names the peer in messages (copied). timeout_s: how long the peer
 * may stay silent (or not read) before -ETIMEDOUT. The fds stay the
 * caller's. */
int ca_remote_new(int in_fd, int out_fd, const char *name, unsigned timeout_s, struct ca_remote **ret);
void ca_remote_free(struct ca_remote *r); /* accepts NULL */
/* A flag that, once non-zero, makes a wait interrupted by a signal end
 * the transfer with -ECANCELED (not logged). NULL: none. */
void ca_remote_set_cancel(struct ca_remote *r, const volatile sig_atomic_t *flag);

/* Sends our HELLO with local_flags, reads the peer's, and checks that each
 * side offers what the other wants and that something is wanted:
 * -EPROTO (logged) otherwise. */
int ca_remote_hello(struct ca_remote *r, uint64_t local_flags);
uint64_t ca_remote_peer_flags(const struct ca_remote *r);

/* Reads the peer's index (archive: false) or archive (true) into fd,
 * through its EOF message; more than limit bytes is -EFBIG. */
int ca_remote_recv_file(struct ca_remote *r, bool archive, int fd, uint64_t limit);
/* Sends fd's bytes from its offset as an index or archive, then the EOF. */
int ca_remote_send_file(struct ca_remote *r, bool archive, int fd);

/* Client pull: asks for every chunk of idx that store lacks, checks each
 * answer (id asked for, data hashing to it in idx's digest, size as idx
 * says) and puts it in store (compressed). A MISSING answer is -ENOENT
 * naming the chunk. *ret_n (may be NULL): chunks received. */
int ca_remote_pull_chunks(struct ca_remote *r, const struct ca_index *idx, struct ca_store *store, size_t *ret_n);

/* Client push: answers the peer's requests from store (CHUNK as stored,
 * MISSING when absent) until its GOODBYE. */
int ca_remote_push_chunks(struct ca_remote *r, struct ca_store *store);

/* Sends GOODBYE. */
int ca_remote_goodbye(struct ca_remote *r);

/* The client's chunk transfers by path, each one call (the casync front
 * end's pull and push): */
/* ca_remote_pull_chunks of the index file at index_path into the local
 * store at store, then GOODBYE. Logs its errors ("index_path: why" when
 * the index does not load, "store: why" when the store does not open). */
int ca_remote_pull_index_chunks(struct ca_remote *r, const char *index_path, const char *store);
/* ca_remote_push_chunks from the local store at store (NULL: none, every
 * request answered MISSING). Logs "store: why" when it does not open. */
int ca_remote_push_store_chunks(struct ca_remote *r, const char *store);

/* The remote end of `casync pull|push`: paths NULL for "-". pull offers
 * what is named (the index, the archive, chunks from wstore then each of
 * rstores) and serves until the client's GOODBYE or end of input. push
 * takes an index (validated, then installed at index when every chunk it
 * names is in wstore, asking the client for those missing when it set
 * PUSH_INDEX_CHUNKS) or an archive (installed at archive), then says
 * GOODBYE. Errors are logged and sent to the client as ABORT. */
int ca_remote_serve(struct ca_remote *r, bool push, const char *archive, const char *index, const char *wstore,
                    char *const *rstores, size_t n_rstores);

#endif
