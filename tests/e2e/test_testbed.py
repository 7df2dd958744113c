"""The local control plane is a real Kubernetes: controllers, scheduler, kwok nodes,
admission, garbage collection, server-side apply and storage all behave as in a cluster."""

from __future__ import annotations

import json
import random
import uuid

import pytest
from lightkube import ApiError, Client, codecs
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.core_v1 import ServicePort, ServiceSpec
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.apps_v1 import Deployment, ReplicaSet, StatefulSet
from lightkube.resources.core_v1 import (
    ConfigMap,
    Namespace,
    Node,
    PersistentVolumeClaim,
    Pod,
    Service,
)
from lightkube.utils.quantity import parse_quantity

from appstack.runtime.resources import Resource
from appstack_testbed.pytest_plugin import ClusterHandle, release_finalizers
from appstack_testbed.waiting import condition_status, eventually_sync

LABELS = {"app": "web"}


def _pod_template(image: str = "nginx:1.27") -> dict[str, object]:
    return {
        "metadata": {"labels": LABELS},
        "spec": {"containers": [{"name": "web", "image": image, "ports": [{"containerPort": 80}]}]},
    }


def _config_map(name: str, namespace: str, data: dict[str, str]) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, namespace=namespace), data=data)


def test_kubectl_and_the_api_server_report_the_pinned_kubernetes_version(
    kube_cluster: ClusterHandle,
) -> None:
    local = kube_cluster.require_local()
    versions = json.loads(local.kubectl("version", "--output=json").stdout)
    pinned = local.toolchain.kubernetes  # KUBERNETES, or $APPSTACK_K8S_VERSION
    assert versions["clientVersion"]["gitVersion"] == pinned
    assert versions["serverVersion"]["gitVersion"] == pinned


def test_nodes_are_ready_kwok_nodes_with_room_for_thousands_of_pods(kube: Client) -> None:
    # kwok's nodes (the real node is beside them: tests/e2e/test_real_node.py)
    nodes = list(kube.list(Node, labels={"type": "kwok"}))
    assert len(nodes) >= 2
    for node in nodes:
        assert condition_status(node, "Ready") == "True"
        assert node.metadata.annotations["kwok.x-k8s.io/node"] == "fake"
    assert sum(parse_quantity(n.status.allocatable["pods"]) for n in nodes) >= 5000


def test_a_deployment_with_two_replicas_becomes_available_through_kwok(
    kube: Client, namespace: str
) -> None:
    deployment = codecs.from_dict(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": LABELS},
                "template": _pod_template(),
            },
        }
    )
    kube.create(deployment)

    available = eventually_sync(
        lambda: (
            (d := kube.get(Deployment, "web", namespace=namespace)).status
            and d.status.availableReplicas == 2
            and d
        ),
        timeout=60,
        what="Deployment web to have 2 available replicas",
    )
    assert available.status.readyReplicas == 2

    (replicaset,) = kube.list(ReplicaSet, namespace=namespace)
    assert replicaset.metadata.ownerReferences[0].name == "web"
    pods = list(kube.list(Pod, namespace=namespace, labels=LABELS))
    assert len(pods) == 2
    for pod in pods:
        assert pod.status.phase == "Running"
        assert condition_status(pod, "Ready") == "True"
        assert pod.spec.nodeName.startswith("kwok-node-")
        assert pod.status.podIP
        assert pod.metadata.ownerReferences[0].name == replicaset.metadata.name


def test_deleting_an_owner_garbage_collects_its_dependents(kube: Client, namespace: str) -> None:
    owner = kube.create(_config_map("owner", namespace, {"k": "v"}))
    dependent = _config_map("dependent", namespace, {"k": "v"})
    dependent.metadata.ownerReferences = [
        OwnerReference(apiVersion="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    ]
    kube.create(dependent)

    kube.delete(ConfigMap, "owner", namespace=namespace)

    eventually_sync(
        lambda: (
            not list(
                kube.list(ConfigMap, namespace=namespace, fields={"metadata.name": "dependent"})
            )
        ),
        timeout=60,
        what="the garbage collector to delete ConfigMap dependent",
    )


def test_deleting_a_deployment_cascades_to_its_replicasets_and_pods(
    kube: Client, namespace: str
) -> None:
    kube.create(
        codecs.from_dict(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": namespace},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": LABELS},
                    "template": _pod_template(),
                },
            }
        )
    )
    eventually_sync(lambda: list(kube.list(Pod, namespace=namespace)), timeout=60, what="a pod")

    kube.delete(Deployment, "web", namespace=namespace)

    eventually_sync(
        lambda: (
            not list(kube.list(ReplicaSet, namespace=namespace))
            and not list(kube.list(Pod, namespace=namespace))
        ),
        timeout=60,
        what="ReplicaSets and Pods to be garbage-collected",
    )


def test_a_crd_validation_rule_rejects_an_invalid_object_with_its_message(
    kube: Client, namespace: str, widget_crd: Resource
) -> None:
    widget = create_namespaced_resource(
        widget_crd.group, widget_crd.version, widget_crd.kind, widget_crd.plural
    )
    good = widget(metadata={"name": "good"}, spec={"min": 1, "max": 2})
    kube.create(good, namespace=namespace)

    bad = widget(metadata={"name": "bad"}, spec={"min": 3, "max": 2})
    with pytest.raises(ApiError) as caught:
        kube.create(bad, namespace=namespace)

    assert caught.value.status.code == 422
    assert "spec.min must not exceed spec.max" in caught.value.status.message


def _node_port_service(name: str, node_port: int | None) -> Service:
    port: dict[str, int] = {"port": 80, "targetPort": 80}
    if node_port:
        port["nodePort"] = node_port
    return Service(
        metadata=ObjectMeta(name=name),
        spec=ServiceSpec(type="NodePort", selector=LABELS, ports=[ServicePort(**port)]),
    )


def test_a_node_port_is_allocated_and_cannot_be_taken_twice(kube: Client, namespace: str) -> None:
    first = kube.create(_node_port_service("first", None), namespace=namespace)
    allocated = first.spec.ports[0].nodePort
    assert 30000 <= allocated <= 32767

    with pytest.raises(ApiError) as caught:
        kube.create(_node_port_service("second", allocated), namespace=namespace)

    assert caught.value.status.code == 422
    assert "already allocated" in caught.value.status.message

    # one no Service holds (other tests run beside this one and take NodePorts too)
    taken = {
        port.nodePort
        for service in kube.list(Service, namespace="*")
        for port in (service.spec.ports or [])
        if port.nodePort
    }
    requested = random.choice(sorted(set(range(31000, 32768)) - taken))  # noqa: S311
    third = kube.create(_node_port_service("third", requested), namespace=namespace)
    assert third.spec.ports[0].nodePort == requested


def test_server_side_apply_reports_a_conflict_and_force_takes_ownership(
    kube: Client, namespace: str
) -> None:
    kube.apply(_config_map("shared", namespace, {"key": "from-alice"}), field_manager="alice")

    with pytest.raises(ApiError) as caught:
        kube.apply(_config_map("shared", namespace, {"key": "from-bob"}), field_manager="bob")
    assert caught.value.status.code == 409
    assert "alice" in caught.value.status.message

    kube.apply(
        _config_map("shared", namespace, {"key": "from-bob"}), field_manager="bob", force=True
    )
    current = kube.get(ConfigMap, "shared", namespace=namespace)
    assert current.data == {"key": "from-bob"}
    owners = {
        entry.manager for entry in current.metadata.managedFields if entry.operation == "Apply"
    }
    assert "bob" in owners
    assert "alice" not in owners  # force moved ownership of the only field away from alice


def test_a_statefulset_with_volume_claims_becomes_ready_with_bound_volumes(
    kube: Client, namespace: str
) -> None:
    kube.create(
        codecs.from_dict(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "db", "namespace": namespace},
                "spec": {
                    "serviceName": "db",
                    "replicas": 2,
                    "selector": {"matchLabels": LABELS},
                    "template": _pod_template("mysql:8.4"),
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
        )
    )

    eventually_sync(
        lambda: (
            (s := kube.get(StatefulSet, "db", namespace=namespace)).status
            and s.status.readyReplicas == 2
        ),
        timeout=90,
        what="StatefulSet db to have 2 ready replicas",
    )
    claims = list(kube.list(PersistentVolumeClaim, namespace=namespace))
    assert sorted(c.metadata.name for c in claims) == ["data-db-0", "data-db-1"]
    assert all(c.status.phase == "Bound" for c in claims)
    assert all(c.spec.storageClassName == "standard" for c in claims)


def test_a_namespace_held_by_a_stopped_operators_finalizer_goes_once_it_is_released(
    kube: Client, widget_crd: Resource
) -> None:
    """What the ``namespace`` fixture does after a test (``finalized_kinds``): a namespace
    deleted while an object in it holds a finalizer nobody will remove (the test's operator
    has stopped) stays Terminating — swept kind by kind by the namespace controller every
    15 s — until :func:`release_finalizers` removes it; then the namespace goes."""
    widget = create_namespaced_resource(
        widget_crd.group, widget_crd.version, widget_crd.kind, widget_crd.plural
    )
    name = f"held-{uuid.uuid4().hex[:6]}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    held = widget(
        metadata={"name": "held", "finalizers": [f"{widget_crd.group}/cleanup"]},
        spec={"min": 1, "max": 1},
    )
    kube.create(held, namespace=name)
    kube.delete(Namespace, name)

    def finalizers_remaining() -> str | None:
        return condition_status(kube.get(Namespace, name), "NamespaceFinalizersRemaining")

    # The namespace controller's first pass over it (every kind listed, emptied): in make
    # test's parallel phase it queues behind the other tests' namespaces (30 s was once
    # too short there), so the bound is generous; quiet, it takes a few seconds.
    eventually_sync(
        finalizers_remaining, lambda s: s == "True", timeout=120, what=f"{name} held by a finalizer"
    )
    release_finalizers(kube, name, [widget])

    def gone() -> bool:
        try:
            kube.get(Namespace, name)
        except ApiError as error:
            return error.status.code == 404
        return False

    eventually_sync(gone, bool, timeout=120, what=f"namespace {name} gone")
    # a kind no longer served (a test removed its CRD) holds nothing: no error
    unserved = create_namespaced_resource(widget_crd.group, "v1", "Unserved", "unserveds")
    release_finalizers(kube, name, [unserved])
