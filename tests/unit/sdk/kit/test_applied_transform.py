"""The children's cache transform (:func:`applied_only`): a cached Deployment or Service keeps
of its spec what our apply set — what the comparison and the status functions read — and
drops what the API server defaulted and other managers' annotations; a Job someone labelled
as ours keeps only our annotations and no spec (sdk/kit/applied.py)."""

from __future__ import annotations

import copy
from typing import Any

from appstack.controllers.util.workloads import deployment_rollout, replica_failure
from appstack.runtime.resources import DEPLOYMENT, SERVICE
from appstack.sdk.kit.applied import (
    CHILD_TRANSFORMS,
    applied_only,
    cached_deployment,
    cached_job,
    cached_service,
    project,
)
from appstack.sdk.kit.compare import already_so

FIELD_MANAGER = "appstack"  # the field manager of the cached objects below
HUGE = "r" * 200_000

WANT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "namespace": "ns",
        "labels": {"app": "web"},
        "annotations": {"appstack.dev/config": "v1"},
    },
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "nginx:1.27",
                        "args": ["-g", "daemon off;"],
                        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": "500m"}},
                    }
                ]
            },
        },
    },
}

OURS = {
    "f:metadata": {"f:labels": {"f:app": {}}, "f:annotations": {"f:appstack.dev/config": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:selector": {},
        "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"web"}': {
                        ".": {},
                        "f:name": {},
                        "f:image": {},
                        "f:args": {},
                        "f:ports": {
                            'k:{"containerPort":8080,"protocol":"TCP"}': {
                                ".": {},
                                "f:containerPort": {},
                                "f:protocol": {},
                            }
                        },
                        "f:resources": {"f:limits": {"f:cpu": {}}},
                    }
                }
            },
        },
    },
}


def _live(fields: dict[str, Any] | None = OURS) -> dict[str, Any]:
    """``WANT`` as the API server returns it: defaults, other managers, status."""
    live = copy.deepcopy(WANT)
    meta = live["metadata"]
    meta.update(
        uid="u1", resourceVersion="7", generation=3, creationTimestamp="2026-11-25T00:00:00Z"
    )
    meta["annotations"]["deployment.kubernetes.io/revision"] = "3"
    meta["ownerReferences"] = [{"kind": "AppService", "name": "web", "uid": "o1"}]
    if fields is not None:
        meta["managedFields"] = [
            {"manager": FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields}
        ]
    spec = live["spec"]
    spec.update(revisionHistoryLimit=10, progressDeadlineSeconds=600)
    spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}
    pod = spec["template"]["spec"]
    pod.update(restartPolicy="Always", dnsPolicy="ClusterFirst", securityContext={})
    container = pod["containers"][0]
    container.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log")
    container["resources"]["limits"]["cpu"] = "500m"
    live["status"] = {
        "observedGeneration": 3,
        "replicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "updatedReplicas": 2,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
        ],
    }
    return live


def test_a_cached_child_keeps_what_our_apply_set_and_drops_server_defaults() -> None:
    cached = applied_only(_live())
    assert cached["spec"] == WANT["spec"]
    assert cached["metadata"]["annotations"] == {"appstack.dev/config": "v1"}
    # what the comparison and the status functions read is all there
    assert already_so(WANT, cached, FIELD_MANAGER)
    rollout = deployment_rollout(cached)
    assert rollout.done
    assert rollout.want == 2
    assert replica_failure(cached) is None
    meta = cached["metadata"]
    assert (meta["uid"], meta["resourceVersion"], meta["generation"]) == ("u1", "7", 3)
    assert meta["ownerReferences"][0]["uid"] == "o1"
    assert meta["labels"] == {"app": "web"}
    assert cached["status"] == _live()["status"]


def test_a_change_is_still_seen_after_the_transform() -> None:
    cached = applied_only(_live())
    changed = copy.deepcopy(WANT)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    assert not already_so(changed, cached, FIELD_MANAGER)
    # a field we now want but never applied is missing from the cache: written
    more = copy.deepcopy(WANT)
    more["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    assert not already_so(more, cached, FIELD_MANAGER)
    # a field we applied and now leave out: our entry still names it
    fewer = copy.deepcopy(WANT)
    del fewer["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not already_so(fewer, cached, FIELD_MANAGER)


def test_an_object_we_never_applied_is_kept_whole() -> None:
    live = _live(fields=None)
    assert applied_only(copy.deepcopy(live)) == live


def test_only_our_annotations_are_kept_none_if_we_set_none() -> None:
    fields = {k: v for k, v in OURS.items() if k != "f:metadata"}
    cached = applied_only(_live(fields))
    assert "annotations" not in cached["metadata"]


def test_projection_of_lists_by_key_value_and_index() -> None:
    ports = [
        {"port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30001},
        {"port": 443, "protocol": "TCP", "targetPort": 8443},
    ]
    fields = {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}, "f:targetPort": {}}}
    assert project(ports, fields) == [{"port": 80, "targetPort": 8080}]
    assert project(["a", "b"], {'v:"b"': {}}) == ["b"]
    assert project([{"x": 1}, {"x": 2}], {"i:1": {"f:x": {}}}) == [{"x": 2}]
    assert project({"a": {"b": 1, "c": 2}}, {"f:a": {}}) == {"a": {"b": 1, "c": 2}}


def test_a_service_keeps_its_applied_ports_not_its_cluster_ip() -> None:
    service = {
        "metadata": {
            "name": "web",
            "managedFields": [
                {
                    "manager": FIELD_MANAGER,
                    "operation": "Apply",
                    "fieldsV1": {
                        "f:spec": {
                            "f:selector": {},
                            "f:ports": {
                                'k:{"port":80,"protocol":"TCP"}': {
                                    ".": {},
                                    "f:port": {},
                                    "f:protocol": {},
                                    "f:targetPort": {},
                                }
                            },
                        }
                    },
                }
            ],
        },
        "spec": {
            "clusterIP": "10.0.0.7",
            "clusterIPs": ["10.0.0.7"],
            "ipFamilies": ["IPv4"],
            "sessionAffinity": "None",
            "type": "ClusterIP",
            "selector": {"app": "web"},
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
        },
        "status": {"loadBalancer": {}},
    }
    cached = applied_only(service)
    assert cached["spec"] == {
        "selector": {"app": "web"},
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
    }
    assert CHILD_TRANSFORMS[SERVICE] is cached_service
    assert CHILD_TRANSFORMS[DEPLOYMENT] is cached_deployment


def test_a_labelled_job_keeps_only_our_annotations() -> None:
    """Bounded as a labelled pod is (issue #34): no annotation of another's, no spec."""
    job = {
        "metadata": {
            "name": "j",
            "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp": "t", "x": HUGE},
        },
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": HUGE}]}}},
        "status": {"conditions": [{"type": "Complete", "status": "True", "lastProbeTime": "t"}]},
    }
    cached = cached_job(job)
    assert "annotations" not in cached["metadata"]
    assert cached["spec"] == {}
    assert cached["status"] == {"conditions": [{"type": "Complete", "status": "True"}]}
