"""appstack's operator as the SDK's run command takes any operator
(:func:`appstack.sdk.operator_command`, ``appstack run``: :mod:`appstack.cli.run`): its
controllers (:func:`controllers`, :data:`appstack.controllers.registry.ALL`), what its cache
keeps (:func:`cache`) and what its own flags configure in its controllers (where external
middleware may point, the backup image: :class:`AppstackOptions`,
:func:`controller_options`). Imported only when the operator runs; nothing here is
specific to how an operator runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from appstack import __version__
from appstack.controllers import appstack as appstack_controller
from appstack.controllers.appstack.addresses import ExternalIPPolicy, parse_networks
from appstack.controllers.etcdcluster import CONTROLLER as ETCD_CONTROLLER
from appstack.controllers.registry import ALL, CACHE
from appstack.runtime import Resource, Transform
from appstack.sdk import Registration


@dataclass
class AppstackOptions:
    """appstack's own flags: where an AppStack's external middleware may point, and the
    image EtcdCluster backups to an object store run (the operator's own)."""

    allow_external_ips: bool = False
    external_deny_cidrs: list[str] = field(default_factory=list)
    allow_external_cluster_names: bool = False
    backup_image: str = f"appstack:{__version__}"

    def controller_options(self) -> dict[str, dict[str, Any]]:
        """Per controller name: what its reconciler is configured with."""
        policy = ExternalIPPolicy(
            self.allow_external_ips,
            parse_networks(self.external_deny_cidrs),
            self.allow_external_cluster_names,
        )
        return {
            appstack_controller.CONTROLLER.name: {"external_ips": policy},
            ETCD_CONTROLLER.name: {"backup_image": self.backup_image},
        }


def controllers() -> list[Registration]:
    """Every controller of the operator."""
    return list(ALL)


def cache() -> dict[Resource, Transform]:
    """What the operator's cache keeps of each kind (its registry's :data:`CACHE`)."""
    return CACHE


def controller_options(
    *,
    allow_external_ips: bool = False,
    external_deny_cidrs: tuple[str, ...] = (),
    allow_external_cluster_names: bool = False,
    backup_image: str | None = None,
) -> dict[str, dict[str, Any]]:
    """What appstack's own flags (``appstack run --help``) configure, per controller name."""
    own = AppstackOptions(
        allow_external_ips=allow_external_ips,
        external_deny_cidrs=list(external_deny_cidrs),
        allow_external_cluster_names=allow_external_cluster_names,
        **({"backup_image": backup_image} if backup_image else {}),
    )
    return own.controller_options()
