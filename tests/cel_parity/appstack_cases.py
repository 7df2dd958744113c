"""The AppStack rows of the CEL parity table (pure data): a base stack that every rule
accepts — managed mongodb and mysql, an external service by url and one by host, two
components with ports, configs, env, probes — and, per rule of the stack, its names and its
managed middleware, the change that breaks it (external middleware and components:
:mod:`tests.cel_parity.component_cases`)."""

from __future__ import annotations

from typing import Any

from tests.cel_parity.table import DELETE, Case

STACK: dict[str, Any] = {
    "apiVersion": "appstack.dev/v1",
    "kind": "AppStack",
    "metadata": {"name": "shop"},
    "spec": {
        "middleware": [
            {
                "name": "db",
                "type": "mongodb",
                "managed": {"replicas": 3, "storage": {"size": "1Gi", "storageClassName": "std"}},
            },
            {
                "name": "cfg",
                "type": "mysql",
                "managed": {
                    "storage": {"size": "1Gi"},
                    "configFiles": {"my.cnf": "[mysqld]\n"},
                    "initScriptsConfigMap": "init",
                },
            },
            {
                "name": "uuc",
                "type": "service",
                "external": {
                    "url": "https://uuc.example.com:8443/uuc",
                    "authMethod": "bearer",
                    "secretRef": {"name": "uuc-token"},
                },
            },
            {"name": "cache", "type": "redis", "external": {"host": "redis.example", "port": 6379}},
        ],
        "components": [
            {
                "name": "api",
                "image": "registry.example.com/api:1.0",
                "serviceName": "api-svc",
                "ports": [{"name": "http", "port": 8080}, {"port": 9090}],
                "uses": ["db", "uuc"],
                "env": {"MODE": "prod"},
                "envs": [
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                    {"name": "X", "value": "1"},
                ],
                "configs": [
                    {
                        "name": "api",
                        "mountPath": "/app/config",
                        "files": {"a.yml": "x: 1\n"},
                        "subPath": "a.yml",
                    },
                    {"name": "shared", "mountPath": "/shared", "configMap": "shared"},
                ],
                "readinessProbe": {"httpGet": {"path": "/", "port": 8080}},
                "livenessProbe": {"tcpSocket": {"port": 8080}},
            },
            {
                "name": "web",
                "image": "nginx:1.27",
                "ports": [{"name": "http", "port": 80}],
                "dependsOn": ["api", "db"],
                "uses": ["api"],
            },
        ],
    },
}

_K = "AppStack"
_MW = ".spec.middleware[*]"
_C = ".spec.components[*]"
_STORAGE = ".spec.middleware[*].managed.storage"
_DB = "spec.middleware[0]"
_MYSQL = "spec.middleware[1]"
_CACHE = "spec.middleware[3]"
_WEB = "spec.components[1]"

APPSTACK_CASES: tuple[Case, ...] = (
    # metadata.name, at the root (no field named)
    Case(_K, "", "metadata.name must start", (("metadata.name", "shop.v1"),)),
    # 64 characters: every <stack>-<member> is too long as well
    Case(_K, "", "metadata.name must be at most 63", (("metadata.name", "s" * 64),), also=True),
    Case(
        _K,
        "",
        "<stack>-<member> names a Service",
        (("metadata.name", "s" * 23), (f"{_WEB}.name", "w" * 40)),
    ),
    Case(
        _K,
        "",
        "<stack>-<member> names a Service",
        (("metadata.name", "s" * 22), (f"{_WEB}.name", "w" * 40)),
        refused=False,
    ),
    Case(
        _K,
        "",
        "<stack>-<middleware> names the StatefulSet",
        (("metadata.name", "s" * 12), (f"{_MYSQL}.name", "c" * 40)),
    ),
    Case(
        _K,
        "",
        "<stack>-<middleware> names the StatefulSet",
        (("metadata.name", "s" * 11), (f"{_MYSQL}.name", "c" * 40)),
        refused=False,
    ),
    # the members of the stack
    Case(
        _K, ".spec", "component names must be unique", ((f"{_WEB}.name", "api"),), "spec.components"
    ),
    Case(
        _K,
        ".spec",
        "middleware names must be unique",
        ((f"{_CACHE}.name", "uuc"),),
        "spec.middleware",
    ),
    Case(
        _K,
        ".spec",
        "a component may not have the name",
        ((f"{_WEB}.name", "cache"),),
        "spec.components",
    ),
    Case(
        _K,
        ".spec",
        "serviceName must be unique",
        ((f"{_WEB}.serviceName", "api-svc"),),
        "spec.components",
    ),
    Case(
        _K,
        ".spec",
        "dependsOn must name members",
        ((f"{_WEB}.dependsOn", ["api", "nope"]),),
        "spec.components",
    ),
    Case(
        _K, ".spec", "uses must name middleware", ((f"{_WEB}.uses", ["nope"]),), "spec.components"
    ),
    Case(  # ports: [] is no ports (the API server once took it for some)
        _K,
        ".spec",
        "uses must name middleware",
        (("spec.components[0].ports", []),),
        "spec.components",
    ),
    # one middleware entry
    Case(_K, _MW, "set exactly one of managed", ((f"{_CACHE}.managed", {"replicas": 1}),), _CACHE),
    Case(
        _K, _MW, "type service is a third-party", ((f"{_CACHE}.type", "service"),), f"{_CACHE}.type"
    ),
    Case(
        _K,
        _MW,
        "type cannot change",
        ((f"{_CACHE}.type", "postgres"),),
        f"{_CACHE}.type",
        old=(),
    ),
    Case(
        _K,
        _MW,
        "managed.replicas: only mongodb",
        ((f"{_MYSQL}.managed.replicas", 2),),
        f"{_MYSQL}.managed.replicas",
    ),
    Case(
        _K,
        _MW,
        "managed.initScriptsConfigMap",
        ((f"{_DB}.managed.initScriptsConfigMap", "i"),),
        f"{_DB}.managed.initScriptsConfigMap",
    ),
    Case(
        _K,
        _MW,
        "managed.configFiles",
        ((f"{_MYSQL}.managed.configFiles", {"my.conf": "x"}),),
        f"{_MYSQL}.managed.configFiles",
    ),
    Case(
        _K,
        _MW,
        "managed.configFiles",
        ((f"{_DB}.managed.configFiles", {"a.cnf": "x"}),),
        f"{_DB}.managed.configFiles",
    ),
    Case(  # present but empty is still set (the models once took {} for unset)
        _K,
        _MW,
        "managed.configFiles",
        ((f"{_DB}.managed.configFiles", {}),),
        f"{_DB}.managed.configFiles",
    ),
    Case(
        _K,
        _MW,
        "managed.replicas: a replica set keeps",
        ((f"{_DB}.managed.replicas", 2),),
        f"{_DB}.managed.replicas",
        old=((f"{_DB}.managed.replicas", 5),),
    ),
    Case(
        _K,
        _MW,
        "managed.replicas: a replica set keeps",
        ((f"{_DB}.managed.replicas", 3),),
        f"{_DB}.managed.replicas",
        refused=False,
        old=((f"{_DB}.managed.replicas", 5),),
    ),
    Case(
        _K,
        _STORAGE,
        "managed.storage.storageClassName cannot",
        ((f"{_DB}.managed.storage.storageClassName", DELETE),),
        f"{_DB}.managed.storage.storageClassName",
        old=(),
    ),
    Case(
        _K,
        f"{_STORAGE}.size",
        "managed.storage.size cannot",
        ((f"{_DB}.managed.storage.size", "2Gi"),),
        f"{_DB}.managed.storage.size",
        old=(),
    ),
    Case(
        _K,
        f"{_STORAGE}.storageClassName",
        "managed.storage.storageClassName cannot",
        ((f"{_DB}.managed.storage.storageClassName", "fast"),),
        f"{_DB}.managed.storage.storageClassName",
        old=(),
    ),
)
