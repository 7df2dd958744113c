"""Which Pod Security level a namespace asks of the pods created in it (``restricted`` or
``baseline``), read from its ``pod-security.kubernetes.io/enforce`` label.

The AppService, AppStack and CronTab reconcilers create their pods at that level unless
the object names one (``podSecurity``): a ``restricted`` namespace refuses a pod that is not
(Pod Security admission), and the rest of the cluster must still run ordinary images, root
ones included. The namespace's labels come from
:class:`~appstack.sdk.kit.namespaces.NamespaceGate`.
"""

from __future__ import annotations

from appstack.api.security import PodSecurityLevel
from appstack.sdk import NamespaceGate

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"


def level_of(labels: dict[str, str] | None) -> PodSecurityLevel:
    """``restricted`` for a namespace that enforces it, else ``baseline``."""
    return "restricted" if (labels or {}).get(ENFORCE_LABEL) == "restricted" else "baseline"


async def level(
    gate: NamespaceGate, namespace: str, asked: PodSecurityLevel | None
) -> PodSecurityLevel:
    """The level pods are created at in ``namespace``: ``asked`` if the object names one,
    else the namespace's (its labels as the operator's namespace gate knows them)."""
    return asked if asked is not None else level_of(await gate.labels(namespace))
