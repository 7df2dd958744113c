"""Names, references and images: the models refuse what admission refuses (sdk/names.py and
the kinds' NAME_RULES), so ``appstack render`` gives the same message."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appservice import AppService
from appstack.api.appstack import AppStack
from appstack.api.crontab import CronTab
from appstack.controllers.util.workloads import unique_ports
from appstack.sdk.names import DNS_SUBDOMAIN, IMAGE

_DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    "image",
    [
        "x",
        "nginx:1.27",
        "library/nginx",
        "registry.example.com:5000/team/app:v1.2-rc_3",
        "Registry.Example.com/app",
        f"app@{_DIGEST}",
        f"quay.io/a/b:t@{_DIGEST}",
        "my__app",
    ],
)
def test_images_that_can_be_pulled(image: str) -> None:
    assert re.match(IMAGE, image)


@pytest.mark.parametrize(
    "image", [" nginx ", "nginx:", "Nginx", "ng inx", "nginx::1", "/nginx", "app@sha256:ab", ""]
)
def test_images_that_cannot(image: str) -> None:
    assert not re.match(IMAGE, image)


@pytest.mark.parametrize("name", [".", "..", "a..b", "-a", "A", "a_b"])
def test_references_must_be_dns_subdomains(name: str) -> None:
    assert not re.match(DNS_SUBDOMAIN, name)


def _validate(model: Any, name: str, spec: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate({"metadata": {"name": name}, "spec": spec})
    return str(caught.value)


def test_the_models_refuse_names_their_children_cannot_have() -> None:
    app = {"image": "nginx"}
    assert "metadata.name must start with a lowercase letter" in _validate(AppService, "1a", app)
    assert "at most 63 characters" in _validate(AppService, "a" * 64, app)
    assert "at most 52 characters" in _validate(CronTab, "a" * 53, {"cronSpec": "@daily", **app})
    one = {"components": [{"name": "c" * 33, "image": "x"}]}
    assert "<stack>-<member>" in _validate(AppStack, "s" * 30, one)
    managed = {
        "middleware": [{"name": "m" * 22, "type": "redis", "managed": {}}],
        "components": [{"name": "a", "image": "x"}],
    }
    assert "<stack>-<middleware>" in _validate(AppStack, "s" * 30, managed)
    AppStack.model_validate({"metadata": {"name": "s" * 29}, "spec": managed})
    AppService.model_validate({"metadata": {"name": "a" * 63}, "spec": app})


def test_the_models_refuse_bad_references_and_images() -> None:
    assert "serviceAccountName" in _validate(
        AppService, "a", {"image": "x", "serviceAccountName": ".."}
    )
    assert "image" in _validate(AppService, "a", {"image": " nginx "})


def test_container_ports_sharing_a_number_or_name_are_declared_once() -> None:
    ports = [
        {"containerPort": 8080, "protocol": "TCP", "name": "http"},
        {"containerPort": 8080, "protocol": "TCP", "name": "alt"},
        {"containerPort": 8080, "protocol": "UDP"},
        {"containerPort": 9090, "protocol": "TCP", "name": "http"},
    ]
    assert unique_ports(ports) == [
        {"containerPort": 8080, "protocol": "TCP", "name": "http"},
        {"containerPort": 8080, "protocol": "UDP"},
        {"containerPort": 9090, "protocol": "TCP"},
    ]


@pytest.mark.parametrize(
    ("component", "problem"),
    [
        ({"env": {"A": "1"}, "envs": [{"name": "A", "value": "2"}]}, "both env and envs"),
        ({"envs": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}, "duplicate"),
        ({"uses": ["order-db"], "env": {"ORDER_DB_PORT": "1"}}, "injected for order-db"),
        ({"ports": [{"port": 80}, {"port": 80, "targetPort": 81}]}, "numbers must be unique"),
        ({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]}, "must be unique"),
        ({"ports": [{"port": 80}, {"port": 81, "name": "p80"}]}, "kept for ports without"),
    ],
)
def test_components_refuse_duplicate_variables_and_ports(
    component: dict[str, Any], problem: str
) -> None:
    spec = {
        "middleware": [{"name": "order-db", "type": "redis", "managed": {}}],
        "components": [{"name": "app", "image": "x", **component}],
    }
    assert problem in _validate(AppStack, "s", spec)
