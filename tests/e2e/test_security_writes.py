"""The operator's token is not cluster-admin (issues #28 P0.2 and #34 P0): attacks made
with the installed operator ServiceAccount's token, each refused by the writes policy
(sdk/guards/writes.py) or the policies on our kinds and Events
(sdk/guards/kinds.py), beside the same write shaped as the operator makes it,
which passes. docs/security.md lists them.

* a privileged ``hostPath`` pod (and a Deployment of one) in ``kube-system``;
* anything in a namespace not enabled for appstack: a pod running as a namespace's
  cluster-admin ServiceAccount under a made-up owner, an Event, a Secret;
* an unowned Deployment, ConfigMap, Service in a tenant namespace; an owner of ours with an
  apiVersion that is not served; a forged owner patched onto an administrator's
  ConfigMap, Deployment or PVC (a take-over, or a deletion by the garbage collector);
  deleting an object the operator does not own;
* an EndpointSlice added to ``kube-dns``, to ``kubernetes``, or to a Service in the
  namespace it did not name, or without our managed-by;
* anything beyond the Pod Security baseline (privileged, host namespaces and ports,
  ``hostPath``, capabilities, Unconfined seccomp or AppArmor, unsafe sysctls, procMount,
  SELinux) even under an owner of ours — unless the namespace opted in; a pod naming its
  node;
* a tenant's object of our kinds: its spec, labels or annotations changed; its status set
  where the namespace is not enabled (a spoofed condition beside ``NamespaceNotEnabled``
  too); Events about anything but our objects, or in ``kube-system``;
* issue #46: a Service taking a cluster address (``externalIPs``, ``loadBalancerIP``,
  CVE-2020-8554) or carrying a field the operator never writes; a foreign finalizer, or
  ``immutable``, on what it writes; a tenant's AppStack given a made-up owner (deleted by
  the garbage collector) — refused by our policy, not by the test bed's
  ``OwnerReferencesPermissionEnforcement`` — or a foreign finalizer.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client as LightClient
from lightkube import codecs

from appstack.api.identity import IDENTITY
from appstack.api.namespaces import (
    ALLOW_PRIVILEGED,
    ENABLED,
    NOT_ENABLED_REASON,
    not_enabled_message,
)
from appstack.controllers.appservice import APP_SERVICE
from appstack.controllers.appstack import APP_STACK, AppStackReconciler
from appstack.controllers.util.meta import MANAGED_BY, SLICE_MANAGER
from appstack.manifests import rbac
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    ENDPOINT_SLICE,
    EVENT,
    NAMESPACE,
    POD,
    PVC,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
)
from appstack.sdk.kit.meta import SLICE_MANAGER_LABEL, owner_reference
from appstack_testbed.waiting import eventually

NOT_OWNED = "may only write objects controlled by one of its kinds"
SYSTEM = "may not write in namespace kube-system"
NOT_ENABLED = "it is not enabled for appstack"
PRIVILEGED = "may not write privileged containers or host ports"
HOST = "may not write pods using the host's network"
BASELINE = "may not write pods beyond the Pod Security baseline"
NODE = "may not name a pod's node"
SLICE = "may only write EndpointSlices of its own"
TEARDOWN = str(AppStackReconciler.finalizer)  # the operator's only finalizer


@pytest.fixture
async def as_operator(operator_kubeconfig: Path) -> AsyncIterator[Client]:
    connecting = Client.connect(str(operator_kubeconfig), field_manager=IDENTITY.field_manager)
    async with await connecting as operator_client:
        yield operator_client


@pytest.fixture
async def owner(client: Client, namespace: str) -> dict[str, Any]:
    """An AppService the operator's writes can be owned by (no operator runs here)."""
    app = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": "owner", "namespace": namespace},
        "spec": {"image": "nginx:1.7.9", "size": 1, "ports": [{"port": 80}]},
    }
    return await client.create(APP_SERVICE, app)


def _meta(name: str, namespace: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner is not None:  # as the operator writes it
        meta["ownerReferences"] = [owner_reference(owner)]
        meta["labels"] = dict(MANAGED_BY)
    return meta


def _pod_spec(**extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox:1.36", "command": ["sleep", "1d"]}
    container.update(extra.pop("container", {}))
    return {"containers": [container], **extra}


def _pod(name: str, namespace: str, owner: dict[str, Any] | None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(name, namespace, owner),
        "spec": _pod_spec(**spec),
    }


def _deployment(
    name: str, namespace: str, owner: dict[str, Any] | None, **spec: Any
) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, namespace, owner),
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": _pod_spec(**spec)},
        },
    }


def _slice(name: str, namespace: str, service: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    meta = _meta(name, namespace, owner)
    meta["labels"] = {
        **meta.get("labels", {}),
        "kubernetes.io/service-name": service,
        SLICE_MANAGER_LABEL: SLICE_MANAGER,
    }
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": meta,
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.9"]}],
        "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}],
    }


async def _refused(as_operator: Client, resource: Any, obj: dict[str, Any], why: str) -> None:
    with pytest.raises(errors.ApiError) as refused:
        await as_operator.create(resource, obj)
    assert isinstance(refused.value, errors.Forbidden), refused.value
    assert why in refused.value.message, refused.value.message


HOST_PATH = {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}
PRIVILEGED_CONTAINER = {"container": {"securityContext": {"privileged": True}}}


async def test_nothing_in_kube_system(as_operator: Client) -> None:
    await _refused(as_operator, POD, _pod("attack", "kube-system", None, **HOST_PATH), SYSTEM)
    await _refused(
        as_operator,
        DEPLOYMENT,
        _deployment("attack", "kube-system", None, **PRIVILEGED_CONTAINER),
        SYSTEM,
    )
    await _refused(
        as_operator, ENDPOINT_SLICE, _slice("kube-dns-x", "kube-system", "kube-dns", None), SYSTEM
    )


async def test_only_what_one_of_our_kinds_controls(
    as_operator: Client, client: Client, namespace: str, owner: dict[str, Any]
) -> None:
    await _refused(as_operator, DEPLOYMENT, _deployment("loose", namespace, None), NOT_OWNED)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("loose", namespace, None)}
    await _refused(as_operator, CONFIG_MAP, config, NOT_OWNED)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta("loose", namespace, None),
        "spec": {"ports": [{"port": 80}]},
    }
    await _refused(as_operator, SERVICE, service, NOT_OWNED)
    # An ownerReference to something that is not one of our kinds does not count either.
    foreign = {**owner, "apiVersion": "apps/v1", "kind": "Deployment"}
    elsewhere = _meta("x", namespace, foreign)
    elsewhere["ownerReferences"][0].pop("blockOwnerDeletion")  # (needs Deployment finalizers)
    await _refused(as_operator, CONFIG_MAP, {**config, "metadata": elsewhere}, NOT_OWNED)
    # Deleting what the operator does not own: refused (an administrator's ConfigMap).
    await client.create(CONFIG_MAP, config)
    with pytest.raises(errors.Forbidden) as refused:
        await as_operator.delete(CONFIG_MAP, "loose", namespace)
    assert NOT_OWNED in refused.value.message
    # Shaped as the operator writes it (owned by an AppService): allowed, and deletable.
    owned = await as_operator.create(
        CONFIG_MAP, {**config, "metadata": _meta("owned", namespace, owner)}
    )
    assert owned["metadata"]["ownerReferences"][0]["kind"] == "AppService"
    await as_operator.create(DEPLOYMENT, _deployment("owned", namespace, owner))
    await as_operator.delete(CONFIG_MAP, "owned", namespace)


async def test_endpoint_slices_only_for_the_service_they_are_named_after(
    as_operator: Client, namespace: str, owner: dict[str, Any]
) -> None:
    hijack = _slice("extra", namespace, "kubernetes", owner)
    await _refused(as_operator, ENDPOINT_SLICE, hijack, SLICE)
    await as_operator.create(ENDPOINT_SLICE, _slice("db-external", namespace, "db", owner))


async def test_no_privileged_or_host_pods_unless_the_namespace_opts_in(
    as_operator: Client, client: Client, namespace: str, owner: dict[str, Any]
) -> None:
    cases = [
        (PRIVILEGED_CONTAINER, PRIVILEGED),
        ({"container": {"ports": [{"containerPort": 80, "hostPort": 8080}]}}, PRIVILEGED),
        (
            {
                "initContainers": [
                    {"name": "i", "image": "busybox:1.36", **PRIVILEGED_CONTAINER["container"]}
                ]
            },
            PRIVILEGED,
        ),
        ({"hostNetwork": True}, HOST),
        ({"hostPID": True}, HOST),
        ({"hostIPC": True}, HOST),
        (HOST_PATH, HOST),
    ]
    for n, (spec, why) in enumerate(cases):
        await _refused(as_operator, POD, _pod(f"p{n}", namespace, owner, **spec), why)
        await _refused(as_operator, DEPLOYMENT, _deployment(f"d{n}", namespace, owner, **spec), why)
    # An ordinary pod under an owner of ours: allowed.
    await as_operator.create(DEPLOYMENT, _deployment("plain", namespace, owner))
    # The namespace opts in: the same privileged hostPath workload is allowed there.
    await client.patch(NAMESPACE, namespace, {"metadata": {"labels": {ALLOW_PRIVILEGED: "true"}}})
    spec = {**HOST_PATH, **PRIVILEGED_CONTAINER}
    opted = _deployment("opted-in", namespace, owner, **spec)

    # admission sees a namespace's labels through the API server's own cache: a moment
    refusals: list[str] = []

    async def allowed() -> bool:
        try:
            await as_operator.create(DEPLOYMENT, opted)
        except errors.Forbidden as error:
            refusals.append(error.message)
            return False
        return True

    await eventually(allowed, timeout=30, what="allowed once the namespace opted in", interval=0.2)
    assert not refusals or PRIVILEGED in refusals[-1]


# ------------------------------------------------------------------ issue #34, round four
@pytest.fixture
async def closed_namespace(client: Client, namespace: str) -> AsyncIterator[str]:
    """A namespace nobody enabled for appstack, like a CI system's, with a ServiceAccount
    ``deployer`` bound to cluster-admin (as CI and GitOps namespaces have)."""
    name = f"{namespace[:40]}-ci"
    await client.create(
        NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    await client.create(
        SERVICE_ACCOUNT,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "deployer", "namespace": name},
        },
    )
    yield name
    await client.delete(NAMESPACE, name)


def _ghost(namespace: str, version: str = "v1") -> dict[str, Any]:
    """An owner that does not exist: an AppService ``ghost`` with a made-up uid."""
    return {
        "apiVersion": f"appstack.dev/{version}",
        "kind": "AppService",
        "metadata": {"name": "ghost", "namespace": namespace, "uid": str(uuid.uuid4())},
    }


async def test_nothing_in_a_namespace_not_enabled(
    as_operator: Client, closed_namespace: str
) -> None:
    """The P0 reproduction: a pod as the namespace's cluster-admin ServiceAccount under a
    made-up owner of ours; also an Event and a Secret there."""
    pod = _pod("attack", closed_namespace, _ghost(closed_namespace), serviceAccountName="deployer")
    await _refused(as_operator, POD, pod, NOT_ENABLED)
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta("c", closed_namespace, _ghost(closed_namespace)),
    }
    await _refused(as_operator, CONFIG_MAP, config, NOT_ENABLED)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta("s", closed_namespace, _ghost(closed_namespace)),
    }
    await _refused(as_operator, SECRET, secret, NOT_ENABLED)
    await _refused(
        as_operator, EVENT, _event(closed_namespace, _ghost(closed_namespace)), NOT_ENABLED
    )


async def test_an_owner_must_be_of_a_served_version(
    as_operator: Client, namespace: str, owner: dict[str, Any]
) -> None:
    """``appstack.dev/v1alpha1`` names nothing the API serves: the garbage collector would
    never remove what it "owns"."""
    forged = {**owner, "apiVersion": "appstack.dev/v1alpha1"}
    for obj, resource in (
        (_pod("p", namespace, forged), POD),
        (_deployment("d", namespace, forged), DEPLOYMENT),
    ):
        # as the attack wrote it: blockOwnerDeletion needs the owner's kind to exist
        obj["metadata"]["ownerReferences"][0].pop("blockOwnerDeletion")
        await _refused(as_operator, resource, obj, NOT_OWNED)
    await as_operator.create(POD, _pod("p", namespace, owner))  # v1: as the operator writes


async def test_a_forged_owner_takes_over_or_deletes_nothing(
    as_operator: Client, client: Client, namespace: str, owner: dict[str, Any]
) -> None:
    """One PATCH adding an owner of ours (a real one, or a made-up uid the garbage collector
    would delete the object for) to an administrator's ConfigMap, Deployment or PVC:
    refused, and so is deleting them afterwards; nothing of them changed."""
    config = await client.create(
        CONFIG_MAP,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": namespace},
            "data": {"k": "admin"},
        },
    )
    deployment = await client.create(DEPLOYMENT, _deployment("web", namespace, None))
    claim = await client.create(
        PVC,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    for forged in (owner, _ghost(namespace)):
        ref = owner_reference(forged)
        ref.pop("blockOwnerDeletion")
        take = {"metadata": {"ownerReferences": [ref], "labels": dict(MANAGED_BY)}}
        for resource, obj, extra in (
            (CONFIG_MAP, config, {"data": {"k": "attacker"}}),
            (
                DEPLOYMENT,
                deployment,
                {"spec": {"template": {"spec": {"serviceAccountName": "deployer"}}}},
            ),
            (PVC, claim, {}),
        ):
            with pytest.raises(errors.Forbidden) as refused:
                await as_operator.patch(
                    resource, obj["metadata"]["name"], {**take, **extra}, namespace=namespace
                )
            assert NOT_OWNED in refused.value.message, refused.value.message
            with pytest.raises(errors.Forbidden) as deleting:
                await as_operator.delete(resource, obj["metadata"]["name"], namespace)
            assert NOT_OWNED in deleting.value.message
    for resource, obj in ((CONFIG_MAP, config), (DEPLOYMENT, deployment), (PVC, claim)):
        now = await client.get(resource, obj["metadata"]["name"], namespace)
        assert not now["metadata"].get("ownerReferences")
        assert now["metadata"].get("labels") == obj["metadata"].get("labels")
        assert now.get("data") == obj.get("data")
        if resource == DEPLOYMENT:
            assert now["spec"]["template"] == obj["spec"]["template"]


async def test_a_slice_never_feeds_kubernetes_and_is_always_ours(
    as_operator: Client, namespace: str, owner: dict[str, Any]
) -> None:
    await _refused(
        as_operator,
        ENDPOINT_SLICE,
        _slice("kubernetes-external", namespace, "kubernetes", owner),
        SLICE,
    )
    foreign = _slice("db-external", namespace, "db", owner)
    del foreign["metadata"]["labels"][SLICE_MANAGER_LABEL]  # the endpoint controller's own
    await _refused(as_operator, ENDPOINT_SLICE, foreign, SLICE)
    await as_operator.create(ENDPOINT_SLICE, _slice("db-external", namespace, "db", owner))


BEYOND_BASELINE: dict[str, dict[str, Any]] = {
    "capabilities": {
        "container": {
            "securityContext": {
                "capabilities": {"add": ["SYS_ADMIN", "SYS_MODULE", "DAC_READ_SEARCH"]}
            }
        }
    },
    "seccomp (pod)": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
    "seccomp (container)": {
        "container": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}
    },
    "apparmor (pod)": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}},
    "apparmor (container)": {
        "container": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}
    },
    "sysctl": {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "65536"}]}},
    "selinux type": {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}},
    "selinux user": {"container": {"securityContext": {"seLinuxOptions": {"user": "system_u"}}}},
}
APPARMOR_ANNOTATION = {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}


async def test_nothing_beyond_the_pod_security_baseline_unless_opted_in(
    as_operator: Client, client: Client, namespace: str, owner: dict[str, Any]
) -> None:
    """What together gives root on the node (capabilities, no seccomp or AppArmor), each
    refused in a pod and a pod template under an owner of ours; a pod naming its node;
    all allowed where the namespace opted in to privileged pods (but the node name)."""
    for n, spec in enumerate(BEYOND_BASELINE.values()):
        pod = _pod(f"p{n}", namespace, owner, **spec)
        await _refused(as_operator, POD, pod, BASELINE)
        await _refused(
            as_operator, DEPLOYMENT, _deployment(f"d{n}", namespace, owner, **spec), BASELINE
        )
    annotated = _pod("annotated", namespace, owner)
    annotated["metadata"]["annotations"] = APPARMOR_ANNOTATION
    await _refused(as_operator, POD, annotated, BASELINE)
    template = _deployment("annotated", namespace, owner)
    template["spec"]["template"]["metadata"]["annotations"] = APPARMOR_ANNOTATION
    await _refused(as_operator, DEPLOYMENT, template, BASELINE)
    await _refused(as_operator, POD, _pod("placed", namespace, owner, nodeName="kwok-node-0"), NODE)
    await _refused(
        as_operator, DEPLOYMENT, _deployment("placed", namespace, owner, nodeName="x"), NODE
    )
    # baseline itself passes: its own capabilities, RuntimeDefault, a safe sysctl
    fine = {
        "container": {
            "securityContext": {
                "capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"]},
                "seccompProfile": {"type": "RuntimeDefault"},
            }
        },
        "securityContext": {
            "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]
        },
    }
    await as_operator.create(DEPLOYMENT, _deployment("fine", namespace, owner, **fine))
    await client.patch(NAMESPACE, namespace, {"metadata": {"labels": {ALLOW_PRIVILEGED: "true"}}})

    async def allowed() -> bool:
        try:
            await as_operator.create(
                DEPLOYMENT,
                _deployment("o0", namespace, owner, **BEYOND_BASELINE["capabilities"]),
            )
        except errors.Forbidden:
            return False
        return True

    await eventually(allowed, timeout=30, what="allowed once the namespace opted in", interval=0.2)
    for n, spec in list(enumerate(BEYOND_BASELINE.values()))[1:]:
        await as_operator.create(DEPLOYMENT, _deployment(f"o{n}", namespace, owner, **spec))
    await _refused(as_operator, POD, _pod("placed", namespace, owner, nodeName="x"), NODE)


def _event(namespace: str, regarding: dict[str, Any], note: str = "x") -> dict[str, Any]:
    meta = regarding["metadata"]
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"generateName": "probe-", "namespace": namespace},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "appstack.dev/operator",
        "reportingInstance": "attack",
        "action": "Reconcile",
        "reason": "Probe",
        "type": "Normal",
        "note": note,
        "regarding": {
            "apiVersion": regarding["apiVersion"],
            "kind": regarding["kind"],
            "name": meta["name"],
            "namespace": meta.get("namespace", namespace),
            "uid": meta.get("uid", ""),
        },
    }


async def test_events_only_about_our_objects_in_enabled_namespaces(
    as_operator: Client, client: Client, namespace: str, owner: dict[str, Any]
) -> None:
    system_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kube-apiserver", "namespace": "kube-system"},
    }
    await _refused(
        as_operator, EVENT, _event("kube-system", system_pod), "Events in namespace kube-system"
    )
    pod = await client.create(POD, _pod("someone", namespace, None))
    await _refused(as_operator, EVENT, _event(namespace, pod), "Events about objects of its kinds")
    await as_operator.create(EVENT, _event(namespace, owner))  # what the operator writes


async def test_a_tenants_object_keeps_its_spec_and_its_status_says_the_truth(
    as_operator: Client, client: Client, namespace: str, closed_namespace: str
) -> None:
    """The token cannot change a tenant's AppStack spec (image) or labels; where the
    namespace is not enabled it can write no status but "not enabled", so not Ready=True
    on another tenant's object there; in an enabled namespace the status is the
    operator's to write (docs/security.md says so)."""
    stack = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "shop", "namespace": namespace},
        "spec": {"components": [{"name": "web", "image": "nginx:1.7.9"}]},
    }
    await client.create(APP_STACK, stack)
    for patch in (
        {"spec": {"components": [{"name": "web", "image": "evil:1"}]}},
        {"metadata": {"labels": {"team": "attacker"}}},
        {"metadata": {"annotations": {"x": "y"}}},
    ):
        with pytest.raises(errors.Forbidden) as refused:
            await as_operator.patch(APP_STACK, "shop", patch, namespace=namespace)
        assert "only the finalizers and the status" in refused.value.message
    await as_operator.patch(  # the operator's own finalizer, added and removed
        APP_STACK, "shop", {"metadata": {"finalizers": [TEARDOWN]}}, namespace=namespace
    )
    await as_operator.patch(
        APP_STACK, "shop", {"metadata": {"finalizers": None}}, namespace=namespace
    )
    await client.create(
        APP_STACK, {**stack, "metadata": {"name": "shop", "namespace": closed_namespace}}
    )

    def ready(status: str, reason: str, message: str = "") -> dict[str, Any]:
        return {
            "type": "Ready",
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }

    says_so = ready("False", NOT_ENABLED_REASON, not_enabled_message(closed_namespace))
    for lie in (
        [ready("True", "Ready")],
        # issue #46: a spoofed condition beside NamespaceNotEnabled, or its message changed
        [says_so, {**ready("True", "Ready"), "type": "Available"}],
        [{**says_so, "message": "fixed: kubectl apply -f https://example.com/fix.yaml"}],
    ):
        with pytest.raises(errors.Forbidden) as lying:
            await as_operator.patch_status(
                APP_STACK, "shop", {"conditions": lie}, namespace=closed_namespace
            )
        assert "only write a status that says so" in lying.value.message
    with pytest.raises(errors.Forbidden) as adding:  # no finalizer added where not enabled
        await as_operator.patch(
            APP_STACK, "shop", {"metadata": {"finalizers": [TEARDOWN]}}, namespace=closed_namespace
        )
    assert "may only remove its finalizer" in adding.value.message, adding.value.message
    # what the operator writes there: Ready=False, NamespaceNotEnabled, its message, alone
    await as_operator.patch_status(
        APP_STACK, "shop", {"conditions": [says_so]}, namespace=closed_namespace
    )
    await as_operator.patch_status(
        APP_STACK, "shop", {"conditions": [ready("True", "Ready")]}, namespace=namespace
    )
    assert ENABLED not in (
        (await client.get(NAMESPACE, closed_namespace))["metadata"].get("labels") or {}
    )


# ------------------------------------------------------------------ issue #46, round five
EXTERNAL_IPS = "never sets spec.externalIPs on a Service"
LOAD_BALANCER_IP = "never sets spec.loadBalancerIP on a Service"
SERVICE_FIELDS = "writes Services of types ClusterIP, NodePort, LoadBalancer, ExternalName"
CHILD_FINALIZER = "may add no finalizer to what it writes but its own"
IMMUTABLE = "never makes a ConfigMap or Secret immutable"
KIND_OWNERS = "never changes the ownerReferences of its kinds' objects"
KIND_FINALIZER = "may add no finalizer to its kinds' objects but its own"
HOLD = "example.com/hold"


def _service(name: str, namespace: str, owner: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A Service under ``owner`` as the operator writes an AppService's (``spec`` added;
    a None removes a field)."""
    port = {"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}
    fields = {"type": "ClusterIP", "selector": {"app": name}, "ports": [port], **spec}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(name, namespace, owner),
        "spec": {k: v for k, v in fields.items() if v is not None},
    }


async def test_a_service_takes_no_address_of_the_cluster(
    as_operator: Client, namespace: str, owner: dict[str, Any]
) -> None:
    """CVE-2020-8554 (issue #46): under a real tenant's AppService, a Service with
    ``externalIPs`` took 203.0.113.7:80 for every pod of the cluster (and the cluster's DNS
    address, and 10.96.0.1:443 beside ``kubernetes``); ``loadBalancerIP`` asks for an
    address. Each refused, on create and PATCHed onto a Service of ours, and so is a field
    the operator never writes; beside them every shape of Service the operator writes
    passes (AppService and component types, headless, ExternalName, selector-less)."""
    lb = {"type": "LoadBalancer"}
    for name, extra, said in (
        ("ips", {"externalIPs": ["203.0.113.7"]}, EXTERNAL_IPS),
        ("lb-ip", {**lb, "loadBalancerIP": "203.0.113.7"}, LOAD_BALANCER_IP),
        ("ranges", {**lb, "loadBalancerSourceRanges": ["0.0.0.0/0"]}, SERVICE_FIELDS),
    ):
        await _refused(as_operator, SERVICE, _service(name, namespace, owner, **extra), said)
    shapes: dict[str, dict[str, Any]] = {
        "cluster-ip": {},
        "node-port": {"type": "NodePort"},
        "balanced": lb,
        "headless": {"type": None, "clusterIP": "None", "publishNotReadyAddresses": True},
        "named": {"type": "ExternalName", "externalName": "db.example.com", "selector": None},
        "addressed": {"selector": None},  # fed by the operator's EndpointSlice
    }
    for name, extra in shapes.items():
        await as_operator.create(SERVICE, _service(name, namespace, owner, **extra))
    for patch, said in (
        ({"spec": {"externalIPs": ["203.0.113.7"]}}, EXTERNAL_IPS),
        ({"spec": {**lb, "loadBalancerSourceRanges": ["0.0.0.0/0"]}}, SERVICE_FIELDS),
    ):
        with pytest.raises(errors.Forbidden) as refused:
            await as_operator.patch(SERVICE, "cluster-ip", patch, namespace=namespace)
        assert said in refused.value.message, refused.value.message


async def test_no_foreign_finalizer_and_nothing_immutable_on_what_it_writes(
    as_operator: Client, namespace: str, owner: dict[str, Any]
) -> None:
    """Issue #46: a finalizer that is not the operator's holds an object (and its
    namespace's deletion) for ever; an immutable Secret or ConfigMap can never be rotated
    or re-owned. Neither on create nor added later; shaped as the operator writes them,
    they pass."""
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta("settings", namespace, owner),
        "data": {"k": "v"},
    }
    held = {**config, "metadata": {**config["metadata"], "finalizers": [HOLD]}}
    await _refused(as_operator, CONFIG_MAP, held, CHILD_FINALIZER)
    await _refused(as_operator, CONFIG_MAP, {**config, "immutable": True}, IMMUTABLE)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta("credentials", namespace, owner),
        "stringData": {"password": "generated"},
    }
    await _refused(as_operator, SECRET, {**secret, "immutable": True}, IMMUTABLE)
    await as_operator.create(CONFIG_MAP, config)
    await as_operator.create(SECRET, secret)
    for resource, name, patch, said in (
        (CONFIG_MAP, "settings", {"metadata": {"finalizers": [HOLD]}}, CHILD_FINALIZER),
        (CONFIG_MAP, "settings", {"immutable": True}, IMMUTABLE),
        (SECRET, "credentials", {"immutable": True}, IMMUTABLE),
    ):
        with pytest.raises(errors.Forbidden) as refused:
            await as_operator.patch(resource, name, patch, namespace=namespace)
        assert said in refused.value.message, refused.value.message


@pytest.fixture
def appstacks_deletable(kube: LightClient, namespace: str) -> str:
    """The test's namespace, where the operator's ServiceAccount may also delete AppStacks
    — what ``OwnerReferencesPermissionEnforcement`` (on in this test bed; off in
    kube-apiserver's defaults, kind, EKS, GKE and AKS) asks of whoever sets an
    ownerReference. With it the plugin lets a forged owner through, as a cluster without
    the plugin does: what refuses it then is the kinds policy alone."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "delete-appstacks", "namespace": namespace},
        "rules": [{"apiGroups": ["appstack.dev"], "resources": ["appstacks"], "verbs": ["delete"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "delete-appstacks", "namespace": namespace},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "delete-appstacks",
        },
        "subjects": [{"kind": "ServiceAccount", "name": rbac.NAME, "namespace": rbac.NAMESPACE}],
    }
    for obj in (role, binding):
        kube.apply(codecs.from_dict(obj), force=True)
    return namespace


async def test_a_tenants_appstack_gets_no_owner_and_no_finalizer_but_ours(
    as_operator: Client, client: Client, appstacks_deletable: str
) -> None:
    """Issue #46: the token deleted any tenant's AppStack by giving it a made-up owner (the
    garbage collector then deletes what it "owns"), and held one — and its namespace's
    deletion — for ever with a foreign finalizer. Refused by our kinds policy, whether the
    API server runs OwnerReferencesPermissionEnforcement or not (``appstacks_deletable``);
    the operator's own finalizer is still added and removed."""
    namespace = appstacks_deletable
    stack = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "shop", "namespace": namespace},
        "spec": {"components": [{"name": "web", "image": "nginx:1.7.9"}]},
    }
    await client.create(APP_STACK, stack)
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": str(uuid.uuid4())}
    forged = {"metadata": {"ownerReferences": [ghost]}}
    said: list[str] = []

    async def refused_by_our_policy() -> bool:
        try:
            await as_operator.patch(APP_STACK, "shop", forged, namespace=namespace)
        except errors.Forbidden as error:  # the plugin's, until RBAC sees the Role
            said.append(error.message)
            return KIND_OWNERS in error.message
        pytest.fail("a made-up owner admitted: the garbage collector deletes the AppStack")

    await eventually(
        refused_by_our_policy,
        timeout=30,
        what="the kinds policy to refuse the forged owner",
        interval=0.2,
        diagnose=lambda: said[-1:],
    )
    with pytest.raises(errors.Forbidden) as holding:
        await as_operator.patch(
            APP_STACK, "shop", {"metadata": {"finalizers": [HOLD]}}, namespace=namespace
        )
    assert KIND_FINALIZER in holding.value.message, holding.value.message
    await as_operator.patch(
        APP_STACK, "shop", {"metadata": {"finalizers": [TEARDOWN]}}, namespace=namespace
    )
    await as_operator.patch(
        APP_STACK, "shop", {"metadata": {"finalizers": None}}, namespace=namespace
    )
    now = await client.get(APP_STACK, "shop", namespace)
    assert not now["metadata"].get("ownerReferences")
    assert not now["metadata"].get("finalizers")
