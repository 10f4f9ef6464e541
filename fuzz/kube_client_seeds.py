#!/usr/bin/env python3
"""Seeds of fuzz/kube_client.c: what kube-apiserver answers to ebb run's
watch cache (paged LISTs, watch streams with every event type, 410s,
Status errors, chunked bodies) and what a hostile server answers instead
(a Content-Length of 10 GB, endless lists and lines, undecodable events,
objects ebb cannot keep). Writes fuzz/corpus/kube_client/*; run from the
repository's top after changing it. Test tooling only."""
import json
import os
import struct

RES = ["nodes", "namespaces", "priorityclasses", "persistentvolumeclaims",
       "poddisruptionbudgets", "pods", "nodes.metrics", "pods.metrics"]
KIND_OF = {"Node": 0, "Namespace": 1, "PriorityClass": 2, "PersistentVolumeClaim": 3,
           "PodDisruptionBudget": 4, "Pod": 5}
OUT = "fuzz/corpus/kube_client"
fixture = json.load(open("spec/fixtures/kubectl-list.json"))


def items(kind):
    out = []
    for it in fixture["items"]:
        if it["kind"] == kind:
            it = dict(it)
            it.pop("kind", None)        # the API server leaves them to the List
            it.pop("apiVersion", None)
            out.append(it)
    return out


def http(status, body, headers=(), reason="OK"):
    b = body.encode() if isinstance(body, str) else body
    h = "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % (status, reason, len(b))
    for x in headers:
        h += x + "\r\n"
    return h.encode() + b"\r\n" + b


def chunked(parts, end=True):
    out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    for p in parts:
        p = p.encode() if isinstance(p, str) else p
        out += b"%x\r\n" % len(p) + p + b"\r\n"
    if end:
        out += b"0\r\n\r\n"
    return out


def lst(kind, its, rv="100", cont=None):
    meta = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return json.dumps({"kind": kind + "List", "apiVersion": "v1", "metadata": meta, "items": its},
                      separators=(",", ":"))


def ev(t, obj):
    return json.dumps({"type": t, "object": obj}, separators=(",", ":")) + "\n"


def answer(res, data, keep_open=False, times=1, more=False):
    """more: it goes on the last answer of `res` that stayed open."""
    data = data if isinstance(data, bytes) else data.encode()
    assert len(data) < 65536, len(data)
    return struct.pack(">BHB", res | (0x80 if keep_open else 0) | (0x40 if more else 0),
                       len(data), times - 1) + data


def seed(name, flags, *answers):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([flags]) + b"".join(answers))


def all_lists(rv="100"):
    return [answer(i, http(200, lst(k, items(k), rv))) for k, i in KIND_OF.items()]


pods = items("Pod")
pod = pods[0]

# a whole sync, then a watch of pods with every event type, kept open
seed("sync-watch", 0, *all_lists(),
     answer(5, chunked([ev("ADDED", pods[1]), ev("MODIFIED", dict(pods[1], metadata=dict(
         pods[1]["metadata"], resourceVersion="101"))), ev("BOOKMARK", {"kind": "Pod", "metadata": {
             "resourceVersion": "102"}}), ev("DELETED", pods[1])], end=False), keep_open=True))
# the same while a cycle holds the informers
seed("sync-held", 1, *all_lists(),
     answer(5, chunked([ev("ADDED", p) for p in pods[:3]], end=False), keep_open=True))
# pages: a continue token, then the last page; a 410 on a continue token
seed("pages", 0, answer(5, http(200, lst("Pod", pods[:2], cont="eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"))),
     answer(5, http(200, lst("Pod", pods[2:4], rv="105"))))
seed("continue-410", 0, answer(5, http(200, lst("Pod", pods[:2], cont="tok"))),
     answer(5, http(410, json.dumps({"kind": "Status", "status": "Failure", "reason": "Expired",
                                     "message": "The provided continue parameter is too old", "code": 410}))),
     answer(5, http(200, lst("Pod", pods[:3]))))
# a watch that expires (ERROR 410), a relist
seed("watch-410", 0, *all_lists(),
     answer(5, chunked([ev("ERROR", {"kind": "Status", "code": 410, "reason": "Expired",
                                     "message": "too old resource version"})])),
     answer(5, http(200, lst("Pod", pods, rv="200"))))
# items split across chunks anywhere
body = lst("Pod", pods)
seed("chunked-list", 0, answer(5, chunked([body[i:i + 37] for i in range(0, len(body), 37)])))
# objects ebb cannot keep as they are: a NUL, 70 resources, wrong types, another kind
odd = [dict(pod, metadata=dict(pod["metadata"], name="nul", annotations={"a": "x\u0000y"})),
       {"metadata": {"name": "devs", "namespace": "d"}, "spec": {"containers": [{"name": "c", "resources": {
           "requests": {"example.com/r%d" % i: "1" for i in range(70)}}}]}},
       {"metadata": {"name": "typed", "namespace": "d"}, "spec": {"nodeName": 7, "priority": "high"}},
       {"kind": "Node", "metadata": {"name": "n"}}, {"metadata": {}}, 12, "x", None,
       {"metadata": {"name": "q", "namespace": "d"}, "spec": {"containers": [{"resources": {
           "requests": {"cpu": "1e400", "memory": "12x"}}}]}}]
seed("odd-objects", 0, answer(5, http(200, lst("Pod", odd + pods[:1]))),
     answer(5, chunked([ev("ADDED", o) for o in odd if isinstance(o, dict)] +
                       [ev("DELETED", odd[2])], end=False), keep_open=True))
# a watch that says what the API never says
seed("bad-events", 0, *all_lists(),
     answer(5, chunked(["{not json}\n", ev("RENAMED", pod), '{"type":"ADDED"}\n',
                        ev("ADDED", {"metadata": {}}), '{"type":3,"object":{}}\n'], end=False),
            keep_open=True))
# a Content-Length of 10 GB; an endless list; an endless line
seed("huge-length", 0, answer(5, b"HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n{\"items\":["),
     answer(0, http(200, lst("Node", items("Node")))))
item = json.dumps(pod, separators=(",", ":")) + ","
seed("endless-list", 0, answer(5, chunked(['{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":['],
                                          end=False), keep_open=True),
     answer(5, b"%x\r\n" % len(item) + item.encode() + b"\r\n", keep_open=True, times=200, more=True))
seed("endless-line", 0, *all_lists(),
     answer(5, chunked(['{"type":"ADDED","object":{"metadata":{"annotations":{"a":"'], end=False),
            keep_open=True),
     answer(5, b"fff\r\n" + b"a" * 0xfff + b"\r\n", keep_open=True, times=256, more=True))
# errors the API answers: 403 Status, 500 with Retry-After, 429, garbage
seed("errors", 0,
     answer(5, http(403, json.dumps({"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403,
                                     "message": "pods is forbidden: User \"x\" cannot list resource \"pods\""}),
                    reason="Forbidden")),
     answer(5, http(500, "{}", ["Retry-After: 1"])), answer(5, http(429, "{}", ["Retry-After: 0"])),
     answer(5, b"HTTP/1.1 2000 what\r\n\r\n"), answer(5, b"\x00\xff garbage"),
     answer(5, http(200, "[]")), answer(5, http(200, '{"items":{}}')),
     answer(5, http(200, '{"metadata":{"continue":' + '"' + "c" * 5000 + '"},"items":[]}')))
# metrics.k8s.io, polled
seed("metrics", 2, *all_lists(),
     answer(6, http(200, json.dumps({"kind": "NodeMetricsList", "items": [
         {"metadata": {"name": "n1"}, "timestamp": "2026-01-01T00:00:00Z", "window": "10s",
          "usage": {"cpu": "250m", "memory": "1Gi"}}]}))),
     answer(7, http(200, json.dumps({"kind": "PodMetricsList", "items": [
         {"metadata": {"name": "p", "namespace": "d"}, "timestamp": "2026-01-01T00:00:00Z",
          "containers": [{"name": "c", "usage": {"cpu": "9223372036854775807", "memory": "1"}}]}]}))))


# flag 0x04: streaming lists (a WATCH with sendInitialEvents) first
def end_mark(rv="100"):
    return ev("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": rv,
                                                      "annotations": {"k8s.io/initial-events-end": "true"}}})


def all_streams(rv="100"):
    return [answer(i, chunked([ev("ADDED", o) for o in items(k)] + [end_mark(rv)], end=False), keep_open=True)
            for k, i in KIND_OF.items()]


# every resource streamed, then changes on the same streams
seed("stream-sync", 4, *all_streams(),
     answer(5, chunked([ev("MODIFIED", pods[0]), ev("DELETED", pods[0])], end=False), keep_open=True,
            more=True))
# the same while a cycle holds the informers
seed("stream-held", 5, *all_streams())
# refusals: 422 (v1.25), an ERROR event (a watch cache on an old etcd), a
# stream that ends before its end bookmark; paged LISTs after each
seed("stream-refused", 4,
     answer(0, http(422, json.dumps({"kind": "Status", "status": "Failure", "reason": "Invalid", "code": 422,
                                     "message": "resourceVersionMatch is forbidden for watch"}))),
     answer(1, chunked([ev("ERROR", {"kind": "Status", "code": 500, "reason": "InternalError",
                                     "message": "the required storage feature RequestWatchProgress is disabled"})])),
     answer(5, chunked([ev("ADDED", p) for p in pods[:2]])),
     answer(5, http(200, lst("Pod", pods[:3]))))


# gzip-encoded answers (ebb asks for gzip as client-go does): a LIST, a
# LIST decoding to about 1000 times its size past every bound, a broken
# deflate stream, a gzip stream cut short, and a watch stream encoded
def gz(b):
    import gzip
    return gzip.compress(b if isinstance(b, bytes) else b.encode(), 6, mtime=0)


gz_list = gz(lst("Pod", pods))
bomb = gz(b'{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[' + b" " * (48 << 20))
seed("gzip", 0, answer(0, http(200, gz(lst("Node", items("Node"))), ["Content-Encoding: gzip"])),
     answer(5, http(200, gz_list, ["Content-Encoding: gzip"])),
     answer(5, http(200, bomb, ["Content-Encoding: gzip"])),
     answer(5, http(200, gz_list[:10] + b"\xff" * 64, ["Content-Encoding: gzip"])),
     answer(5, http(200, gz_list[:len(gz_list) // 2], ["Content-Encoding: gzip"])),
     answer(5, http(200, gz_list, ["Content-Encoding: gzip"])),
     answer(5, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
                   b"%x\r\n" % len(c) + c + b"\r\n" for c in [gz(ev("ADDED", pods[1]))]), keep_open=True))
