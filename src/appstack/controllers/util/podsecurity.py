"""Which Pod Security level a namespace asks of the pods created in it (``restricted`` or
``baseline``), read from its ``pod-security.kubernetes.io/enforce`` label.

The AppService, AppStack and CronTab reconcilers create their pods at that level unless
the object names one (``podSecurity``): a ``restricted`` namespace refuses a pod that is not
(Pod Security admission), and the rest of the cluster must still run ordinary images, root
ones included. The namespace's labels come from
:class:`~appstack.controllers.kit.namespaces.NamespaceGate`.
"""

from __future__ import annotations

from appstack.api.security import PodSecurityLevel

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"


def level_of(labels: dict[str, str] | None) -> PodSecurityLevel:
    """``restricted`` for a namespace that enforces it, else ``baseline``."""
    return "restricted" if (labels or {}).get(ENFORCE_LABEL) == "restricted" else "baseline"
