"""KEP-5866's server-side sharded list and watch (Kubernetes 1.36, alpha, feature gate
``ShardedListAndWatch``), measured against what issue #50's sharding needs: could a shard's
informers select its objects — a root *and its children* — with the API server's
``shardSelector`` instead of (or beside) the shard label?

Two local clusters of their own (kwok nodes, nothing else on them): one with the gate on,
one without it. On each: ``--roots`` root ConfigMaps spread over ``--namespaces``
namespaces, each with ``--children`` child ConfigMaps owned by it (an ownerReference, as an
AppService's Deployment and Service), and as many AppServices (a custom resource: the
CRD from deploy/crds). Then, by ``kubectl get --raw`` with ``shardSelector`` (the KEP's
``shardRange(object.metadata.uid | object.metadata.namespace, start, end)``):

* **partition** — for 2 and 4 equal ranges of the 64-bit hash, by UID and by namespace:
  the ranges' lists are disjoint and together every object, their sizes over the mean
  (the busiest range), and whether each answer says it was filtered (``shardInfo``);
* **hash** — whether the server's ranges are those of the 64-bit FNV-1a hash of the UID or
  namespace computed here (what a client would have to agree with);
* **together** — the roots whose children all fall in the root's range: what a shard
  selecting by range would hold of a key's objects;
* **custom resources** — the same partition of the AppServices;
* **watch** — a watch with a range sees exactly the new objects in that range;
* **gate off** — what the same requests get from an API server without the gate.

Usage: python bench/kep5866.py --json docs/kep5866.json [--roots 400] [--children 2]
[--namespaces 20]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

from appstack_testbed.cluster import LocalCluster

ROOT = Path(__file__).resolve().parent.parent
LABEL = "bench.appstack.dev/kep5866"
FNV_OFFSET, FNV_PRIME, MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1
Obj = dict[str, Any]


def fnv1a(text: str) -> int:
    """64-bit FNV-1a of ``text``'s bytes (what the KEP's shardRange hashes, as read)."""
    value = FNV_OFFSET
    for byte in text.encode():
        value = ((value ^ byte) * FNV_PRIME) & MASK
    return value


def ranges(n: int) -> list[tuple[int, int]]:
    """``n`` equal ranges of the 64-bit hash, [start, end)."""
    step = (1 << 64) // n
    return [(i * step, (i + 1) * step if i < n - 1 else 1 << 64) for i in range(n)]


def selector(field: str, start: int, end: int) -> str:
    def bound(value: int) -> str:
        return "0x10000000000000000" if value == 1 << 64 else f"0x{value:016x}"

    return f"shardRange(object.metadata.{field}, '{bound(start)}', '{bound(end)}')"


def raw(cluster: LocalCluster, path: str) -> tuple[Obj | None, str]:
    proc = cluster.kubectl("get", "--raw", path, check=False)
    if proc.returncode != 0:
        return None, (proc.stderr or proc.stdout).strip()[:300]
    return json.loads(proc.stdout), ""


def listed(cluster: LocalCluster, base: str, shard: str | None) -> tuple[Obj | None, str]:
    query = f"labelSelector={quote(LABEL)}%3D1&limit=0"
    if shard is not None:
        query += f"&shardSelector={quote(shard)}"
    return raw(cluster, f"{base}?{query}")


def every(cluster: LocalCluster, base: str) -> Obj:
    """The unfiltered list of ``base``'s labelled objects (raises if refused)."""
    answer, error = listed(cluster, base, None)
    if answer is None:
        raise RuntimeError(f"{base}: {error}")
    return answer


def populate(cluster: LocalCluster, roots: int, children: int, namespaces: int) -> None:
    names = [f"kep-{i:02d}" for i in range(namespaces)]
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {}}}
        for ns in names
    ]
    cluster.kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in docs))
    cluster.kubectl(
        "apply", "--server-side", "-f", str(ROOT / "deploy/crds/appservices.appstack.dev.yaml")
    )
    cluster.kubectl("wait", "--for=condition=Established", "crd/appservices.appstack.dev")
    labels = {LABEL: "1"}
    made = []
    for i in range(roots):
        ns = names[i % namespaces]
        made.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"root-{i:04d}", "namespace": ns, "labels": labels},
            }
        )
        made.append({"apiVersion": "appstack.dev/v1", "kind": "AppService",
                     "metadata": {"name": f"app-{i:04d}", "namespace": ns, "labels": labels},
                     "spec": {"size": 0, "image": "nginx:1.27"}})  # fmt: skip
    cluster.kubectl("create", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in made))
    found = every(cluster, "/api/v1/configmaps")
    uids = {(o["metadata"]["namespace"], o["metadata"]["name"]): o["metadata"]["uid"]
            for o in found["items"]}  # fmt: skip
    owned = []
    for (ns, name), uid in sorted(uids.items()):
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid}
        for c in range(children):
            owned.append({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": f"{name}-child-{c}", "namespace": ns,
                                       "labels": labels, "ownerReferences": [ref]}})  # fmt: skip
    cluster.kubectl("create", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in owned))


def partition(cluster: LocalCluster, base: str, field: str, n: int, everything: list[Obj]) -> Obj:
    """The ``n`` ranges' lists of ``base`` by ``field``: disjoint, complete, balanced, and
    the server's ranges against the client's FNV-1a."""
    seen: list[set[str]] = []
    filtered, errors, hash_agrees = [], [], True
    for start, end in ranges(n):
        answer, error = listed(cluster, base, selector(field, start, end))
        if answer is None:
            errors.append(error)
            continue
        filtered.append("shardInfo" in (answer.get("metadata") or {}))
        got = {o["metadata"]["uid"] for o in answer["items"]}
        seen.append(got)
        expected = {
            o["metadata"]["uid"] for o in everything if start <= fnv1a(o["metadata"][field]) < end
        }
        hash_agrees &= got == expected
    if errors:
        return {"ranges": n, "by": field, "error": errors[0]}
    total = {o["metadata"]["uid"] for o in everything}
    union = set().union(*seen)
    overlap = sum(len(s) for s in seen) - len(union)
    sizes = [len(s) for s in seen]
    return {
        "ranges": n,
        "by": field,
        "objects": len(total),
        "sizes": sizes,
        "busiest_x_mean": round(max(sizes) / (len(total) / n), 2),
        "complete": union == total,
        "overlap": overlap,
        "answers_say_filtered": all(filtered),
        "fnv1a_of_the_field_agrees": hash_agrees,
    }


def together(everything: list[Obj], field: str, n: int) -> float:
    """The share of roots whose children all hash into the root's range."""
    by_uid = {o["metadata"]["uid"]: o for o in everything}
    bounds = ranges(n)

    def which(obj: Obj) -> int:
        value = fnv1a(obj["metadata"][field])
        return next(i for i, (s, e) in enumerate(bounds) if s <= value < e)

    roots: dict[str, list[Obj]] = {}
    for obj in everything:
        for ref in obj["metadata"].get("ownerReferences") or []:
            roots.setdefault(ref["uid"], []).append(obj)
    kept = sum(all(which(c) == which(by_uid[r]) for c in kids) for r, kids in roots.items())
    return round(kept / len(roots), 3)


def watch(cluster: LocalCluster, count: int) -> Obj:
    """A watch of the first of two UID ranges, then ``count`` new objects: the events it
    got against the new objects in that range."""
    answer = every(cluster, "/api/v1/configmaps")
    version = answer["metadata"]["resourceVersion"]
    start, end = ranges(2)[0]
    path = (
        f"/api/v1/configmaps?watch=1&resourceVersion={version}&timeoutSeconds=15"
        f"&labelSelector={quote(LABEL)}%3D1&shardSelector={quote(selector('uid', start, end))}"
    )
    out: list[str] = []
    proc = subprocess.Popen(
        [str(cluster.toolchain.binary("kubectl")), f"--kubeconfig={cluster.kubeconfig}",
         "get", "--raw", path],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or []), daemon=True)
    reader.start()
    time.sleep(1)
    made = [{"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": f"watched-{i:03d}", "namespace": "kep-00",
                          "labels": {LABEL: "1"}}} for i in range(count)]  # fmt: skip
    cluster.kubectl("create", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in made))
    listing = every(cluster, "/api/v1/namespaces/kep-00/configmaps")["items"]
    items = [o for o in listing if o["metadata"]["name"].startswith("watched-")]
    in_range = {o["metadata"]["uid"] for o in items if start <= fnv1a(o["metadata"]["uid"]) < end}
    proc.wait(timeout=30)
    reader.join(timeout=5)
    events = [json.loads(line) for line in out if line.strip()]
    got = {e["object"]["metadata"]["uid"] for e in events if e.get("type") == "ADDED"}
    error = (proc.stderr.read() if proc.stderr else "")[:300] if proc.returncode else ""
    return {
        "created": count,
        "in_range": len(in_range),
        "events": len(got),
        "exactly_the_range": got == in_range,
        "error": error,
    }


def measure(name: str, gate: bool, args: argparse.Namespace) -> Obj:
    extra = {"kube-apiserver": ["--feature-gates=ShardedListAndWatch=true"]} if gate else {}
    cluster = LocalCluster(name, real_nodes=0, extra_args=extra)
    cluster.up()
    try:
        populate(cluster, args.roots, args.children, args.namespaces)
        answer = every(cluster, "/api/v1/configmaps")
        apps = every(cluster, "/apis/appstack.dev/v1/appservices")
        everything, crs = answer["items"], apps["items"]
        record: Obj = {"gate": gate, "configmaps": len(everything), "appservices": len(crs)}
        record["partitions"] = [
            partition(cluster, "/api/v1/configmaps", field, n, everything)
            for field in ("uid", "namespace")
            for n in (2, 4)
        ]
        record["custom_resources"] = partition(
            cluster, "/apis/appstack.dev/v1/appservices", "uid", 2, crs
        )
        record["roots_with_children_in_their_range"] = {
            f"{field}/{n}": together(everything, field, n)
            for field in ("uid", "namespace")
            for n in (2, 4)
        }
        if gate:
            record["watch"] = watch(cluster, 40)
        return record
    finally:
        cluster.down()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--roots", type=int, default=400)
    parser.add_argument("--children", type=int, default=2)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    suffix = uuid.uuid4().hex[:4]
    runs = [
        measure(f"kep5866-on-{suffix}", True, args),
        measure(f"kep5866-off-{suffix}", False, args),
    ]
    report = {"date": started, "roots": args.roots, "children": args.children,
              "namespaces": args.namespaces, "runs": runs}  # fmt: skip
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
