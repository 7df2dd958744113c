"""Managed ``mongodb`` middleware → a replica set of ``managed.replicas`` members (pure;
used by :mod:`.middleware`, :mod:`.connections` and the reconciler).

The replica set itself (members' pod, hosts, keyfile, budget) is
:mod:`appstack.controllers.mongodb_replicaset.members`, shared with the ``MongoDBCommunity``
kind; this module fills it in for one middleware member:

* StatefulSet ``<stack>-<member>`` (pods ``-0``, ``-1``, ... started in order, each with its
  own ``data`` volume from the claim template), whose members are named through the
  headless Service ``-hl`` (``<pod>.<stack>-<member>-hl.<namespace>.svc``, published before
  they are ready so that they find each other) and reached by clients through all of them;
* the keyfile comes from the generated Secret ``-keyfile`` (:func:`keyfile_secret`, created
  once like the credentials Secret);
* the ``rs-bootstrap`` sidecar (:mod:`~appstack.controllers.mongodb_replicaset.bootstrap`)
  initiates the set, creates the root and application users (credentials from the
  ``-credentials`` Secret as env) and follows scaling, from the ConfigMap ``-replicaset``
  (:func:`config_map`);
* with more than one member, a PodDisruptionBudget ``<stack>-<member>`` keeps a majority of
  them running through voluntary disruptions (node drains), so a drain never costs the set
  its primary election (:func:`disruption_budget`).
"""

from __future__ import annotations

import json
from typing import Any

from appstack.api.appstack_middleware import Middleware
from appstack.controllers.appstack import labels
from appstack.controllers.appstack.catalog import CATALOG, image
from appstack.controllers.appstack.connections import credentials_secret, prefix, service_name
from appstack.controllers.mongodb_replicaset import bootstrap as boot
from appstack.controllers.mongodb_replicaset import members as rs
from appstack.sdk import (
    ContainerSecurity,
    EnvVarDict,
    KubeObject,
    Manifest,
    secret_env,
    user_resources,
)

KEYFILE_KEY = rs.KEYFILE_KEY
KEYFILE_PATH = rs.KEYFILE_PATH
DATABASE = "app"
HOME = rs.HOME


def keyfile_secret_name(stack: str, member: str) -> str:
    return f"{stack}-{member}-keyfile"


def hosts(owner: KubeObject, mw: Middleware) -> list[str]:
    """Every member's stable host:port, in ordinal order."""
    assert mw.managed is not None  # noqa: S101 - callers pass managed middleware only
    meta = owner["metadata"]
    sts = service_name(meta["name"], mw.name)
    port = CATALOG[mw.type].port
    return rs.hosts(sts, f"{sts}-hl", meta["namespace"], port, mw.managed.replicas)


def replica_set(owner: KubeObject, mw: Middleware) -> rs.ReplicaSetConfig:
    """The desired members: ``_id`` is the pod's ordinal, so it stays when others change."""
    return rs.replica_set(service_name(owner["metadata"]["name"], mw.name), hosts(owner, mw))


def uri_env(owner: KubeObject, mw: object) -> list[EnvVarDict]:
    """``<NAME>_URI`` for a consumer of managed mongodb (nothing for any other member): every
    member and the set's name, the credentials as ``$(VAR)`` references to the secretKeyRef
    env ``<NAME>_USERNAME``/``_PASSWORD`` injected before it (expanded by the kubelet, so
    the Deployment never holds them)."""
    if not isinstance(mw, Middleware) or mw.type != "mongodb" or mw.managed is None:
        return []
    name = service_name(owner["metadata"]["name"], mw.name)
    p = prefix(mw.name)
    login = f"$({p}_USERNAME):$({p}_PASSWORD)"
    value = (
        f"mongodb://{login}@{','.join(hosts(owner, mw))}/{DATABASE}"
        f"?replicaSet={name}&authSource=admin"
    )
    return [{"name": f"{p}_URI", "value": value}]


def keyfile_secret(owner: KubeObject, mw: Middleware) -> Manifest:
    """The members' shared key, generated once, kept like the credentials Secret (no owner
    while the volumes are retained)."""
    assert mw.managed is not None  # noqa: S101
    stack = owner["metadata"]["name"]
    meta = labels.metadata(owner, mw.name, keyfile_secret_name(stack, mw.name))
    if mw.managed.storage.retain_on_delete:
        del meta["ownerReferences"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": meta,
        "stringData": rs.keyfile_data(),
    }


def config_map(owner: KubeObject, mw: Middleware) -> Manifest:
    """The bootstrap script and the desired members it reads on every pass."""
    stack = owner["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": labels.metadata(owner, mw.name, f"{service_name(stack, mw.name)}-replicaset"),
        "data": {
            boot.SCRIPT_KEY: boot.script(CATALOG[mw.type].port),
            boot.CONFIG_KEY: json.dumps(replica_set(owner, mw), indent=2, sort_keys=True),
        },
    }


def pod_spec(owner: KubeObject, mw: Middleware, security: ContainerSecurity) -> dict[str, Any]:
    """The shared members' pod (:func:`~appstack.controllers.mongodb_replicaset.members.pod_spec`)
    with this member's image, keyfile, ConfigMap and credentials env."""
    assert mw.managed is not None  # noqa: S101
    stack = owner["metadata"]["name"]
    engine = CATALOG[mw.type]
    name = service_name(stack, mw.name)
    credentials = credentials_secret(stack, mw.name)
    member_host = f"$(POD_NAME).{name}-hl.{owner['metadata']['namespace']}.svc:{engine.port}"
    members = rs.Members(
        set_name=name,
        image=image(mw.type, mw.managed.image, mw.managed.version),
        port=engine.port,
        data_path=engine.data_path,
        uid=engine.uid,
        keyfile_secret=keyfile_secret_name(stack, mw.name),
        config_map=f"{name}-replicaset",
        resources=user_resources(mw.managed.resources) if mw.managed.resources else None,
        sidecar_env=[
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "MEMBER_HOST", "value": member_host},
            secret_env("ROOT_PASSWORD", credentials, "root-password"),
            secret_env("APP_USERNAME", credentials, "username"),
            secret_env("APP_PASSWORD", credentials, "password"),
        ],
    )
    return rs.pod_spec(members, security)


def disruption_budget(owner: KubeObject, mw: Middleware) -> list[Manifest]:
    """A majority of the members available through voluntary disruptions."""
    assert mw.managed is not None  # noqa: S101 - callers pass managed middleware only
    stack = owner["metadata"]["name"]
    meta = labels.metadata(owner, mw.name, service_name(stack, mw.name))
    return rs.disruption_budget(meta, mw.managed.replicas, labels.selector(stack, mw.name))
