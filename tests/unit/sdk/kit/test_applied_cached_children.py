"""Cached children as the transforms keep them (sdk/kit/applied.py: :func:`cached_deployment`,
:func:`cached_service`): the comparison and the status functions answer on a cached child
exactly as on the object the API server sent, for the changes a reconcile meets (a new
image, an env var removed or added, a server default, a quantity written otherwise)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from appstack.controllers.appservice.status import from_children
from appstack.controllers.util.workloads import (
    deployment_ready,
    deployment_rollout,
    replica_failure,
)
from appstack.sdk.kit.applied import cached_deployment, cached_service
from appstack.sdk.kit.compare import already_so

FIELD_MANAGER = "appstack"  # the field manager of the cached objects below

CONTAINER = {
    "name": "app",
    "image": "nginx:1.27",
    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
}
WANT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [CONTAINER]},
        },
    },
}
FIELDS = {
    "f:metadata": {"f:labels": {"f:app": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:selector": {},
        "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"app"}': {
                        ".": {},
                        "f:name": {},
                        "f:image": {},
                        "f:env": {
                            'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}},
                            'k:{"name":"B"}': {".": {}, "f:name": {}, "f:value": {}},
                        },
                        "f:resources": {"f:requests": {"f:cpu": {}, "f:memory": {}}},
                    }
                }
            },
        },
    },
}
CONDITION_TIMES = {
    "lastUpdateTime": "2026-11-26T03:02:01Z",
    "lastTransitionTime": "2026-11-26T03:02:01Z",
}


def _live(status: dict[str, Any]) -> dict[str, Any]:
    """``WANT`` as the API server sends it: defaults, quantities canonical, our entry and
    the controller-manager's, ``status``."""
    live = copy.deepcopy(WANT)
    live["metadata"].update(uid="u1", resourceVersion="9", generation=2)
    live["metadata"]["ownerReferences"] = [{"kind": "AppService", "name": "web", "uid": "o1"}]
    live["metadata"]["managedFields"] = [
        {"manager": FIELD_MANAGER, "operation": "Apply", "fieldsV1": FIELDS, "time": "t"},
        {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status"},
    ]
    live["spec"].update(revisionHistoryLimit=10, progressDeadlineSeconds=600)
    container = live["spec"]["template"]["spec"]["containers"][0]
    container.update(imagePullPolicy="IfNotPresent", terminationMessagePolicy="File")
    container["resources"]["requests"]["cpu"] = "0.5"  # as written otherwise
    live["status"] = status
    return live


def _with(change: str) -> dict[str, Any]:
    want = copy.deepcopy(WANT)
    container = want["spec"]["template"]["spec"]["containers"][0]
    if change == "image":
        container["image"] = "nginx:1.28"
    elif change == "env removed":
        container["env"] = container["env"][:1]
    elif change == "env added":
        container["env"].append({"name": "C", "value": "3"})
    elif change == "default written":
        container["imagePullPolicy"] = "IfNotPresent"
    elif change == "quantity otherwise":
        container["resources"]["requests"]["memory"] = "1024Mi"
    elif change == "quantity changed":
        container["resources"]["requests"]["cpu"] = "1"
    elif change == "replicas":
        want["spec"]["replicas"] = 2
    return want


ROLLED_OUT = {
    "observedGeneration": 2,
    "replicas": 1,
    "updatedReplicas": 1,
    "readyReplicas": 1,
    "availableReplicas": 1,
    "terminatingReplicas": 0,
    "conditions": [
        {
            "type": "Available",
            "status": "True",
            "reason": "MinimumReplicasAvailable",
            "message": "Deployment has minimum availability.",
            **CONDITION_TIMES,
        },
        {
            "type": "Progressing",
            "status": "True",
            "reason": "NewReplicaSetAvailable",
            "message": 'ReplicaSet "web-6978c7f9d5" has successfully progressed.',
            **CONDITION_TIMES,
        },
    ],
}
STUCK = {
    "observedGeneration": 2,
    "replicas": 0,
    "unavailableReplicas": 1,
    "conditions": [
        {
            "type": "Available",
            "status": "False",
            "reason": "MinimumReplicasUnavailable",
            "message": "Deployment does not have minimum availability.",
            **CONDITION_TIMES,
        },
        {
            "type": "Progressing",
            "status": "False",
            "reason": "ProgressDeadlineExceeded",
            "message": 'ReplicaSet "web-6978c7f9d5" has timed out progressing.',
            **CONDITION_TIMES,
        },
        {
            "type": "ReplicaFailure",
            "status": "True",
            "reason": "FailedCreate",
            "message": 'pods "web-" is forbidden: exceeded quota: q',
            **CONDITION_TIMES,
        },
    ],
}

CHANGES = [
    "none",
    "image",
    "env removed",
    "env added",
    "default written",
    "quantity otherwise",
    "quantity changed",
    "replicas",
]


@pytest.mark.parametrize("change", CHANGES)
def test_the_comparison_answers_on_a_cached_deployment_as_on_the_full_one(change: str) -> None:
    full = _live(ROLLED_OUT)
    cached = cached_deployment(copy.deepcopy(full))
    want = _with(change)
    expected = change in ("none", "quantity otherwise")
    assert already_so(want, cached, FIELD_MANAGER) is expected
    if change != "default written":
        assert already_so(want, full, FIELD_MANAGER) is expected


def test_a_newly_wanted_field_equal_to_its_default_is_written_once() -> None:
    """The one answer that differs, by design of the projection (docs/performance.md): the
    full object has the server's default, the cached one only what we applied — so the
    field is applied once, and from then on our entry names it and both agree."""
    want = _with("default written")
    assert already_so(want, _live(ROLLED_OUT), FIELD_MANAGER)
    assert not already_so(want, cached_deployment(_live(ROLLED_OUT)), FIELD_MANAGER)
    applied = _live(ROLLED_OUT)
    fields = copy.deepcopy(FIELDS)
    fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}'][
        "f:imagePullPolicy"
    ] = {}
    applied["metadata"]["managedFields"][0]["fieldsV1"] = fields
    assert already_so(want, cached_deployment(copy.deepcopy(applied)), FIELD_MANAGER)
    assert already_so(want, applied, FIELD_MANAGER)


@pytest.mark.parametrize("status", [ROLLED_OUT, STUCK, {}])
def test_the_status_functions_answer_on_a_cached_deployment_as_on_the_full_one(
    status: dict[str, Any],
) -> None:
    full = _live(copy.deepcopy(status))
    cached = cached_deployment(copy.deepcopy(full))
    assert deployment_rollout(cached) == deployment_rollout(full)
    assert deployment_ready(cached) == deployment_ready(full)
    assert replica_failure(cached) == replica_failure(full)
    app: dict[str, Any] = {"metadata": {"name": "web", "generation": 2}, "status": {}}
    for service in (None, {"metadata": {"name": "web"}}):
        args: dict[str, Any] = {"size": 1, "service_expected": True, "problem": None}
        args.update(service=service, selector="app=web", now="2026-11-26T00:00:00Z")
        assert from_children(app, deployment=cached, **args) == from_children(
            app, deployment=full, **args
        )


def test_a_cached_deployment_keeps_of_its_status_what_is_read() -> None:
    a = cached_deployment(_live(copy.deepcopy(ROLLED_OUT)))
    b = cached_deployment(_live(copy.deepcopy(ROLLED_OUT)))
    assert a["status"] == {
        "observedGeneration": 2,
        "replicas": 1,
        "updatedReplicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
            },
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ],
    }
    assert b["status"] == a["status"]


def test_a_cached_service_keeps_its_status() -> None:
    def service() -> dict[str, Any]:
        return {"metadata": {"name": "web"}, "spec": {}, "status": {"loadBalancer": {}}}

    assert cached_service(service())["status"] == {"loadBalancer": {}}
