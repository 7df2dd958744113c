"""The process-backed node runs real etcd as pods: probes, Services, StatefulSets, restarts,
volumes and a clean stop (:mod:`appstack_testbed.procnode`)."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client, codecs
from lightkube.resources.apps_v1 import StatefulSet
from lightkube.resources.core_v1 import Node, PersistentVolume, PersistentVolumeClaim, Pod

from appstack_testbed.etcd_releases import ETCD_PREVIOUS
from appstack_testbed.procnode.runner import ProcessNodes
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.versions import ETCD
from appstack_testbed.waiting import condition_status, wait_for
from tests.e2e import procnode_etcd as etcd


def create(kube: Client, namespace: str, manifest: dict[str, Any]) -> None:
    kube.create(codecs.from_dict(manifest), namespace=namespace)


def ready_pod(kube: Client, namespace: str, name: str, timeout: float = 60) -> Pod:
    return wait_for(
        lambda: (
            (pod := kube.get(Pod, name, namespace=namespace))
            and condition_status(pod, "Ready") == "True"
            and pod
        ),
        timeout=timeout,
        what=f"pod {name} Ready",
    )


@pytest.mark.parametrize(
    ("image", "version"),
    [(etcd.IMAGE, ETCD.removeprefix("v")), (etcd.IMAGE_PREVIOUS, ETCD_PREVIOUS.removeprefix("v"))],
)
def test_etcd_pod_becomes_ready_and_serves_through_its_service(
    kube: Client, namespace: str, process_node: ProcessNodes, image: str, version: str
) -> None:
    create(kube, namespace, etcd.single_pod("solo", process_node.name, image))
    create(kube, namespace, etcd.service("solo", "solo", headless=False))
    pod = ready_pod(kube, namespace, "solo")
    assert pod.status is not None
    assert pod.status.podIP is not None
    assert ipaddress.ip_address(pod.status.podIP) in process_node.network()
    assert pod.status.phase == "Running"
    address = process_node.service_address(namespace, "solo", 2379)
    wait_for(
        lambda: etcd.attempt(lambda: etcd.put(address, "greeting", "hello")),
        timeout=30,
        what="a put through the Service",
    )
    assert etcd.get(address, "greeting") == "hello"
    # The member really listens on its own pod IP (not 0.0.0.0), reachable from the host.
    assert etcd.get((pod.status.podIP, 2379), "greeting") == "hello"
    assert etcd.server_version(address) == version  # the image's release runs


def pod_ip(kube: Client, namespace: str, name: str) -> str:
    pod = kube.get(Pod, name, namespace=namespace)
    assert pod.status is not None
    assert pod.status.podIP is not None
    return pod.status.podIP


def restart_count(kube: Client, namespace: str, name: str) -> int:
    pod = kube.get(Pod, name, namespace=namespace)
    statuses = (pod.status.containerStatuses if pod.status else None) or []
    return statuses[0].restartCount if statuses else 0


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (an exited orphan init has not reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def claim_dir(kube: Client, namespace: str, claim: str) -> Path:
    pvc = kube.get(PersistentVolumeClaim, claim, namespace=namespace)
    assert pvc.spec is not None
    assert pvc.spec.volumeName is not None
    volume = kube.get(PersistentVolume, pvc.spec.volumeName)
    assert volume.spec is not None
    assert volume.spec.hostPath is not None
    return Path(volume.spec.hostPath.path)


def test_etcd_statefulset_forms_a_cluster_that_survives_crashes_and_pod_deletion(
    kube: Client, namespace: str, process_node: ProcessNodes
) -> None:
    create(kube, namespace, etcd.service("e", "e", headless=True))
    create(kube, namespace, etcd.service("e-client", "e", headless=False))
    create(kube, namespace, etcd.statefulset("e", namespace, process_node.name))
    for i in range(3):
        ready_pod(kube, namespace, f"e-{i}", timeout=120)
    address = process_node.service_address(namespace, "e-client", 2379)
    wait_for(lambda: etcd.attempt(lambda: etcd.put(address, "k", "v1")), timeout=30, what="a put")
    assert etcd.get(address, "k") == "v1"
    # The members found each other by their headless-Service names.
    peers = sorted(url for m in etcd.members(address) for url in m["peerURLs"])
    assert peers == [f"http://e-{i}.e.{namespace}.svc.cluster.local:2380" for i in range(3)]
    hosts = (process_node.pod_dir(namespace, "e-0") / "hosts").read_text()
    assert f"e-2.e.{namespace}.svc.cluster.local" in hosts

    # A crash: the process is restarted in the same pod, with its data.
    data = claim_dir(kube, namespace, "data-e-0")
    assert (data / "data" / "member").is_dir()
    killed = process_node.kill(namespace, "e-0")
    wait_for(lambda: restart_count(kube, namespace, "e-0") == 1, timeout=60, what="a restart")
    ready_pod(kube, namespace, "e-0", timeout=60)
    assert process_node.pid(namespace, "e-0") not in (None, killed)
    pod = kube.get(Pod, "e-0", namespace=namespace)
    assert pod.status is not None
    assert pod.status.containerStatuses is not None
    last = pod.status.containerStatuses[0].lastState
    assert last is not None
    assert last.terminated is not None
    assert last.terminated.exitCode == 137
    own = (pod_ip(kube, namespace, "e-0"), 2379)
    assert etcd.get(own, "k", serializable=True) == "v1"

    # A deleted pod comes back (new process, new IP possible) with the same volume and data.
    old_uid = kube.get(Pod, "e-1", namespace=namespace).metadata.uid  # type: ignore[union-attr]
    old_dir = claim_dir(kube, namespace, "data-e-1")
    kube.delete(Pod, "e-1", namespace=namespace)
    wait_for(
        lambda: kube.get(Pod, "e-1", namespace=namespace).metadata.uid != old_uid,  # type: ignore[union-attr]
        timeout=60,
        what="e-1 re-created",
    )
    ready_pod(kube, namespace, "e-1", timeout=60)
    assert claim_dir(kube, namespace, "data-e-1") == old_dir
    assert etcd.get((pod_ip(kube, namespace, "e-1"), 2379), "k", serializable=True) == "v1"
    assert len(etcd.members(address)) == 3

    # Deleting the StatefulSet stops the processes; deleting a claim removes its data.
    pids = [process_node.pid(namespace, f"e-{i}") for i in range(3)]
    kube.delete(StatefulSet, "e", namespace=namespace)
    wait_for(lambda: not list(kube.list(Pod, namespace=namespace)), timeout=60, what="pods gone")
    assert [pid for pid in pids if pid is not None and alive(pid)] == []
    data_2 = claim_dir(kube, namespace, "data-e-2")
    assert data_2.is_dir()
    kube.delete(PersistentVolumeClaim, "data-e-2", namespace=namespace)
    wait_for(lambda: not data_2.exists(), timeout=60, what=f"{data_2} deleted with its claim")
    assert old_dir.is_dir()


def test_env_volumes_exec_probe_and_init_containers(
    kube: Client, namespace: str, process_node: ProcessNodes
) -> None:
    for kind, name, field, data in (
        ("Secret", "s", "stringData", {"password": "hunter2"}),
        ("ConfigMap", "c", "data", {"greeting": "hello"}),
    ):
        create(
            kube,
            namespace,
            {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, field: data},
        )
    script = (
        'echo "$POD_NAME $PASSWORD $(cat /config/greeting) $(cat /work/init)" > /work/out;'
        " exec sleep 600"
    )
    create(
        kube,
        namespace,
        etcd.shell_pod(
            "shell",
            process_node.name,
            script,
            container={
                "env": [
                    *etcd.ENV,
                    {
                        "name": "PASSWORD",
                        "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}},
                    },
                ],
                "volumeMounts": [
                    {"name": "config", "mountPath": "/config", "readOnly": True},
                    {"name": "work", "mountPath": "/work"},
                ],
                "readinessProbe": {
                    "exec": {"command": ["test", "-s", "/work/out"]},
                    "periodSeconds": 1,
                },
            },
            initContainers=[
                {
                    "name": "init",
                    "image": etcd.IMAGE,
                    "command": ["/bin/sh", "-c", "etcdctl version | head -1 > /work/init"],
                    "volumeMounts": [{"name": "work", "mountPath": "/work"}],
                }
            ],
            volumes=[
                {"name": "config", "configMap": {"name": "c"}},
                {"name": "work", "emptyDir": {}},
            ],
        ),
    )
    ready_pod(kube, namespace, "shell")
    out = (process_node.pod_dir(namespace, "shell") / "volumes" / "work" / "out").read_text()
    assert out.strip() == "shell hunter2 hello etcdctl version: 3.6.16"
    # The mounts are private to the pod: the host's /work and /config are not these.
    assert not Path("/work/out").exists()


def test_stopping_the_agent_leaves_no_process_behind_and_a_new_one_adopts_its_pods(
    kube: Client, namespace: str, kube_cluster: ClusterHandle
) -> None:
    nodes = ProcessNodes(kube_cluster.require_local(), first=1)
    nodes.start()
    try:
        block = nodes.network()
        # A child the container forks must go too.
        create(kube, namespace, etcd.shell_pod("forks", nodes.name, "sleep 600 & exec sleep 601"))
        ip = pod_ip(kube, namespace, ready_pod(kube, namespace, "forks").metadata.name)  # type: ignore[union-attr]
        pids = wait_for(
            lambda: len(nodes.processes()) == 2 and nodes.processes(),
            timeout=30,
            what="two processes",
        )
    finally:
        nodes.stop()
    assert nodes.processes() == []
    assert [pid for pid in pids if alive(pid)] == []
    routes = ["ip", "route", "show", "table", "local"]
    assert (
        str(block) not in subprocess.run(routes, capture_output=True, text=True, check=True).stdout
    )

    # The pod stays bound to the node; a new agent runs it again, as a restarted kubelet.
    nodes.start()
    try:
        wait_for(
            lambda: (
                restart_count(kube, namespace, "forks") == 1
                and condition_status(kube.get(Pod, "forks", namespace=namespace), "Ready") == "True"
            ),
            timeout=60,
            what="forks adopted and restarted",
        )
        assert pod_ip(kube, namespace, "forks") == ip
        assert len(nodes.processes()) == 2
        kube.delete(Pod, "forks", namespace=namespace)
        wait_for(lambda: not list(kube.list(Pod, namespace=namespace)), timeout=30, what="pod gone")
    finally:
        nodes.remove()  # its Node too: later tests' pods must not land on a stopped node
    assert nodes.processes() == []
    assert nodes.name not in [n.metadata.name for n in kube.list(Node) if n.metadata]
