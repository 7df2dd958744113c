"""AppService end to end on the real control plane, with the operator running under its
generated ServiceAccount and ClusterRole."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.controllers.appservice import APP_SERVICE
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import DEPLOYMENT, POD, SERVICE
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import (
    RunningOperator,
    absent,
    events_of,
    events_until,
    start_operator,
    until,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "appservice.yaml"


def _app(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "nginx:1.27", **spec},
    }


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == kind:
            return dict(condition)
    return {}


def _ready(obj: dict[str, Any]) -> bool:
    return _condition(obj, "Ready").get("status") == "True"


@pytest.mark.node_ports(30002)
async def test_the_seed_sample_becomes_a_ready_deployment_and_node_port_service(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    sample = yaml.safe_load(EXAMPLE.read_text())
    sample["metadata"]["namespace"] = namespace
    await client.create(APP_SERVICE, sample)

    app = await until(
        client, APP_SERVICE, "appservice-sample", namespace, _ready, 60, "the sample to be Ready"
    )
    assert app["status"]["readyReplicas"] == 2
    assert app["status"]["ready"] == "2/2"
    assert app["status"]["observedGeneration"] == app["metadata"]["generation"]
    deployment = await client.get(DEPLOYMENT, "appservice-sample", namespace)
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "nginx:1.7.9"
    assert container["ports"][0]["containerPort"] == 80
    service = await client.get(SERVICE, "appservice-sample", namespace)
    assert service["spec"]["type"] == "NodePort"
    (port,) = service["spec"]["ports"]
    assert (port["port"], port["targetPort"], port["nodePort"]) == (80, 80, 30002)
    selector = ",".join(f"{k}={v}" for k, v in service["spec"]["selector"].items())
    pods = (await client.request("GET", POD.path(namespace), params={"labelSelector": selector}))[
        "items"
    ]
    assert len(pods) == 2
    assert all(p["status"]["phase"] == "Running" for p in pods)
    await events_of(client, namespace, "Created", about="appservice-sample")


async def test_updates_of_image_size_env_resources_and_ports_are_applied(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(
        APP_SERVICE,
        _app(
            "web",
            namespace,
            size=1,
            ports=[{"name": "http", "port": 80}, {"name": "admin", "port": 9090}],
        ),
    )
    await until(client, APP_SERVICE, "web", namespace, _ready, 60)
    first_ip = (await client.get(SERVICE, "web", namespace))["spec"]["clusterIP"]

    await client.patch(
        APP_SERVICE,
        "web",
        namespace=namespace,
        patch={
            "spec": {
                "image": "nginx:1.28",
                "size": 3,
                "envs": [{"name": "MODE", "value": "prod"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9100}],
            }
        },
    )

    def rolled(d: dict[str, Any]) -> bool:
        c = d["spec"]["template"]["spec"]["containers"][0]
        return (
            d["spec"]["replicas"] == 3
            and c["image"] == "nginx:1.28"
            and c.get("env") == [{"name": "MODE", "value": "prod"}]
        )

    deployment = await until(client, DEPLOYMENT, "web", namespace, rolled, 30, "the update")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "128Mi"}
    service = await until(
        client,
        SERVICE,
        "web",
        namespace,
        lambda s: {p["port"] for p in s["spec"]["ports"]} == {80, 9100},
        30,
        "the admin port to be replaced by metrics",
    )
    assert service["spec"]["clusterIP"] == first_ip
    app = await until(
        client,
        APP_SERVICE,
        "web",
        namespace,
        lambda a: _ready(a) and a["status"]["readyReplicas"] == 3,
        60,
    )
    assert app["status"]["observedGeneration"] == app["metadata"]["generation"]


@pytest.mark.our_names
async def test_kubectl_scale_changes_the_size_through_the_scale_subresource(
    kube_cluster: ClusterHandle, client: Client, namespace: str, operator: RunningOperator
) -> None:
    local = kube_cluster.require_local()
    await client.create(APP_SERVICE, _app("scaled", namespace, size=1))
    await until(client, APP_SERVICE, "scaled", namespace, _ready, 60)

    await asyncio.to_thread(
        local.kubectl, "scale", "appservice/scaled", "--replicas=3", f"--namespace={namespace}"
    )

    app = await until(
        client,
        APP_SERVICE,
        "scaled",
        namespace,
        lambda a: _ready(a) and a["status"]["replicas"] == 3,
        60,
    )
    assert app["spec"]["size"] == 3
    scale = await client.get(APP_SERVICE, "scaled", namespace)
    assert scale["status"]["selector"].startswith("app.kubernetes.io/instance=scaled")


@pytest.mark.serial  # its subject is time: run alone, on a quiet machine (make test)
async def test_drift_is_restored_within_two_seconds(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(APP_SERVICE, _app("drift", namespace, size=2, ports=[{"port": 80}]))
    await until(client, APP_SERVICE, "drift", namespace, _ready, 60)

    old_uid = (await client.get(DEPLOYMENT, "drift", namespace))["metadata"]["uid"]
    await client.delete(DEPLOYMENT, "drift", namespace)
    started = time.monotonic()
    await until(
        client,
        DEPLOYMENT,
        "drift",
        namespace,
        lambda d: d["metadata"]["uid"] != old_uid and not d["metadata"].get("deletionTimestamp"),
        10,
        "the deleted Deployment to come back",
    )
    assert time.monotonic() - started < 2

    await client.patch(
        DEPLOYMENT, "drift", namespace=namespace, patch={"spec": {"replicas": 5}}
    )  # a hand edit of a field we own
    started = time.monotonic()
    await until(
        client,
        DEPLOYMENT,
        "drift",
        namespace,
        lambda d: d["spec"]["replicas"] == 2,
        10,
        "the hand-edited replicas to be restored",
    )
    assert time.monotonic() - started < 2

    await client.delete(SERVICE, "drift", namespace)
    started = time.monotonic()
    await until(client, SERVICE, "drift", namespace, lambda s: True, 10, "the Service")
    assert time.monotonic() - started < 2


async def test_deleting_the_appservice_garbage_collects_its_children(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(APP_SERVICE, _app("doomed", namespace, ports=[{"port": 80}]))
    await until(client, APP_SERVICE, "doomed", namespace, _ready, 60)

    await client.delete(APP_SERVICE, "doomed", namespace)

    # The garbage collector learns about a newly installed CRD's kind on its discovery
    # resync (every 30 s), so the first cascade after installing the CRD can take that long.
    for res in (DEPLOYMENT, SERVICE):
        await eventually(
            lambda res=res: absent(client, res, "doomed", namespace),
            timeout=120,
            what=f"{res.kind} doomed garbage-collected",
            interval=0.2,
        )


async def test_changing_the_service_type_keeps_the_cluster_ip(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(
        APP_SERVICE, _app("typed", namespace, ports=[{"port": 80, "nodePort": 31234}])
    )
    service = await until(
        client, SERVICE, "typed", namespace, lambda s: s["spec"]["type"] == "NodePort", 30
    )
    cluster_ip = service["spec"]["clusterIP"]

    await client.patch(
        APP_SERVICE,
        "typed",
        namespace=namespace,
        patch={"spec": {"serviceType": "ClusterIP", "ports": [{"port": 80}]}},
    )

    service = await until(
        client, SERVICE, "typed", namespace, lambda s: s["spec"]["type"] == "ClusterIP", 30
    )
    assert service["spec"]["clusterIP"] == cluster_ip
    assert "nodePort" not in service["spec"]["ports"][0]


async def test_a_node_port_taken_by_another_appservice_is_reported_and_isolated(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    await client.create(
        APP_SERVICE, _app("first", namespace, ports=[{"port": 80, "nodePort": 31999}])
    )
    await until(client, APP_SERVICE, "first", namespace, _ready, 60)

    await client.create(
        APP_SERVICE, _app("second", namespace, ports=[{"port": 80, "nodePort": 31999}])
    )
    second = await until(
        client,
        APP_SERVICE,
        "second",
        namespace,
        lambda a: _condition(a, "Ready").get("reason") == "NodePortConflict",
        30,
    )
    assert "already allocated" in _condition(second, "Ready")["message"]
    assert _condition(second, "Degraded")["status"] == "True"

    def warnings(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in events if e["regarding"]["name"] == "second" and e["type"] == "Warning"]

    said = warnings(await events_until(client, namespace, warnings, "a Warning"))
    assert said[0]["reason"] == "NodePortConflict"
    assert _ready(await client.get(APP_SERVICE, "first", namespace))
    # The Deployment of the second still runs: only its Service is blocked.
    await until(
        client,
        DEPLOYMENT,
        "second",
        namespace,
        lambda d: (d.get("status") or {}).get("availableReplicas") == 1,
        30,
    )


async def test_an_existing_deployment_we_do_not_own_is_reported_and_left_alone(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    foreign = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "taken", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"x": "y"}},
            "template": {
                "metadata": {"labels": {"x": "y"}},
                "spec": {"containers": [{"name": "c", "image": "other"}]},
            },
        },
    }
    await client.create(DEPLOYMENT, foreign)

    await client.create(APP_SERVICE, _app("taken", namespace))

    app = await until(
        client,
        APP_SERVICE,
        "taken",
        namespace,
        lambda a: _condition(a, "Ready").get("reason") == "DeploymentConflict",
        30,
    )
    assert "not managed by this AppService" in _condition(app, "Ready")["message"]
    untouched = await client.get(DEPLOYMENT, "taken", namespace)
    assert untouched["spec"]["template"]["spec"]["containers"][0]["image"] == "other"
    assert not untouched["metadata"].get("ownerReferences")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"size": -1}, "spec.size"),
        ({"size": 100000}, "spec.size"),
        ({"image": ""}, "spec.image"),
        ({"image": "x" * 2000}, "spec.image"),
        ({"ports": [{"port": 0}]}, "spec.ports[0].port"),
        ({"ports": [{"port": 70000}]}, "spec.ports[0].port"),
        ({"ports": [{"port": 80, "nodePort": 1000}]}, "spec.ports[0].nodePort"),
        ({"ports": [{"port": 80, "nodePort": 40000}]}, "spec.ports[0].nodePort"),
        ({"ports": [{"port": 80}, {"port": 81}]}, "spec.ports"),
        ({"ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]}, "spec.ports"),
        ({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]}, "spec.ports"),
        ({"ports": [{"port": 80, "name": "Not_Valid"}]}, "spec.ports[0].name"),
        ({"ports": [{"port": 80, "protocol": "HTTP"}]}, "spec.ports[0].protocol"),
        (
            {"serviceType": "ClusterIP", "ports": [{"port": 80, "nodePort": 30100}]},
            "spec.serviceType",
        ),
        ({"serviceType": "ExternalName"}, "spec.serviceType"),
        (
            {
                "envs": [
                    {
                        "name": "A",
                        "value": "1",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                    }
                ]
            },
            "spec.envs[0]",
        ),
        ({"envs": [{"name": "A", "valueFrom": {}}]}, "spec.envs[0].valueFrom"),
        ({"envs": [{"value": "no name"}]}, "spec.envs[0].name"),
        ({"resources": {"limits": {"cpu": "lots"}}}, "spec.resources.limits.cpu"),
        ({"readinessProbe": {"periodSeconds": 5}}, "spec.readinessProbe"),
        ({"ports": [{"port": 80}] * 65}, "spec.ports"),
        ({"serviceAccountName": "Bad_Name"}, "spec.serviceAccountName"),
        # Name references are DNS subdomains ("." would list Secrets, ".." read the namespace).
        ({"serviceAccountName": ".."}, "spec.serviceAccountName"),
        ({"imagePullSecrets": [{"name": "."}]}, "spec.imagePullSecrets[0].name"),
        (
            {"envs": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "..", "key": "k"}}}]},
            "spec.envs[0].valueFrom.secretKeyRef.name",
        ),
        (
            {
                "envs": [
                    {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "a..b", "key": "k"}}}
                ]
            },
            "spec.envs[0].valueFrom.configMapKeyRef.name",
        ),
        # Duplicate names the Deployment could not hold (server-side apply would answer 500).
        ({"envs": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}, "spec.envs[1]"),
        # Image references that cannot be pulled.
        ({"image": " nginx "}, "spec.image"),
        ({"image": "nginx:"}, "spec.image"),
        ({"image": "Nginx:1.27"}, "spec.image"),
        ({"image": "nginx:1.27 latest"}, "spec.image"),
    ],
)
async def test_a_malformed_appservice_is_rejected_at_admission_naming_the_field(
    client: Client, namespace: str, spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(APP_SERVICE, _app("bad", namespace, **spec))
    assert field in caught.value.message, caught.value.message


async def test_service_ports_sharing_a_target_port_declare_it_once_and_become_ready(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    ports = [
        {"name": "http", "port": 80, "targetPort": 8080},
        {"name": "alt", "port": 8000, "targetPort": 8080},
    ]
    await client.create(APP_SERVICE, _app("shared", namespace, ports=ports))
    await until(client, APP_SERVICE, "shared", namespace, _ready, 60, "Ready")
    deployment = await client.get(DEPLOYMENT, "shared", namespace)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert [p["containerPort"] for p in container["ports"]] == [8080]


@pytest.mark.parametrize(
    "case",
    [
        ({"image": "nginx:pull-fails"}, "ImagePullBackOff", 'Back-off pulling image "nginx:pull'),
        ({"image": "nginx:crashes"}, "CrashLoopBackOff", "restarted 4 times, last exit code 1"),
        (
            {"resources": {"requests": {"cpu": "5000"}}},  # more than any node has
            "Unschedulable",
            "Insufficient cpu",
        ),
    ],
)
async def test_pods_that_cannot_start_tell_the_appservice_why(
    client: Client,
    namespace: str,
    operator: RunningOperator,
    case: tuple[dict[str, Any], str, str],
) -> None:
    spec, reason, detail = case
    await client.create(APP_SERVICE, _app("stuck", namespace, **spec))
    app = await until(
        client,
        APP_SERVICE,
        "stuck",
        namespace,
        lambda a: _condition(a, "Ready").get("reason") == reason,
        60,
        f"Ready=False {reason}",
    )
    ready = _condition(app, "Ready")
    assert ready["status"] == "False"
    assert detail in ready["message"], ready["message"]
    assert ready["message"].startswith("pod stuck-")
    await events_of(client, namespace, reason, about="stuck", type_="Warning")

    # Fixed: the new pods start and the AppService becomes Ready.
    await client.patch(
        APP_SERVICE,
        "stuck",
        namespace=namespace,
        patch={"spec": {"image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}}}},
    )
    await until(client, APP_SERVICE, "stuck", namespace, _ready, 60, "Ready after the fix")


@pytest.mark.parametrize("name", ["1st-app", "a" * 64, "dotted.name"])
async def test_a_name_that_cannot_name_the_service_is_rejected_at_admission(
    client: Client, namespace: str, name: str
) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(APP_SERVICE, _app(name, namespace))
    assert "metadata.name must" in caught.value.message, caught.value.message


async def test_a_restart_during_a_burst_of_200_creates_converges_without_duplicates(
    client: Client, namespace: str, operator_kubeconfig: Path
) -> None:
    running = await start_operator(operator_kubeconfig, namespace)
    sem = asyncio.Semaphore(32)
    second_half = asyncio.Event()  # held until the operator is at work on the first
    created = 0

    async def create(i: int) -> None:
        nonlocal created
        if i >= 100:
            await second_half.wait()
        async with sem:
            await client.create(APP_SERVICE, _app(f"burst-{i:03d}", namespace, size=1))
        created += 1

    creating = asyncio.gather(*(create(i) for i in range(200)))
    reconciled = await eventually(
        lambda: running.reconciles("appservice"),
        timeout=60,
        what="the operator reconciling the burst's first AppServices",
    )
    # the other 100 are sent while the operator stops (here, with reconciles done and to
    # do) and starts again
    second_half.set()
    at_stop = created
    await running.stop()
    running = await start_operator(operator_kubeconfig, namespace)
    print(
        f"stopped after {reconciled:.0f} reconciles with {at_stop} created; "
        f"{created} created once restarted"
    )
    await creating
    try:

        async def all_ready() -> bool:
            apps, _ = await client.list(APP_SERVICE, namespace)
            return len(apps) == 200 and all(_ready(a) for a in apps)

        await eventually(all_ready, timeout=180, what="all 200 AppServices Ready", interval=0.5)
    finally:
        await running.stop()
    deployments, _ = await client.list(DEPLOYMENT, namespace)
    assert sorted(d["metadata"]["name"] for d in deployments) == [
        f"burst-{i:03d}" for i in range(200)
    ]
    assert all(len(d["metadata"]["ownerReferences"]) == 1 for d in deployments)
