"""Names, references and images: the models refuse what admission refuses (api/names.py and
the kinds' NAME_RULES), so ``appstack render`` gives the same message."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appservice import AppService
from appstack.api.appstack import AppStack
from appstack.api.crontab import CronTab
from appstack.api.names import DNS_SUBDOMAIN, IMAGE

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
