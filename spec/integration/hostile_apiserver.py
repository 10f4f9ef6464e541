#!/usr/bin/env python3
"""A hostile Kubernetes API server for spec/integration/hostile_server_spec.lua
(test tooling, never part of ebb). It answers ebb run's watch cache as a
real server without the streaming list would (a WATCH with sendInitialEvents
is refused with 422, as v1.25 does) for every resource but pods, and for pods
as --mode says:

  length   LIST: "Content-Length: 10 GB", then bytes as fast as it can
  endless  LIST: a chunked List whose items never end (new pods, unique names)
  big      LIST: items of 17 MiB each (past what ebb reads of one object)
  line     WATCH: one event line that never ends
  stale    WATCH: accepted (200), then an ERROR event, again and again
  lease    like a real server for pods; every Lease write answered 200 with
           what is not a Lease held by anyone (ebb must not lead on it)
  lease403 every Lease request answered 403 Forbidden (no RBAC for Leases)
  leasens  a Lease read answered 404, its create 404: the namespace is gone
  lease500 every Lease request answered 500 (etcd is down)

It writes its port to --port-file once it listens, and serves until killed.
"""
import argparse
import json
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler

MODE = None
LEASE_FAIL = ("lease403", "leasens", "lease500")
NODE = {"metadata": {"name": "n1", "uid": "u-n1", "resourceVersion": "1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}}
NS = {"metadata": {"name": "default", "uid": "u-ns", "resourceVersion": "1"}, "status": {"phase": "Active"}}


def pod(i, pad=0):
    p = {"metadata": {"name": "p-%d" % i, "namespace": "default", "uid": "u-%d" % i, "resourceVersion": "1",
                      "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "uid": "rs", "controller": True}]},
         "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i",
                                                     "resources": {"requests": {"cpu": "10m"}}}]},
         "status": {"phase": "Running"}}
    if pad:
        p["metadata"]["annotations"] = {"pad": "x" * pad}
    return p


def lst(items, rv="1"):
    return json.dumps({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": rv},
                       "items": items}).encode()


LISTS = {"/api/v1/nodes": [NODE], "/api/v1/namespaces": [NS], "/apis/scheduling.k8s.io/v1/priorityclasses": [],
         "/api/v1/persistentvolumeclaims": [], "/apis/policy/v1/poddisruptionbudgets": [],
         "/api/v1/pods": [pod(0)]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_body(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.wfile.flush()

    def begin_chunked(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def quiet_watch(self):
        self.begin_chunked()
        while True:   # bookmarks now and then, until ebb goes
            time.sleep(1)
            self.chunk(b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}\n')

    def do_GET(self):
        path, _, query = self.path.partition("?")
        watch = "watch=1" in query
        try:
            if "sendInitialEvents=true" in query:
                # a server without the streaming list (as v1.25): ebb lists
                # in pages, where the hostile answers are
                return self.send_body(422, json.dumps({
                    "kind": "Status", "status": "Failure", "reason": "Invalid", "code": 422,
                    "message": "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
                               "resourceVersionMatch is forbidden for watch"}).encode())
            if path == "/api/v1/pods" and MODE in ("length", "endless", "big") and not watch:
                return self.pods_list()
            if path == "/api/v1/pods" and MODE in ("line", "stale") and watch:
                return self.pods_watch()
            if path.startswith("/apis/coordination.k8s.io/") and MODE in LEASE_FAIL:
                return self.lease_fail("get")
            if path.startswith("/apis/coordination.k8s.io/"):
                return self.send_body(404, json.dumps({"kind": "Status", "code": 404}).encode())
            if path in LISTS:
                if watch:
                    return self.quiet_watch()
                return self.send_body(200, lst(LISTS[path]))
            self.send_body(404, b'{"kind":"Status","code":404}')
        except (BrokenPipeError, ConnectionResetError):
            pass

    def pods_list(self):
        if MODE == "length":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(10 << 30))
            self.end_headers()
            self.wfile.write(b'{"kind":"List","items":[')
            block = b" " * (1 << 20)
            while True:
                self.wfile.write(block)
        self.begin_chunked()
        self.chunk(b'{"kind":"List","metadata":{"resourceVersion":"1"},"items":[')
        i = 1
        if MODE == "big":
            sep = b""
            while True:
                self.chunk(sep + json.dumps(pod(i, pad=17 << 20)).encode())
                sep = b","
                i += 1
        while True:
            self.chunk(b",".join(json.dumps(pod(k)).encode() for k in range(i, i + 200)) + b",")
            i += 200

    def pods_watch(self):
        self.begin_chunked()
        if MODE == "line":
            self.chunk(b'{"type":"ADDED","object":{"metadata":{"annotations":{"a":"')
            block = b"a" * (1 << 20)
            while True:
                self.chunk(block)
        # stale: the server accepts the watch, then breaks it
        self.chunk(b'{"type":"ERROR","object":{"kind":"Status","code":500,"message":"etcd is sad"}}\n')
        self.wfile.write(b"0\r\n\r\n")

    def lease_fail(self, verb):
        ns = self.path.split("/namespaces/")[1].split("/")[0]
        if MODE == "lease403":
            code, msg = 403, ('leases.coordination.k8s.io "descheduler" is forbidden: User '
                              '"system:serviceaccount:ebb-system:ebb" cannot %s resource "leases" in API group '
                              '"coordination.k8s.io" in the namespace "%s"' % (verb, ns))
        elif MODE == "leasens" and verb == "get":
            code, msg = 404, 'leases.coordination.k8s.io "descheduler" not found'
        elif MODE == "leasens":
            code, msg = 404, 'namespaces "%s" not found' % ns
        else:
            code, msg = 500, "etcdserver: request timed out"
        st = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "code": code}
        self.send_body(code, json.dumps(st).encode())

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        if self.path.startswith("/apis/coordination.k8s.io/") and MODE in LEASE_FAIL:
            return self.lease_fail(self.command.lower())
        if self.path.startswith("/apis/coordination.k8s.io/") and MODE == "lease":
            return self.send_body(201, b'{"kind":"Lease","spec":"not one"}')
        self.send_body(201, body)

    do_PUT = do_POST


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global MODE
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    MODE = a.mode
    srv = Server(("127.0.0.1", 0), Handler)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(a.port_file + ".tmp", a.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
