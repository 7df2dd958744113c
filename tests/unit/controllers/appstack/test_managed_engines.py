"""Managed mysql, postgres and redis as their pods are asked for (controllers/appstack/
catalog.py, middleware.py; issue #37): readiness is a login with the pod's own credentials
(never a password in the spec), Redis gets its password as an option, PostgreSQL keeps its
data in a directory of its own, and the version of the credentials Secret is on the
instance's pod template and on its consumers' — so that a rotated password rolls exactly
those — and is one of the Secrets a stack is woken by. That each of these works against the
real databases: tests/e2e/test_real_middleware.py."""

from __future__ import annotations

from typing import Any

import pytest

from appstack.api.appstack import AppStackSpec
from appstack.controllers.appstack import desired, middleware
from appstack.controllers.appstack.references import referenced

OWNER = {
    "apiVersion": "appstack.dev/v1",
    "kind": "AppStack",
    "metadata": {"name": "shop", "namespace": "ns", "uid": "u-1"},
}
ENGINES = ("mysql", "postgres", "redis")


def _spec(engine: str, **managed: Any) -> AppStackSpec:
    return AppStackSpec.model_validate(
        {
            "middleware": [
                {"name": "db", "type": engine, "managed": managed},
                {"name": "other", "type": "redis", "managed": {}},
                {"name": "legacy", "type": "mysql", "external": {"host": "db.corp", "port": 3306}},
            ],
            "components": [
                {"name": "api", "image": "x", "uses": ["db"]},
                {"name": "web", "image": "x", "uses": ["other"]},
            ],
        }
    )


def _container(engine: str, version: str | None = None) -> dict[str, Any]:
    spec = _spec(engine)
    assert spec.middleware is not None
    (sts,) = [
        c
        for c in middleware.children(OWNER, spec.middleware[0], version)
        if c["kind"] == "StatefulSet"
    ]
    (container,) = sts["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


@pytest.mark.parametrize("engine", ENGINES)
def test_readiness_is_a_login_with_the_pods_own_credentials(engine: str) -> None:
    container = _container(engine)
    probe = container["readinessProbe"]
    assert "tcpSocket" not in probe
    sh, dash_c, script = probe["exec"]["command"]
    assert (sh, dash_c) == ("sh", "-c")
    password = {"mysql": "MYSQL_PASSWORD", "postgres": "POSTGRES_PASSWORD"}.get(
        engine, "REDIS_PASSWORD"
    )
    # the password is the pod's variable, passed through the client's environment variable
    assert f'="${password}"' in script
    assert _env(container)[password] == {
        "secretKeyRef": {"name": "shop-db-credentials", "key": "password"}
    }
    assert probe["timeoutSeconds"] >= 3  # a login takes longer than a connect


def test_each_engine_asks_its_own_question() -> None:
    mysql = _container("mysql")["readinessProbe"]["exec"]["command"][2]
    assert "mysql --protocol=TCP" in mysql
    assert '--user="$MYSQL_USER"' in mysql
    assert "SELECT 1" in mysql  # a query: mysqladmin ping succeeds even when refused
    postgres = _container("postgres")["readinessProbe"]["exec"]["command"][2]
    # over the pod's own address: the image trusts the socket and 127.0.0.1 without one
    assert '--host="$POD_IP"' in postgres
    assert "--no-password" in postgres
    assert "pg_isready" not in postgres  # it does not log in
    redis = _container("redis")["readinessProbe"]["exec"]["command"][2]
    assert "REDISCLI_AUTH=" in redis
    assert "= PONG" in redis  # redis-cli exits 0 on NOAUTH and WRONGPASS


def test_redis_gets_its_password_as_an_option_and_keeps_an_append_only_file() -> None:
    container = _container("redis")
    # the official image reads no password variable; the kubelet expands $(REDIS_PASSWORD)
    # from the Secret's variable: the spec holds its name only
    assert container["args"][:3] == ["redis-server", "--requirepass", "$(REDIS_PASSWORD)"]
    assert container["args"][3:] == ["--appendonly", "yes"]
    assert "args" not in _container("mysql")
    assert "args" not in _container("postgres")


def test_postgres_keeps_its_data_in_a_directory_of_its_own_on_the_volume() -> None:
    container = _container("postgres")
    env = _env(container)
    (data,) = [m for m in container["volumeMounts"] if m["name"] == "data"]
    assert env["PGDATA"] == f"{data['mountPath']}/pgdata"
    assert env["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["POSTGRES_DB"] == "app"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_credentials_version_is_on_the_instances_pod_template(engine: str) -> None:
    def annotations(version: str | None) -> dict[str, str]:
        spec = _spec(engine)
        assert spec.middleware is not None
        sts = middleware.stateful_set(OWNER, spec.middleware[0], version)
        return dict(sts["spec"]["template"]["metadata"].get("annotations") or {})

    assert annotations("0123456789abcdef") == {"appstack.dev/secrets-hash": "0123456789abcdef"}
    assert annotations(None) == {}  # appstack render: not known without the cluster


def test_a_consumer_reads_the_generated_credentials_of_what_it_uses_and_no_other() -> None:
    spec = _spec("postgres")
    assert spec.middleware is not None
    members: desired.Members = {
        **{m.name: m for m in spec.middleware},
        **{c.name: c for c in spec.components},
    }
    api, web = spec.components
    assert desired.used_secrets(api, members, "shop") == ["shop-db-credentials"]
    assert desired.used_secrets(web, members, "shop") == ["shop-other-credentials"]


def test_a_stack_is_woken_by_its_generated_credentials_and_not_by_an_external_host() -> None:
    stack = {**OWNER, "spec": _spec("mysql").to_dict()}
    assert referenced(stack) == [
        "Secret/ns/shop-db-credentials",
        "Secret/ns/shop-other-credentials",
    ]
