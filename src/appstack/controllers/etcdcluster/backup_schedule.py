"""When an EtcdCluster's next snapshot is due (pure, unit-tested). Used by the reconciler,
which starts a snapshot Job once it is due and otherwise requeues for exactly that moment.

The next time counts from the last snapshot (``status.lastBackupTime``, when its Job
completed), or from the cluster's creation before the first: with ``schedule``, the
schedule's first time after it (:func:`appstack.api.cron_times.next_time`); with
``intervalMinutes``, that many minutes after it (the first snapshot at once). Because it
counts from the last snapshot taken, times missed while the operator was down (or the
cluster unhealthy) make one snapshot when it is back, not one per missed time.
"""

from __future__ import annotations

import datetime

from appstack.api.cron_times import next_time
from appstack.api.etcdcluster_backup import BackupSpec


def parse_time(value: str) -> datetime.datetime:
    """An RFC 3339 UTC timestamp as Kubernetes writes it (``2026-11-23T16:44:17Z``)."""
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc
    )


def next_due(plan: BackupSpec, last: str | None, created: str) -> datetime.datetime | None:
    """When the next snapshot is due (None: never, a schedule such as February 30th)."""
    if plan.schedule is not None:
        return next_time(plan.schedule, parse_time(last or created))
    if last is None:
        return parse_time(created)
    return parse_time(last) + datetime.timedelta(minutes=plan.interval_minutes or 0)


def due(plan: BackupSpec, last: str | None, created: str, now: datetime.datetime) -> bool:
    """Whether a snapshot is due at ``now``."""
    at = next_due(plan, last, created)
    return at is not None and now >= at


def wait(plan: BackupSpec, last: str | None, created: str, now: datetime.datetime) -> float | None:
    """Seconds from ``now`` until the next snapshot is due (None: never or already due)."""
    at = next_due(plan, last, created)
    return (at - now).total_seconds() if at is not None and at > now else None
