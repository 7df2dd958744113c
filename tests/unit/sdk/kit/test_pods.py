"""The pods' readers and their cache transform (sdk/kit/pods.py): the first pod that cannot
start says why, a container never ready is reported after its grace, a pod wakes its owner
only while it has a problem or waits for its readiness; a cached pod keeps of its spec and
status what the controllers read, so that the readers answer on it as on the full pod; and
what is cached of a pod someone labelled as ours is bounded (issue #34): the pod cache keeps
every labelled one (ours are their ReplicaSets' and StatefulSets'), so of each only our
annotations are kept, at most 32 containers and texts of at most 1,024 characters — and
what the controllers read is still there."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timezone
from typing import Any

import pytest

from appstack.runtime.controller import Request
from appstack.sdk.kit.conditions import Problem
from appstack.sdk.kit.pods import (
    MAX_CONTAINERS,
    MAX_TEXT,
    NOT_READY_GRACE,
    cached_pod,
    pod_mapper,
    pod_problem,
    recheck_after,
)
from tests.support.pods import web_pod

HUGE = "r" * 200_000


def _pod(containers: int) -> dict[str, Any]:
    images = [f"registry.example/{HUGE}:{i}" for i in range(containers)]
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "labels": {"app.kubernetes.io/managed-by": "appstack"},
            "annotations": {
                "appstack.dev/etcd-initial-cluster": "new",
                "kubectl.kubernetes.io/last-applied-configuration": HUGE,
                "team.example/notes": HUGE,
            },
        },
        "spec": {
            "nodeName": "n",
            "containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images)],
        },
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False", "message": HUGE}],
            "containerStatuses": [
                {
                    "name": f"c{i}",
                    "state": {"waiting": {"reason": "InvalidImageName", "message": image}},
                }
                for i, image in enumerate(images)
            ],
        },
    }


def test_a_foreign_labelled_pod_is_cached_bounded() -> None:
    pod = cached_pod(_pod(containers=100), domain="appstack.dev")

    assert pod["metadata"]["annotations"] == {"appstack.dev/etcd-initial-cluster": "new"}
    assert len(pod["spec"]["containers"]) == MAX_CONTAINERS == 32
    assert len(pod["status"]["containerStatuses"]) == MAX_CONTAINERS
    assert max(len(c["image"]) for c in pod["spec"]["containers"]) == MAX_TEXT == 1024
    assert len(pod["status"]["conditions"][0]["message"]) == MAX_TEXT
    assert len(repr(pod)) < 100_000  # of the ≈ 40 MB it came with
    problem = pod_problem([pod])  # still read as before
    assert problem is not None
    assert problem.reason == "InvalidImageName"


def test_a_pod_without_annotations_of_ours_keeps_none() -> None:
    pod = _pod(containers=1)
    del pod["metadata"]["annotations"]["appstack.dev/etcd-initial-cluster"]
    assert "annotations" not in cached_pod(pod, domain="appstack.dev")["metadata"]


def _with_status(name: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": status}


def test_the_first_pod_that_cannot_start_says_why() -> None:
    crash = {
        "name": "app",
        "restartCount": 3,
        "lastState": {"terminated": {"exitCode": 137}},
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
    }
    running = {"name": "app", "state": {"running": {}}}
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient cpu.",
    }
    assert pod_problem([_with_status("a", containerStatuses=[running])]) is None
    assert pod_problem(
        [_with_status("b", containerStatuses=[crash]), _with_status("a")]
    ) == Problem(
        "CrashLoopBackOff",
        "pod b: container app: back-off 40s (restarted 3 times, last exit code 137)",
    )
    assert pod_problem([_with_status("c", conditions=[unschedulable])]) == Problem(
        "Unschedulable", "pod c: 0/3 nodes are available: 3 Insufficient cpu."
    )
    going = {
        "metadata": {"name": "d", "deletionTimestamp": "now"},
        "status": {"containerStatuses": [crash]},
    }
    assert pod_problem([going]) is None


def test_a_container_that_runs_but_never_becomes_ready_is_reported_after_its_grace() -> None:
    """A readiness probe that does not pass: no watch event says so, so the owner looks
    again when the grace is over (recheck_after), then reports it."""
    started = "2026-01-01T00:00:00Z"
    epoch = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    unready = {"name": "app", "ready": False, "state": {"running": {"startedAt": started}}}
    pod = _with_status("web-1", containerStatuses=[unready])
    assert pod_problem([pod], now=epoch + 5) is None
    assert recheck_after([pod], now=epoch + 5) == NOT_READY_GRACE - 5 + 0.5
    problem = pod_problem([pod], now=epoch + NOT_READY_GRACE + 1)
    assert problem is not None
    assert problem.reason == "ContainersNotReady"
    assert "readiness probe" in problem.message
    assert recheck_after([pod], now=epoch + NOT_READY_GRACE + 1) is None
    ready = {**unready, "ready": True}
    assert pod_problem([_with_status("web-1", containerStatuses=[ready])], now=epoch + 99) is None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_cached_pod_keeps_metadata_node_images_and_status_only() -> None:
    raw = web_pod()
    raw["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    raw["spec"]["containers"][0]["env"] = [{"name": "A", "value": "b"}]
    pod = cached_pod(raw)
    assert pod["spec"] == {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]}
    assert pod["metadata"]["labels"] == {"app.kubernetes.io/instance": "web"}
    problem = pod_problem([pod])  # what the controllers read still answers
    assert problem is not None
    assert problem.reason == "ImagePullBackOff"
    assert cached_pod({"metadata": {"name": "p"}})["spec"] == {}


def test_a_pod_wakes_its_owner_only_while_it_has_a_problem_or_waits_for_readiness() -> None:
    mapper = pod_mapper("app.kubernetes.io/instance")
    troubled = web_pod()
    assert list(mapper(troubled)) == [Request("ns", "web")]
    healthy = web_pod()
    healthy["status"] = {"containerStatuses": [{"name": "web", "state": {"running": {}}}]}
    assert list(mapper(healthy)) == []  # its readiness reaches the owner via the workload
    # Running but not ready: no event will come when its readiness grace is over, so the
    # owner is woken now to schedule that look (seen: a probe that never passes left the
    # owner RollingOut when the Deployment's last status change came before the start).
    started = web_pod()
    started["status"] = {
        "containerStatuses": [
            {"name": "web", "ready": False, "state": {"running": {"startedAt": _now()}}}
        ]
    }
    assert list(mapper(started)) == [Request("ns", "web")]
    unlabelled = web_pod()
    unlabelled["metadata"]["labels"] = {}
    assert list(mapper(unlabelled)) == []


def test_a_cached_pod_keeps_of_its_status_what_is_read() -> None:
    raw = web_pod()
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
    pod = web_pod()
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
