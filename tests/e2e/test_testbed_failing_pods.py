"""The test bed plays pods that cannot start (testing/kwok_stage.py): an image tagged
``:pull-fails`` cannot be pulled, one tagged ``:crashes`` crash-loops, and a pod no node can
hold stays Pending as the real scheduler leaves it; ``pod-ready`` leaves all three alone."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import Client
from lightkube.models.core_v1 import Container, PodSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Pod

from appstack_testbed.waiting import eventually_sync


def _pod(kube: Client, namespace: str, name: str, image: str, **spec: Any) -> None:
    containers = [Container(name="main", image=image)]
    pod = Pod(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PodSpec(containers=containers, **spec),
    )
    kube.create(pod)


def _waiting(kube: Client, namespace: str, name: str) -> tuple[str, str, int]:
    pod = kube.get(Pod, name, namespace=namespace)
    (status,) = (pod.status.containerStatuses if pod.status else None) or [None]
    if status is None or status.state is None or status.state.waiting is None:
        return "", "", 0
    return status.state.waiting.reason or "", pod.status.phase or "", status.restartCount


@pytest.mark.parametrize(
    ("tag", "waiting"),
    [
        ("pull-fails", ("ImagePullBackOff", "Pending", 0)),
        ("crashes", ("CrashLoopBackOff", "Running", 4)),
    ],
)
def test_images_tagged_to_fail_wait_with_the_kubelets_reason(
    kube: Client, namespace: str, tag: str, waiting: tuple[str, str, int]
) -> None:
    _pod(kube, namespace, tag, f"nginx:{tag}")
    eventually_sync(
        lambda: _waiting(kube, namespace, tag)[0] == waiting[0], timeout=30, what=waiting[0]
    )
    assert _waiting(kube, namespace, tag) == waiting


def test_a_pod_no_node_can_hold_is_unschedulable(kube: Client, namespace: str) -> None:
    _pod(kube, namespace, "nowhere", "nginx:1.27", nodeSelector={"no-such": "node"})

    def unschedulable() -> bool:
        pod = kube.get(Pod, "nowhere", namespace=namespace)
        return any(
            c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
            for c in (pod.status.conditions if pod.status else None) or []
        )

    eventually_sync(unschedulable, timeout=30, what="PodScheduled=False Unschedulable")
    assert kube.get(Pod, "nowhere", namespace=namespace).status.phase == "Pending"
