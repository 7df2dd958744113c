"""AppStack building blocks: spec validation, dependency order, connection injection."""

from __future__ import annotations

import datetime
import ipaddress
import platform
import socket
from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.appstack import AppStack, AppStackSpec
from appstack.api.graph import blocked_by, find_cycle, start_order, teardown_order
from appstack.controllers.appstack import catalog, desired, middleware, teardown
from appstack.controllers.appstack.addresses import (
    ExternalIPPolicy,
    address,
    parse_networks,
    refusal,
)
from appstack.controllers.appstack.connections import connection_env
from appstack.controllers.util.workloads import BASELINE, RESTRICTED, security_context
from appstack.sdk import SecurityContext

MYSQL = {"name": "mysql", "type": "mysql", "managed": {}}
Loc = tuple[str | int, ...]


def _spec(
    components: list[dict[str, Any]],
    middleware: list[dict[str, Any]] | None = None,
) -> AppStackSpec:
    """The spec of a whole AppStack, validated as admission validates it (CEL rules too)."""
    spec = {"middleware": middleware or [MYSQL], "components": components}
    return AppStack.model_validate({"metadata": {"name": "stack"}, "spec": spec}).spec


def _refused(
    components: list[dict[str, Any]], middleware: list[dict[str, Any]] | None = None
) -> list[tuple[Loc, str]]:
    """Where and why such a stack is refused: each error's field and message."""
    with pytest.raises(ValidationError) as caught:
        _spec(components, middleware)
    return [(e["loc"], e["msg"]) for e in caught.value.errors()]


def test_a_dataservice_like_stack_is_valid_and_starts_in_dependency_order() -> None:
    spec = _spec(
        [
            {"name": "eureka", "image": "eureka"},
            {"name": "uuc", "image": "uuc", "uses": ["mysql"], "dependsOn": ["eureka"]},
            {"name": "gateway", "image": "gw", "dependsOn": ["uuc"]},
            {"name": "web", "image": "web", "dependsOn": ["gateway"]},
        ]
    )
    edges = {c.name: c.dependencies() for c in spec.components}
    assert start_order(edges) == [["eureka", "mysql"], ["uuc"], ["gateway"], ["web"]]
    assert teardown_order(edges)[0] == ["web"]
    assert blocked_by("uuc", edges, ready={"eureka"}) == ["mysql"]
    assert blocked_by("uuc", edges, ready={"eureka", "mysql"}) == []


@pytest.mark.parametrize(
    ("components", "message", "field"),
    [
        (
            [
                {"name": "a", "image": "x", "dependsOn": ["b"]},
                {"name": "b", "image": "x", "dependsOn": ["a"]},
            ],
            "dependency cycle: a -> b -> a",
            ("spec",),
        ),
        (
            [{"name": "a", "image": "x", "dependsOn": ["nope"]}],
            "dependsOn must name members of this stack",
            ("spec", "components"),
        ),
        (
            [{"name": "a", "image": "x", "uses": ["a"]}],
            "uses must name middleware, or a component with ports, of this stack",
            ("spec", "components"),
        ),
        (
            [{"name": "mysql", "image": "x"}],
            "a component may not have the name of a middleware",
            ("spec", "components"),
        ),
        (
            [{"name": "Bad_Name", "image": "x"}],
            "String should match pattern",
            ("spec", "components", 0, "name"),
        ),
    ],
)
def test_invalid_stacks_are_rejected_with_the_problem_spelled_out(
    components: list[dict[str, Any]], message: str, field: Loc
) -> None:
    refused = _refused(components)
    assert any(loc == field and message in msg for loc, msg in refused), refused


def test_external_middleware_takes_credentials_only_by_secret_ref() -> None:
    inline = {"host": "db.example.com", "port": 3306, "password": "hunter2"}
    assert _refused(
        [{"name": "a", "image": "x"}], [{"name": "db", "type": "mysql", "external": inline}]
    ) == [
        (
            ("spec", "middleware", 0, "external", "password"),
            "credentials are never inline: use secretRef",
        )
    ]
    assert _refused([{"name": "a", "image": "x"}], [{"name": "db", "type": "mysql"}]) == [
        (("spec", "middleware", 0), "set exactly one of managed, external")
    ]


def test_find_cycle_is_none_for_a_dag() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None


def test_using_managed_middleware_injects_host_port_and_secret_references() -> None:
    managed = AppStackSpec.model_validate(
        {
            "middleware": [{"name": "order-db", "type": "mysql", "managed": {}}],
            "components": [{"name": "api", "image": "x", "uses": ["order-db"]}],
        }
    )
    env = {e["name"]: e for e in connection_env("shop", managed.middleware[0])}
    assert env["ORDER_DB_HOST"]["value"] == "shop-order-db"
    assert env["ORDER_DB_PORT"]["value"] == "3306"
    assert env["ORDER_DB_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "shop-order-db-credentials",
        "key": "password",
    }
    assert "value" not in env["ORDER_DB_PASSWORD"]


def test_a_service_name_names_the_service_and_what_uses_injects() -> None:
    spec = AppStackSpec.model_validate(
        {
            "middleware": [{**MYSQL, "serviceName": "mysql-dataservice"}],
            "components": [
                {
                    "name": "api",
                    "serviceName": "api-manager",
                    "image": "x",
                    "ports": [{"port": 9085}],
                },
                {"name": "web", "image": "x", "uses": ["mysql", "api"]},
            ],
        }
    )
    env = {e["name"]: e.get("value") for e in connection_env("ds", spec.middleware[0])}
    assert env["MYSQL_HOST"] == "mysql-dataservice"
    env = {e["name"]: e.get("value") for e in connection_env("ds", spec.components[0])}
    assert env["API_URL"] == "http://api-manager:9085"
    owner = {"apiVersion": "appstack.dev/v1", "kind": "AppStack"}
    owner["metadata"] = {"name": "ds", "namespace": "n", "uid": "u"}
    service = desired.component_service(owner, spec.components[0])
    assert service is not None
    assert service["metadata"]["name"] == "api-manager"
    names = [s["metadata"]["name"] for s in middleware.managed_services(owner, spec.middleware[0])]
    assert names == ["ds-mysql-hl", "mysql-dataservice"]  # the headless one keeps the stack's


def test_service_names_are_unique_and_not_the_stacks_own() -> None:
    assert _refused(
        [{"name": "a", "image": "x", "serviceName": "x"}], [{**MYSQL, "serviceName": "x"}]
    ) == [(("spec", "components"), "serviceName must be unique in the stack")]
    stack = {"apiVersion": "appstack.dev/v1", "kind": "AppStack", "metadata": {"name": "ds"}}
    stack["spec"] = {"components": [{"name": "a", "image": "x", "serviceName": "ds-b"}]}
    with pytest.raises(ValidationError, match="may not start with '<stack>-'"):
        AppStack.model_validate(stack)
    stack["spec"] = {"components": [{"name": "a", "image": "x", "serviceName": "b"}]}
    AppStack.model_validate(stack)


def test_external_middleware_uses_the_users_secret_and_port() -> None:
    stack = AppStackSpec.model_validate(
        {
            "middleware": [
                {
                    "name": "cache",
                    "type": "redis",
                    "external": {
                        "host": "10.1.2.3",
                        "port": 7000,
                        "secretRef": {"name": "redis-auth"},
                    },
                }
            ],
            "components": [{"name": "api", "image": "x", "uses": ["cache"]}],
        }
    )
    env = {e["name"]: e for e in connection_env("shop", stack.middleware[0])}
    assert env["CACHE_PORT"]["value"] == "7000"
    assert "CACHE_USERNAME" not in env  # redis has no user
    assert env["CACHE_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "redis-auth"


def test_catalog_images_can_be_overridden() -> None:
    assert catalog.image("postgres", None, None) == "postgres:16"
    assert catalog.image("postgres", None, "17") == "postgres:17"
    assert catalog.image("mysql", "registry.local/mysql", "8.0") == "registry.local/mysql:8.0"


def test_the_secrets_version_follows_uid_and_resource_version_never_the_data() -> None:
    def secret(uid: str, version: str, password: str) -> dict[str, Any]:
        meta = {"uid": uid, "resourceVersion": version}
        return {"metadata": meta, "data": {"password": password}}

    one = desired.secrets_version([("db", secret("u1", "7", "aHVudGVyMg=="))])
    assert one == desired.secrets_version([("db", secret("u1", "7", "c2VjcmV0"))])
    assert one != desired.secrets_version([("db", secret("u1", "8", "aHVudGVyMg=="))])
    assert one != desired.secrets_version([("db", secret("u2", "7", "aHVudGVyMg=="))])
    assert one != desired.secrets_version([("db", None)])
    assert len(one) == 16


def test_managed_middleware_pods_get_no_api_token() -> None:
    owner = {"apiVersion": "appstack.dev/v1", "kind": "AppStack"}
    owner["metadata"] = {"name": "shop", "namespace": "ns", "uid": "u-1"}
    for engine in ("mysql", "postgres", "redis", "mongodb"):
        spec = _spec([{"name": "a", "image": "x"}], [{"name": "db", "type": engine, "managed": {}}])
        (sts,) = [
            c for c in middleware.children(owner, spec.middleware[0]) if c["kind"] == "StatefulSet"
        ]
        assert sts["spec"]["template"]["spec"]["automountServiceAccountToken"] is False, engine


def test_the_credentials_secret_lives_as_long_as_the_data_volume() -> None:
    owner = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "shop", "namespace": "ns", "uid": "u-1"},
    }

    def secret(storage: dict[str, Any]) -> dict[str, Any]:
        spec = AppStackSpec.model_validate(
            {
                "middleware": [{"name": "db", "type": "mysql", "managed": {"storage": storage}}],
                "components": [{"name": "api", "image": "x", "uses": ["db"]}],
            }
        )
        return middleware.credentials(owner, spec.middleware[0])

    retained = secret({})  # the default: the volume outlives the stack, so does the Secret
    assert "ownerReferences" not in retained["metadata"]
    assert retained["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "appstack"
    deleted = secret({"retainOnDelete": False})
    assert deleted["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def test_a_wave_that_does_not_go_is_looked_at_ever_less_often() -> None:
    now = datetime.datetime(2026, 1, 1, 12, 0, 30, tzinfo=datetime.timezone.utc)
    marked = {"metadata": {"deletionTimestamp": "2026-01-01T12:00:00Z"}}
    assert teardown.terminating_for(marked, now) == 30.0
    assert teardown.terminating_for({"metadata": {}}, now) == 0.0
    assert teardown.poll_after(0.0) == teardown.WAVE_POLL
    assert teardown.poll_after(30.0) == 7.5
    assert teardown.poll_after(3600.0) == teardown.MAX_POLL


def test_ip_backed_external_middleware_is_an_opt_in_that_never_reaches_the_node() -> None:
    off = ExternalIPPolicy()
    assert off.refusal("db.example.com") is None  # host names: ExternalName, unaffected
    assert "--allow-external-ips" in (off.refusal("192.0.2.10") or "")
    on = ExternalIPPolicy(allow=True, deny=parse_networks(["10.96.0.0/12", "10.244.0.0/16"]))
    assert on.refusal("192.0.2.10") is None
    assert on.refusal("2001:db8::1") is None
    unspecified = "0.0.0.0"  # noqa: S104 - an address to refuse, not to bind
    for host in ("127.0.0.1", "169.254.169.254", unspecified, "::1", "fe80::1", "::ffff:127.0.0.1"):
        assert on.refusal(host), host
    assert "10.96.0.0/12" in (on.refusal("10.100.0.1") or "")
    assert "10.244.0.0/16" in (on.refusal("10.244.3.7") or "")


def test_addresses_carried_in_ipv6_and_names_inside_the_cluster_are_refused() -> None:
    on = ExternalIPPolicy(allow=True, deny=parse_networks(["10.96.0.0/12"]))
    carried = {
        "::ffff:169.254.169.254": "::ffff:0:0/96",
        "64:ff9b::a9fe:a9fe": "169.254.0.0/16",  # NAT64
        "64:ff9b::a60:1": "10.96.0.0/12",  # NAT64 of the installer's service range
        "2002:7f00:1::": "127.0.0.0/8",  # 6to4
        "::7f00:1": "127.0.0.0/8",  # IPv4-compatible
        "64:ff9b:1::5": "64:ff9b:1::/48",
        "100.100.100.200": "100.100.100.200/32",
        "168.63.129.16": "168.63.129.16/32",
    }
    for host, network in carried.items():
        assert f"is in {network}" in (on.refusal(host) or ""), host
    assert on.refusal("64:ff9b::c000:20a") is None  # NAT64 of 192.0.2.10: fine
    for name in (
        "localhost",
        "LocalHost.",
        "api.localhost",
        "kubernetes",
        "kubernetes.default",
        "kube-dns.kube-system",
        "other.team-b.svc",
        "kube-dns.kube-system.svc.cluster.local",
        "metadata.google.internal",
        "instance-data",
    ):
        assert "--allow-external-cluster-names" in (on.refusal(name) or ""), name
    for name in ("db.example.com", "db", "mysql.team-a.example.org", "example.com"):
        assert on.refusal(name) is None, name
    assert ExternalIPPolicy(allow_cluster_names=True).refusal("kubernetes.default") is None


# Each is 169.254.169.254, 127.0.0.1 or 10.96.0.1 to some client (issue #34): inet_aton's
# forms to glibc's and musl's getaddrinfo, a trailing dot to WHATWG URL parsers (Node's
# fetch), IPv6 with a zone or in brackets. Before, ipaddress.ip_address refused them and
# they were judged as host names.
SPELLINGS = {
    "169.254.169.254.": "169.254.0.0/16",
    "10.96.0.1.": "10.96.0.0/12",
    "127.1": "127.0.0.0/8",
    "2130706433": "127.0.0.0/8",
    "0x7f.0.0.1": "127.0.0.0/8",
    "0177.0.0.1": "127.0.0.0/8",
    "127.000.000.001": "127.0.0.0/8",
    "0xa9.0xfe.0xa9.0xfe": "169.254.0.0/16",
    "169.254.43518": "169.254.0.0/16",
    "2852039166.": "169.254.0.0/16",
    "012.0140.0.1": "10.96.0.0/12",  # octal: 10.96.0.1
    "[::1]": "::1/128",
    "fe80::1%eth0": "fe80::/10",
    "[fe80::a9fe:a9fe%1]": "fe80::/10",
    "::ffff:169.254.169.254.": "::ffff:0:0/96",
}


def test_every_spelling_of_an_address_is_judged_as_that_address() -> None:
    on = ExternalIPPolicy(allow=True, deny=parse_networks(["10.96.0.0/12"]))
    off = ExternalIPPolicy()
    for host, network in SPELLINGS.items():
        said = on.refusal(host) or ""
        assert f"is in {network}" in said, host
        assert said.startswith(host), said  # the user's spelling, then the address
        assert "--allow-external-ips" in (off.refusal(host) or ""), host
    assert on.refusal("192.0.2.10.") is None  # an allowed address stays allowed
    assert "(the address 192.0.2.10)" in (off.refusal("0xc0.0.2.10") or "")
    # Host names stay host names: what they resolve to cannot be judged here (docs)
    for name in (
        "169.254.169.254.nip.io",
        "1.2.3.4.5",
        "db.example.com.",
        "0x7f.example",
        "08.0.0.1",
    ):
        assert address(name) is None, name
        assert off.refusal(name) is None, name


async def test_an_address_spelt_as_a_name_is_not_taken_for_service_dot_namespace() -> None:
    """``10.96`` is 10.0.0.96, not Service ``10`` of a namespace ``96``."""

    async def exists(name: str) -> bool | None:
        raise AssertionError(f"asked about namespace {name}")

    policy = ExternalIPPolicy()
    assert "--allow-external-ips" in (await refusal(policy, "10.96", exists) or "")
    assert "--allow-external-ips" in (await refusal(policy, "169.254.169.254.", exists) or "")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="compared with glibc's parser")
def test_addresses_are_read_as_glibc_getaddrinfo_reads_them() -> None:
    """:func:`address` agrees with the resolver the pods' images mostly carry (numeric
    hosts only, nothing looked up). Ours on top: a trailing dot, brackets, and a zone naming
    any interface (glibc takes only the pod's own: unknown here)."""
    corpus = [
        *(h for h in SPELLINGS if not h.endswith(".") and h[0] != "[" and "%" not in h),
        *("1.2.3.4", "4294967295", "4294967296", "1.16777215", "1.16777216", "1.2.65535"),
        *("1.2.65536", "256.1.1.1", "0", "0x", "0x.1.1.1", "1..2", "09.1.1.1", "0x1g"),
        *("1.2.3.4.5", "01.02.03.004", "0XFF.1", "::ffff:1.2.3.4", "::ffff:0x7f.0.0.1"),
        *("2001:db8::1", "2001:db8::1%1", "fe80::1%lo", "1:2:3:4:5:6:7:8:9", "-1.2.3.4"),
    ]

    def glibc(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        numeric = {"type": socket.SOCK_STREAM, "flags": socket.AI_NUMERICHOST}
        try:  # bytes: no IDNA encoding on the way
            info, *_ = socket.getaddrinfo(host.encode(), None, **numeric)
        except socket.gaierror:
            return None
        return ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])

    for host in corpus:
        assert address(host) == glibc(host), host


def test_an_address_however_spelt_is_written_as_an_endpoint_slice() -> None:
    owner = {
        "apiVersion": "appstack.dev/v1",
        "kind": "AppStack",
        "metadata": {"name": "shop", "namespace": "ns", "uid": "u-1"},
    }

    def written(host: str) -> list[dict[str, Any]]:
        spec = _spec(
            [{"name": "api", "image": "x", "uses": ["db"]}],
            [{"name": "db", "type": "postgres", "external": {"host": host, "port": 5432}}],
        )
        return middleware.children(owner, spec.middleware[0])

    for host, (family, canonical) in {
        "192.0.2.10.": ("IPv4", "192.0.2.10"),
        "0xc0.0.2.10": ("IPv4", "192.0.2.10"),
        "3221225994": ("IPv4", "192.0.2.10"),
        "[2001:db8::1]": ("IPv6", "2001:db8::1"),
        "2001:db8::1%eth0": ("IPv6", "2001:db8::1"),
    }.items():
        service, endpoints = written(host)
        assert service["spec"]["type"] == "ClusterIP", host
        assert endpoints["addressType"] == family
        assert endpoints["endpoints"][0]["addresses"] == [canonical], host
    (service,) = written("db.example.com.")
    assert service["spec"] == {
        "type": "ExternalName",
        "externalName": "db.example.com.",
        "ports": [{"name": "postgres", "port": 5432, "protocol": "TCP"}],
    }


def test_workloads_are_restricted_unless_the_user_overrides_a_field() -> None:
    assert security_context(None) == RESTRICTED
    # baseline: hardening that runs any image, root ones included (no user, no capabilities)
    assert security_context(None, level="baseline") == BASELINE
    assert "runAsNonRoot" not in BASELINE
    assert "capabilities" not in BASELINE
    root = SecurityContext.model_validate({"runAsNonRoot": False, "runAsUser": 0})
    merged = security_context(root, {"runAsUser": 999})
    assert merged["runAsNonRoot"] is False
    assert merged["runAsUser"] == 0  # the user's word over the engine's default
    assert merged["capabilities"] == {"drop": ["ALL"]}
    assert merged["seccompProfile"] == {"type": "RuntimeDefault"}


def test_a_privileged_override_does_not_keep_the_levels_no_escalation() -> None:
    """The API server refuses ``privileged`` (or an added SYS_ADMIN) beside
    ``allowPrivilegeEscalation: false`` as invalid: the level's default gives way, so the
    refusal the user sees is the policy's or Pod Security's, about what they asked for."""
    for asked in ({"privileged": True}, {"capabilities": {"add": ["SYS_ADMIN"]}}):
        merged = security_context(SecurityContext.model_validate(asked), level="baseline")
        assert "allowPrivilegeEscalation" not in merged, asked
        assert merged["seccompProfile"] == {"type": "RuntimeDefault"}
    said = {"privileged": True, "allowPrivilegeEscalation": False}
    assert (
        security_context(SecurityContext.model_validate(said))["allowPrivilegeEscalation"] is False
    )
    plain = security_context(SecurityContext.model_validate({"runAsUser": 0}), level="baseline")
    assert plain["allowPrivilegeEscalation"] is False


async def test_svc_dot_namespace_is_refused_when_that_namespace_exists() -> None:
    """``api.team-b`` reaches team-b's Service ``api`` through the search path; ``example.com``
    is a host (no namespace ``com``); a namespace the operator cannot read is not assumed."""
    namespaces = {"team-b": True, "com": False, "hidden": None}

    async def exists(name: str) -> bool | None:
        return namespaces[name]

    policy = ExternalIPPolicy()
    said = await refusal(policy, "api.team-b", exists)
    assert said is not None
    assert "Service api of namespace team-b" in said
    assert await refusal(policy, "example.com", exists) is None
    assert await refusal(policy, "db.hidden", exists) is None
    assert await refusal(policy, "db.example.com", exists) is None
    assert await refusal(ExternalIPPolicy(allow_cluster_names=True), "api.team-b", exists) is None
    assert "kube-system" not in namespaces  # decided without asking, as before
    assert await refusal(policy, "kube-dns.kube-system", exists) is not None
