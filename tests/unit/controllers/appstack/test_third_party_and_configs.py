"""Third-party services by URL and several ConfigMaps per component: a whole AppStack's
validation (admission's CEL rules, evaluated client-side, and what only Python checks), what
consumers get injected, what is mounted and hashed."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appstack import AppStack, AppStackSpec
from appstack.api.urls import url_problem
from appstack.controllers.appstack import desired
from appstack.controllers.appstack.connections import (
    connection_env,
    third_party_credentials_missing,
)

OWNER = {
    "apiVersion": "appstack.dev/v1",
    "kind": "AppStack",
    "metadata": {"name": "ds", "namespace": "n", "uid": "u"},
}


Loc = tuple[str | int, ...]


def _spec(components: list[dict[str, Any]], middleware: list[Any] | None = None) -> AppStackSpec:
    """The spec of a whole AppStack, validated as admission validates it (CEL rules too)."""
    spec = {"components": components, "middleware": middleware}  # null: pruned, as by the API
    return AppStack.model_validate({"metadata": {"name": "ds"}, "spec": spec}).spec


def _refused(
    components: list[dict[str, Any]], middleware: list[Any] | None = None
) -> list[tuple[Loc, str]]:
    """Where and why such a stack is refused: each error's field and message."""
    with pytest.raises(ValidationError) as caught:
        _spec(components, middleware)
    return [(e["loc"], e["msg"]) for e in caught.value.errors()]


def _says(refused: list[tuple[Loc, str]], field: Loc, problem: str) -> bool:
    """Whether one of the errors is at ``field`` and says ``problem``."""
    return any(loc == field and problem in msg for loc, msg in refused)


def _uuc(**external: Any) -> dict[str, Any]:
    return {"name": "uuc", "type": "service", "external": external}


APP = {"name": "app", "image": "app:1", "uses": ["uuc"]}


EXTERNAL = ("spec", "middleware", 0, "external")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://uuc.example.com:8443/uuc?x=1", None),
        ("http://[fd00::1]:8761", None),
        ("mysql://db.corp:3306/app", None),
        ("uuc.example.com/uuc", "must be absolute"),
        ("https:///path", "must be absolute"),
        ("https://uuc.example.com/a b", "must be absolute"),
        ("https://user:secret@uuc.example.com", "never inline"),
        ("https://uuc.example.com:70000/", "1..65535"),
        ("https://uuc.example.com:0/", "1..65535"),
    ],
)
def test_urls_are_absolute_without_credentials_with_a_real_port(
    url: str, problem: str | None
) -> None:
    if problem is None:
        assert url_problem(url) is None
        assert _spec([APP], [_uuc(url=url)]).middleware
        return
    refused = _refused([APP], [_uuc(url=url)])
    assert _says(refused, (*EXTERNAL, "url"), problem), refused


@pytest.mark.parametrize("url", ["http://[fd00::1:8761", "http://fd00::1]:8761"])
def test_a_url_pythons_own_parser_refuses_is_refused_too(url: str) -> None:
    """Beyond the CEL rules: an unbalanced IPv6 bracket, which the operator's client (and
    ``urlsplit``) would refuse when it connects."""
    assert url_problem(url) == "Invalid IPv6 URL"
    refused = _refused([APP], [_uuc(url=url)])
    assert _says(refused, (*EXTERNAL, "url"), "Invalid IPv6 URL"), refused


@pytest.mark.parametrize(
    ("external", "problem", "field"),
    [
        ({"url": "https://a", "authMethod": "basic"}, "needs secretRef", ("secretRef",)),
        ({"url": "https://a", "secretRef": {"name": "s"}}, "needs secretRef", ("secretRef",)),
        (
            {"url": "https://a", "authMethod": "none", "secretRef": {"name": "s"}},
            "no secretRef",
            ("secretRef",),
        ),
        ({"url": "https://a", "host": "a", "port": 1}, "exactly one of host", ()),
        ({"host": "a"}, "host needs port", ()),
        (
            {"host": "a", "port": 1, "authMethod": "basic"},
            "authMethod goes with url",
            ("authMethod",),
        ),
        ({"url": "https://u:p@a"}, "never inline", ("url",)),
    ],
)
def test_bad_third_party_services_are_refused_by_the_models(
    external: dict[str, Any], problem: str, field: Loc
) -> None:
    refused = _refused([APP], [_uuc(**external)])
    assert _says(refused, (*EXTERNAL, *field), problem), refused


def test_a_generic_service_is_third_party_only() -> None:
    refused = _refused([APP], [{"name": "uuc", "type": "service", "managed": {}}])
    assert refused == [
        (
            ("spec", "middleware", 0, "type"),
            "type service is a third-party service: give external.url",
        )
    ]


def _env(spec: AppStackSpec, member: str) -> dict[str, Any]:
    members: desired.Members = {
        **{m.name: m for m in spec.middleware or []},
        **{c.name: c for c in spec.components},
    }
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in connection_env("ds", members[member])
    }


def test_a_third_party_service_is_injected_by_url_and_references_per_auth_method() -> None:
    ref = {"name": "s", "usernameKey": "u", "passwordKey": "p", "tokenKey": "t"}
    basic = _spec([APP], [_uuc(url="https://a/x", authMethod="basic", secretRef=ref)])
    assert _env(basic, "uuc") == {
        "UUC_URL": "https://a/x",
        "UUC_AUTH_METHOD": "basic",
        "UUC_USERNAME": {"secretKeyRef": {"name": "s", "key": "u"}},
        "UUC_PASSWORD": {"secretKeyRef": {"name": "s", "key": "p"}},
    }
    bearer = _spec([APP], [_uuc(url="https://a", authMethod="apiKey", secretRef=ref)])
    assert _env(bearer, "uuc")["UUC_TOKEN"] == {"secretKeyRef": {"name": "s", "key": "t"}}
    assert _env(_spec([APP], [_uuc(url="https://a")]), "uuc") == {"UUC_URL": "https://a"}
    (uuc,) = bearer.middleware or []
    assert desired.used_secrets(bearer.components[0], {"uuc": uuc}, "shop") == ["s"]


def test_a_component_with_ports_can_be_used_and_gives_its_url() -> None:
    eureka = {"name": "eureka", "image": "e", "ports": [{"port": 8761}, {"port": 9000}]}
    spec = _spec([eureka, {"name": "auth", "image": "a", "uses": ["eureka"]}])
    assert _env(spec, "eureka") == {
        "EUREKA_HOST": "ds-eureka",
        "EUREKA_PORT": "8761",
        "EUREKA_URL": "http://ds-eureka:8761",
    }
    assert spec.components[1].dependencies() == ["eureka"]
    without_ports = {"name": "eureka", "image": "e"}
    assert _refused([without_ports, {"name": "auth", "image": "a", "uses": ["eureka"]}]) == [
        (
            ("spec", "components"),
            "uses must name middleware, or a component with ports, of this stack",
        )
    ]
    clash = {"name": "auth", "image": "a", "uses": ["eureka"], "env": {"EUREKA_URL": "x"}}
    with pytest.raises(ValidationError, match="EUREKA_URL is injected by uses"):
        _spec([eureka, clash])


def test_missing_third_party_credentials_are_named_by_key_never_by_value() -> None:
    spec = _spec([APP], [_uuc(url="https://a", authMethod="basic", secretRef={"name": "s"})])
    (uuc,) = spec.middleware or []
    assert third_party_credentials_missing(uuc, {"s": None}) == "Secret s of uuc not found"
    partial = {"s": {"data": {"username": "dQ=="}}}
    assert third_party_credentials_missing(uuc, partial) == "Secret s of uuc has no key password"
    full = {"s": {"data": {"username": "dQ==", "password": "cA=="}}}
    assert third_party_credentials_missing(uuc, full) is None


def _web(*configs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": "web", "image": "nginx", "configs": list(configs)} | extra


CONF = {"name": "web", "mountPath": "/etc/nginx/conf.d", "files": {"default.conf": "x"}}
TEMPLATE = {
    "name": "web-template",
    "mountPath": "/usr/share/nginx/html/index.html",
    "subPath": "index.html",
    "files": {"index.html": "<p>"},
}


def test_several_config_maps_are_written_mounted_and_hashed_together() -> None:
    existing = {"name": "shared", "mountPath": "/etc/shared", "configMap": "corp-shared"}
    (web,) = _spec([_web(CONF, TEMPLATE, existing)]).components
    assert [c["metadata"]["name"] for c in desired.config_maps(OWNER, web)] == [
        "ds-web",
        "ds-web-template",
    ]
    deployment = desired.deployment(OWNER, web, {}, config_maps_version="v1")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["volumeMounts"][1] == {
        "name": "web-template",
        "mountPath": "/usr/share/nginx/html/index.html",
        "readOnly": True,
        "subPath": "index.html",
    }
    assert [v["configMap"]["name"] for v in pod["volumes"]] == [
        "ds-web",
        "ds-web-template",
        "corp-shared",
    ]
    assert desired.used_config_maps(web) == ["corp-shared"]

    def digest(component: Any, version: str = "v1") -> str:
        d = desired.deployment(OWNER, component, {}, config_maps_version=version)
        return str(d["spec"]["template"]["metadata"]["annotations"]["appstack.dev/config-hash"])

    changed = _spec([_web(CONF, {**TEMPLATE, "files": {"index.html": "<b>"}}, existing)])
    assert digest(changed.components[0]) != digest(web)
    assert digest(web, "v2") != digest(web)  # the existing ConfigMap changed


def test_the_single_config_form_keeps_its_config_map_and_its_hash() -> None:
    files = {"app.conf": "level=info"}
    (api,) = _spec(
        [{"name": "api", "image": "a", "config": {"mountPath": "/e", "files": files}}]
    ).components
    assert [c["metadata"]["name"] for c in desired.config_maps(OWNER, api)] == ["ds-api-config"]
    template = desired.deployment(OWNER, api, {})["spec"]["template"]
    old = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]
    assert template["metadata"]["annotations"] == {"appstack.dev/config-hash": old}
    assert template["spec"]["volumes"] == [
        {"name": "config", "configMap": {"name": "ds-api-config"}}
    ]


CONFIGS = ("spec", "components", 0, "configs")


@pytest.mark.parametrize(
    ("component", "problem", "field"),
    [
        (
            _web(CONF, config={"mountPath": "/x", "files": {}}),
            "set config (one ConfigMap) or configs (several), not both",
            CONFIGS,
        ),
        (
            _web(CONF, {**TEMPLATE, "name": "web"}),
            "configs: names and mount paths must be unique",
            CONFIGS,
        ),
        (
            _web(CONF, {**TEMPLATE, "mountPath": "/etc/nginx/conf.d"}),
            "configs: names and mount paths must be unique",
            CONFIGS,
        ),
        (
            _web({**CONF, "name": "nginx"}),
            "configs: a ConfigMap with files is named after the component",
            CONFIGS,
        ),
        (
            _web({**TEMPLATE, "subPath": "other.html"}),
            "subPath must be one of the files",
            (*CONFIGS, 0, "subPath"),
        ),
        (_web({**CONF, "configMap": "x"}), "set exactly one of files, configMap", (*CONFIGS, 0)),
        (
            _web({"name": "x", "mountPath": "/x", "configMap": "c", "subPath": ".."}),
            "subPath must name a file",
            (*CONFIGS, 0, "subPath"),
        ),
    ],
)
def test_bad_configs_are_refused_by_the_models(
    component: dict[str, Any], problem: str, field: Loc
) -> None:
    refused = _refused([component])
    assert _says(refused, field, problem), refused


def test_two_components_may_not_write_the_same_config_map() -> None:
    web = {"name": "web", "image": "x", "config": {"mountPath": "/x", "files": {}}}
    web_config = _web({**CONF, "name": "web-config"}, name="web-config")
    with pytest.raises(
        ValidationError,
        match=r"<stack>-web-config would be written by two "
        r"components \(web, web-config\)",
    ):
        _spec([web, web_config])  # both would write ds-web-config
