"""When a five-field cron schedule next runs (:func:`next_time`), in UTC. Pure.

Read with the same field parser that validates it (:func:`appstack.api.cron.field_values`),
so what admission accepts and what runs cannot disagree; the macros are their usual five
fields. Day of month and day of week combine as in Kubernetes' CronJobs (robfig/cron) and
Vixie cron: when either is unrestricted (``*`` or ``?``) a day must match both, otherwise
either one. Used by the EtcdCluster controller's backup schedule
(:mod:`appstack.controllers.etcdcluster.backup_schedule`).

A schedule that never matches (``0 0 30 2 *``, February 30th) has no next time within
:data:`HORIZON` and :func:`next_time` returns None.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from appstack.api.cron import FIELDS, field_values

MACRO_FIELDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Long enough for any date that exists (February 29th on a given weekday: 28 years).
HORIZON = datetime.timedelta(days=366 * 29)
_MINUTE = datetime.timedelta(minutes=1)


@dataclass(frozen=True)
class Schedule:
    """A parsed five-field schedule: the values each field allows."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day of month unrestricted
    any_weekday: bool

    def on(self, day: datetime.date) -> bool:
        """Whether the schedule runs on ``day`` at all."""
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = day.isoweekday() % 7 in self.weekdays
        return dom and dow if self.any_day or self.any_weekday else dom or dow


def _unrestricted(value: str) -> bool:
    return any(item in ("*", "?", "*/1", "?/1") for item in value.split(","))


def parse(spec: str) -> Schedule:
    """The :class:`Schedule` of a valid five-field ``spec`` or macro (ValueError if not)."""
    fields = MACRO_FIELDS.get(spec.strip(), spec).split()
    if len(fields) != len(FIELDS):
        raise ValueError(f"not a five-field schedule: {spec!r}")
    values: list[frozenset[int]] = []
    for value, field in zip(fields, FIELDS, strict=True):
        parsed = field_values(value, field, "schedule")
        if isinstance(parsed, str):
            raise ValueError(parsed)
        values.append(frozenset(parsed))
    minutes, hours, days, months, weekdays = values
    return Schedule(
        minutes, hours, days, months, weekdays, _unrestricted(fields[2]), _unrestricted(fields[4])
    )


def next_time(spec: str, after: datetime.datetime) -> datetime.datetime | None:
    """The first whole minute strictly after ``after`` (aware, any zone) that ``spec``
    matches, in UTC; None if it never does (within :data:`HORIZON`)."""
    schedule = parse(spec)
    start = after.astimezone(datetime.timezone.utc).replace(second=0, microsecond=0) + _MINUTE
    day = start.date()
    while day <= start.date() + HORIZON:
        if schedule.on(day):
            first = start if day == start.date() else None
            for hour in sorted(h for h in schedule.hours if first is None or h >= first.hour):
                for minute in sorted(schedule.minutes):
                    moment = datetime.datetime(
                        day.year, day.month, day.day, hour, minute, tzinfo=datetime.timezone.utc
                    )
                    if moment >= start:
                        return moment
        day += datetime.timedelta(days=1)
    return None
