/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs_face.h - the library's face for the FUSE filesystem (fs/): every
 * core header fs/ uses, each with what it is used for. fs/ includes this
 * and nothing else of core/ (tests/shell/layers.sh checks it), so this
 * list is the whole of what the mount depends on; a new need of fs/ is
 * added here, with its reason.
 *
 * It is internal, not the public face (core/include/cafs): the mount
 * reads an image's archive through the random-access decoder and its
 * bytes through chunk spans, which the public API does not offer. It
 * sits in image/, the highest internal layer, as fs/ sits on top of it.
 */
#ifndef CA_FS_FACE_H
#define CA_FS_FACE_H

/* base */
#include "base/log.h"          /* logging; the mounting thread's logger, used on libfuse's threads */
#include "base/condwait.h"     /* ca_deadline_ms: a metadata wait gives up (FS_META_WAIT_MS) */
#include "base/clock.h"        /* ca_now_ns: the keeper's restart window (a server that keeps dying) */
#include "base/stop_signals.h" /* SIGINT/SIGTERM/SIGHUP end the session loop */
#include "base/location.h"     /* ca_image_kind: a .caibx is a blob mount, the rest tree mounts */
#include "base/digest.h"       /* the kept index's sha256 a restarted server names (extras.h) */
#include "base/metrics.h"      /* the counters as OpenMetrics/JSON (fs/metrics.c) */
#include "base/trusted_file.h" /* the takeover socket's directory: root's or ours, not writable by others */
#include "base/thread.h"       /* the replayed profile's warming thread (fs/warm.c) logs where the mount does */

/* format */
#include "format/feature.h" /* ca_feature_to_chattr: FS_IOC_GETFLAGS */
#include "format/index.h"   /* ca_index_chunk_size_avg: readahead is sized in chunks */

/* catar */
#include "catar/catar_node.h"   /* a parsed archive entry: the tree's nodes and their records */
#include "catar/catar_attr.h"   /* an entry's stat and xattrs */
#include "catar/catar_ra.h"     /* the random-access decoder: tree mounts without a sidecar */
#include "catar/xattr_policy.h" /* which of the archive's xattrs a caller may see */

/* store */
#include "store/chunksrc.h" /* a FUSE interrupt ends a chunk wait; the chunk counters in the stats; cache writes behind reads */
#include "store/blob.h"     /* the image's bytes: chunk spans replied without a copy */
#include "store/cache_size.h" /* the disk cache's size in the metrics, counted off the scrape's path */
#include "store/prefetch.h" /* --profile/--fill: started (extras.h), their progress in the stats */

/* net */
#include "net/failover.h" /* the stores' failover group: its state in the stats, its members (extras.h) */
#include "net/remote.h"   /* a remote store's state and HTTP counters in the stats */

/* image */
#include "image/source.h"  /* the opened image the mount serves, and its archive source */
#include "image/sidecar.h" /* the metadata sidecar: the tree without reading the archive */
#include "image/delta_source.h" /* the delta pack's counters and state in the stats */
#include "image/profile.h" /* profiles replayed and recorded (extras.h); every read is told to the recorder */

#endif
