"""Setting up every controller tells each child kind's cache whose children it keeps in full
(issue #34): the kinds owning it, exactly; a kind some controller reads without controlling
it (pods, Jobs) is kept in full whoever controls it. And what a controller reads of an
ownerless child is still there: a retained etcd volume is found by its labels and its
cluster's UID annotation."""

from __future__ import annotations

from typing import Any

from appstack.api.identity import IDENTITY
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK
from appstack.controllers.etcdcluster import ETCD_CLUSTER, desired
from appstack.controllers.mongodbcommunity import MONGODB_COMMUNITY
from appstack.controllers.registry import ALL, CACHE
from appstack.runtime.events import EventRecorder
from appstack.runtime.informer import Informer
from appstack.runtime.manager import Manager
from appstack.runtime.resources import (
    CONFIG_MAP,
    CRON_JOB,
    DEPLOYMENT,
    JOB,
    PDB,
    POD,
    PVC,
    SECRET,
    SERVICE,
    STATEFUL_SET,
    Resource,
)
from appstack.runtime.watcher import Applied
from appstack.sdk.kit.pods import labelled, pods_of
from appstack.sdk.operator import wire
from tests.support.scripted_transport import scripted_client


def _manager() -> Manager:
    client, _ = scripted_client()
    manager = Manager(client, namespaces=["ns"])
    wire(manager, EventRecorder(client), ALL, IDENTITY, cache=CACHE)  # as the operator does
    return manager


def _kinds(*owners: Resource) -> set[tuple[str, str]]:
    return {(owner.api_version, owner.kind) for owner in owners}


def _informer(manager: Manager, resource: Resource) -> Informer:
    return manager.cache.informers(resource)["ns"]


def _cache(manager: Manager, resource: Resource, obj: dict[str, Any]) -> None:
    informer = _informer(manager, resource)
    informer._deliver(Applied(informer._prepare(obj)))  # as the watcher hands it


def test_each_child_kind_keeps_in_full_the_children_of_the_kinds_owning_it() -> None:
    manager = _manager()

    owners = {
        resource: _informer(manager, resource).owners
        for resource in (
            CONFIG_MAP,
            SECRET,
            DEPLOYMENT,
            SERVICE,
            STATEFUL_SET,
            PVC,
            PDB,
            CRON_JOB,
            POD,
            JOB,
            CONFIG_MAP.metadata_only(),
        )
    }

    crontab = next(c for c in ALL if c.name == "crontab").kind.resource
    assert owners == {
        CONFIG_MAP: _kinds(APP_STACK, MONGODB_COMMUNITY),
        SECRET: _kinds(MONGODB_COMMUNITY),
        DEPLOYMENT: _kinds(APP_SERVICE, APP_STACK),
        SERVICE: _kinds(APP_SERVICE, APP_STACK, ETCD_CLUSTER, MONGODB_COMMUNITY),
        STATEFUL_SET: _kinds(APP_STACK, MONGODB_COMMUNITY),
        PVC: _kinds(ETCD_CLUSTER),
        PDB: _kinds(APP_STACK, ETCD_CLUSTER, MONGODB_COMMUNITY),
        CRON_JOB: _kinds(crontab),
        POD: None,  # watched (the pods of Deployments are their ReplicaSets')
        JOB: None,  # watched (the CronJob's)
        CONFIG_MAP.metadata_only(): None,  # a user's, read for their metadata anyway
    }
    assert ("appstack.dev/v1", "AppStack") in owners[CONFIG_MAP]  # type: ignore[operator]


def _owner(kind: str, name: str = "shop", uid: str = "uid-shop") -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
    }


def _config_map(name: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "resourceVersion": "1",
        "labels": {"app.kubernetes.io/managed-by": "appstack"},
    }
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v" * 1000}}


def test_a_labelled_configmap_of_a_tenant_is_cached_without_its_data() -> None:
    manager = _manager()
    _cache(manager, CONFIG_MAP, _config_map("tenants", None))
    _cache(manager, CONFIG_MAP, _config_map("stacks", _owner("AppStack")))
    _cache(manager, CONFIG_MAP, _config_map("v2", {**_owner("AppStack"), "apiVersion": "x/v1"}))

    foreign = manager.cache.get(CONFIG_MAP, "ns/tenants")
    ours = manager.cache.get(CONFIG_MAP, "ns/stacks")
    other = manager.cache.get(CONFIG_MAP, "ns/v2")
    assert foreign is not None
    assert "data" not in foreign
    assert other is not None
    assert "data" not in other
    assert ours is not None
    assert ours["data"] == {"k": "v" * 1000}


def test_a_retained_etcd_volume_is_still_found_and_known_as_its_clusters() -> None:
    manager = _manager()
    cluster = {
        "apiVersion": "appstack.dev/v1",
        "kind": "EtcdCluster",
        "metadata": {"name": "etcd", "namespace": "ns", "uid": "uid-etcd"},
    }
    labels = {**desired.selector("etcd"), "app.kubernetes.io/managed-by": "appstack"}
    retained = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "data-etcd-0",
            "namespace": "ns",
            "uid": "uid-pvc",
            "resourceVersion": "4",
            "labels": labels,
            "annotations": {
                desired.CLUSTER_UID: "uid-etcd",
                "pv.kubernetes.io/bind-completed": "yes",
            },
        },
        "spec": {"resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound"},
    }
    _cache(manager, PVC, retained)

    (volume,) = labelled(manager.cache, PVC, "ns", desired.selector("etcd"))
    assert desired.owns_volume(cluster, volume)  # type: ignore[arg-type]
    assert desired.retained(volume)
    assert volume["metadata"]["annotations"] == {desired.CLUSTER_UID: "uid-etcd"}
    assert "spec" not in volume


def test_a_pod_of_a_replicaset_is_kept_as_the_pod_transform_keeps_it() -> None:
    manager = _manager()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "ns",
            "resourceVersion": "3",
            "labels": {"app.kubernetes.io/instance": "web", "app.kubernetes.io/name": "web"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-1",
                    "uid": "u",
                    "controller": True,
                }
            ],
        },
        "spec": {"nodeName": "n", "containers": [{"name": "web", "image": "nginx"}]},
        "status": {"containerStatuses": [{"name": "web", "state": {"waiting": {"reason": "X"}}}]},
    }
    _cache(manager, POD, pod)

    (cached,) = pods_of(manager.cache, "ns", {"app.kubernetes.io/instance": "web"})
    assert cached["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "X"}}
    assert cached["spec"] == {"nodeName": "n", "containers": [{"name": "web", "image": "nginx"}]}
