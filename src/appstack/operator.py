"""appstack's operator: its controllers (:data:`appstack.controllers.registry.ALL`), its
identity (:data:`appstack.api.identity.IDENTITY`), its own options (where external
middleware may point: :class:`AppstackOptions`) and its per-kind metrics, run by the SDK's
assembly (:func:`appstack.sdk.operator.run_operator`: client, CRD check, manager, leader
election, secure metrics, Events, drain). Used by ``appstack run``
(:mod:`appstack.cli.run`); nothing here is specific to how an operator runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from appstack import __version__
from appstack.api.identity import IDENTITY
from appstack.controllers import appstack as appstack_controller
from appstack.controllers.appstack.addresses import ExternalIPPolicy, parse_networks
from appstack.controllers.etcdcluster import CONTROLLER as ETCD_CONTROLLER
from appstack.controllers.registry import ALL, CACHE
from appstack.sdk import OperatorOptions
from appstack.sdk import run_operator as sdk_run_operator

#: How to install the CRDs, said when they are missing.
CRDS_HINT = (
    "kubectl apply --server-side -f deploy/crds/, or "
    "helm show crds charts/appstack | kubectl apply --server-side -f -"
)


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


def run_operator(options: OperatorOptions, own: AppstackOptions | None = None) -> int:
    """Run appstack's operator; its exit code (see :func:`appstack.sdk.operator.run_operator`)."""
    return sdk_run_operator(
        ALL,
        IDENTITY,
        options,
        version=__version__,
        cache=CACHE,  # what the cache keeps of each kind (controllers/registry.py)
        controller_options=(own or AppstackOptions()).controller_options(),
        crds_hint=CRDS_HINT,
    )
