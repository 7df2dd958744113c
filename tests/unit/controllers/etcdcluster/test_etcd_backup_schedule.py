"""When an EtcdCluster's next snapshot is due (backup_schedule), and what ``backup``
accepts, without a cluster."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from pydantic import ValidationError

from appstack.api.etcdcluster import EtcdCluster
from appstack.api.etcdcluster_backup import BackupSpec
from appstack.controllers.etcdcluster import backup_schedule as sched

NOW = datetime.datetime(2026, 11, 23, 14, 0, 20, tzinfo=datetime.timezone.utc)
CREATED = "2026-11-23T12:00:05Z"


def plan(**fields: Any) -> BackupSpec:
    """The backup of a whole EtcdCluster, validated as admission validates it (CEL too)."""
    spec = {"storage": "1Gi", "backup": {"pvcName": "snaps", **fields}}
    backup = EtcdCluster.model_validate({"metadata": {"name": "e"}, "spec": spec}).spec.backup
    assert backup is not None
    return backup


def test_an_interval_snapshot_is_due_first_then_every_interval() -> None:
    every_hour = plan(intervalMinutes=60)
    assert sched.due(every_hour, None, CREATED, NOW)
    assert not sched.due(every_hour, "2026-11-23T13:30:00Z", CREATED, NOW)
    assert sched.due(every_hour, "2026-11-23T13:00:00Z", CREATED, NOW)
    assert sched.wait(every_hour, "2026-11-23T13:30:00Z", CREATED, NOW) == 29 * 60 + 40


def test_a_scheduled_snapshot_is_due_at_the_next_time_after_the_last() -> None:
    hourly = plan(schedule="0 * * * *")
    assert sched.next_due(hourly, "2026-11-23T13:00:04Z", CREATED) == NOW.replace(second=0)
    assert sched.due(hourly, "2026-11-23T13:00:04Z", CREATED, NOW)
    assert not sched.due(hourly, "2026-11-23T14:00:04Z", CREATED, NOW)
    # the requeue is for exactly that moment
    assert sched.wait(hourly, "2026-11-23T14:00:04Z", CREATED, NOW) == 60 * 60 - 20
    assert sched.wait(hourly, "2026-11-23T13:00:04Z", CREATED, NOW) is None  # due now


def test_the_first_scheduled_snapshot_counts_from_creation() -> None:
    hourly = plan(schedule="@hourly")
    assert sched.next_due(hourly, None, CREATED) == NOW.replace(hour=13, second=0)
    assert sched.due(hourly, None, CREATED, NOW)
    assert not sched.due(hourly, None, "2026-11-23T14:00:00Z", NOW)


def test_times_missed_while_down_make_one_snapshot_not_a_burst() -> None:
    hourly = plan(schedule="0 * * * *")
    last = "2026-11-23T09:00:02Z"  # five hourly times missed since
    assert sched.due(hourly, last, CREATED, NOW)
    taken = "2026-11-23T14:00:25Z"  # the one snapshot taken when back
    assert not sched.due(hourly, taken, CREATED, NOW + datetime.timedelta(seconds=10))
    assert sched.next_due(hourly, taken, CREATED) == NOW.replace(hour=15, second=0)


def test_a_schedule_that_never_comes_is_never_due() -> None:
    never = plan(schedule="0 0 30 2 *")
    assert not sched.due(never, None, CREATED, NOW)
    assert sched.wait(never, None, CREATED, NOW) is None


@pytest.mark.parametrize(
    ("fields", "message", "field"),
    [
        ({}, "backup needs a schedule", "schedule"),
        ({"schedule": "@hourly", "intervalMinutes": 5}, "mutually exclusive", "intervalMinutes"),
        ({"schedule": "0 * * * * *"}, "schedule takes five fields", "schedule"),
        ({"schedule": "@every 1h"}, "schedule takes five fields", "schedule"),
        ({"schedule": "61 * * * *"}, "schedule minute '61'", "schedule"),
        ({"intervalMinutes": 0}, "greater than or equal to 1", "intervalMinutes"),
    ],
)
def test_backup_takes_one_valid_schedule_or_interval(
    fields: dict[str, Any], message: str, field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        plan(**fields)
    said = [e["msg"] for e in caught.value.errors() if e["loc"] == ("spec", "backup", field)]
    assert any(message in m for m in said), caught.value
