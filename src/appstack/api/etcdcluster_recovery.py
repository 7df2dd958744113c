"""The EtcdCluster's opt-in disaster recovery (``spec.disasterRecovery``) and what status
says about a recovery (:class:`RecoveryStatus`). Types and admission rules only; used by
:mod:`appstack.api.etcdcluster` and the controller's
:mod:`~appstack.controllers.etcdcluster.recovery`.

With ``enabled``, a cluster whose quorum has been lost for ``after`` is rebuilt from the
newest snapshot its ``backup`` took: every member and volume is deleted and a new cluster is
started from the snapshot (writes after it are lost; status says how much). It needs a
``backup`` block (refused at admission otherwise). Off by default: nothing is ever forced.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from appstack.sdk import KubeModel

DURATION = r"^([0-9]+(s|m|h))+$"
RECOVERY_RULES: list[Any] = [
    {
        "rule": "!has(self.disasterRecovery) || !has(self.disasterRecovery.enabled) || "
        "!self.disasterRecovery.enabled || has(self.backup)",
        "message": "disasterRecovery.enabled needs backup: a lost cluster is rebuilt from the "
        "newest snapshot the backup schedule took",
        "fieldPath": ".disasterRecovery.enabled",
    },
]


class DisasterRecoverySpec(KubeModel):
    """Rebuild the cluster from the newest snapshot once quorum has been lost for ``after``
    (as the CoreOS etcd-operator did); opt-in, needs ``backup``."""

    enabled: bool = Field(
        False,
        description="Rebuild from the newest snapshot when quorum stays lost (writes after "
        "the snapshot are lost). Needs spec.backup.",
    )
    after: str = Field(
        "5m",
        max_length=32,
        pattern=DURATION,
        description="How long quorum must have been lost before the cluster is rebuilt, "
        "e.g. 90s, 5m, 1h30m (default 5m).",
    )


class RecoveryStatus(KubeModel):
    """The last disaster recovery: from which snapshot, what it lost, how long it took."""

    phase: str | None = Field(
        default=None,
        description="TearingDown, Restoring, then Recovered (when members serve again).",
    )
    count: int | None = Field(default=None, description="Recoveries of this cluster so far.")
    snapshot: str | None = Field(default=None, description="The snapshot file restored.")
    snapshot_time: str | None = Field(default=None, description="When that snapshot was taken.")
    data_loss_seconds: int | None = Field(
        default=None,
        description="Age of the snapshot when recovery started: writes in this window before "
        "quorum loss (and any since) are lost.",
    )
    quorum_lost_since: str | None = Field(default=None, description="When quorum was found lost.")
    started_time: str | None = Field(default=None, description="When the recovery started.")
    recovered_time: str | None = Field(default=None, description="When the members served again.")
    seconds_to_recover: int | None = Field(
        default=None, description="From the start of the recovery to a healthy cluster."
    )
