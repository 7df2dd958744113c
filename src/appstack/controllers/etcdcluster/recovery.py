"""When and from what an EtcdCluster that lost quorum is rebuilt (pure, unit-tested); used
by the reconciler (:mod:`.recover` carries it out).

:func:`lost_since` keeps the moment quorum was first found lost (the plan's ``Degraded``
step) until a leader is back. :func:`decide` turns that into one :class:`Decision`:

* ``OptIn`` — ``spec.disasterRecovery`` is not enabled: reported as today, and the message
  says that recovery is opt-in (nothing is ever forced without it);
* ``Impossible`` — enabled, but no snapshot was ever taken: nothing to rebuild from;
* ``Waiting`` — enabled, lost for less than ``after``: look again when it is due;
* ``Recover`` — enabled, lost for ``after`` or longer: rebuild from the newest snapshot
  (``status.lastBackup``, the file the last completed backup Job wrote).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from appstack.api.etcdcluster_recovery import DisasterRecoverySpec
from appstack.controllers.etcdcluster.backup_schedule import parse_time
from appstack.core.duration import parse_duration

OPT_IN = (
    "automatic recovery from a snapshot is opt-in (spec.disasterRecovery.enabled, with spec.backup)"
)


@dataclass(frozen=True)
class Snapshot:
    """A completed snapshot: its file on the backup PVC and when it was taken."""

    name: str
    time: datetime.datetime


@dataclass(frozen=True)
class Decision:
    kind: str  # OptIn Impossible Waiting Recover
    reason: str
    snapshot: Snapshot | None = None
    wait: float = 0.0  # Waiting: seconds until recovery is due


def newest_snapshot(status: dict[str, Any]) -> Snapshot | None:
    """The newest completed snapshot the status records, if any."""
    name, taken = status.get("lastBackup"), status.get("lastBackupTime")
    return Snapshot(str(name), parse_time(str(taken))) if name and taken else None


def lost_since(status: dict[str, Any], degraded: bool, leader: bool, now: str) -> str | None:
    """``status.quorumLostSince`` after this look: set when quorum is first found lost
    (``degraded``), kept while there is no leader, gone once there is one."""
    if leader:
        return None
    known = status.get("quorumLostSince")
    return str(known) if known else (now if degraded else None)


def decide(
    policy: DisasterRecoverySpec | None,
    since: datetime.datetime,
    now: datetime.datetime,
    snapshot: Snapshot | None,
) -> Decision:
    """What to do about a quorum lost since ``since`` (see the module docstring)."""
    if policy is None or not policy.enabled:
        return Decision("OptIn", OPT_IN)
    if snapshot is None:
        return Decision(
            "Impossible",
            "recovery impossible: disasterRecovery is enabled but no snapshot has been taken "
            "(spec.backup has not completed one); bring the members back with their volumes",
        )
    after = parse_duration(policy.after)
    lost = (now - since).total_seconds()
    at = f"snapshot {snapshot.name} taken {snapshot.time:%Y-%m-%dT%H:%M:%SZ}"
    if lost < after:
        return Decision(
            "Waiting",
            f"unless quorum comes back, the cluster is rebuilt from {at} once quorum has "
            f"been lost for {policy.after} (disasterRecovery.after)",
            snapshot,
            after - lost,
        )
    age = (now - snapshot.time).total_seconds()
    return Decision(
        "Recover",
        f"quorum lost for {lost:.0f}s (disasterRecovery.after {policy.after}): rebuilding "
        f"from {at} ({age:.0f}s old: writes since then are lost)",
        snapshot,
    )
