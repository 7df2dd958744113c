"""Managed mongodb's objects (pure): the replica set's StatefulSet, Services, ConfigMap,
generated Secrets and the consumers' connection string; what ``replicas`` each engine takes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from appstack.api.appstack import AppStack, AppStackSpec
from appstack.api.managed_rules import NO_INIT_SCRIPTS, ONE_INSTANCE
from appstack.cli import main
from appstack.controllers.appstack import desired, middleware, mongodb
from appstack.controllers.mongodb_replicaset import bootstrap as boot
from tests.support.paths import REPO_ROOT

OWNER = {
    "apiVersion": "appstack.dev/v1",
    "kind": "AppStack",
    "metadata": {"name": "shop", "namespace": "ns", "uid": "u-1"},
}


def _spec(replicas: int = 3, **managed: Any) -> AppStackSpec:
    """The spec of a whole AppStack, validated as admission validates it (CEL rules too)."""
    spec = {
        "middleware": [
            {"name": "orders", "type": "mongodb", "managed": {"replicas": replicas, **managed}}
        ],
        "components": [{"name": "api", "image": "api:1", "uses": ["orders"]}],
    }
    return AppStack.model_validate({"metadata": {"name": "shop"}, "spec": spec}).spec


def _refusal(spec: dict[str, Any]) -> tuple[tuple[str | int, ...], str]:
    """The one error of a whole AppStack with ``spec``: its field and message."""
    with pytest.raises(ValidationError) as caught:
        AppStack.model_validate({"metadata": {"name": "shop"}, "spec": spec})
    (error,) = caught.value.errors()
    return error["loc"], error["msg"]


def _by_kind(spec: AppStackSpec) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in desired.children(OWNER, spec)}


def test_a_replica_set_is_a_statefulset_with_a_volume_per_member_named_by_a_headless_service() -> (
    None
):
    objects = _by_kind(_spec(3))
    sts = objects[("StatefulSet", "shop-orders")]["spec"]
    assert sts["replicas"] == 3
    assert sts["serviceName"] == "shop-orders-hl"
    assert sts.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    assert [t["metadata"]["name"] for t in sts["volumeClaimTemplates"]] == ["data"]
    assert sts["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    headless = objects[("Service", "shop-orders-hl")]["spec"]
    assert headless["clusterIP"] == "None"
    assert headless["publishNotReadyAddresses"] is True
    assert headless["ports"][0]["port"] == 27017

    pod = sts["template"]["spec"]
    mongod, sidecar = pod["containers"]
    assert mongod["command"][:3] == ["mongod", "--replSet", "shop-orders"]
    assert mongod["args"] == ["--dbpath", "/data/db", "--keyFile", "/keyfile/keyfile"]
    assert mongod["readinessProbe"] == boot.readiness_probe()
    assert {m["name"] for m in mongod["volumeMounts"]} == {"data", "keyfile"}
    assert sidecar["command"] == boot.loop_command()
    (copy,) = pod["initContainers"]
    assert "chmod 0400 /keyfile/keyfile" in copy["command"][2]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["keyfile-secret"]["secret"]["secretName"] == "shop-orders-keyfile"
    assert volumes["replicaset"]["configMap"]["name"] == "shop-orders-replicaset"
    for c in [*pod["containers"], copy]:
        assert c["securityContext"]["runAsUser"] == 999
        assert c["securityContext"]["allowPrivilegeEscalation"] is False


def test_no_credential_is_a_value_in_the_pod_template() -> None:
    sts = _by_kind(_spec(3))[("StatefulSet", "shop-orders")]
    env = sts["spec"]["template"]["spec"]["containers"][1]["env"]
    secret_vars = {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in env
        if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]
    }
    assert secret_vars == {
        "ROOT_PASSWORD": {"name": "shop-orders-credentials", "key": "root-password"},
        "APP_USERNAME": {"name": "shop-orders-credentials", "key": "username"},
        "APP_PASSWORD": {"name": "shop-orders-credentials", "key": "password"},
    }
    values = {e["name"]: e.get("value") for e in env}
    assert values["MEMBER_HOST"] == "$(POD_NAME).shop-orders-hl.ns.svc:27017"


def test_the_configmap_holds_the_script_and_the_desired_members_by_ordinal() -> None:
    for n in (1, 3, 5):
        cm = _by_kind(_spec(n))[("ConfigMap", "shop-orders-replicaset")]
        assert cm["data"][boot.SCRIPT_KEY] == boot.script(27017)
        members = json.loads(cm["data"][boot.CONFIG_KEY])
        assert members == {
            "_id": "shop-orders",
            "members": [
                {"_id": i, "host": f"shop-orders-{i}.shop-orders-hl.ns.svc:27017"} for i in range(n)
            ],
        }


def test_scaling_changes_the_replicas_and_the_members_but_not_the_pod_template() -> None:
    three, five = _by_kind(_spec(3)), _by_kind(_spec(5))
    key = ("StatefulSet", "shop-orders")
    assert three[key]["spec"]["template"] == five[key]["spec"]["template"]
    assert five[key]["spec"]["replicas"] == 5


def test_generated_secrets_are_credentials_and_a_keyfile_kept_with_the_volumes() -> None:
    mw = _spec(3).middleware[0]  # type: ignore[index]
    credentials, keyfile = middleware.generated_secrets(OWNER, mw)
    assert credentials["metadata"]["name"] == "shop-orders-credentials"
    assert credentials["stringData"]["username"] == "app"
    assert set(credentials["stringData"]) == {"username", "password", "root-password"}
    assert keyfile["metadata"]["name"] == "shop-orders-keyfile"
    key = keyfile["stringData"]["keyfile"]
    assert 6 <= len(key) <= 1024
    assert len(base64.b64decode(key, validate=True)) == 567
    assert "ownerReferences" not in keyfile["metadata"]  # retained, like the volumes
    again = middleware.generated_secrets(OWNER, mw)[1]["stringData"]["keyfile"]
    assert again != key  # random: which is why the reconciler only ever creates it once
    owned = _spec(3, storage={"retainOnDelete": False}).middleware[0]  # type: ignore[index]
    assert middleware.generated_secrets(OWNER, owned)[1]["metadata"]["ownerReferences"]
    assert all(
        ("Secret", name) not in _by_kind(_spec(3))
        for name in ("shop-orders-credentials", "shop-orders-keyfile")
    )


def test_consumers_get_a_uri_with_every_member_and_the_set_and_credentials_by_reference() -> None:
    deployment = _by_kind(_spec(3))[("Deployment", "shop-api")]
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    names = [e["name"] for e in env]
    assert names == [
        "ORDERS_HOST",
        "ORDERS_PORT",
        "ORDERS_USERNAME",
        "ORDERS_PASSWORD",
        "ORDERS_URI",
    ]
    by_name = {e["name"]: e for e in env}
    assert by_name["ORDERS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "shop-orders-credentials",
        "key": "password",
    }
    hosts = ",".join(f"shop-orders-{i}.shop-orders-hl.ns.svc:27017" for i in range(3))
    assert by_name["ORDERS_URI"]["value"] == (
        f"mongodb://$(ORDERS_USERNAME):$(ORDERS_PASSWORD)@{hosts}/app"
        "?replicaSet=shop-orders&authSource=admin"
    )


def test_other_middleware_gets_no_uri() -> None:
    spec = AppStackSpec.model_validate(
        {
            "middleware": [{"name": "db", "type": "mysql", "managed": {}}],
            "components": [{"name": "api", "image": "api:1", "uses": ["db"]}],
        }
    )
    assert mongodb.uri_env(OWNER, spec.middleware[0]) == []  # type: ignore[index]


@pytest.mark.parametrize("engine", ["mysql", "postgres", "redis"])
def test_engines_this_catalog_does_not_cluster_refuse_more_than_one_replica(engine: str) -> None:
    spec = {
        "middleware": [{"name": "db", "type": engine, "managed": {"replicas": 2}}],
        "components": [{"name": "api", "image": "x"}],
    }
    assert _refusal(spec) == (("spec", "middleware", 0, "managed", "replicas"), ONE_INSTANCE)
    assert "only mongodb forms a cluster" in ONE_INSTANCE
    assert ONE_INSTANCE.startswith("managed.replicas:")


def test_mongodb_takes_one_to_seven_members_and_no_init_scripts() -> None:
    assert _spec(1).middleware
    assert _spec(7).middleware
    with pytest.raises(ValidationError, match="less than or equal to 7"):
        _spec(8)
    with pytest.raises(ValidationError, match="not supported for mongodb") as caught:
        _spec(3, initScriptsConfigMap="seed")
    where = ("spec", "middleware", 0, "managed", "initScriptsConfigMap")
    assert [e["loc"] for e in caught.value.errors()] == [where]
    assert NO_INIT_SCRIPTS.startswith("managed.initScriptsConfigMap:")


def test_a_variable_named_like_the_injected_uri_is_refused() -> None:
    with pytest.raises(ValidationError, match="ORDERS_URI is injected for orders"):
        AppStackSpec.model_validate(
            {
                "middleware": [{"name": "orders", "type": "mongodb", "managed": {}}],
                "components": [
                    {"name": "api", "image": "x", "uses": ["orders"], "env": {"ORDERS_URI": "x"}}
                ],
            }
        )


def test_the_example_renders_the_replica_set_without_its_secrets() -> None:
    example = REPO_ROOT / "examples" / "mongodb.yaml"
    result = CliRunner().invoke(main, ["render", "-f", str(example)])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == [
        *("ConfigMap", "Deployment", "PodDisruptionBudget"),
        *("Service", "Service", "Service", "StatefulSet"),
    ]
    sts = next(d for d in docs if d["kind"] == "StatefulSet")
    assert sts["spec"]["replicas"] == 3


@pytest.mark.parametrize(("replicas", "min_available"), [(2, 2), (3, 2), (5, 3), (7, 4)])
def test_a_replica_set_keeps_a_majority_through_drains(replicas: int, min_available: int) -> None:
    objects = _by_kind(_spec(replicas))
    budget = objects[("PodDisruptionBudget", "shop-orders")]
    members = objects[("StatefulSet", "shop-orders")]["spec"]["selector"]
    assert budget["spec"] == {"minAvailable": min_available, "selector": members}
    assert budget["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def test_a_single_member_has_no_budget_that_would_block_every_drain() -> None:
    assert not [k for k in _by_kind(_spec(1)) if k[0] == "PodDisruptionBudget"]
