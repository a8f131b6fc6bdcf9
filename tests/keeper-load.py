#!/usr/bin/env python3
"""keeper-load.py - readers on a cafs mount while its server is killed or
the mount is taken over (tests/shell/mount-restart.sh).

  keeper-load.py pids MNT
      print "KEEPER SERVER": the processes serving MNT now
  keeper-load.py load MNT REF MODE COUNT [CAFS...]
      4 readers loop over the files of REF (the image's source; the same
      relative paths under MNT), each read at a random offset, its pages
      dropped first so it reaches the server, compared with REF. Meanwhile
      COUNT times: MODE kill: SIGKILL the server, then time a probe read
      (the recovery); MODE takeover: run `CAFS mount --takeover MNT` with
      the given binaries in turn, timed until it returns 0 and a probe
      read answers. Prints one line:
        reads=N failed=N wrong=N events=N p50=S max=S [first error]
"""
import os
import random
import signal
import subprocess
import sys
import threading
import time


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")[:-1]
    except OSError:
        return []


def ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def pids(mnt):
    """(keeper, server) of mnt: a cafs mount process for mnt whose parent
    is one too (the keeper's own arguments may name mnt otherwise)."""
    mine = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        args = cmdline(int(d))
        if len(args) >= 3 and args[-1] == mnt.encode() and b"mount" in args:
            mine[int(d)] = args
    for pid in mine:
        if b"--takeover" not in mine[pid] and b"mount" in cmdline(ppid(pid)):
            return ppid(pid), pid
    return 0, 0


def probe(mnt, rel, size):
    fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
    try:
        off = random.randrange(0, max(1, size - 4096))
        os.posix_fadvise(fd, off, 4096, os.POSIX_FADV_DONTNEED)
        return os.pread(fd, 4096, off)
    finally:
        os.close(fd)


def what_differs(got, want, off, n):
    """How a read went wrong: short (fewer bytes than the file has there),
    or where its bytes first differ and what they look like: zeros, the
    file's bytes from another offset, or neither."""
    exp = want[off:off + n]
    if len(got) < len(exp):
        s = "short read: %d of %d bytes" % (len(got), len(exp))
        if got != exp[:len(got)]:
            s += ", and " + what_differs(got, want[:off + len(got)], off, len(got))
        return s
    if len(got) > len(exp):
        return "long read: %d of %d bytes" % (len(got), len(exp))
    first = next(i for i in range(len(got)) if got[i] != exp[i])
    last = next(i for i in range(len(got) - 1, -1, -1) if got[i] != exp[i])
    bad = got[first:last + 1]
    s = "wrong bytes at +%d..+%d (file offset %d, %d bytes)" % (first, last, off + first, len(bad))
    if not bad.strip(b"\0"):
        return s + ": zeros"
    probe = got[first:first + 64]
    at = want.find(probe)
    if at >= 0:
        return s + ": the file's bytes from offset %d (%+d)" % (at, at - (off + first))
    return s + ": neither zeros nor the file's bytes elsewhere: %s" % probe[:16].hex()


def main():
    if sys.argv[1] == "pids":
        print("%d %d" % pids(sys.argv[2]))
        return 0
    mnt, ref, mode, count = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    binaries = sys.argv[6:]
    files = []
    for top, _, names in os.walk(ref):
        for n in names:
            p = os.path.join(top, n)
            if os.path.isfile(p) and not os.path.islink(p):
                files.append(os.path.relpath(p, ref))
    data = {}
    for rel in files:
        with open(os.path.join(ref, rel), "rb") as f:
            data[rel] = f.read()
    files = [f for f in files if data[f]]
    stats = {"reads": 0, "failed": 0, "wrong": 0}
    errors = []
    lock = threading.Lock()
    stop = threading.Event()

    def reader(seed):
        rnd = random.Random(seed)
        while not stop.is_set():
            rel = rnd.choice(files)
            want = data[rel]
            off = rnd.randrange(0, len(want))
            n = rnd.choice([4096, 65536, 262144])
            try:
                fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, off, n, os.POSIX_FADV_DONTNEED)
                    got = os.pread(fd, n, off)
                finally:
                    os.close(fd)
                bad = got != want[off:off + n]
                with lock:
                    stats["reads"] += 1
                    if bad:
                        stats["wrong"] += 1
                        errors.append("%s@%d+%d: %s" % (rel, off, n, what_differs(got, want, off, n)))
            except OSError as e:
                with lock:
                    stats["failed"] += 1
                    errors.append("%s@%d: %s" % (rel, off, e.strerror))

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    times = []
    try:
        time.sleep(0.3)
        for i in range(count):
            keeper, server = pids(mnt)
            if not server:
                errors.append("no server for %s before event %d" % (mnt, i))
                break
            rel = files[i % len(files)]
            t0 = time.monotonic()
            if mode == "kill":
                os.kill(server, signal.SIGKILL)
                while ppid(server) == keeper:  # until the keeper reaped it
                    time.sleep(0.001)
            else:
                cafs = binaries[i % len(binaries)]
                r = subprocess.run([cafs, "mount", "--takeover", mnt], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
                if r.returncode != 0:
                    errors.append("takeover %d: exit %d: %s" % (i, r.returncode, r.stderr.decode()[-200:]))
                    break
            got = probe(mnt, rel, len(data[rel]))
            times.append(time.monotonic() - t0)
            # a server that served for less than 0.2 s counts towards the
            # keeper's give-up limit: let each one serve a little
            time.sleep(0.25)
            k2, s2 = pids(mnt)
            if s2 == server or not s2:
                errors.append("event %d: server %d, then %d" % (i, server, s2))
            if not got:
                errors.append("event %d: empty probe" % i)
    except Exception as e:  # reported, not raised: the readers must stop
        errors.append("driver: %r" % e)
    finally:
        stop.set()
        for t in threads:
            t.join()
    times.sort()
    p50 = times[len(times) // 2] if times else -1
    mx = times[-1] if times else -1
    print("reads=%d failed=%d wrong=%d events=%d p50=%.3f max=%.3f%s" % (
        stats["reads"], stats["failed"], stats["wrong"], len(times), p50, mx,
        (" first: " + "; then: ".join(errors[:3]) + ("; %d more" % (len(errors) - 3) if len(errors) > 3 else ""))
        if errors else ""))
    return 0 if not errors and len(times) == count else 1


if __name__ == "__main__":
    sys.exit(main())
