/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* keeper.c - the process that holds a mount's FUSE connection (keeper.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"
#include "image/fs_face.h"

#define ENV_SERVER "CAFS_KEEPER_SERVER"
#define MAX_FDS 6
#define DEATHS_MAX 5
#define DEATHS_WINDOW_NS (10 * NS)
#define SERVED_ENOUGH_NS (NS / 5)
#define NS INT64_C(1000000000)

#ifndef FUSE_NOTIFY_RESEND
#define FUSE_NOTIFY_RESEND 7
#endif

/* ---- small helpers ---- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* A sealed memfd holding data: the keeper keeps bytes it cannot change. */
static int blob_fd(const char *name, const void *data, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < size;) {
		ssize_t k = write(fd, (const char *)data + done, size - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : EIO;
			close(fd);
			return -e;
		}
		done += (size_t)k;
	}
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	return fd;
}

static int blob_read(int fd, void **ret, size_t *ret_size)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	size_t size = (size_t)st.st_size;
	char *p = malloc(size ? size : 1);
	if (!p)
		return -ENOMEM;
	for (size_t done = 0; done < size;) {
		ssize_t k = pread(fd, p + done, size - done, (off_t)done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(p);
			return k < 0 ? -errno : -EIO;
		}
		done += (size_t)k;
	}
	*ret = p;
	*ret_size = size;
	return 0;
}

/* One message: a 4-byte tag and up to MAX_FDS descriptors. */
static int send_msg(int sock, const char tag[4], const int *fds, size_t n_fds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MAX_FDS)] = { 0 };
	struct iovec iov = { .iov_base = (void *)tag, .iov_len = 4 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (n_fds) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
	}
	ssize_t k;
	do
		k = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (k < 0 && errno == EINTR);
	return k == 4 ? 0 : k < 0 ? -errno : -EIO;
}

/* 0 and tag set, -EPIPE at EOF, or -errno. fds[] get -1 past what came. */
static int recv_msg(int sock, char tag[4], int *fds, size_t max_fds, size_t *ret_n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
	struct iovec iov = { .iov_base = tag, .iov_len = 4 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	size_t n = 0;
	ssize_t k;
	for (size_t i = 0; i < max_fds; i++)
		fds[i] = -1;
	do
		k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t got = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)CMSG_DATA(cm);
		for (size_t i = 0; i < got; i++) {
			if (n < max_fds)
				fds[n++] = in[i];
			else
				close(in[i]);
		}
	}
	if (ret_n)
		*ret_n = n;
	if (k == 0)
		return -EPIPE;
	return k == 4 ? 0 : -EBADMSG;
}

/* ---- the takeover socket ---- */

/* a refused runtime directory's name and why, as one message says it */
#define DIR_WHY_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) + CA_TRUSTED_FILE_WHY_MAX + 4)

/* The socket's directory, made 0700 when missing: -ENOENT when there is
 * none; -EPERM (why says it, with the directory) when another user owns it
 * or may write it (CAFS_RUNTIME_DIR given, or made before us): they could
 * swap the socket, and a takeover would talk to their keeper. The rule of
 * the files that decide trust (trusted_file.h). */
static int runtime_dir(char **ret, char why[DIR_WHY_MAX])
{
	const char *env = getenv("CAFS_RUNTIME_DIR");
	char *dir = NULL, reason[CA_TRUSTED_FILE_WHY_MAX] = "";
	struct stat st;
	int fd = -1, r;
	if (env && *env)
		dir = strdup(env);
	else if (geteuid() == 0)
		dir = strdup("/run/cafs");
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env && asprintf(&dir, "%s/cafs", env) < 0)
		dir = NULL;
	if (!dir || (mkdir(dir, 0700) < 0 && errno != EEXIST)) {
		r = -ENOENT;
		goto out;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = fd < 0 || fstat(fd, &st) < 0 ? -errno : ca_trusted_file_check(&st, S_IFDIR, reason);
	if (r < 0) {
		snprintf(why, DIR_WHY_MAX, "%s: %s", dir, *reason ? reason : strerror(-r));
		r = -EPERM;
	}
out:
	if (fd >= 0)
		close(fd);
	if (r < 0)
		free(dir);
	else
		*ret = dir;
	return r;
}

/* DIR/mnt-<FNV-1a of the mountpoint>.sock: the path may be longer than a
 * socket name can be; the old keeper sends its mountpoint, which the
 * client compares. Errors as runtime_dir's. */
static int socket_addr(const char *mountpoint, struct sockaddr_un *ret, char why[DIR_WHY_MAX])
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (const char *p = mountpoint; *p; p++)
		h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
	char *dir = NULL;
	int r = runtime_dir(&dir, why);
	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	ret->sun_family = AF_UNIX;
	int n = snprintf(ret->sun_path, sizeof(ret->sun_path), "%s/mnt-%016llx.sock", dir, (unsigned long long)h);
	free(dir);
	return n > 0 && (size_t)n < sizeof(ret->sun_path) ? 0 : -ENAMETOOLONG;
}

/* Listen at the mountpoint's name: bound under a temporary name and
 * renamed over it, so a keeper taking over replaces the old one's
 * atomically. -1 when there is no place for it (no takeover then). The
 * socket itself is open to all (0666): the directory (0700 when made
 * here) keeps others away, and SO_PEERCRED decides (on_connect). */
static int listen_socket(const char *mountpoint, struct sockaddr_un *ret_addr)
{
	struct sockaddr_un tmp;
	char why[DIR_WHY_MAX];
	int r = socket_addr(mountpoint, ret_addr, why);
	if (r == -EPERM)
		ca_log_warning("mount: %s; no takeover socket", why);
	if (r < 0) {
		ca_log_debug("mount: no runtime directory: no takeover socket");
		return -1;
	}
	tmp = *ret_addr;
	size_t len = strlen(tmp.sun_path);
	if (len + 12 >= sizeof(tmp.sun_path))
		return -1;
	snprintf(tmp.sun_path + len, sizeof(tmp.sun_path) - len, ".%d", (int)getpid());
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	unlink(tmp.sun_path);
	if (bind(fd, (struct sockaddr *)&tmp, sizeof(tmp)) < 0 || chmod(tmp.sun_path, 0666) < 0 ||
	    listen(fd, 4) < 0 || rename(tmp.sun_path, ret_addr->sun_path) < 0) {
		ca_log_warning_errno(errno, "mount: %s: no takeover socket", ret_addr->sun_path);
		unlink(tmp.sun_path);
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- the keeper ---- */

struct keeper {
	const struct fs_keeper_conf *c;
	char **args;
	int fuse_fd, init_fd, index_fd, sidecar_fd, profile_fd;
	int sfd;            /* signalfd */
	int chan;           /* to the current server */
	pid_t server;
	int64_t started, served_at; /* served_at 0: not yet */
	bool ready;         /* the parent was told, the socket listens */
	bool stopping;      /* a stop signal came: unmount when the server is gone */
	bool handing_over;  /* a new keeper serves: leave without unmounting */
	int listen_fd, taker, old;
	struct sockaddr_un addr;
	int64_t deaths[DEATHS_MAX];
	unsigned n_deaths;
	bool resend_said;
};

/* Everything a server had read and not answered goes back to the kernel's
 * queue (kernel 6.9+); a new server answers it. */
static void resend(struct keeper *k)
{
	struct fuse_out_header oh = { .len = sizeof(oh), .error = FUSE_NOTIFY_RESEND, .unique = 0 };
	if (k->fuse_fd < 0)
		return;
	if (write(k->fuse_fd, &oh, sizeof(oh)) == (ssize_t)sizeof(oh) || k->resend_said)
		return;
	k->resend_said = true;
	ca_log_warning("mount: this kernel cannot resend requests (FUSE_NOTIFY_RESEND, Linux 6.9): "
	               "those the stopped server had read will hang");
}

/* The kernel says in INIT whether it can resend (FUSE_HAS_RESEND, bit
 * 39 of the flags: bit 7 of flags2, protocol 7.36+): say at once when
 * it cannot, not only when a server dies. */
static void check_resend(struct keeper *k)
{
	uint32_t w[5];
	if (pread(k->init_fd, w, sizeof(w), (off_t)sizeof(struct fuse_in_header)) != (ssize_t)sizeof(w))
		return;
	/* major, minor, max_readahead, flags, flags2 (read only with FUSE_INIT_EXT, flags bit 30) */
	bool ext = w[1] >= 36 && (w[3] & (UINT32_C(1) << 30));
	if (ext && (w[4] & (UINT32_C(1) << (39 - 32))))
		return;
	k->resend_said = true;
	ca_log_warning("mount: this kernel cannot resend requests (FUSE_NOTIFY_RESEND, Linux 6.9): "
	               "if the server dies, the reads it had taken will hang");
}

static int spawn(struct keeper *k)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return ca_log_error_errno(errno, "mount: cannot start the server");
	size_t n = 0;
	while (k->args[n])
		n++;
	char **argv = calloc(n + 3, sizeof(char *));
	if (!argv) {
		close(sp[0]);
		close(sp[1]);
		return ca_log_error_errno(ENOMEM, "mount");
	}
	argv[0] = "cafs";
	argv[1] = "mount";
	memcpy(argv + 2, k->args, n * sizeof(char *));
	char env[128];
	snprintf(env, sizeof(env), "%d,%d,%d,%d,%d,%d,%d", sp[1], k->fuse_fd, k->init_fd, k->index_fd,
	         k->sidecar_fd, k->profile_fd, !k->ready && k->c->ready_fd >= 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int keep[] = { sp[1], k->fuse_fd, k->init_fd, k->index_fd, k->sidecar_fd, k->profile_fd };
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			if (keep[i] >= 0)
				fcntl(keep[i], F_SETFD, 0);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setenv(ENV_SERVER, env, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int e = errno;
	free(argv);
	close(sp[1]);
	if (pid < 0) {
		close(sp[0]);
		return ca_log_error_errno(e, "mount: cannot start the server");
	}
	close_fd(&k->chan);
	k->chan = sp[0];
	k->server = pid;
	k->started = (int64_t)ca_now_ns();
	k->served_at = 0;
	return 0;
}

/* Unmount at a clean stop: not when the connection is already gone (an
 * unmount from outside: the path may now hold another mount). */
static void unmount(struct keeper *k)
{
	if (k->fuse_fd >= 0) {
		struct pollfd p = { .fd = k->fuse_fd, .events = POLLIN };
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
			return;
	}
	if (geteuid() == 0) {
		if (umount2(k->c->mountpoint, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
			ca_log_warning_errno(errno, "mount: %s: cannot unmount", k->c->mountpoint);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execlp("fusermount3", "fusermount3", "-u", "-q", "-z", "--", k->c->mountpoint, (char *)NULL);
		_exit(127);
	}
	int st;
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
}

/* Under a systemd unit that asks for it (CAFS_NOTIFY_MAINPID=1 and
 * $NOTIFY_SOCKET, NotifyAccess=all: cafs-mount@.service): this process is
 * the unit's main process now, told before the parent (cafs mount, or
 * --takeover run as the unit's ExecReload) returns. A keeper that took
 * over is the reload command's child, not systemd's: without this the old
 * keeper's exit would end the unit and take the mount with it
 * (docs/systemd.md). Opt-in: a mount made by some other service that
 * passes $NOTIFY_SOCKET on must not take over that service's main pid.
 * A failure changes nothing else: logged at debug. */
static void notify_main_pid(void)
{
	const char *path = getenv("NOTIFY_SOCKET"), *want = getenv("CAFS_NOTIFY_MAINPID");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[32];
	size_t len;
	int fd, n;
	if (!want || strcmp(want, "1") || !path || (path[0] != '/' && path[0] != '@') ||
	    (len = strlen(path)) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = 0; /* an abstract socket */
	n = snprintf(msg, sizeof(msg), "MAINPID=%ld", (long)getpid());
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, msg, (size_t)n, MSG_NOSIGNAL, (const struct sockaddr *)&sa,
	                     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		(void)ca_log_debug_errno(errno, "mount: cannot tell the service manager the keeper's pid");
	if (fd >= 0)
		close(fd);
}

/* The mount answers: tell the waiting parent, leave its terminal, listen. */
static void become_ready(struct keeper *k)
{
	if (k->ready)
		return;
	k->ready = true;
	notify_main_pid();
	if (k->c->ready_fd >= 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(k->c->log_fd >= 0 ? k->c->log_fd : null, STDERR_FILENO);
			close(null);
		}
		(void)!chdir("/");
		(void)!write(k->c->ready_fd, "1", 1);
		close(k->c->ready_fd);
	}
	k->listen_fd = listen_socket(k->c->mountpoint, &k->addr);
}

/* A message from the server: its state (the first server) or "serving". */
static void on_server_msg(struct keeper *k)
{
	char tag[4];
	int fds[MAX_FDS];
	size_t n = 0;
	int r = recv_msg(k->chan, tag, fds, MAX_FDS, &n);
	if (r == -EPIPE || r == -ECONNRESET) {
		close_fd(&k->chan); /* it is going: SIGCHLD follows */
		return;
	}
	if (r == 0 && !memcmp(tag, "STAT", 4) && n >= 2 && k->fuse_fd < 0) {
		k->fuse_fd = fds[0];
		k->init_fd = fds[1];
		k->index_fd = n > 2 ? fds[2] : -1;
		k->sidecar_fd = n > 3 ? fds[3] : -1;
		k->profile_fd = n > 4 ? fds[4] : -1;
		n = 0;
		check_resend(k);
	}
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (r < 0 || (memcmp(tag, "STAT", 4) && memcmp(tag, "SERV", 4)))
		return;
	k->served_at = (int64_t)ca_now_ns();
	if (k->old >= 0) {
		/* a takeover: the old keeper stops its server now */
		if (send_msg(k->old, "GO!!", NULL, 0) < 0)
			close_fd(&k->old);
		return; /* ready at its answer */
	}
	become_ready(k);
}

/* The old keeper answered (or went away): this one is the keeper now. */
static void on_old_msg(struct keeper *k)
{
	char tag[4];
	int fds[MAX_FDS];
	size_t n = 0;
	(void)recv_msg(k->old, tag, fds, MAX_FDS, &n);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	close_fd(&k->old);
	if (!k->served_at)
		return; /* it went before our server served: ready when that does */
	ca_log_info("mount: %s: taken over", k->c->mountpoint);
	become_ready(k);
}

/* Someone wants to take over: only root or this mount's owner. */
static void on_connect(struct keeper *k)
{
	int fd = accept4(k->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || (cr.uid != 0 && cr.uid != getuid())) {
		ca_log_warning("mount: %s: takeover by uid %u refused: only root or the mount's owner may",
		               k->c->mountpoint, (unsigned)cr.uid);
		close(fd);
		return;
	}
	if (k->taker >= 0 || k->server <= 0 || k->fuse_fd < 0 || k->stopping) {
		close(fd); /* one at a time, and only of a mount that serves */
		return;
	}
	/* the arguments, NUL-separated, after the mountpoint */
	size_t size = strlen(k->c->mountpoint) + 1;
	for (char **a = k->args; *a; a++)
		size += strlen(*a) + 1;
	char *buf = malloc(size), *p = buf;
	if (!buf) {
		close(fd);
		return;
	}
	p = stpcpy(p, k->c->mountpoint) + 1;
	for (char **a = k->args; *a; a++)
		p = stpcpy(p, *a) + 1;
	int args = blob_fd("cafs-args", buf, size);
	free(buf);
	int fds[] = { k->fuse_fd, k->init_fd, args, k->index_fd, k->sidecar_fd, k->profile_fd };
	size_t n_fds = k->index_fd < 0 ? 3 : k->sidecar_fd < 0 || k->profile_fd < 0 ? 4 : 6;
	if (args < 0 || send_msg(fd, "HAND", fds, n_fds) < 0) {
		close(fd);
	} else {
		fcntl(fd, F_SETFL, O_NONBLOCK);
		k->taker = fd;
	}
	if (args >= 0)
		close(args);
}

static void on_taker_msg(struct keeper *k)
{
	char tag[4];
	int fds[MAX_FDS];
	size_t n = 0;
	int r = recv_msg(k->taker, tag, fds, MAX_FDS, &n);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (r == -EAGAIN)
		return;
	if (r < 0 || memcmp(tag, "GO!!", 4)) {
		close_fd(&k->taker); /* the new one gave up: this one goes on */
		return;
	}
	ca_log_info("mount: %s: a new keeper serves: handing over", k->c->mountpoint);
	k->handing_over = true;
	kill(k->server, SIGTERM);
}

static bool count_death(struct keeper *k, int64_t now)
{
	if (k->served_at && now - k->served_at >= SERVED_ENOUGH_NS)
		return false;
	memmove(k->deaths + 1, k->deaths, (DEATHS_MAX - 1) * sizeof(k->deaths[0]));
	k->deaths[0] = now;
	if (k->n_deaths < DEATHS_MAX)
		k->n_deaths++;
	return k->n_deaths == DEATHS_MAX && now - k->deaths[DEATHS_MAX - 1] < DEATHS_WINDOW_NS;
}

/* The server ended. Returns -1 to go on, or the keeper's exit code. */
static int on_server_exit(struct keeper *k, int status)
{
	int64_t now = (int64_t)ca_now_ns();
	pid_t pid = k->server;
	k->server = -1;
	while (k->chan >= 0) { /* what it said before it went */
		struct pollfd p = { .fd = k->chan, .events = POLLIN };
		if (poll(&p, 1, 0) != 1)
			break;
		on_server_msg(k);
	}
	close_fd(&k->chan);
	if (k->handing_over) {
		resend(k); /* what it read and dropped goes to the new server */
		(void)send_msg(k->taker, "DONE", NULL, 0);
		return 0;
	}
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (k->stopping || clean) {
		unmount(k);
		if (k->listen_fd >= 0)
			unlink(k->addr.sun_path);
		return 0;
	}
	bool never = k->fuse_fd < 0 || (!k->served_at && k->old >= 0); /* nothing to keep */
	if (WIFSIGNALED(status))
		ca_log_error("mount: %s: the server (pid %d) died of signal %d", k->c->mountpoint, (int)pid,
		             WTERMSIG(status));
	else if (!never) /* (one that never served said why itself) */
		ca_log_error("mount: %s: the server exited %d", k->c->mountpoint, WEXITSTATUS(status));
	if (never)
		return WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : 1;
	if (count_death(k, now)) {
		ca_log_error("mount: %s: the server died %d times in %d s: unmounting", k->c->mountpoint, DEATHS_MAX,
		             (int)(DEATHS_WINDOW_NS / NS));
		unmount(k);
		if (k->listen_fd >= 0)
			unlink(k->addr.sun_path);
		return 1;
	}
	resend(k);
	return spawn(k) < 0 ? 1 : -1;
}

static int on_signal(struct keeper *k)
{
	struct signalfd_siginfo si;
	while (read(k->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			int status;
			pid_t pid;
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
				if (pid == k->server) {
					int r = on_server_exit(k, status);
					if (r >= 0)
						return r;
				}
			continue;
		}
		if (k->stopping)
			continue;
		const char *name = sigabbrev_np((int)si.ssi_signo);
		ca_log_info("mount: SIG%s: unmounting", name ? name : "?");
		k->stopping = true;
		if (k->server > 0)
			kill(k->server, SIGTERM);
	}
	return -1;
}

int fs_keeper_run(const struct fs_keeper_conf *c)
{
	struct keeper k = {
		.c = c, .args = c->server_args, .fuse_fd = c->fuse_fd, .init_fd = c->init_fd, .index_fd = c->index_fd,
		.sidecar_fd = c->sidecar_fd, .profile_fd = c->profile_fd,
		.sfd = -1, .chan = -1, .server = -1, .listen_fd = -1, .taker = -1, .old = c->old_keeper_fd,
	};
	sigset_t set;
	int r = 1;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 || (k.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		ca_log_error_errno(errno, "mount: cannot set up signal handling");
		goto out;
	}
	if (spawn(&k) < 0)
		goto out;
	for (;;) {
		struct pollfd p[5];
		nfds_t n = 0;
		p[n++] = (struct pollfd){ .fd = k.sfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = k.chan, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = k.listen_fd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = k.taker, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = k.old, .events = POLLIN };
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			ca_log_error_errno(errno, "mount: keeper");
			goto out;
		}
		if (p[0].revents) {
			r = on_signal(&k);
			if (r >= 0)
				goto out;
		}
		if (k.chan >= 0 && p[1].revents)
			on_server_msg(&k);
		if (k.listen_fd >= 0 && p[2].revents)
			on_connect(&k);
		if (k.taker >= 0 && p[3].revents)
			on_taker_msg(&k);
		if (k.old >= 0 && p[4].revents)
			on_old_msg(&k);
	}
out:
	if (k.server > 0) {
		kill(k.server, SIGTERM);
		while (waitpid(k.server, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close_fd(&k.sfd);
	close_fd(&k.chan);
	close_fd(&k.listen_fd);
	close_fd(&k.taker);
	close_fd(&k.old);
	close_fd(&k.init_fd);
	close_fd(&k.index_fd);
	close_fd(&k.sidecar_fd);
	close_fd(&k.profile_fd);
	close_fd(&k.fuse_fd);
	return r;
}

/* ---- the server's side ---- */

int fs_keeper_server_env(struct fs_keeper_server *ret)
{
	const char *env = getenv(ENV_SERVER);
	int chan, fuse_fd, init_fd, index_fd, sidecar_fd, profile_fd, detach, r = 0;
	*ret = (struct fs_keeper_server){ .chan = -1, .fuse_fd = -1 };
	if (!env)
		return 0;
	if (sscanf(env, "%d,%d,%d,%d,%d,%d,%d", &chan, &fuse_fd, &init_fd, &index_fd, &sidecar_fd, &profile_fd,
	           &detach) != 7 ||
	    chan < 0 || fcntl(chan, F_GETFD) < 0 || (fuse_fd >= 0 && (init_fd < 0 || fcntl(fuse_fd, F_GETFD) < 0))) {
		unsetenv(ENV_SERVER);
		return ca_log_error_errno(EINVAL, "mount: %s: not from a keeper", ENV_SERVER);
	}
	unsetenv(ENV_SERVER);
	fcntl(chan, F_SETFD, FD_CLOEXEC);
	ret->chan = chan;
	ret->detach = detach;
	if (fuse_fd >= 0) {
		fcntl(fuse_fd, F_SETFD, FD_CLOEXEC);
		ret->fuse_fd = fuse_fd;
		r = blob_read(init_fd, &ret->init, &ret->init_size);
		if (r == 0 && index_fd >= 0)
			r = blob_read(index_fd, &ret->index, &ret->index_size);
		/* kept only with the index (an old keeper's takeover may not have them: fetched then) */
		if (r == 0 && index_fd >= 0 && sidecar_fd >= 0)
			r = blob_read(sidecar_fd, &ret->sidecar, &ret->sidecar_size);
		if (r == 0 && index_fd >= 0 && profile_fd >= 0)
			r = blob_read(profile_fd, &ret->profile, &ret->profile_size);
	}
	int fds[] = { init_fd, index_fd, sidecar_fd, profile_fd };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (r < 0)
		return ca_log_error_errno(r, "mount: the keeper's state");
	return 1;
}

void fs_keeper_server_release(struct fs_keeper_server *s)
{
	free(s->init);
	free(s->index);
	free(s->sidecar);
	free(s->profile);
	if (s->chan >= 0)
		close(s->chan);
	s->init = s->index = s->sidecar = s->profile = NULL;
	s->chan = -1;
}

int fs_keeper_server_serving(int chan, int fuse_fd, const void *init, size_t init_size,
                             const struct fs_keeper_kept *kept)
{
	if (!init)
		return send_msg(chan, "SERV", NULL, 0);
	int fds[5] = { fuse_fd, blob_fd("cafs-init", init, init_size), -1, -1, -1 };
	size_t n = 2;
	int r = fds[1] < 0 ? fds[1] : 0;
	if (r == 0 && kept->index) {
		fds[2] = blob_fd("cafs-index", kept->index, kept->index_size);
		fds[3] = blob_fd("cafs-sidecar", kept->sidecar, kept->sidecar_size);
		fds[4] = blob_fd("cafs-profile", kept->profile, kept->profile_size);
		n = 5;
		for (size_t i = 2; i < n; i++)
			if (r == 0 && fds[i] < 0)
				r = fds[i];
	}
	if (r == 0)
		r = send_msg(chan, "STAT", fds, n);
	for (size_t i = 1; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (r < 0)
		ca_log_error_errno(r, "mount: cannot hand the keeper its state");
	return r;
}

/* ---- the takeover's client ---- */

int fs_keeper_takeover(const char *mountpoint, struct fs_keeper_conf *c, char ***ret_args)
{
	struct sockaddr_un addr;
	char tag[4];
	int fds[MAX_FDS];
	size_t n = 0;
	void *blob = NULL;
	size_t size = 0;
	char why[DIR_WHY_MAX];
	int r = socket_addr(mountpoint, &addr, why);
	if (r == -EPERM)
		return ca_log_error("takeover: %s: no keeper socket: %s", mountpoint, why), 1;
	if (r < 0)
		return ca_log_error("takeover: %s: no keeper socket (no runtime directory)", mountpoint), 1;
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		ca_log_error_errno(errno, "takeover: %s: no keeper answers at %s", mountpoint, addr.sun_path);
		goto fail;
	}
	/* the keeper answering must be root's or ours: it hands over the
	 * arguments this process will serve with */
	struct ucred cr = { .uid = (uid_t)-1 };
	socklen_t crlen = sizeof(cr);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 || (cr.uid != 0 && cr.uid != geteuid())) {
		ca_log_error("takeover: %s: the socket at %s is another user's (uid %u): refused", mountpoint,
		             addr.sun_path, (unsigned)cr.uid);
		goto fail;
	}
	r = recv_msg(sock, tag, fds, MAX_FDS, &n);
	if (r < 0 || memcmp(tag, "HAND", 4) || n < 3) {
		ca_log_error("takeover: %s: refused by the mount's keeper (only root or the mount's owner may, "
		             "and one at a time)", mountpoint);
		goto fail;
	}
	r = blob_read(fds[2], &blob, &size);
	if (r < 0 || size == 0 || ((char *)blob)[size - 1]) {
		ca_log_error("takeover: %s: the keeper sent no arguments", mountpoint);
		goto fail;
	}
	if (strcmp(blob, mountpoint)) {
		ca_log_error("takeover: %s: the keeper at %s serves %s", mountpoint, addr.sun_path, (char *)blob);
		goto fail;
	}
	/* the arguments after the mountpoint, as a NULL-terminated vector in one block */
	size_t count = 0, skip = strlen(blob) + 1;
	for (size_t i = skip; i < size; i++)
		count += !((char *)blob)[i];
	char **v = malloc((count + 1) * sizeof(char *) + size);
	if (!v) {
		ca_log_error_errno(ENOMEM, "takeover");
		goto fail;
	}
	char *s = (char *)(v + count + 1);
	memcpy(s, blob, size);
	for (size_t i = 0, at = skip; i < count; i++) {
		v[i] = s + at;
		at += strlen(s + at) + 1;
	}
	v[count] = NULL;
	free(blob);
	close(fds[2]);
	c->fuse_fd = fds[0];
	c->init_fd = fds[1];
	c->index_fd = fds[3];
	c->sidecar_fd = fds[4];
	c->profile_fd = fds[5];
	c->old_keeper_fd = sock;
	*ret_args = v;
	return 0;
fail:
	free(blob);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (sock >= 0)
		close(sock);
	return 1;
}
