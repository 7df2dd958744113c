"""Per user of a MongoDBCommunity, the Secret applications connect with (pure, unit-tested):
``<name>-<db>-<user>`` (the community operator's name, made a valid object name) with
``connectionString.standard`` (every member, the replica set's name),
``connectionString.standardSrv`` (the headless Service's SRV records), ``username`` and
``password``. Built by the reconciler from the password it reads from the user's own
Secret; the password goes nowhere else (not status, Events, logs or ConfigMaps).
"""

from __future__ import annotations

import base64
import re
from urllib.parse import quote

from appstack.api.mongodbcommunity import User
from appstack.controllers.mongodbcommunity import desired
from appstack.controllers.util.meta import child_labels
from appstack.sdk import KubeObject, Manifest, child_metadata

_INVALID = re.compile(r"[^a-z0-9.-]+")

COMPONENT = "connection"  # the label of these Secrets (the reconciler caches only them)


def connection_secret_name(name: str, user: User) -> str:
    """``<name>-<db>-<user>``, lowercased, other characters as ``-`` (a valid Secret name)."""
    raw = _INVALID.sub("-", f"{name}-{user.db}-{user.name}".lower())
    return raw.strip("-.")[:253].rstrip("-.")


def connection_strings(obj: KubeObject, members: int, user: User, password: str) -> dict[str, str]:
    meta = obj["metadata"]
    login = f"{quote(user.name, safe='')}:{quote(password, safe='')}"
    options = f"replicaSet={meta['name']}&ssl=false"
    hosts = ",".join(desired.hosts(obj, members))
    srv = f"{desired.service_name(meta['name'])}.{meta['namespace']}.svc"
    return {
        "connectionString.standard": f"mongodb://{login}@{hosts}/{user.db}?{options}",
        "connectionString.standardSrv": f"mongodb+srv://{login}@{srv}/{user.db}?{options}",
        "username": user.name,
        "password": password,
    }


def connection_secret(obj: KubeObject, members: int, user: User, password: str) -> Manifest:
    name = obj["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": child_metadata(
            obj, connection_secret_name(name, user), child_labels(name, COMPONENT)
        ),
        # data, not stringData: what the API server returns, so an unchanged one is not
        # written again (compared with the child as it is)
        "data": {
            k: base64.b64encode(v.encode()).decode()
            for k, v in connection_strings(obj, members, user, password).items()
        },
    }


def mongo_uri(obj: KubeObject, members: int) -> str:
    """Where clients connect, without credentials (status.mongoUri)."""
    hosts = ",".join(desired.hosts(obj, members))
    return f"mongodb://{hosts}/?replicaSet={obj['metadata']['name']}"
