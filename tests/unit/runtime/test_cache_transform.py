"""Cache transforms: a kind's cache keeps only what the controllers read (pods without their
spec), applied to every object the informer stores; one transform per kind."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from appstack.runtime.cache import ByObject, Cache
from appstack.runtime.controller import Request
from appstack.runtime.resources import CONFIG_MAP, POD
from appstack.runtime.watcher import Applied
from appstack.sdk.kit.pods import cached_pod, pod_mapper, pod_problem, recheck_after
from tests.support.scripted_transport import scripted_client


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod() -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "ns",
            "resourceVersion": "3",
            "labels": {"app.kubernetes.io/instance": "web"},
            "managedFields": [{"manager": "kubelet"}],
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]},
        "status": {
            "containerStatuses": [
                {"name": "web", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
            ]
        },
    }


def test_a_cached_pod_keeps_metadata_node_images_and_status_only() -> None:
    raw = _pod()
    raw["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    raw["spec"]["containers"][0]["env"] = [{"name": "A", "value": "b"}]
    pod = cached_pod(raw)
    assert pod["spec"] == {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]}
    assert pod["metadata"]["labels"] == {"app.kubernetes.io/instance": "web"}
    problem = pod_problem([pod])  # what the controllers read still answers
    assert problem is not None
    assert problem.reason == "ImagePullBackOff"
    assert cached_pod({"metadata": {"name": "p"}})["spec"] == {}


def test_the_cache_stores_transformed_objects() -> None:
    client, _ = scripted_client()
    cache = Cache(client, ["ns"], by_object={POD: ByObject(transform=cached_pod)})
    cache.configure({POD: ByObject(transform=cached_pod)})  # the same again: fine
    with pytest.raises(RuntimeError, match="declared twice"):
        cache.configure({POD: ByObject(transform=lambda obj: obj)})
    informer = cache.informers(POD)["ns"]
    informer._deliver(Applied(informer._prepare(_pod())))  # as the watcher hands it
    stored = cache.get(POD, "ns/web-1")
    assert stored is not None
    assert stored["spec"] == {
        "nodeName": "node-1",
        "containers": [{"name": "web", "image": "nginx"}],
    }
    assert "managedFields" not in stored["metadata"]
    cache.informers(CONFIG_MAP)
    with pytest.raises(RuntimeError):  # too late: its informers exist
        cache.configure({CONFIG_MAP: ByObject(transform=lambda obj: obj)})


def test_a_pod_wakes_its_owner_only_while_it_has_a_problem_or_waits_for_readiness() -> None:
    mapper = pod_mapper("app.kubernetes.io/instance")
    troubled = _pod()
    assert list(mapper(troubled)) == [Request("ns", "web")]
    healthy = _pod()
    healthy["status"] = {"containerStatuses": [{"name": "web", "state": {"running": {}}}]}
    assert list(mapper(healthy)) == []  # its readiness reaches the owner via the workload
    # Running but not ready: no event will come when its readiness grace is over, so the
    # owner is woken now to schedule that look (seen: a probe that never passes left the
    # owner RollingOut when the Deployment's last status change came before the start).
    started = _pod()
    started["status"] = {
        "containerStatuses": [
            {"name": "web", "ready": False, "state": {"running": {"startedAt": _now()}}}
        ]
    }
    assert list(mapper(started)) == [Request("ns", "web")]
    unlabelled = _pod()
    unlabelled["metadata"]["labels"] = {}
    assert list(mapper(unlabelled)) == []


def test_a_cached_pod_keeps_of_its_status_what_is_read() -> None:
    raw = _pod()
    running = {"running": {"startedAt": "2026-11-25T00:00:00Z"}}
    raw["status"] = {
        "phase": "Running",
        "podIP": "10.0.0.5",
        "podIPs": [{"ip": "10.0.0.5"}],
        "hostIP": "10.1.0.1",
        "startTime": "2026-11-25T00:00:00Z",
        "qosClass": "BestEffort",
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-25T00:00:00Z"},
            {
                "type": "Ready",
                "status": "False",
                "reason": "ContainersNotReady",
                "message": "containers with unready status: [web]",
                "lastProbeTime": None,
                "lastTransitionTime": "2026-11-25T00:00:00Z",
            },
        ],
        "containerStatuses": [
            {
                "name": "web",
                "ready": False,
                "started": True,
                "restartCount": 2,
                "state": running,
                "lastState": {"terminated": {"exitCode": 1}},
                "image": "nginx",
                "imageID": "docker.io/library/nginx@sha256:abc",
                "containerID": "containerd://0123",
            }
        ],
    }
    status = cached_pod(raw)["status"]
    assert status == {
        "phase": "Running",
        "podIP": "10.0.0.5",
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "ContainersNotReady",
                "message": "containers with unready status: [web]",
            }
        ],
        "containerStatuses": [
            {
                "name": "web",
                "ready": False,
                "started": True,
                "restartCount": 2,
                "state": running,
                "lastState": {"terminated": {"exitCode": 1}},
            }
        ],
    }
    assert cached_pod({"metadata": {"name": "p"}, "status": {}})["status"] == {}


def _running_pod(name: str, *, ready: bool, started: str) -> dict[str, Any]:
    pod = _pod()
    pod["metadata"]["name"] = name
    pod["metadata"]["generateName"] = "web-"
    pod["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": str(ready), "lastTransitionTime": started},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
        ],
        "containerStatuses": [
            {
                "name": "web",
                "ready": ready,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": started}},
                "lastState": {},
            }
        ],
    }
    return pod


def test_a_ready_containers_start_is_dropped_so_equal_statuses_pack_alike() -> None:
    a = cached_pod(_running_pod("web-1", ready=True, started="2026-11-25T00:00:00Z"))
    b = cached_pod(_running_pod("web-2", ready=True, started="2026-11-25T00:00:07Z"))
    assert a["status"]["containerStatuses"][0]["state"] == {"running": {}}
    assert a["status"] == b["status"]
    assert a["spec"] == b["spec"]
    assert "generateName" not in a["metadata"]
    # not ready: its start is read (how long it has waited for its readiness probe)
    c = cached_pod(_running_pod("web-3", ready=False, started="2026-11-25T00:00:07Z"))
    assert c["status"]["containerStatuses"][0]["state"] == {
        "running": {"startedAt": "2026-11-25T00:00:07Z"}
    }


@pytest.mark.parametrize("ready", [True, False])
@pytest.mark.parametrize("age", [5.0, 120.0])
def test_the_pod_readers_answer_on_a_cached_pod_as_on_the_full_one(ready: bool, age: float) -> None:
    now = datetime.now(UTC).timestamp()
    started = datetime.fromtimestamp(now - age, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    full = _running_pod("web-1", ready=ready, started=started)
    cached = cached_pod(copy.deepcopy(full))
    assert pod_problem([cached], now=now) == pod_problem([full], now=now)
    assert recheck_after([cached], now=now) == recheck_after([full], now=now)
    mapper = pod_mapper("app.kubernetes.io/instance")
    assert list(mapper(cached)) == list(mapper(full))
