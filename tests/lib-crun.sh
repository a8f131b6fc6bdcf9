# tests/lib-crun.sh - crun containers for tests/shell/containers.sh and
# bench/minbase.sh. Source it after tests/lib.sh (or bench/workdir.sh):
#
#   crun_bundle DIR ROOT ARGS...   DIR/config.json: crun spec's defaults, the
#                                  root file system ROOT (writable), no
#                                  terminal, running ARGS
#   crun_run NAME BUNDLE           crun run NAME (foreground); its status is
#                                  the container's; the container is deleted
#                                  at exit whatever happens
#   crun_none                      no container of ours is left
#
# State lives in $T/crun (crun --root), not /run/crun, and no cgroup is
# made (--cgroup-manager=disabled), so nothing outlives $T.
# crun refuses a hybrid cgroup layout (cgroup v1 controllers, and a cgroup2
# at /sys/fs/cgroup/unified with controllers of its own): there, crun runs
# in a mount namespace where a tmpfs hides the unified hierarchy, so it sees
# plain cgroup v1.

CRUN_ROOT="$T/crun"
_crun_hybrid=
if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = tmpfs ] &&
	[ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
	_crun_hybrid=1
fi

_crun() {
	if [ -n "$_crun_hybrid" ]; then
		unshare -m sh -c 'mount -t tmpfs cafs-crun /sys/fs/cgroup/unified && exec "$@"' sh \
			crun --root="$CRUN_ROOT" --cgroup-manager=disabled "$@"
	else
		crun --root="$CRUN_ROOT" --cgroup-manager=disabled "$@"
	fi
}

crun_bundle() {
	local dir=$1 root=$2
	shift 2
	mkdir -p "$dir"
	(cd "$dir" && crun spec) || return 1
	python3 - "$dir/config.json" "$root" "$@" <<'EOF'
import json, sys
path, root, args = sys.argv[1], sys.argv[2], sys.argv[3:]
c = json.load(open(path))
c["root"] = {"path": root, "readonly": False}
c["process"]["terminal"] = False
c["process"]["args"] = args
c["hostname"] = "cafs-test"
json.dump(c, open(path, "w"), indent=1)
EOF
}

crun_run() {
	at_cleanup "crun --root='$CRUN_ROOT' delete -f '$1'"
	_crun run --bundle="$2" "$1" </dev/null
}

crun_none() { [ -z "$(crun --root="$CRUN_ROOT" list -q 2>/dev/null)" ]; }
