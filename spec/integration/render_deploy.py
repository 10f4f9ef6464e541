#!/usr/bin/env python3
"""The part of `kubectl kustomize` that deploy/ needs for its RBAC, for
machines without kubectl: prints the objects of a kustomization directory as
a JSON list.

  spec/integration/render_deploy.py deploy/overlays/cronjob [COMPONENT_DIR]...

What it does: `resources` (files, and directories with their own
kustomization), `components` (their resources; their patches apply to
everything gathered so far), the extra component directories given on the
command line (as an overlay listing them would), `patches` whose patch is a
strategic-merge `$patch: delete` (the object goes), and `namespace` (set on
every namespaced object and on the ServiceAccount subjects of bindings).
What it leaves: JSON 6902 patches, generators, images and labels; they change
workloads and ConfigMaps, never who may do what. spec/integration/
k8s_rbac_spec.lua compares its roles and bindings with kubectl's where
kubectl is installed.
"""
import json
import os
import sys

import yaml

CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "PriorityClass", "StorageClass"}


def read_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kustomization(d):
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            with open(p) as f:
                return yaml.safe_load(f) or {}
    sys.exit("%s: no kustomization file" % d)


def apply_patches(k, objs):
    for p in k.get("patches", []) or []:
        for doc in yaml.safe_load_all(p.get("patch", "")) if isinstance(p.get("patch"), str) else []:
            if isinstance(doc, dict) and doc.get("$patch") == "delete":
                kind, name = doc.get("kind"), doc.get("metadata", {}).get("name")
                objs[:] = [o for o in objs
                           if not (o.get("kind") == kind and o["metadata"].get("name") == name)]


def set_namespace(ns, objs):
    for o in objs:
        if o.get("kind") not in CLUSTER_SCOPED:
            o["metadata"]["namespace"] = ns
        if o.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
            for s in o.get("subjects", []) or []:
                if s.get("kind") == "ServiceAccount":
                    s["namespace"] = ns


def render(d, extra_components=()):
    k = kustomization(d)
    objs = []
    for r in k.get("resources", []) or []:
        p = os.path.normpath(os.path.join(d, r))
        objs += render(p) if os.path.isdir(p) else read_docs(p)
    comps = [os.path.normpath(os.path.join(d, c)) for c in k.get("components", []) or []]
    for c in comps + list(extra_components):
        ck = kustomization(c)
        for r in ck.get("resources", []) or []:
            objs += read_docs(os.path.normpath(os.path.join(c, r)))
        apply_patches(ck, objs)
    apply_patches(k, objs)
    if k.get("namespace"):
        set_namespace(k["namespace"], objs)
    return objs


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    json.dump(render(sys.argv[1], sys.argv[2:]), sys.stdout)
