#!/usr/bin/env python3
"""Load a recorded or generated cluster (a v1 List, as gen_cluster.py writes
it) into a real kube-apiserver through its API, as clients would create it:
namespaces, priority classes, nodes (then their status), PVCs, PDBs, pods
(then their status). What the server sets itself (uid, resourceVersion,
creation time, managedFields) is left out.

    load_cluster.py cluster.json APISERVER TOKEN CA [--threads 8]

Prints how many objects of each kind were created and how long it took.
"""
import argparse
import http.client
import json
import ssl
import sys
import threading
import time
import urllib.parse
from queue import Queue

ORDER = ["Namespace", "PriorityClass", "Node", "PersistentVolumeClaim", "PodDisruptionBudget", "Pod"]
PATHS = {
    "Namespace": ("/api/v1/namespaces", False),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1/priorityclasses", False),
    "Node": ("/api/v1/nodes", False),
    "PersistentVolumeClaim": ("/api/v1/namespaces/%s/persistentvolumeclaims", True),
    "PodDisruptionBudget": ("/apis/policy/v1/namespaces/%s/poddisruptionbudgets", True),
    "Pod": ("/api/v1/namespaces/%s/pods", True),
}
WITH_STATUS = {"Node", "Pod", "PodDisruptionBudget"}
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")


def clean(o):
    o = dict(o)
    meta = dict(o.get("metadata", {}))
    for k in SERVER_SET:
        meta.pop(k, None)
    o["metadata"] = meta
    if o.get("kind") == "Pod":
        # the priority admission plugin sets these from priorityClassName
        # and refuses them written by the client
        spec = dict(o.get("spec", {}))
        spec.pop("priority", None)
        spec.pop("preemptionPolicy", None)
        o["spec"] = spec
    return o


class Client:
    def __init__(self, server, token, ca):
        u = urllib.parse.urlparse(server)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=ca)
        self.headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json",
                        "Accept": "application/json"}
        self.conn = None

    def send(self, method, path, body):
        for attempt in range(5):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
                self.conn.request(method, path, body=json.dumps(body), headers=self.headers)
                r = self.conn.getresponse()
                data = r.read()
                if r.status == 429 or r.status >= 500:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                return r.status, data
            except (OSError, http.client.HTTPException):
                self.conn = None
                time.sleep(0.2 * (attempt + 1))
        return 0, b"gave up"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("snapshot")
    ap.add_argument("server")
    ap.add_argument("token")
    ap.add_argument("ca")
    ap.add_argument("--threads", type=int, default=8)
    a = ap.parse_args()
    with open(a.snapshot) as f:
        items = json.load(f)["items"]
    by_kind = {k: [] for k in ORDER}
    for it in items:
        if it.get("kind") in by_kind:
            by_kind[it["kind"]].append(it)
    # the namespaces pods live in, made if the snapshot lacks them
    have = {o["metadata"]["name"] for o in by_kind["Namespace"]}
    for it in items:
        ns = it.get("metadata", {}).get("namespace")
        if ns and ns not in have:
            have.add(ns)
            by_kind["Namespace"].append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    errors = []
    t0 = time.time()
    for kind in ORDER:
        q = Queue()
        for o in by_kind[kind]:
            q.put(o)
        coll, namespaced = PATHS[kind]

        def work():
            c = Client(a.server, a.token, a.ca)
            while True:
                try:
                    o = q.get_nowait()
                except Exception:
                    return
                meta = o["metadata"]
                path = coll % meta.get("namespace", "default") if namespaced else coll
                st, data = c.send("POST", path, clean(o))
                if st == 409 and (kind == "Namespace" or meta.get("name", "").startswith("system-")):
                    continue   # kube-system, default, the built-in priority classes: there already
                if st not in (200, 201):
                    errors.append("%s %s: %d %s" % (kind, meta.get("name"), st, data[:300]))
                    continue
                if kind in WITH_STATUS and o.get("status"):
                    got = json.loads(data)
                    st, data = c.send("PUT", "%s/%s/status" % (path, meta["name"]),
                                      dict(got, status=o["status"]))
                    if st not in (200, 201):
                        errors.append("%s %s status: %d %s" % (kind, meta.get("name"), st, data[:300]))

        ts = [threading.Thread(target=work) for _ in range(a.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print("loaded %d %s" % (len(by_kind[kind]), kind), file=sys.stderr)
        if errors:
            sys.exit("load_cluster.py: %d failed, first: %s" % (len(errors), errors[0]))
    print("%.1f" % (time.time() - t0))


if __name__ == "__main__":
    main()
