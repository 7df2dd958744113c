"""Typed parts of the children (sdk/kit/parts.py): what a spec sets — resources, a probe,
variables, a securityContext — in the wire form a child carries (camelCase keys, no unset
field), and a variable read from a Secret."""

from __future__ import annotations

from appstack.sdk import SecurityContext
from appstack.sdk.kit.parts import (
    secret_env,
    user_env,
    user_probe,
    user_resources,
    user_security,
    wire,
)
from appstack.sdk.model import EnvVar, Probe, ResourceRequirements


def test_resources_are_in_wire_form_without_what_is_unset() -> None:
    resources = ResourceRequirements.model_validate({"limits": {"cpu": "500m", "memory": "1Gi"}})
    assert user_resources(resources) == {"limits": {"cpu": "500m", "memory": "1Gi"}}


def test_a_probe_has_camel_case_keys() -> None:
    probe = Probe.model_validate(
        {"httpGet": {"path": "/healthz", "port": 8080}, "initialDelaySeconds": 5}
    )
    assert user_probe(probe) == {
        "httpGet": {"path": "/healthz", "port": 8080},
        "initialDelaySeconds": 5,
    }


def test_variables_keep_their_order_and_their_source() -> None:
    env = [
        EnvVar.model_validate({"name": "B", "value": "2"}),
        EnvVar.model_validate(
            {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        ),
    ]
    assert user_env(env) == [
        {"name": "B", "value": "2"},
        {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    ]
    assert user_env([]) == []


def test_a_security_context_set_or_none() -> None:
    asked = SecurityContext.model_validate({"runAsNonRoot": True, "runAsUser": 1000})
    assert user_security(asked) == {"runAsNonRoot": True, "runAsUser": 1000}
    assert user_security(None) == {}


def test_a_variable_from_a_secret_key() -> None:
    assert secret_env("PASSWORD", "db-credentials", "password") == {
        "name": "PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "db-credentials", "key": "password"}},
    }


def test_a_manifest_is_sent_as_it_is() -> None:
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    assert wire(child) is child  # type: ignore[arg-type]
