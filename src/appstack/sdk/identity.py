"""Who an operator is: :class:`OperatorIdentity`, passed in to everything below the
operator's assembly that names the operator — never hard-coded there (issue #35).

One value says it all: the project (``appstack``, ``guestbook``), the API domain its kinds
and labels live under (``appstack.dev``, ``webapp.example.com``), the install's default
namespace and image. From them come the field manager and user agent its requests carry,
its leader-election Lease, the source of its Events, its metrics' prefix, the labels of
what it installs (``app.kubernetes.io/part-of``) and of the children it makes
(``app.kubernetes.io/managed-by``: its caches select them by it), and the namespace label
by which a platform team enables it in a namespace. Pure; used by the SDK's operator
assembly (:mod:`appstack.sdk.operator`), its generators, and appstack's own operator
(:data:`appstack.api.identity.IDENTITY`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from appstack.sdk.names import DNS_LABEL

_DNS_LABEL = re.compile(DNS_LABEL)
#: The Ready condition's reason on an object in a namespace the operator is not enabled in.
NOT_ENABLED_REASON = "NamespaceNotEnabled"


@dataclass(frozen=True)
class OperatorIdentity:
    """An operator's names. ``project`` and ``domain`` are required; the rest default
    from them (``<project>-operator``, ``<project>-system``, ``<project>:latest``...)."""

    project: str
    domain: str
    name: str = ""
    namespace: str = ""
    image: str = ""
    field_manager: str = ""
    lease_name: str = ""
    event_source: str = ""
    metric_prefix: str = ""

    def __post_init__(self) -> None:
        if not _DNS_LABEL.match(self.project):
            raise ValueError(f"project {self.project!r} is not a DNS label (a-z, 0-9, -)")
        if not self.domain or any(not _DNS_LABEL.match(p) for p in self.domain.split(".")):
            raise ValueError(f"domain {self.domain!r} is not a DNS name")
        defaults = {
            "name": f"{self.project}-operator",
            "namespace": f"{self.project}-system",
            "image": f"{self.project}:latest",
            "field_manager": self.project,
            "lease_name": f"{self.project}-operator",
            "event_source": f"{self.domain}/operator",
            "metric_prefix": self.project.replace("-", "_"),
        }
        for attribute, value in defaults.items():
            if not getattr(self, attribute):
                object.__setattr__(self, attribute, value)

    def key(self, name: str) -> str:
        """A label, annotation or finalizer name under the domain: ``<domain>/<name>``."""
        return f"{self.domain}/{name}"

    @property
    def managed_by(self) -> dict[str, str]:
        """The label of every child the operator makes (its caches select children by it)."""
        return {"app.kubernetes.io/managed-by": self.project}

    @property
    def install_labels(self) -> dict[str, str]:
        """The labels of what its install creates (CRDs, RBAC, policies, the Deployment)."""
        return {"app.kubernetes.io/part-of": self.project, **self.managed_by}

    @property
    def enabled_label(self) -> str:
        """The namespace label (``=true``) by which a platform team enables the operator
        in a namespace."""
        return self.key("enabled")

    @property
    def allow_privileged_label(self) -> str:
        """The namespace label (``=true``) that lets the operator write pods beyond the Pod
        Security baseline there (its admission guards, :mod:`appstack.sdk.guards`)."""
        return self.key("allow-privileged-pods")

    @property
    def may_write_label(self) -> str:
        """The namespace label (``=true``) that lets the operator write in a system
        namespace (``kube-system``, ``kube-public``, ``kube-node-lease``), if also enabled."""
        return self.key("operator-may-write")

    @property
    def opt_in_labels(self) -> tuple[str, str, str]:
        """The namespace labels only a platform team may set: enabled, allow-privileged
        and may-write."""
        return (self.enabled_label, self.allow_privileged_label, self.may_write_label)

    @property
    def shard_labels(self) -> tuple[str, str]:
        """The labels a sharded operator routes its primary objects by (docs/sharding.md):
        the owning shard ``shard.<domain>/<project>`` and a drain asked
        ``drain.shard.<domain>/<project>`` — set by the operator alone (its guards)."""
        return (
            f"shard.{self.domain}/{self.project}",
            f"drain.shard.{self.domain}/{self.project}",
        )

    @property
    def shard_root_label(self) -> str:
        """The label a sharded operator puts on each child it writes besides the shard's:
        its root's uid, ``root.shard.<domain>/<project>`` — how a shard that comes to hold
        a root finds its children (docs/sharding.md)."""
        return f"root.shard.{self.domain}/{self.project}"

    def not_enabled_message(self, namespace: str) -> str:
        """What the Ready condition says in a namespace the operator is not enabled in."""
        return (
            f"namespace {namespace} is not enabled for {self.project}: a cluster "
            f"administrator runs kubectl label namespace {namespace} {self.enabled_label}=true"
        )

    def user_agent(self, version: str, instance: str = "") -> str:
        """``<project>/<version> (<instance>)``: what the API server's audit log shows."""
        return f"{self.project}/{version}" + (f" ({instance})" if instance else "")
