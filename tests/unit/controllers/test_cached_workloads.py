"""Cached StatefulSets, Jobs and claims (:func:`cached_statefulset`, :func:`cached_job`,
:func:`cached_claim`): their readers (``statefulset_ready``, MongoDBCommunity's status,
CronTab's runs, EtcdCluster's snapshots and volumes) answer on a cached object exactly
as on the object the API server sent, and the comparison as well for a StatefulSet."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from appstack.controllers.crontab.status import newest, run_problem, run_result
from appstack.controllers.etcdcluster import desired as etcd
from appstack.controllers.etcdcluster.backup import outcome
from appstack.controllers.util.workloads import statefulset_ready
from appstack.runtime.resources import JOB, PVC, STATEFUL_SET
from appstack.sdk.kit.applied import (
    CHILD_TRANSFORMS,
    CLAIM_TRANSFORMS,
    cached_claim,
    cached_job,
    cached_statefulset,
    job_transforms,
)
from appstack.sdk.kit.compare import already_so

FIELD_MANAGER = "appstack"  # the field manager of the cached objects below

WANT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db", "namespace": "ns", "labels": {"app": "db"}},
    "spec": {
        "replicas": 3,
        "serviceName": "db",
        "selector": {"matchLabels": {"app": "db"}},
        "template": {
            "metadata": {"labels": {"app": "db"}},
            "spec": {"containers": [{"name": "db", "image": "postgres:16"}]},
        },
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data"},
                "spec": {"resources": {"requests": {"storage": "1Gi"}}},
            }
        ],
    },
}
FIELDS = {
    "f:metadata": {"f:labels": {"f:app": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:serviceName": {},
        "f:selector": {},
        "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"db"}': {".": {}, "f:name": {}, "f:image": {}},
                }
            },
        },
        "f:volumeClaimTemplates": {},
    },
}


def _statefulset(status: dict[str, Any]) -> dict[str, Any]:
    live = copy.deepcopy(WANT)
    live["metadata"].update(uid="s1", resourceVersion="4", generation=2)
    live["metadata"]["managedFields"] = [
        {"manager": FIELD_MANAGER, "operation": "Apply", "fieldsV1": FIELDS}
    ]
    live["spec"].update(podManagementPolicy="OrderedReady", revisionHistoryLimit=10)
    claim = live["spec"]["volumeClaimTemplates"][0]
    claim["spec"]["resources"]["requests"]["storage"] = "1024Mi"
    claim["spec"]["volumeMode"] = "Filesystem"
    live["status"] = status
    return live


STS_STATUSES = [
    {
        "observedGeneration": 2,
        "replicas": 3,
        "readyReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 3,
        "availableReplicas": 3,
        "currentRevision": "db-1",
        "updateRevision": "db-1",
        "collisionCount": 0,
    },
    {
        "observedGeneration": 2,
        "replicas": 3,
        "readyReplicas": 1,
        "currentRevision": "db-1",
        "updateRevision": "db-2",
    },
    {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3},
    {},
]


@pytest.mark.parametrize("status", STS_STATUSES)
def test_a_cached_statefulset_is_ready_as_the_full_one(status: dict[str, Any]) -> None:
    full = _statefulset(copy.deepcopy(status))
    cached = cached_statefulset(copy.deepcopy(full))
    assert statefulset_ready(cached) == statefulset_ready(full)
    for key in ("replicas", "readyReplicas"):  # MongoDBCommunity's members and replicas
        assert cached["status"].get(key) == full["status"].get(key)
    assert "collisionCount" not in cached["status"]


@pytest.mark.parametrize("change", ["none", "image", "replicas", "storage otherwise"])
def test_the_comparison_answers_on_a_cached_statefulset_as_on_the_full_one(change: str) -> None:
    full = _statefulset(STS_STATUSES[0])
    cached = cached_statefulset(copy.deepcopy(full))
    want = copy.deepcopy(WANT)
    if change == "image":
        want["spec"]["template"]["spec"]["containers"][0]["image"] = "postgres:17"
    elif change == "replicas":
        want["spec"]["replicas"] = 1
    elif change == "storage otherwise":
        template = want["spec"]["volumeClaimTemplates"][0]
        template["spec"]["resources"]["requests"]["storage"] = "1024Mi"
    expected = change in ("none", "storage otherwise")
    assert already_so(want, cached, FIELD_MANAGER) is expected
    assert already_so(want, full, FIELD_MANAGER) is expected
    assert "podManagementPolicy" not in cached["spec"]


def _job(name: str, created: str, conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"u-{name}",
            "creationTimestamp": created,
            "labels": {"app.kubernetes.io/instance": "tab", "job-name": name},
        },
        "spec": {"template": {"spec": {"containers": [{"name": "run", "image": "busybox"}]}}},
        "status": {
            "startTime": created,
            "active": 0,
            "ready": 0,
            "uncountedTerminatedPods": {},
            "conditions": [
                {**c, "lastProbeTime": created, "lastTransitionTime": created} for c in conditions
            ],
            **({"completionTime": created} if conditions else {}),
        },
    }


FAILED = [
    {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
    {
        "type": "Failed",
        "status": "True",
        "reason": "BackoffLimitExceeded",
        "message": "Job has reached the specified backoff limit",
    },
]
COMPLETE = [
    {"type": "SuccessCriteriaMet", "status": "True"},
    {"type": "Complete", "status": "True"},
]


@pytest.mark.parametrize("conditions", [FAILED, COMPLETE, []])
def test_a_cached_job_answers_its_readers_as_the_full_one(
    conditions: list[dict[str, Any]],
) -> None:
    jobs = [
        _job("tab-1", "2026-11-26T03:00:00Z", COMPLETE),
        _job("tab-2", "2026-11-26T03:01:00Z", conditions),
    ]
    cached = [cached_job(copy.deepcopy(j)) for j in jobs]
    assert newest(cached) == cached[1]
    assert newest(jobs) == jobs[1]
    for full, kept in zip(jobs, cached, strict=True):
        assert run_result(kept) == run_result(full)
        assert run_problem(kept, []) == run_problem(full, [])
        assert outcome(kept) == outcome(full)
        kept_done = (kept["status"] or {}).get("completionTime")
        assert kept_done == full["status"].get("completionTime")
        assert kept["metadata"] == full["metadata"]
        assert kept["spec"] == {}


@pytest.mark.parametrize("retain", [True, False])
def test_a_cached_claim_keeps_what_etcdcluster_reads_of_a_volume(retain: bool) -> None:
    cluster: Any = {
        "apiVersion": "appstack.dev/v1",
        "kind": "EtcdCluster",
        "metadata": {"name": "e", "namespace": "ns", "uid": "c1"},
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "data-e-0",
            "namespace": "ns",
            "uid": "v1",
            "labels": {"app.kubernetes.io/instance": "e"},
            **etcd.volume_owner(cluster, retain=retain),
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}},
    }
    if retain:
        del claim["metadata"]["ownerReferences"]
    else:
        del claim["metadata"]["annotations"]
    cached = cached_claim(copy.deepcopy(claim))
    assert etcd.owns_volume(cluster, cached) == etcd.owns_volume(cluster, claim) is True
    assert etcd.retained(cached) == etcd.retained(claim) == retain
    assert cached["metadata"] == claim["metadata"]
    assert "status" not in cached


def test_one_transform_per_kind_for_every_controller() -> None:
    assert CHILD_TRANSFORMS[STATEFUL_SET] is cached_statefulset
    jobs = job_transforms("appstack.dev")
    assert jobs is job_transforms("appstack.dev")  # one function per domain: one cache
    assert jobs[JOB].func is cached_job  # type: ignore[attr-defined]
    assert {PVC: cached_claim} == CLAIM_TRANSFORMS
