/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * keeper.h - a mount that outlives the process serving it.
 *
 * `cafs mount` runs a KEEPER: a small process that holds the mount's
 * /dev/fuse descriptor and nothing else (no network, no image parsing:
 * only opaque bytes and descriptors it is handed), and the SERVER as its
 * child, the same binary executed again (/proc/self/exe) with the mount's
 * options re-built as arguments and CAFS_KEEPER_SERVER in its environment
 * naming the descriptors it inherits.
 *
 * The first server opens the image, mounts, reads the kernel's INIT
 * request itself and, before answering it, hands the keeper over its
 * channel (a SOCK_SEQPACKET socketpair) the FUSE descriptor, a sealed
 * memfd with the INIT request's bytes and, for an index, sealed memfds
 * with the index's bytes as it opened them, and its metadata sidecar's and
 * prefetch profile's (empty: it had none). When a server dies (a signal,
 * an abort, the OOM killer, a non-zero exit), the keeper writes
 * FUSE_NOTIFY_RESEND to the descriptor (kernel 6.9+: every request a
 * server had read and not answered goes back to the queue) and starts a
 * new server on the same descriptor: it opens the image from the kept
 * index, sidecar and profile bytes (source.h index_data: the very image
 * served before, with no network request for any of them), feeds
 * the kept INIT through libfuse (the kernel sends INIT once per
 * connection) and reads on. A server that exits 0 was stopped cleanly (a
 * signal to it, or the mount went away): the keeper unmounts (if the
 * connection is still up) and exits 0. SIGINT, SIGTERM or SIGHUP to the
 * keeper stop its server and then do the same.
 *
 * Respawns are limited: five deaths in ten seconds of servers that had not
 * served for 0.2 s (a server that cannot start, or a request that kills
 * every server it reaches: the kernel resends it to the next) end the
 * mount with one line.
 *
 * Takeover (`cafs mount --takeover MOUNTPOINT`, an upgrade in place): each
 * keeper listens on a unix socket named after its mountpoint, in
 * $CAFS_RUNTIME_DIR, or /run/cafs for root, or $XDG_RUNTIME_DIR/cafs
 * (directories made 0700). Only root or the keeper's own user may use it
 * (SO_PEERCRED). The old keeper sends the descriptor, the INIT, index,
 * sidecar and profile memfds and the mount's arguments; the new process becomes the keeper
 * (a daemon, like `cafs mount`), starts its own server (from its own
 * binary), and once that server serves tells the old keeper, which stops
 * its server (it stops reading; its workers finish what they hold),
 * writes FUSE_NOTIFY_RESEND for anything it read and dropped, answers and
 * exits without unmounting. Both servers read the descriptor meanwhile:
 * each request is read, and answered, by one of them.
 *
 * Under a systemd unit that asks for it (CAFS_NOTIFY_MAINPID=1 and
 * $NOTIFY_SOCKET, NotifyAccess=all), a keeper sends MAINPID=<its pid> once
 * its mount answers, before its parent returns: after a takeover run as
 * the unit's ExecReload the new keeper is the unit's main process
 * (docs/systemd.md).
 *
 * What does not survive: the keeper itself killed (the descriptor closes
 * and the kernel aborts the connection), and on a kernel before 6.9 the
 * requests a dead server had read (nothing resends them; they hang: said
 * in one line when it happens).
 */
#ifndef FS_KEEPER_H
#define FS_KEEPER_H

#include <stdbool.h>
#include <stddef.h>

/* What a keeper runs with. Descriptors it is given become its own. */
struct fs_keeper_conf {
	char **server_args;     /* NULL-terminated: the server's argv after "cafs mount" */
	const char *mountpoint; /* absolute */
	int ready_fd;           /* readiness pipe to the starting parent, or -1 (foreground) */
	int log_fd;             /* stderr once detached; -1: /dev/null */
	/* a takeover: the state received from the old keeper, and the
	 * connection to it; all -1 for a new mount */
	int fuse_fd, init_fd, index_fd, sidecar_fd, profile_fd, old_keeper_fd;
};

/* Run the keeper until the mount ends; returns the exit code. */
int fs_keeper_run(const struct fs_keeper_conf *c);

/* The server's side: what CAFS_KEEPER_SERVER names (unset once read). */
struct fs_keeper_server {
	int chan;                 /* to the keeper */
	int fuse_fd;              /* -1: mount anew */
	void *init, *index;       /* resuming: the kept bytes (malloc'd; index NULL for a .catar) */
	size_t init_size, index_size;
	/* resuming: the kept sidecar and profile (size 0: there was none);
	 * NULL: not kept (a takeover from an older keeper): fetch them */
	void *sidecar, *profile;
	size_t sidecar_size, profile_size;
	bool detach;              /* the first server of a daemon: leave the caller's terminal once ready */
};
/* 1 and *ret filled when this process is a keeper's server, 0 when not,
 * or a negative errno (logged). */
int fs_keeper_server_env(struct fs_keeper_server *ret);
void fs_keeper_server_release(struct fs_keeper_server *s);
/* What a first server hands its keeper besides the connection: the
 * bytes it opened the image from (index NULL: a .catar, nothing kept;
 * sidecar and profile may be NULL with size 0: it had none). */
struct fs_keeper_kept {
	const void *index, *sidecar, *profile;
	size_t index_size, sidecar_size, profile_size;
};
/* Tell the keeper this server serves: a first server with the descriptor,
 * the INIT request's bytes and the kept bytes; a resumed one with init
 * NULL. Logs. */
int fs_keeper_server_serving(int chan, int fuse_fd, const void *init, size_t init_size,
                             const struct fs_keeper_kept *kept);

/* The takeover's client side: connect to the keeper of mountpoint and
 * receive its state. On success the conf's fuse_fd, init_fd, index_fd,
 * sidecar_fd, profile_fd (the last three -1 when not sent), old_keeper_fd
 * are set and *ret_args is the mount's arguments
 * (NULL-terminated, one malloc'd block). Logs; 1 (refused or no keeper)
 * or 0. */
int fs_keeper_takeover(const char *mountpoint, struct fs_keeper_conf *c, char ***ret_args);

#endif
