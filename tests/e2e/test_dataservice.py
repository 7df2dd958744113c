"""The DataService of seed 003 end to end: ``examples/dataservice.yaml`` converges in
dependency order with the seed's Services, ports, node ports, ConfigMaps and pods (uuc
third-party); a third-party service is injected by URL and credential references; several
ConfigMaps mount at their paths and a change of one rolls only its component; eureka moves
from a component to a third-party service without touching its consumers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.controllers.appstack import APP_STACK
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import (
    CONFIG_MAP,
    DEPLOYMENT,
    SECRET,
    SERVICE,
    STATEFUL_SET,
)
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import RunningOperator, events_of, until
from tests.e2e.test_appstack import Timeline, _ready, _reason, _stack
from tests.e2e.test_teardown import _until_gone

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dataservice.yaml"

# The seed's `kubectl get svc`: member -> (port, nodePort).
SEED_SERVICES = {
    "api-manager": (9085, None),
    "auth": (9081, None),
    "ds-adapter": (9086, None),
    "es-adapter": (9087, None),
    "trd-adapter": (9088, None),
    "gateway-master": (9184, None),
    "gateway-web": (9084, None),
    "proxy": (9094, None),
    "eureka": (8761, 30161),
    "web": (80, 30160),
    "mysql": (3306, None),
}
# The seed's `kubectl get cm` (ours are prefixed with the stack's name, as every child).
SEED_CONFIG_MAPS = {
    "api-manager",
    "auth",
    "ds-adapter",
    "es-adapter",
    "gateway-master",
    "gateway-web",
    "proxy",
    "trd-adapter",
    "trd-adapter-py",
    "web",
    "web-template",
    "mysql-config",  # the seed's mysql-dataservice: MySQL's own configuration
}


def _example(namespace: str) -> list[dict[str, Any]]:
    objects = list(yaml.safe_load_all(EXAMPLE.read_text()))
    for obj in objects:
        obj["metadata"]["namespace"] = namespace
    return objects


def _env(deployment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}


def _mounts(deployment: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """mountPath -> (ConfigMap, subPath) of the pod template."""
    pod = deployment["spec"]["template"]["spec"]
    sources = {v["name"]: v["configMap"]["name"] for v in pod.get("volumes", [])}
    return {
        m["mountPath"]: (sources[m["name"]], m.get("subPath"))
        for m in pod["containers"][0].get("volumeMounts", [])
    }


async def _node_ports_free(client: Client, ports: set[int], timeout: float = 120) -> None:
    """Node ports are cluster-wide: wait until no Service (of an earlier test) holds them."""

    async def held() -> set[int]:
        services, _ = await client.list(SERVICE)
        return {p.get("nodePort") for s in services for p in s["spec"].get("ports", [])} & ports

    await eventually(
        held,
        lambda taken: not taken,
        timeout=timeout,
        what=f"node ports {ports} free",
        interval=0.2,
    )


@pytest.mark.node_ports(30160, 30161)
async def test_the_dataservice_example_has_the_seeds_services_ports_config_maps_and_pods(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    init, stack = _example(namespace)
    token = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "uuc-token"}}
    token["metadata"]["namespace"] = namespace  # as the example's comment says
    timeline = Timeline(client, namespace)
    await asyncio.gather(*(i.wait_synced() for i in timeline.informers))
    await client.create(CONFIG_MAP, init)
    await client.create(SECRET, {**token, "stringData": {"token": "t"}})
    await client.create(APP_STACK, stack)

    done = await until(
        client, APP_STACK, "dataservice", namespace, _ready, 180, "all members Ready"
    )
    await timeline.stop()

    assert done["status"]["readyMembers"] == "12/12"
    assert {m["state"] for m in done["status"]["members"]} == {"Ready"}
    for component in stack["spec"]["components"]:
        deps = set(component.get("dependsOn", [])) | set(component.get("uses", []))
        for dep in deps - {"uuc"}:  # uuc is third-party: nothing of it is deployed
            assert dep in timeline.ready_when_added[component["name"]], (
                f"{component['name']} was created before {dep} was ready"
            )

    # The seed's Services, ports and node ports; nothing for uuc (third-party).
    services, _ = await client.list(SERVICE, namespace)
    seen = {s["metadata"]["name"]: s for s in services if not s["metadata"]["name"].endswith("-hl")}
    assert set(seen) == {f"dataservice-{m}" for m in SEED_SERVICES}
    for member, (port, node_port) in SEED_SERVICES.items():
        spec = seen[f"dataservice-{member}"]["spec"]
        assert [(p["port"], p.get("nodePort")) for p in spec["ports"]] == [(port, node_port)]
        assert spec["type"] == ("NodePort" if node_port else "ClusterIP"), member
    # The seed's pods: one workload per member but uuc.
    deployments, _ = await client.list(DEPLOYMENT, namespace)
    assert len(deployments) == len(SEED_SERVICES) - 1  # mysql is a StatefulSet
    # The seed's ConfigMaps, trd-adapter's and web's two each at their own paths.
    config_maps, _ = await client.list(CONFIG_MAP, namespace)
    names = {c["metadata"]["name"] for c in config_maps} - {"kube-root-ca.crt"}
    assert names == {f"dataservice-{n}" for n in SEED_CONFIG_MAPS} | {"mysql-dataservice-init"}
    mysql = await client.get(STATEFUL_SET, "dataservice-mysql", namespace)
    pod = mysql["spec"]["template"]["spec"]
    assert {
        "name": "config",
        "configMap": {"name": "dataservice-mysql-config", "defaultMode": 420},
    } in pod["volumes"]
    assert {"name": "config", "mountPath": "/etc/mysql/conf.d", "readOnly": True} in pod[
        "containers"
    ][0]["volumeMounts"]
    trd = await client.get(DEPLOYMENT, "dataservice-trd-adapter", namespace)
    assert _mounts(trd) == {
        "/app/config": ("dataservice-trd-adapter", None),
        "/app/py": ("dataservice-trd-adapter-py", None),
    }
    web = await client.get(DEPLOYMENT, "dataservice-web", namespace)
    assert _mounts(web) == {
        "/etc/nginx/conf.d": ("dataservice-web", None),
        "/usr/share/nginx/html/index.html": ("dataservice-web-template", "index.html"),
    }
    # Connections: managed MySQL, third-party uuc (a token by reference), eureka by URL.
    env = _env(await client.get(DEPLOYMENT, "dataservice-auth", namespace))
    assert env["MYSQL_HOST"]["value"] == "dataservice-mysql"
    assert env["MYSQL_PORT"]["value"] == "3306"
    assert env["MYSQL_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "dataservice-mysql-credentials",
        "key": "password",
    }
    assert env["UUC_URL"] == {"name": "UUC_URL", "value": "https://uuc.example.com:8443/uuc"}
    assert env["UUC_AUTH_METHOD"]["value"] == "bearer"
    assert env["UUC_TOKEN"]["valueFrom"] == {"secretKeyRef": {"name": "uuc-token", "key": "token"}}
    assert env["EUREKA_URL"]["value"] == "http://dataservice-eureka:8761"


def _third_party(**external: Any) -> dict[str, Any]:
    return {"name": "idp", "type": "service", "external": external}


async def test_a_third_party_service_is_injected_by_url_and_credential_references(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    idp = _third_party(
        url="https://idp.example.com/oauth",
        authMethod="basic",
        secretRef={"name": "idp-auth", "usernameKey": "user", "passwordKey": "pass"},
    )
    component = {"name": "app", "image": "app:1", "uses": ["idp"]}
    await client.create(
        APP_STACK, _stack("tp", namespace, middleware=[idp], components=[component])
    )

    # Its Secret is missing: Ready=False with the reason, a Warning Event, nothing hidden.
    stuck = await until(
        client,
        APP_STACK,
        "tp",
        namespace,
        lambda s: _reason(s) == ("False", "CredentialsNotFound"),
        60,
        "CredentialsNotFound",
    )
    assert "idp-auth" in str(stuck["status"]["conditions"])
    await events_of(
        client, namespace, "CredentialsNotFound", about="tp", type_="Warning", note="idp-auth"
    )

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "idp-auth"}}
    secret["metadata"]["namespace"] = namespace
    await client.create(SECRET, {**secret, "stringData": {"user": "u", "pass": "p"}})
    done = await until(client, APP_STACK, "tp", namespace, _ready, 90, "Ready with the Secret")
    assert done["status"]["readyMembers"] == "2/2"
    env = _env(await client.get(DEPLOYMENT, "tp-app", namespace))
    assert env["IDP_URL"]["value"] == "https://idp.example.com/oauth"
    assert env["IDP_AUTH_METHOD"]["value"] == "basic"
    assert env["IDP_USERNAME"]["valueFrom"]["secretKeyRef"] == {"name": "idp-auth", "key": "user"}
    assert env["IDP_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "idp-auth", "key": "pass"}
    assert "IDP_HOST" not in env
    # Nothing is created for a third-party service: no Service, no workload.
    with pytest.raises(errors.NotFound):
        await client.get(SERVICE, "tp-idp", namespace)


@pytest.mark.parametrize(
    ("external", "field", "message"),
    [
        ({"url": "uuc.example.com/uuc"}, "external.url", "url must be absolute"),
        ({"url": "https://u:p@uuc.example.com"}, "external.url", "never inline in url"),
        ({"url": "https://uuc.example.com:99999/"}, "external.url", "1..65535"),
        ({"url": "https://a", "authMethod": "basic"}, "external.secretRef", "needs secretRef"),
        ({"url": "https://a", "host": "a", "port": 1}, "external", "exactly one of host"),
        ({"host": "a", "port": 80, "authMethod": "basic"}, "external.authMethod", "with url"),
    ],
)
async def test_bad_third_party_services_are_refused_at_admission_naming_the_field(
    client: Client, namespace: str, external: dict[str, Any], field: str, message: str
) -> None:
    stack = _stack(
        "bad",
        namespace,
        middleware=[{"name": "uuc", "type": "service", "external": external}],
        components=[{"name": "app", "image": "app:1", "uses": ["uuc"]}],
    )
    with pytest.raises(errors.Invalid) as caught:
        await client.create(APP_STACK, stack)
    assert f"spec.middleware[0].{field}" in caught.value.message, caught.value.message
    assert message in caught.value.message, caught.value.message


def _config_stack(namespace: str) -> dict[str, Any]:
    files = {"application.yml": "level: info\n"}
    return _stack(
        "cfg",
        namespace,
        components=[
            {
                "name": "trd",
                "image": "trd:1",
                "configs": [
                    {"name": "trd", "mountPath": "/app/config", "files": files},
                    {"name": "trd-py", "mountPath": "/app/py", "files": {"a.py": "x = 1\n"}},
                    {"name": "shared", "mountPath": "/etc/shared", "configMap": "shared"},
                ],
            },
            {
                "name": "web",
                "image": "web:1",
                "configs": [
                    {"name": "web", "mountPath": "/etc/nginx/conf.d", "files": files},
                    {
                        "name": "web-template",
                        "mountPath": "/usr/share/nginx/html/index.html",
                        "subPath": "index.html",
                        "files": {"index.html": "<p>1</p>"},
                    },
                ],
            },
        ],
    )


async def test_several_config_maps_mount_at_their_paths_and_one_change_rolls_its_component(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    shared = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}}
    shared["metadata"]["namespace"] = namespace
    await client.create(CONFIG_MAP, {**shared, "data": {"k": "1"}})
    await client.create(APP_STACK, _config_stack(namespace))
    await until(client, APP_STACK, "cfg", namespace, _ready, 90, "cfg Ready")
    before = {n: await client.get(DEPLOYMENT, f"cfg-{n}", namespace) for n in ("trd", "web")}
    assert _mounts(before["trd"]) == {
        "/app/config": ("cfg-trd", None),
        "/app/py": ("cfg-trd-py", None),
        "/etc/shared": ("shared", None),
    }
    assert _mounts(before["web"]) == {
        "/etc/nginx/conf.d": ("cfg-web", None),
        "/usr/share/nginx/html/index.html": ("cfg-web-template", "index.html"),
    }
    assert (await client.get(CONFIG_MAP, "cfg-trd-py", namespace))["data"] == {"a.py": "x = 1\n"}

    # One file of one ConfigMap of web: web rolls, trd does not.
    stack = await client.get(APP_STACK, "cfg", namespace)
    stack["spec"]["components"][1]["configs"][1]["files"]["index.html"] = "<p>2</p>"
    await client.update(APP_STACK, stack)
    await until(
        client,
        APP_STACK,
        "cfg",
        namespace,
        lambda s: _ready(s) and s["status"]["observedGeneration"] == 2,
        60,
        "the template change",
    )
    after = {n: await client.get(DEPLOYMENT, f"cfg-{n}", namespace) for n in ("trd", "web")}
    hash_of = {n: d["spec"]["template"]["metadata"]["annotations"] for n, d in after.items()}
    assert hash_of["web"] != before["web"]["spec"]["template"]["metadata"]["annotations"]
    assert after["web"]["metadata"]["generation"] > before["web"]["metadata"]["generation"]
    assert after["trd"]["metadata"]["generation"] == before["trd"]["metadata"]["generation"]
    template = await client.get(CONFIG_MAP, "cfg-web-template", namespace)
    assert template["data"] == {"index.html": "<p>2</p>"}

    # An existing ConfigMap it mounts changes: trd rolls (read at its next reconcile, here
    # prompted by a label on the stack), web does not.
    await client.update(CONFIG_MAP, {**shared, "data": {"k": "2"}})
    await client.patch(
        APP_STACK, "cfg", {"metadata": {"labels": {"nudge": "1"}}}, namespace=namespace
    )

    def trd_rolled(d: dict[str, Any]) -> bool:
        return bool(d["metadata"]["generation"] > after["trd"]["metadata"]["generation"])

    await until(client, DEPLOYMENT, "cfg-trd", namespace, trd_rolled, 90, "trd rolled")
    web = await client.get(DEPLOYMENT, "cfg-web", namespace)
    assert web["metadata"]["generation"] == after["web"]["metadata"]["generation"]


async def test_eureka_moves_from_a_component_to_a_third_party_service_consumers_unchanged(
    client: Client, namespace: str, operator: RunningOperator
) -> None:
    eureka = {"name": "eureka", "image": "eureka:1", "ports": [{"name": "http", "port": 8761}]}
    consumer = {"name": "auth", "image": "auth:1", "uses": ["eureka"]}
    await client.create(APP_STACK, _stack("sw", namespace, components=[eureka, consumer]))
    await until(client, APP_STACK, "sw", namespace, _ready, 90, "sw Ready")
    env = _env(await client.get(DEPLOYMENT, "sw-auth", namespace))
    assert env["EUREKA_URL"]["value"] == "http://sw-eureka:8761"

    stack = await client.get(APP_STACK, "sw", namespace)
    stack["spec"]["components"] = [consumer]
    stack["spec"]["middleware"] = [
        {"name": "eureka", "type": "service", "external": {"url": "http://eureka.corp:8761"}}
    ]
    await client.update(APP_STACK, stack)

    def switched(d: dict[str, Any]) -> bool:
        return _env(d)["EUREKA_URL"].get("value") == "http://eureka.corp:8761"

    await until(client, DEPLOYMENT, "sw-auth", namespace, switched, 60, "EUREKA_URL switched")
    await until(
        client,
        APP_STACK,
        "sw",
        namespace,
        lambda s: _ready(s) and s["status"]["observedGeneration"] == 2,
        60,
        "sw Ready again",
    )
    for resource in (DEPLOYMENT, SERVICE):  # the deployed eureka is pruned (Foreground)
        await _until_gone(client, resource, "sw-eureka", namespace)
