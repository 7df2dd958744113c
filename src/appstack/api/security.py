"""A container's security settings as users may set them, pure: the Pod Security level
its pods are made to meet (``podSecurity``) and field overrides (``securityContext``).

Two levels (:mod:`appstack.controllers.util.workloads` fills them in):

* ``baseline`` — the default outside ``restricted`` namespaces: ``allowPrivilegeEscalation:
  false`` and the runtime's default seccomp profile, hardening that never stops an ordinary
  image from running (the seed's ``nginx:1.7.9`` starts as root and binds port 80);
* ``restricted`` — the Pod Security Standard's restricted profile: also non-root and every
  capability dropped. It is the default in a namespace that enforces it (label
  ``pod-security.kubernetes.io/enforce=restricted``), or asked for with ``podSecurity:
  restricted``; an image that must run as root then shows ``Ready=False`` with the
  kubelet's reason (``CreateContainerConfigError``).

Managed middleware always runs restricted, as its image's own user. A ``securityContext``
field overrides either level for one AppService, component or managed middleware; its model,
like every Kubernetes core type, is the SDK's (:class:`appstack.sdk.SecurityContext`).
"""

from __future__ import annotations

from typing import Literal

SECURITY = (
    "Overrides of the container's securityContext, on top of the podSecurity level "
    "(baseline: no privilege escalation, RuntimeDefault seccomp; restricted: also non-root "
    "and all capabilities dropped)."
)
PodSecurityLevel = Literal["baseline", "restricted"]
POD_SECURITY = (
    "The Pod Security Standard the pods are made to meet: baseline (no privilege "
    "escalation, RuntimeDefault seccomp: never stops an ordinary image, root ones included) "
    "or restricted (also non-root, all capabilities dropped). Default: restricted where the "
    "namespace enforces it (label pod-security.kubernetes.io/enforce=restricted), "
    "else baseline."
)
