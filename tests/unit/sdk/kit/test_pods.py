"""What is cached of a pod or a Job someone labelled as ours is bounded (issue #34): the pod
and Job caches keep every labelled one (ours are their ReplicaSets', StatefulSets' and
CronJobs'), so of each only our annotations are kept, at most 32 containers and texts of at
most 1,024 characters — and what the controllers read is still there."""

from __future__ import annotations

from typing import Any

from appstack.sdk.kit.applied import cached_job
from appstack.sdk.kit.pods import MAX_CONTAINERS, MAX_TEXT, cached_pod, pod_problem

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


def test_a_labelled_job_keeps_only_our_annotations() -> None:
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
