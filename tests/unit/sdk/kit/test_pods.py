"""The pods' readers and their cache transform (sdk/kit/pods.py): the first pod that cannot
start says why, a container never ready is reported after its grace; and what is cached of
a pod someone labelled as ours is bounded (issue #34): the pod cache keeps every labelled
one (ours are their ReplicaSets' and StatefulSets'), so of each only our annotations are
kept, at most 32 containers and texts of at most 1,024 characters — and what the
controllers read is still there."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from appstack.sdk.kit.conditions import Problem
from appstack.sdk.kit.pods import (
    MAX_CONTAINERS,
    MAX_TEXT,
    NOT_READY_GRACE,
    cached_pod,
    pod_problem,
    recheck_after,
)

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
