"""etcd manifests and a tiny v3 JSON-gateway client for the process-node e2e tests.

Pods are pinned to the process node with its label and a toleration of its taint, bind
their listeners to ``$(POD_IP)`` (downward API) and are probed on ``/health``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import httpx

from appstack_testbed.etcd_releases import ETCD_PREVIOUS
from appstack_testbed.versions import ETCD

IMAGE = f"registry.k8s.io/etcd:{ETCD.removeprefix('v')}-0"
IMAGE_PREVIOUS = f"quay.io/coreos/etcd:{ETCD_PREVIOUS}"


def placement(node: str) -> dict[str, Any]:
    return {
        "nodeSelector": {"kubernetes.io/hostname": node},
        "tolerations": [
            {"key": "appstack.dev/process-node", "operator": "Exists", "effect": "NoSchedule"}
        ],
    }


ENV = [
    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
]


def etcd_container(peer_host: str, initial_cluster: str, image: str = IMAGE) -> dict[str, Any]:
    return {
        "name": "etcd",
        "image": image,
        "command": ["/usr/local/bin/etcd"],
        "args": [
            "--name=$(POD_NAME)",
            "--data-dir=/var/lib/etcd/data",
            "--listen-client-urls=http://$(POD_IP):2379",
            "--advertise-client-urls=http://$(POD_IP):2379",
            "--listen-peer-urls=http://$(POD_IP):2380",
            f"--initial-advertise-peer-urls=http://{peer_host}:2380",
            f"--initial-cluster={initial_cluster}",
            "--initial-cluster-state=new",
        ],
        "env": ENV,
        "ports": [
            {"name": "client", "containerPort": 2379},
            {"name": "peer", "containerPort": 2380},
        ],
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/etcd"}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": "client"}, "periodSeconds": 1},
        "livenessProbe": {
            "tcpSocket": {"port": 2379},
            "periodSeconds": 2,
            "failureThreshold": 10,
            "initialDelaySeconds": 5,
        },
    }


def single_pod(name: str, node: str, image: str = IMAGE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            **placement(node),
            "terminationGracePeriodSeconds": 10,
            "containers": [etcd_container("$(POD_IP)", "$(POD_NAME)=http://$(POD_IP):2380", image)],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def service(name: str, selector: str, *, headless: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"app": selector},
        "ports": [{"name": "client", "port": 2379, "targetPort": "client"}],
    }
    if headless:
        spec |= {"clusterIP": "None", "publishNotReadyAddresses": True}
        spec["ports"].append({"name": "peer", "port": 2380, "targetPort": "peer"})
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def statefulset(name: str, namespace: str, node: str, replicas: int = 3) -> dict[str, Any]:
    peer = f"{name}-{{i}}.{name}.{namespace}.svc.cluster.local"
    initial = ",".join(f"{name}-{i}=http://{peer.format(i=i)}:2380" for i in range(replicas))
    own = f"$(POD_NAME).{name}.$(POD_NAMESPACE).svc.cluster.local"
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    **placement(node),
                    "terminationGracePeriodSeconds": 10,
                    "containers": [etcd_container(own, initial)],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


def attempt(action: Callable[[], object]) -> bool:
    """True once ``action`` ran without an HTTP error (for ``wait_for``)."""
    try:
        action()
    except httpx.HTTPError:
        return False
    return True


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def put(address: tuple[str, int], key: str, value: str) -> None:
    response = httpx.post(
        f"http://{address[0]}:{address[1]}/v3/kv/put",
        json={"key": _b64(key), "value": _b64(value)},
        timeout=5,
    )
    response.raise_for_status()


def get(address: tuple[str, int], key: str, *, serializable: bool = False) -> str | None:
    response = httpx.post(
        f"http://{address[0]}:{address[1]}/v3/kv/range",
        json={"key": _b64(key), "serializable": serializable},
        timeout=5,
    )
    response.raise_for_status()
    kvs = response.json().get("kvs") or []
    return base64.b64decode(kvs[0]["value"]).decode() if kvs else None


def server_version(address: tuple[str, int]) -> str:
    response = httpx.get(f"http://{address[0]}:{address[1]}/version", timeout=5)
    response.raise_for_status()
    return str(response.json()["etcdserver"])


def members(address: tuple[str, int]) -> list[dict[str, Any]]:
    response = httpx.post(
        f"http://{address[0]}:{address[1]}/v3/cluster/member/list", json={}, timeout=5
    )
    response.raise_for_status()
    return list(response.json().get("members") or [])


def shell_pod(name: str, node: str, script: str, **spec: Any) -> dict[str, Any]:
    """A pod of the etcd image whose command is the host's /bin/sh running ``script``."""
    container = {
        "name": "main",
        "image": IMAGE,
        "command": ["/bin/sh", "-c", script],
        "env": ENV,
        **spec.pop("container", {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            **placement(node),
            "terminationGracePeriodSeconds": 5,
            "containers": [container],
            **spec,
        },
    }
