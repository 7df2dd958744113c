"""Names, labels and metadata of an AppStack's children (pure).

Every child is named ``<stack>-<member>[-suffix]``, labelled with ``<group>/stack`` and
``<group>/member`` (selection, pruning, teardown waves; ``<group>`` is the API group,
:data:`appstack.api.kind.GROUP`) and the recommended
``app.kubernetes.io/*`` labels, and carries a controller ownerReference to the AppStack.
Used by :mod:`.middleware`, :mod:`.desired` and the teardown.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from appstack.api.kind import group_key
from appstack.controllers.util.meta import MANAGED_BY
from appstack.sdk import ChildMeta, KubeObject, Manifest, child_metadata

STACK_LABEL = group_key("stack")
MEMBER_LABEL = group_key("member")
CONFIG_HASH = group_key("config-hash")
SECRETS_HASH = group_key("secrets-hash")


def digest(content: Any) -> str:
    """The SHA-256 of ``content`` as sorted JSON (hex): what a pod template carries to roll
    when what it mounts changes."""
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def selector(stack: str, member: str) -> dict[str, str]:
    return {STACK_LABEL: stack, MEMBER_LABEL: member}


def member_label(obj: dict[str, Any]) -> str:
    """The stack member a child belongs to (its :data:`MEMBER_LABEL`)."""
    return str(obj["metadata"].get("labels", {}).get(MEMBER_LABEL, ""))


def metadata(owner: KubeObject, member: str, name: str) -> ChildMeta:
    stack = owner["metadata"]["name"]
    labels = {
        **selector(stack, member),
        **MANAGED_BY,
        "app.kubernetes.io/name": member,
        "app.kubernetes.io/part-of": stack,
    }
    return child_metadata(owner, name, labels)


def service(owner: KubeObject, member: str, name: str, spec: dict[str, Any]) -> Manifest:
    meta = metadata(owner, member, name)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}
