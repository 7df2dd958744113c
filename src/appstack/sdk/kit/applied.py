"""Cache transforms for the children we write: keep of the spec only what our own apply set.

What the controllers read of a cached Deployment or Service (grep of ``controllers/``):
:func:`~appstack.sdk.kit.compare.already_so` compares the wanted child with it —
every wanted field must be so, and our apply entry says what our last apply set
(``managedFields``, kept by the informer); the status functions read ``spec.replicas``
(which we set), the whole ``status``, and ``metadata`` (name, namespace, uid,
resourceVersion, generation, labels, ownerReferences, deletionTimestamp). What the API
server defaults into the spec (``strategy``, ``revisionHistoryLimit``, a container's
``terminationMessagePath``, a Service's ``clusterIP``, ``ipFamilies``, ...) and other
managers' annotations are read by nobody: :func:`applied_only` drops them, keeping the
spec projected onto our apply entry's ``fieldsV1`` (a wanted field we never applied is
then missing, so the comparison writes it, as it must). An object without our apply
entry (not written by us yet) is kept whole.

Of a Deployment's status (:func:`cached_deployment`) the status functions read the replica
counts, ``observedGeneration`` and each condition's type, status and reason, and the
message of ``Available`` and ``ReplicaFailure`` (``util/workloads.py``,
``appservice/status.py``); the rest (times, ``Progressing``'s message naming the
ReplicaSet, ``terminatingReplicas``, ``collisionCount``) is dropped. A Service's status is
kept as it is. What is kept is packed by the cache's store
(:mod:`appstack.runtime.packing`). Registered by every controller owning these
kinds (:data:`CHILD_TRANSFORMS`: the cache of a kind is shared, one transform per kind).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from appstack.runtime.cache import Transform
from appstack.runtime.resources import DEPLOYMENT, JOB, PVC, SERVICE, STATEFUL_SET, Resource
from appstack.sdk.kit.conditions import condition_read
from appstack.sdk.kit.pods import keep_annotations_under, pod_transforms


def project(value: Any, fields: Mapping[str, Any]) -> Any:
    """The part of ``value`` that the ``fieldsV1`` tree ``fields`` names (``f:`` a map
    key, ``k:`` a list item by its keys, ``v:`` a list item by value, ``i:`` by index);
    a leaf (``{}`` or only ``.``) keeps the whole value."""
    below = {k: v for k, v in fields.items() if k != "."}
    if not below:
        return value
    if isinstance(value, dict):  # the value's own keys kept: orjson shares them
        return {
            key: project(item, below[f"f:{key}"])
            for key, item in value.items()
            if f"f:{key}" in below
        }
    if isinstance(value, list):
        return [project(item, sub) for item, sub in _items(value, below) if sub is not None]
    return value


def _items(items: list[Any], fields: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """Each item of ``items`` with the ``fieldsV1`` subtree naming it (None if none does)."""
    keyed = []
    values = []
    for key, sub in fields.items():
        kind, _, name = key.partition(":")
        if kind == "k":
            keyed.append((json.loads(name), sub))
        elif kind == "v":
            values.append(json.loads(name))
    out: list[tuple[Any, Any]] = []
    for index, item in enumerate(items):
        sub = fields.get(f"i:{index}")
        if sub is None and isinstance(item, dict):
            sub = next((s for k, s in keyed if all(item.get(n) == v for n, v in k.items())), None)
        if sub is None and item in values:
            sub = {}
        out.append((item, sub))
    return out


_ENTRY_KEYS = ("manager", "operation", "subresource", "fieldsV1")


def own_apply_fields(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The fields (``fieldsV1``) of the one server-side apply entry a cached object keeps:
    the cache's own client's (the informer drops every other manager's entry before a
    transform sees the object); empty when it never applied it."""
    for entry in obj.get("metadata", {}).get("managedFields") or []:
        if entry.get("operation") == "Apply" and not entry.get("subresource"):
            return dict(entry.get("fieldsV1") or {})
    return {}


def applied_only(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its spec (and annotations) cut to what our own apply set; status and
    the rest of its metadata kept. Unchanged when we never applied it."""
    fields = own_apply_fields(obj)
    if not fields:
        return obj
    spec_fields = fields.get("f:spec")
    obj["spec"] = project(obj.get("spec") or {}, spec_fields) if spec_fields else {}
    meta = obj.get("metadata") or {}
    # of our entry, what applied_fields reads (not its time, apiVersion, fieldsType)
    meta["managedFields"] = [
        {k: entry[k] for k in _ENTRY_KEYS if k in entry}
        for entry in meta.get("managedFields") or []
    ]
    annotations = meta.get("annotations")
    if annotations:
        ours = (fields.get("f:metadata") or {}).get("f:annotations") or {}
        kept = project(annotations, ours) if ours else {}
        if kept:
            meta["annotations"] = kept
        else:
            del meta["annotations"]
    return obj


#: What the status functions read of a Deployment's status (``util/workloads.py``).
DEPLOYMENT_STATUS = (
    "observedGeneration",
    "replicas",
    "readyReplicas",
    "availableReplicas",
    "updatedReplicas",
    "unavailableReplicas",
)
#: The Deployment conditions whose message is read (into the owner's status).
MESSAGES_READ = frozenset({"Available", "ReplicaFailure"})


def deployment_status(status: dict[str, Any]) -> dict[str, Any]:
    """What is read of a Deployment's ``status``: the counts, each condition's type, status
    and reason, the message of those in :data:`MESSAGES_READ`."""
    kept = {k: status[k] for k in DEPLOYMENT_STATUS if k in status}
    if status.get("conditions"):
        kept["conditions"] = [
            condition_read(c, message=c.get("type") in MESSAGES_READ) for c in status["conditions"]
        ]
    return kept


def cached_deployment(obj: dict[str, Any]) -> dict[str, Any]:
    """A Deployment as cached: :func:`applied_only`, its status cut to what is read."""
    obj = applied_only(obj)
    if isinstance(obj.get("status"), dict):
        obj["status"] = deployment_status(obj["status"])
    return obj


def cached_service(obj: dict[str, Any]) -> dict[str, Any]:
    """A Service as cached: :func:`applied_only`, its status as it is."""
    return applied_only(obj)


#: What is read of a StatefulSet's status (``statefulset_ready``, MongoDBCommunity's status).
STATEFUL_SET_STATUS = (
    "observedGeneration",
    "replicas",
    "readyReplicas",
    "currentRevision",
    "updateRevision",
)


def cached_statefulset(obj: dict[str, Any]) -> dict[str, Any]:
    """A StatefulSet as cached (AppStack's managed middleware, MongoDBCommunity):
    :func:`applied_only`, of its status what is read (not its conditions, not the counts
    of current, updated and available replicas, not ``collisionCount``)."""
    obj = applied_only(obj)
    status = obj.get("status")
    if isinstance(status, dict):
        obj["status"] = {k: status[k] for k in STATEFUL_SET_STATUS if k in status}
    return obj


#: What is read of a Job's status (CronTab's runs, EtcdCluster's snapshots).
JOB_STATUS = ("conditions", "completionTime")


def cached_job(obj: dict[str, Any], domain: str = "") -> dict[str, Any]:
    """A Job as cached: its metadata (of its annotations only those under the operator's
    ``domain``: the cache keeps every labelled Job, and anyone who may create one may label
    it ours), and of its status each
    condition's type, status, reason and message and ``completionTime``; its spec (a pod
    template) is read by nothing — CronTab's Jobs are the CronJob's, EtcdCluster's are
    created, never compared."""
    obj["spec"] = {}
    if isinstance(obj.get("metadata"), dict):
        keep_annotations_under(obj["metadata"], domain)
    status = obj.get("status")
    if isinstance(status, dict):
        kept = {k: status[k] for k in JOB_STATUS if k in status}
        if kept.get("conditions"):
            kept["conditions"] = [condition_read(c) for c in kept["conditions"]]
        obj["status"] = kept
    return obj


def cached_claim(obj: dict[str, Any]) -> dict[str, Any]:
    """A PersistentVolumeClaim as cached (EtcdCluster's member volumes): its metadata only
    (name, owner, the cluster's annotation, labels, deletion) — its spec and status are
    read by nothing, and a claim is created, never compared."""
    obj["spec"] = {}
    obj.pop("status", None)
    return obj


#: The cache transforms of every controller that owns Deployments, Services or
#: StatefulSets.
CHILD_TRANSFORMS: dict[Resource, Transform] = {
    DEPLOYMENT: cached_deployment,
    SERVICE: cached_service,
    STATEFUL_SET: cached_statefulset,
}

#: The cache transform of claims (a controller's member volumes).
CLAIM_TRANSFORMS: dict[Resource, Transform] = {PVC: cached_claim}


@functools.cache
def job_transforms(domain: str) -> dict[Resource, Transform]:
    """The cache transform of Jobs, keeping the annotations under ``domain``."""
    return {JOB: functools.partial(cached_job, domain=domain)}


@functools.cache
def child_and_pod_transforms(domain: str) -> dict[Resource, Transform]:
    """:data:`CHILD_TRANSFORMS` and the pod transform, for the controllers that own
    Deployments or Services and watch pods."""
    return {**pod_transforms(domain), **CHILD_TRANSFORMS}
