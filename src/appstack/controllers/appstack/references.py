"""Which Secrets and ConfigMaps of its namespace an AppStack reads without owning them:
the index (:func:`referenced`) behind the watches that reconcile a stack when one of them
changes or appears (e.g. the Secret of a third-party service that was
``CredentialsNotFound``). Used by the AppStack reconciler's ``indexers``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from appstack.api.appstack import AppStackSpec
from appstack.api.appstack_component import Component
from appstack.api.appstack_middleware import Middleware
from appstack.controllers.appstack import desired
from appstack.controllers.appstack.connections import credentials_secret
from appstack.runtime import CONFIG_MAP, SECRET
from appstack.sdk import reference


def referenced(stack: dict[str, Any]) -> list[str]:
    """Index values of ``stack``: each existing ConfigMap its components mount and each
    Secret it reads (``secretKeyRef`` env, a third-party or external service's
    ``secretRef``, the generated credentials of its managed middleware: a rotated password
    rolls the instance and its consumers), as :func:`~appstack.sdk.kit.references.reference`
    keys."""
    try:
        spec = AppStackSpec.model_validate(stack.get("spec") or {})
    except ValidationError:
        return []  # an invalid spec is reported; it reads nothing until it changes
    namespace = stack["metadata"].get("namespace")
    members: dict[str, Middleware | Component] = {m.name: m for m in spec.middleware or []}
    members.update({c.name: c for c in spec.components})
    config_maps: set[str] = set()
    name = stack["metadata"]["name"]
    secrets = {
        m.external.secret_ref.name
        for m in spec.middleware or []
        if m.external is not None and m.external.secret_ref is not None
    }
    secrets.update(credentials_secret(name, m.name) for m in spec.middleware or [] if m.managed)
    for c in spec.components:
        config_maps.update(desired.used_config_maps(c))
        if all(used in members for used in c.uses or []):
            secrets.update(desired.used_secrets(c, members, name))
    return sorted(
        [reference(CONFIG_MAP.kind, namespace, n) for n in config_maps]
        + [reference(SECRET.kind, namespace, n) for n in secrets]
    )
