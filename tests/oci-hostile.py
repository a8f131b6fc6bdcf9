#!/usr/bin/python3
# oci-hostile.py STORE INDEX PORTFILE - a small OCI registry that serves
# one image (the index file INDEX and the chunks of the local store
# STORE) behind bearer tokens, honestly or not, by repository:
#   /v2/good/...   the image as desync's layout says (tokens required)
#   /v2/liar/...   chunk manifests whose layer digest is not their blob's
#   /v2/short/...  chunk manifests whose layer size is smaller than the blob
#   /v2/huge/...   every manifest is 16 MiB of JSON
#   /v2/slow/...   its token endpoint never answers
#   /v2/private/...  the image, whose tokens are given only for basic
#                  credentials bob:pw-of-bob (an authenticated bearer token)
#   /v2/tagsnum/tags/list    "tags" is a number, not a list
#   /v2/loop/tags/list       pages whose Links go round: first -> b -> first
#   /v2/elsewhere/tags/list  a Link to another host that begins with this
#                  one's URL (http://127.0.0.1:PORT@localhost:PORT/...)
#   /v2/redir/...  the image, its blobs redirected (307) to another host
#                  (http://localhost:PORT/v2/away/blobs/...), which serves
#                  them to anyone and counts the requests that came with
#                  an Authorization header
# GET /stats: {"tokens": N, "manifests": N, "blobs": N, "pages": N,
# "elsewhere": N (requests for the elsewhere page), "away": N (blob
# requests at the other host), "away_auth": N (of those, with credentials)}. Prints its port
# into PORTFILE once listening.
import base64, hashlib, json, os, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
from urllib.parse import urlparse, parse_qs

STORE, INDEX, PORTFILE = sys.argv[1:4]
TOKEN = "tok-" + os.urandom(8).hex()
PRIVATE_TOKEN = "ptok-" + os.urandom(8).hex()
stats = {"tokens": 0, "manifests": 0, "blobs": 0, "pages": 0, "elsewhere": 0, "away": 0, "away_auth": 0}
lock = threading.Lock()
blobs = {}


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def artifact(tag):
    if tag.endswith(".cacnk"):
        p = os.path.join(STORE, tag[:4], tag)
        kind = "application/vnd.desync.chunk.v1"
    else:
        p = INDEX if tag == os.path.basename(INDEX) else None
        kind = "application/vnd.cafs.file.v1"
    if not p or not os.path.exists(p):
        return None, None
    data = open(p, "rb").read()
    return kind, data


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body=b"", ctype="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        u = urlparse(self.path)
        if u.path == "/stats":
            return self.send(200, json.dumps(stats).encode())
        if u.path == "/token":
            scope = parse_qs(u.query).get("scope", [""])[0]
            if ":slow:" in scope:
                time.sleep(3600)
            if ":private:" in scope:
                want = "Basic " + base64.b64encode(b"bob:pw-of-bob").decode()
                if self.headers.get("Authorization") != want:
                    return self.send(401, b'{"errors":[]}', extra=[("WWW-Authenticate", 'Basic realm="t"')])
                with lock:
                    stats["tokens"] += 1
                return self.send(200, json.dumps({"access_token": PRIVATE_TOKEN, "expires_in": 300}).encode())
            with lock:
                stats["tokens"] += 1
            return self.send(200, json.dumps({"token": TOKEN, "expires_in": 300}).encode())
        parts = u.path.split("/")
        if len(parts) < 5 or parts[1] != "v2":
            return self.send(404)
        repo, what, ref = parts[2], parts[3], "/".join(parts[4:])
        if repo == "elsewhere" and "page=2" in u.query:
            with lock:
                stats["elsewhere"] += 1
        if repo == "away" and what == "blobs":
            with lock:
                stats["away"] += 1
                stats["away_auth"] += self.headers.get("Authorization") is not None
            b = blobs.get(ref)
            return self.send(200, b, "application/octet-stream") if b is not None else self.send(404)
        if self.headers.get("Authorization") != "Bearer " + (PRIVATE_TOKEN if repo == "private" else TOKEN):
            port = self.server.server_address[1]
            ch = 'Bearer realm="http://127.0.0.1:%d/token",service="hostile",scope="repository:%s:pull"' % (port, repo)
            return self.send(401, b'{"errors":[]}', extra=[("WWW-Authenticate", ch)])
        if what == "tags":
            with lock:
                stats["pages"] += 1
            port = self.server.server_address[1]
            body, link = {"name": repo, "tags": []}, None
            if repo == "tagsnum":
                body["tags"] = 7
            elif repo == "loop":
                link = "/v2/loop/tags/list?n=1000" if "page=b" in u.query else "/v2/loop/tags/list?page=b"
            elif repo == "elsewhere" and "page=2" not in u.query:
                link = "http://127.0.0.1:%d@localhost:%d/v2/elsewhere/tags/list?page=2" % (port, port)
            extra = [("Link", '<%s>; rel="next"' % link)] if link else []
            return self.send(200, json.dumps(body).encode(), extra=extra)
        if what == "blobs" and repo == "redir":
            port = self.server.server_address[1]
            return self.send(307, extra=[("Location", "http://localhost:%d/v2/away/blobs/%s" % (port, ref))])
        if what == "blobs":
            with lock:
                stats["blobs"] += 1
            b = blobs.get(ref)
            return self.send(200, b, "application/octet-stream") if b is not None else self.send(404)
        if what != "manifests":
            return self.send(404)
        with lock:
            stats["manifests"] += 1
        if repo == "huge":
            return self.send(200, b'{"x":"' + b"A" * (16 << 20) + b'"}', "application/vnd.oci.image.manifest.v1+json")
        kind, data = artifact(ref)
        if data is None:
            return self.send(404)
        d, size = sha(data), len(data)
        blobs[d] = data
        if repo == "liar" and kind.endswith("chunk.v1"):
            d = sha(data + b"x")
            blobs[d] = data
        if repo == "short" and kind.endswith("chunk.v1"):
            size = max(1, size // 2)
        m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
             "artifactType": kind,
             "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                        "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", "size": 2},
             "layers": [{"mediaType": "application/octet-stream", "digest": d, "size": size}]}
        self.send(200, json.dumps(m).encode(), "application/vnd.oci.image.manifest.v1+json")


class S(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # clients that hang up on a lie are the point


srv = S(("127.0.0.1", 0), H)
srv.daemon_threads = True
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
