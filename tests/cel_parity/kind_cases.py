"""The AppService and MongoDBCommunity rows of the CEL parity table
(pure data): a base object per kind that every rule accepts and, per rule, the change that
breaks it; boundaries both sides accept where a rule has one."""

from __future__ import annotations

from typing import Any

from tests.cel_parity.schedule_cases import CRONTAB, ETCDCLUSTER
from tests.cel_parity.table import DELETE, Case


def _obj(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "appstack.dev/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


_SECRET = {"secretKeyRef": {"name": "s", "key": "k"}}
APPSERVICE = _obj(
    "AppService",
    "web",
    {
        "image": "nginx:1.27",
        "serviceType": "NodePort",
        "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}],
        "envs": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": _SECRET}],
        "readinessProbe": {"httpGet": {"port": 80}},
        "livenessProbe": {"tcpSocket": {"port": 80}},
    },
)
_USER = {
    "name": "app",
    "db": "admin",
    "passwordSecretRef": {"name": "app-password"},
    "roles": [{"name": "readWrite", "db": "app"}],
    "scramCredentialsSecretName": "app-scram",
}
MONGODB = _obj(
    "MongoDBCommunity",
    "mongo",
    {
        "members": 3,
        "type": "ReplicaSet",
        "version": "6.0.5",
        "security": {"authentication": {"modes": ["SCRAM"]}},
        "users": [_USER],
    },
)

_S = "AppService"


KIND_CASES: tuple[Case, ...] = (
    # AppService
    Case(_S, "", "metadata.name must start", (("metadata.name", "web.v1"),)),
    Case(_S, "", "metadata.name must be at most 63", (("metadata.name", "w" * 64),)),
    Case(_S, "", "metadata.name must be at most 63", (("metadata.name", "w" * 63),), refused=False),
    Case(_S, ".spec", "every port needs a name", (("spec.ports[1].name", DELETE),), "spec.ports"),
    Case(
        _S,
        ".spec",
        "every port needs a name",
        (("spec.ports", [{"port": 80}]),),
        "spec.ports",
        refused=False,
    ),
    Case(_S, ".spec", "port names must be unique", (("spec.ports[1].name", "http"),), "spec.ports"),
    Case(
        _S,
        ".spec",
        "port numbers must be unique",
        (("spec.ports[1].protocol", "TCP"), ("spec.ports[1].port", 80)),
        "spec.ports",
    ),
    Case(
        _S,
        ".spec",
        "port numbers must be unique",
        (("spec.ports[1].port", 80),),
        "spec.ports",
        refused=False,
    ),
    Case(
        _S,
        ".spec",
        "nodePort needs serviceType",
        (("spec.serviceType", "ClusterIP"), ("spec.ports[0].nodePort", 30080)),
        "spec.serviceType",
    ),
    Case(
        _S,
        ".spec.envs[*]",
        "set either value or valueFrom",
        (("spec.envs[0].valueFrom", _SECRET),),
        "spec.envs[0]",
    ),
    Case(
        _S,
        ".spec.envs[*].valueFrom",
        "valueFrom needs exactly one",
        (("spec.envs[1].valueFrom.fieldRef", {"fieldPath": "metadata.name"}),),
        "spec.envs[1].valueFrom",
    ),
    Case(
        _S,
        ".spec.readinessProbe",
        "a probe needs exactly one",
        (("spec.readinessProbe.exec", {"command": ["true"]}),),
        "spec.readinessProbe",
    ),
    Case(
        _S,
        ".spec.livenessProbe",
        "a probe needs exactly one",
        (("spec.livenessProbe", {"periodSeconds": 5}),),
        "spec.livenessProbe",
    ),
    # MongoDBCommunity
    Case("MongoDBCommunity", "", "metadata.name must start", (("metadata.name", "mongo.v1"),)),
    Case(
        "MongoDBCommunity", "", "metadata.name must be at most 40", (("metadata.name", "m" * 41),)
    ),
    Case(
        "MongoDBCommunity",
        ".spec.version",
        "version must be a MongoDB",
        (("spec.version", "4.0.28"),),
        "spec.version",
    ),
    Case(
        "MongoDBCommunity",
        ".spec.version",
        "version must be a MongoDB",
        (("spec.version", "9.0.0"),),
        "spec.version",
    ),
    Case(  # RE2's $ ends the text; Python's re.match('...$') took a final newline
        "MongoDBCommunity",
        ".spec.version",
        "version must be a MongoDB",
        (("spec.version", "4.2.6\n"),),
        "spec.version",
    ),
    Case(
        "MongoDBCommunity",
        ".spec.version",
        "version must be a MongoDB",
        (("spec.version", "4.2.6"),),
        "spec.version",
        refused=False,
    ),
    Case(
        "MongoDBCommunity",
        ".spec.users",
        "users: each name and db",
        (("spec.users", [_USER, _USER]),),
        "spec.users",
    ),
    Case(
        "MongoDBCommunity",
        ".spec.users[*]",
        "appstack-admin in admin",
        (("spec.users[0].name", "appstack-admin"),),
        "spec.users[0].name",
    ),
    Case(
        "MongoDBCommunity",
        ".spec.users[*]",
        "appstack-admin in admin",
        (("spec.users[0].name", "appstack-admin"), ("spec.users[0].db", "app")),
        "spec.users[0].name",
        refused=False,
    ),
)

BASES: dict[str, dict[str, Any]] = {
    "AppService": APPSERVICE,
    "CronTab": CRONTAB,
    "EtcdCluster": ETCDCLUSTER,
    "MongoDBCommunity": MONGODB,
}
