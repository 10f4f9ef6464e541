#!/usr/bin/env python3
"""Seeded synthetic cluster for the benchmarks, written as `kubectl get ...
-o json` prints it (a v1 List, indented by 4).

    gen_cluster.py --nodes 5000 --pods 150000 --seed 1 -o cluster.json
    gen_cluster.py ... --as-recorded -o cluster.json

With --as-recorded, the same cluster as `ebb record` writes it: one item
per line, compact, without managedFields (about a third of the bytes).

Pods are realistic (4-8 KB of JSON each): labels and annotations,
ownerReferences (ReplicaSet, StatefulSet, DaemonSet, Job), several containers
with env, probes, ports and resources, init containers, projected and other
volumes, tolerations, node and pod (anti-)affinity, topology spread
constraints, managedFields, and a status with conditions and container
statuses. Nodes spread over three zones; a few are tainted, cordoned or not
ready. Times are relative to 2026-11-22T12:00:00Z.
"""
import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
TYPES = [("m6i.4xlarge", 16, 64), ("m6i.8xlarge", 32, 128), ("r6i.4xlarge", 16, 128),
         ("c6i.8xlarge", 32, 64)]
IMAGES = ["registry.example.com/shop/api", "registry.example.com/shop/web",
          "registry.example.com/shop/worker", "registry.example.com/data/ingest",
          "docker.io/library/nginx", "docker.io/library/redis", "quay.io/prometheus/node-exporter",
          "registry.k8s.io/kube-proxy", "docker.io/grafana/promtail"]


def ts(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def uid(rng):
    h = "%032x" % rng.getrandbits(128)
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def rhash(rng, n=10):
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


def managed_fields(time):
    return [
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kube-controller-manager",
         "operation": "Update", "time": time,
         "fieldsV1": {"f:metadata": {"f:labels": {}, "f:ownerReferences": {"k:{\"uid\":\"@OWNERUID@\"}": {}}},
                      "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {"f:image": {}, "f:resources": {}}}}}},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubelet", "operation": "Update",
         "subresource": "status", "time": time,
         "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:phase": {}, "f:podIP": {}}}},
    ]


def node(rng, i):
    name = "ip-10-%d-%d-%d.eu-west-1.compute.internal" % (i // 65536 % 256, i // 256 % 256, i % 256)
    zone = ZONES[i % 3]
    itype, cpu, mem = TYPES[rng.randrange(len(TYPES))]
    created = NOW - timedelta(days=rng.randint(1, 120), seconds=rng.randint(0, 86400))
    taints = []
    if i % 50 == 7:
        taints.append({"key": "dedicated", "value": "batch", "effect": "NoSchedule"})
    if i % 200 == 11:
        taints.append({"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule",
                       "timeAdded": ts(NOW - timedelta(minutes=30))})
    ready = "False" if i % 200 == 3 else "True"
    n = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "creationTimestamp": ts(created),
            "labels": {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
                       "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": itype,
                       "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": zone,
                       "node-pool": "batch" if taints and taints[0]["key"] == "dedicated" else "general"},
            "name": name, "resourceVersion": str(1000 + i), "uid": uid(rng),
        },
        "spec": {"podCIDR": "10.%d.%d.0/24" % (100 + i // 256 % 100, i % 256),
                 "providerID": "aws:///%s/i-%s" % (zone, rhash(rng, 17))},
        "status": {
            "addresses": [{"address": "10.0.%d.%d" % (i // 256 % 256, i % 256), "type": "InternalIP"},
                          {"address": name, "type": "Hostname"}],
            "allocatable": {"cpu": "%dm" % (cpu * 1000 - 190), "ephemeral-storage": "95491281146",
                            "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                            "memory": "%dKi" % (mem * 1024 * 1024 - 1800000), "pods": "110"},
            "capacity": {"cpu": str(cpu), "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0",
                         "hugepages-2Mi": "0", "memory": "%dKi" % (mem * 1024 * 1024), "pods": "110"},
            "conditions": [
                {"lastHeartbeatTime": ts(NOW - timedelta(seconds=20)), "lastTransitionTime": ts(created),
                 "message": "kubelet has sufficient memory available", "reason": "KubeletHasSufficientMemory",
                 "status": "False", "type": "MemoryPressure"},
                {"lastHeartbeatTime": ts(NOW - timedelta(seconds=20)), "lastTransitionTime": ts(created),
                 "message": "kubelet has no disk pressure", "reason": "KubeletHasNoDiskPressure",
                 "status": "False", "type": "DiskPressure"},
                {"lastHeartbeatTime": ts(NOW - timedelta(seconds=20)), "lastTransitionTime": ts(created),
                 "message": "kubelet is posting ready status", "reason": "KubeletReady",
                 "status": ready, "type": "Ready"}],
            "nodeInfo": {"architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.22",
                         "kernelVersion": "6.1.112-124.190.amzn2023.x86_64", "kubeProxyVersion": "v1.31.2",
                         "kubeletVersion": "v1.31.2", "operatingSystem": "linux",
                         "osImage": "Amazon Linux 2023.6.20241031"},
        },
    }
    if i % 300 == 5:
        n["spec"]["unschedulable"] = True
    if taints:
        n["spec"]["taints"] = taints
    return n


def pod_template(rng, w):
    """A workload's pod as a JSON string with @...@ placeholders."""
    app = w["app"]
    kind = w["kind"]
    containers = []
    ncont = w["containers"]
    for c in range(ncont):
        cname = "main" if c == 0 else ("sidecar-%d" % c)
        cpu = rng.choice([50, 100, 200, 250, 500, 1000]) if c == 0 else rng.choice([10, 50, 100])
        mem = rng.choice([64, 128, 256, 512, 1024]) if c == 0 else rng.choice([32, 64])
        containers.append({
            "env": [{"name": "LOG_LEVEL", "value": "info"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "image": "%s:%s" % (w["image"], w["tag"]) if c == 0 else "docker.io/envoyproxy/envoy:v1.31.2",
            "imagePullPolicy": "IfNotPresent",
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
            "name": cname,
            "ports": [{"containerPort": 8080 + c, "name": "http" if c == 0 else "admin", "protocol": "TCP"}],
            "resources": {"limits": {"memory": "%dMi" % (mem * 2)},
                          "requests": {"cpu": "%dm" % cpu, "memory": "%dMi" % mem}},
            "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                              "name": "kube-api-access-@VOL@", "readOnly": True}],
        })
    spec = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "nodeName": "@NODE@",
        "preemptionPolicy": "PreemptLowerPriority", "priority": w["priority"],
        "restartPolicy": "Never" if kind == "Job" else "Always",
        "schedulerName": "default-scheduler", "securityContext": {"fsGroup": 1000, "runAsNonRoot": True},
        "serviceAccount": app, "serviceAccountName": app, "terminationGracePeriodSeconds": 30,
        "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
        "volumes": [{"name": "kube-api-access-@VOL@", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}}]}}],
    }
    if w["priority_class"]:
        spec["priorityClassName"] = w["priority_class"]
    if w["init"]:
        spec["initContainers"] = [{"command": ["sh", "-c", "until nslookup db; do sleep 2; done"],
                                   "image": "docker.io/library/busybox:1.36", "imagePullPolicy": "IfNotPresent",
                                   "name": "wait-for-db", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                                   "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}]
    if w["emptydir"]:
        spec["volumes"].append({"emptyDir": {}, "name": "cache"})
    if w["pvc"]:
        spec["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "data-@NAME@"}})
    if kind == "DaemonSet":
        spec["tolerations"] += [{"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure", "operator": "Exists"},
                                {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
                                {"operator": "Exists", "effect": "NoSchedule", "key": "dedicated"}]
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["@NODE@"]}]}]}}}
    else:
        aff = {}
        if w["zone_affinity"]:
            aff["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": w["zones"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "preference": {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.8xlarge"]}]}}]}
        if w["anti"]:
            term = {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
                    "topologyKey": "kubernetes.io/hostname"}
            if w["anti"] == "required":
                aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            else:
                aff["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]}
        if aff:
            spec["affinity"] = aff
        if w["tsc"]:
            spec["topologySpreadConstraints"] = [{"labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
                                                  "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                  "whenUnsatisfiable": w["tsc"]}]
        if w["batch"]:
            spec["tolerations"].append({"effect": "NoSchedule", "key": "dedicated", "operator": "Equal", "value": "batch"})
    labels = {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": w["ns"],
              "app.kubernetes.io/version": w["tag"], "team": w["team"]}
    if kind == "ReplicaSet":
        labels["pod-template-hash"] = w["hash"]
    elif kind == "StatefulSet":
        labels["controller-revision-hash"] = "%s-%s" % (app, w["hash"])
        labels["statefulset.kubernetes.io/pod-name"] = "@NAME@"
    elif kind == "DaemonSet":
        labels["controller-revision-hash"] = w["hash"]
        labels["pod-template-generation"] = "3"
    elif kind == "Job":
        labels["batch.kubernetes.io/job-name"] = w["owner"]
        labels["job-name"] = w["owner"]
    meta = {
        "annotations": {"kubectl.kubernetes.io/restartedAt": ts(NOW - timedelta(days=7)),
                        "prometheus.io/scrape": "true", "prometheus.io/port": "8080",
                        "checksum/config": "%064x" % rng.getrandbits(256)},
        "creationTimestamp": "@CREATED@",
        "generateName": w["owner"] + "-",
        "labels": labels,
        "managedFields": managed_fields("@CREATED@"),
        "name": "@NAME@", "namespace": w["ns"],
        "ownerReferences": [{"apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "blockOwnerDeletion": True,
                             "controller": True, "kind": kind, "name": w["owner"], "uid": w["owner_uid"]}],
        "resourceVersion": "@RV@", "uid": "@UID@",
    }
    status = {
        "conditions": [
            {"lastProbeTime": None, "lastTransitionTime": "@STARTED@", "status": "True", "type": "Initialized"},
            {"lastProbeTime": None, "lastTransitionTime": "@STARTED@", "status": "@READY@", "type": "Ready"},
            {"lastProbeTime": None, "lastTransitionTime": "@STARTED@", "status": "@READY@", "type": "ContainersReady"},
            {"lastProbeTime": None, "lastTransitionTime": "@CREATED@", "status": "True", "type": "PodScheduled"}],
        "containerStatuses": [
            {"containerID": "containerd://@CID%d@" % c, "image": containers[c]["image"],
             "imageID": containers[c]["image"].split(":")[0] + "@sha256:" + "%064x" % rng.getrandbits(256),
             "name": containers[c]["name"], "ready": True, "restartCount": "@RESTARTS@" if c == 0 else 0,
             "state": {"running": {"startedAt": "@STARTED@"}}}
            for c in range(ncont)],
        "hostIP": "@HOSTIP@", "hostIPs": [{"ip": "@HOSTIP@"}], "phase": "@PHASE@", "podIP": "@PODIP@",
        "podIPs": [{"ip": "@PODIP@"}], "qosClass": "Burstable", "startTime": "@STARTED@",
    }
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    s = json.dumps(p, indent=4, sort_keys=True)
    # restartCount is a number in the real object
    return s.replace('"@RESTARTS@"', "@RESTARTS@")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--as-recorded", action="store_true",
                    help="compact items without managedFields, as `ebb record` writes them")
    a = ap.parse_args()
    rng = random.Random(a.seed)

    nodes = [node(rng, i) for i in range(a.nodes)]
    names = [n["metadata"]["name"] for n in nodes]
    ips = [n["status"]["addresses"][0]["address"] for n in nodes]
    schedulable = [i for i, n in enumerate(nodes) if "taints" not in n["spec"] and not n["spec"].get("unschedulable")]
    batch_nodes = [i for i, n in enumerate(nodes) if n["metadata"]["labels"]["node-pool"] == "batch"]
    namespaces = ["team-%02d" % i for i in range(60)] + ["kube-system", "monitoring", "logging", "ingress-nginx"]

    workloads = []
    # DaemonSets: one pod per node (3 of them: 3 x nodes pods)
    for ds in ["kube-proxy", "node-exporter", "promtail"]:
        workloads.append({"kind": "DaemonSet", "app": ds, "ns": "kube-system" if ds == "kube-proxy" else "monitoring",
                          "replicas": a.nodes, "daemon": True})
    remaining = max(0, a.pods - 3 * a.nodes)
    while remaining > 0:
        kind = rng.choices(["ReplicaSet", "StatefulSet", "Job"], weights=[85, 10, 5])[0]
        n = min(remaining, rng.choice([2, 3, 3, 5, 8, 12, 20, 40]) if kind != "Job" else rng.choice([1, 5, 20]))
        workloads.append({"kind": kind, "replicas": n, "daemon": False})
        remaining -= n

    out = open(a.output, "w")
    out.write('{\n    "apiVersion": "v1",\n    "items": [\n')
    first = True

    def emit(obj_text):
        nonlocal first
        if not first:
            out.write(",\n")
        first = False
        if a.as_recorded:
            obj = json.loads(obj_text)
            obj["metadata"].pop("managedFields", None)
            out.write(json.dumps(obj, separators=(",", ":")))
        else:
            out.write("        " + obj_text.replace("\n", "\n        "))

    for n in nodes:
        emit(json.dumps(n, indent=4, sort_keys=True))
    for ns in namespaces:
        emit(json.dumps({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"creationTimestamp": ts(NOW - timedelta(days=200)),
                                      "labels": {"kubernetes.io/metadata.name": ns,
                                                 "env": "prod" if ns.startswith("team-") else "system"},
                                      "name": ns, "resourceVersion": "1", "uid": uid(rng)},
                         "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}, indent=4))
    for pc, val in [("system-cluster-critical", 2000000000), ("system-node-critical", 2000001000),
                    ("high-priority", 100000), ("batch-low", -10)]:
        emit(json.dumps({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                         "metadata": {"name": pc, "uid": uid(rng), "resourceVersion": "1",
                                      "creationTimestamp": ts(NOW - timedelta(days=300))},
                         "preemptionPolicy": "PreemptLowerPriority", "value": val}, indent=4))

    podn = 0
    pod_names = set()
    for wi, w in enumerate(workloads):
        kind = w["kind"]
        if kind == "DaemonSet":
            app = w["app"]
            ns = w["ns"]
        else:
            ns = rng.choice(namespaces[:60])
            app = "%s-%s" % (rng.choice(["api", "web", "worker", "cache", "ingest", "billing", "search", "auth"]), rhash(rng, 4))
        h = rhash(rng, 10)
        owner = app if kind in ("DaemonSet", "StatefulSet") else ("%s-%s" % (app, h) if kind == "ReplicaSet" else "%s-%d" % (app, 29000000 + wi))
        w.update({
            "app": app, "ns": ns, "hash": h, "owner": owner, "owner_uid": uid(rng), "team": "team-%d" % (wi % 17),
            "image": rng.choice(IMAGES), "tag": "v1.%d.%d" % (rng.randint(0, 30), rng.randint(0, 9)),
            "containers": 1 if kind in ("Job", "DaemonSet") else rng.choice([1, 1, 1, 2]),
            "priority": 2000001000 if kind == "DaemonSet" and app == "kube-proxy" else rng.choice([0, 0, 0, 100000]),
            "priority_class": "system-node-critical" if app == "kube-proxy" else None,
            "init": kind != "DaemonSet" and rng.random() < 0.2,
            "emptydir": rng.random() < 0.15, "pvc": kind == "StatefulSet",
            "zone_affinity": kind != "DaemonSet" and rng.random() < 0.2,
            "zones": rng.sample(ZONES, 2),
            "anti": None if kind == "DaemonSet" else rng.choices([None, "preferred", "required"], weights=[60, 30, 10])[0],
            "tsc": None if kind == "DaemonSet" else rng.choices([None, "DoNotSchedule", "ScheduleAnyway"], weights=[75, 15, 10])[0],
            "batch": kind == "Job",
        })
        tpl = pod_template(rng, w)
        if kind == "ReplicaSet" and w["replicas"] >= 3 and rng.random() < 0.3:
            emit(json.dumps({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                             "metadata": {"name": app, "namespace": ns, "uid": uid(rng), "generation": 1,
                                          "resourceVersion": "5", "creationTimestamp": ts(NOW - timedelta(days=30))},
                             "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": app}}},
                             "status": {"currentHealthy": w["replicas"], "desiredHealthy": w["replicas"] - 1,
                                        "disruptionsAllowed": 1, "expectedPods": w["replicas"], "observedGeneration": 1}},
                            indent=4))
        for r in range(w["replicas"]):
            if kind == "DaemonSet":
                ni = r
            elif w["batch"] and batch_nodes and rng.random() < 0.5:
                ni = rng.choice(batch_nodes)
            else:
                ni = rng.choice(schedulable)
            created = NOW - timedelta(seconds=rng.randint(600, 40 * 86400))
            started = created + timedelta(seconds=rng.randint(1, 30))
            if kind == "StatefulSet":
                name = "%s-%d" % (owner, r)
            else:
                # a suffix drawn again where it would name a pod twice (5,000
                # DaemonSet pods are likely to draw one suffix twice)
                name = "%s-%s" % (owner, rhash(rng, 5))
                while (ns, name) in pod_names:
                    name = "%s-%s" % (owner, rhash(rng, 5))
            pod_names.add((ns, name))
            phase = "Running"
            ready = "True"
            if kind == "Job":
                phase = rng.choices(["Succeeded", "Failed", "Running"], weights=[70, 10, 20])[0]
                ready = "False" if phase != "Running" else "True"
            restarts = 0 if rng.random() < 0.9 else rng.choice([1, 3, 12, 150, 400])
            cids = {"@CID%d@" % c: "%064x" % rng.getrandbits(256) for c in range(3)}
            text = tpl
            for k, v in (("@NAME@", name), ("@NODE@", names[ni]), ("@HOSTIP@", ips[ni]),
                         ("@PODIP@", "10.%d.%d.%d" % (100 + ni // 256 % 100, ni % 256, r % 250 + 2)),
                         ("@CREATED@", ts(created)), ("@STARTED@", ts(started)), ("@UID@", uid(rng)),
                         ("@RV@", str(100000 + podn)), ("@VOL@", rhash(rng, 5)), ("@PHASE@", phase),
                         ("@READY@", ready), ("@RESTARTS@", str(restarts)), ("@OWNERUID@", w["owner_uid"])):
                text = text.replace(k, v)
            for k, v in cids.items():
                text = text.replace(k, v)
            emit(text)
            podn += 1
    out.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
    out.close()
    print("%s: %d nodes, %d pods, %d namespaces" % (a.output, a.nodes, podn, len(namespaces)), file=sys.stderr)


if __name__ == "__main__":
    main()
