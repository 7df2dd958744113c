"""Which Pod Security level a namespace asks of the pods created in it (``restricted`` or
``baseline``), read from its ``pod-security.kubernetes.io/enforce`` label.

The AppService, AppStack and CronTab reconcilers create their pods at that level unless
the object names one (``podSecurity``): a ``restricted`` namespace refuses a pod that is not
(Pod Security admission), and the rest of the cluster must still run ordinary images, root
ones included. Labels are read with a GET per namespace, kept for :data:`TTL` seconds —
the namespace's own object, which RBAC grants in a namespaced install too (a RoleBinding in
that namespace), so no cluster-wide watch of namespaces is needed; a label that changes is
seen within that time (and a pod the namespace refused meanwhile is retried with backoff).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from appstack.api.security import PodSecurityLevel
from appstack.runtime import errors
from appstack.runtime.client import Client
from appstack.runtime.resources import NAMESPACE

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
TTL = 30.0
log = structlog.get_logger("appstack.podsecurity")


def level_of(labels: dict[str, str] | None) -> PodSecurityLevel:
    """``restricted`` for a namespace that enforces it, else ``baseline``."""
    return "restricted" if (labels or {}).get(ENFORCE_LABEL) == "restricted" else "baseline"


class NamespaceLevels:
    """The enforced level of each namespace, and whether it exists, cached for :data:`TTL`
    seconds."""

    def __init__(self, client: Client, now: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.now = now
        self._seen: dict[str, tuple[float, bool | None, PodSecurityLevel]] = {}

    async def level(self, namespace: str, asked: PodSecurityLevel | None) -> PodSecurityLevel:
        """``asked`` if the object names a level, else the namespace's."""
        if asked is not None:
            return asked
        return (await self._read(namespace))[1]

    async def exists(self, namespace: str) -> bool | None:
        """Whether ``namespace`` exists (None: not readable with the operator's rights, as
        in a namespaced install for a namespace it does not watch)."""
        return (await self._read(namespace))[0]

    async def _read(self, namespace: str) -> tuple[bool | None, PodSecurityLevel]:
        seen = self._seen.get(namespace)
        if seen is not None and self.now() - seen[0] < TTL:
            return seen[1], seen[2]
        found: bool | None = True
        try:
            obj = await self.client.get(NAMESPACE, namespace)
            level = level_of((obj.get("metadata") or {}).get("labels"))
        except (errors.Forbidden, errors.NotFound) as error:
            # Not readable (an install without the grant) or gone: the level that runs
            # ordinary images; a restricted namespace then refuses the pods, which is
            # reported as the workload's failure.
            log.debug("namespace not readable", namespace=namespace, error=str(error))
            found = False if isinstance(error, errors.NotFound) else None
            level = "baseline"
        self._seen[namespace] = (self.now(), found, level)
        return found, level
