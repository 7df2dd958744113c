"""A container's security settings as users may set them (``securityContext``), pure.

Every workload appstack creates runs under the ``restricted`` Pod Security profile by
default (:mod:`appstack.controllers.util.workloads` fills in non-root, no privilege
escalation, all capabilities dropped, the runtime's default seccomp profile); a field set
here overrides that default for one AppService, component or managed middleware — e.g.
``runAsNonRoot: false`` for an image that must start as root, in a namespace that allows it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from appstack.api.core import KubeModel

SECURITY = (
    "Overrides of the container's securityContext; by default it runs under the "
    "restricted Pod Security profile (non-root, no privilege escalation, all capabilities "
    "dropped, RuntimeDefault seccomp)."
)


class Capabilities(KubeModel):
    add: list[str] | None = Field(None, max_length=64, description="Capabilities to add.")
    drop: list[str] | None = Field(None, max_length=64, description="Capabilities to drop.")


class SeccompProfile(KubeModel):
    type: Literal["RuntimeDefault", "Localhost", "Unconfined"]
    localhost_profile: str | None = Field(None, max_length=4096)


class SecurityContext(KubeModel):
    """Overrides of the container's restricted defaults (unset fields keep the default)."""

    run_as_non_root: bool | None = None
    run_as_user: int | None = Field(None, ge=0)
    run_as_group: int | None = Field(None, ge=0)
    allow_privilege_escalation: bool | None = None
    read_only_root_filesystem: bool | None = None
    privileged: bool | None = None
    capabilities: Capabilities | None = None
    seccomp_profile: SeccompProfile | None = None
