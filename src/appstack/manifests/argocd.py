"""Argo CD health checks for our kinds (pure): the Lua each kind's health is read with, and
the ``argocd-cm`` patch that installs them (deploy/argocd/health-patch.yaml).

Argo CD knows Deployments; for a custom resource it needs a Lua health script
(``resource.customizations.health.<group>_<Kind>``). One script serves every registered
kind (:data:`appstack.controllers.registry.ALL`), told which condition means "up": the
ready condition its registration declares (``Ready``; an EtcdCluster's ``Available``).
The operator has not yet seen the latest generation → ``Progressing``; ``Degraded=True`` →
``Degraded`` with its message; the up condition True → ``Healthy`` (``Suspended`` when its
reason is ``Suspended``, as a suspended CronTab's); anything else → ``Progressing`` with the
up condition's message. Tested against the status the controllers' own status functions
write (tests/unit/manifests/test_argocd_health.py).
"""

from __future__ import annotations

from typing import Any

import yaml

from appstack.controllers.registry import ALL, by_kind
from appstack.sdk import Registration, config_map

SCRIPT = """\
-- appstack {kind}: health from the conditions the operator writes
local hs = {{}}
local up_type = "{up}"
if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "waiting for the appstack operator"
  return hs
end
if obj.metadata.generation ~= nil and (obj.status.observedGeneration == nil
    or obj.status.observedGeneration < obj.metadata.generation) then
  hs.status = "Progressing"
  hs.message = "waiting for the operator to see generation " .. obj.metadata.generation
  return hs
end
local up = nil
local degraded = nil
for _, c in ipairs(obj.status.conditions) do
  if c.type == up_type then up = c end
  if c.type == "Degraded" then degraded = c end
end
if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = (degraded.reason or "") .. ": " .. (degraded.message or "")
  return hs
end
if up ~= nil and up.status == "True" then
  if up.reason == "Suspended" then
    hs.status = "Suspended"
  else
    hs.status = "Healthy"
  end
  hs.message = up.message or ""
  return hs
end
hs.status = "Progressing"
if up ~= nil then
  hs.message = (up.reason or "") .. ": " .. (up.message or "")
else
  hs.message = "waiting for the " .. up_type .. " condition"
end
return hs
"""


def _script(controller: Registration) -> str:
    return SCRIPT.format(kind=controller.kind.kind, up=controller.ready_condition)


def health_script(kind: str) -> str:
    """The Lua health script of our kind ``kind`` (e.g. ``EtcdCluster``): up when the
    ready condition its registration declares is True."""
    controller = by_kind(kind)
    if controller is None:
        raise KeyError(f"{kind} is not a kind of ours")
    return _script(controller)


def health_key(group: str, kind: str) -> str:
    return f"resource.customizations.health.{group}_{kind}"


def argocd_cm_patch(namespace: str = "argocd") -> dict[str, Any]:
    """A patch of Argo CD's ``argocd-cm`` adding a health check for each of our kinds
    (``kubectl patch configmap argocd-cm -n argocd --patch-file <this file>``)."""
    data = {health_key(c.kind.group, c.kind.kind): _script(c) for c in ALL}
    return config_map("argocd-cm", namespace, data)


class _Literal(str):
    """A string dumped as a YAML literal block (the scripts stay readable)."""


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


yaml.SafeDumper.add_representer(_Literal, _literal)


def patch_text(header: str) -> str:
    """deploy/argocd/health-patch.yaml."""
    patch = argocd_cm_patch()
    patch["data"] = {k: _Literal(v) for k, v in patch["data"].items()}
    return header + yaml.safe_dump(patch, sort_keys=False, width=100)
