"""Cron schedules: what a ``cronSpec`` may be (:func:`cron_problem`) and the CronJob
schedule it becomes (:func:`cron_job_schedule`). Pure; the admission rules (CEL) are in
:mod:`appstack.api.cron_rules`. Used by :mod:`appstack.api.crontab` and the CronTab
controller, and (five fields only: ``seconds=False``) by the EtcdCluster's
``backup.schedule``, whose next times :mod:`appstack.api.cron_times` computes.

Five fields are read as Kubernetes' CronJob validation reads them (robfig/cron's standard
parser, tried on the test bed): fields separated by any run of whitespace (leading and
trailing whitespace ignored); a descriptor (``@hourly`` ..., case-sensitive, or ``@every
<duration>``); per field a comma list of ``*``/``?``, a value, a range ``a-b`` with ``a <=
b`` (``*-b`` counts from the minimum), each with an optional step ``/n``, ``n > 0``; month
and day-of-week names in any case; day of week 0-6 (``7`` is refused).

Six fields put seconds first (robfig/cron's ``WithSeconds``, Quartz, Spring; the seed's
``* * * * * *``). A CronJob starts at most once a minute, so the seconds field is dropped:
one second value keeps the minutes exactly; more than one (``*``, ``*/10``, ``0,30``) runs
once a minute, and :attr:`CronJobSchedule.rounded` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
Field = tuple[str, int, int, dict[str, int]]  # name, low, high, names
SECONDS: Field = ("second", 0, 59, {})
FIELDS: tuple[Field, ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i for i, m in enumerate(MONTHS, start=1)}),
    ("day of week", 0, 6, {d: i for i, d in enumerate(DAYS)}),
)
FIVE_FIELDS = (
    "cronSpec takes five fields (minute hour day-of-month month day-of-week), six with "
    "seconds first, or a macro such as @hourly"
)
_DURATION = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)"
EVERY = rf"^@every {_DURATION}({_DURATION})*$"
_ITEM = re.compile(r"^(\*|\?|[0-9A-Za-z]+)(-[0-9A-Za-z]+)?(/[0-9]+)?$")


def _number(bound: str, names: dict[str, int]) -> int | None:
    if bound.upper() in names:
        return names[bound.upper()]
    return int(bound) if bound.isdigit() else None


def _item_values(item: str, field: Field, value: str, label: str) -> range | str:
    """The values ``item`` (one comma-separated part of ``value``) stands for, or why not."""
    name, low, high, names = field
    where = f"{label} {name} {value!r}"
    if not _ITEM.match(item):
        return f"{where}: {item!r} is not a value, range or step"
    span, _, step = item.partition("/")
    if step and int(step) == 0:
        return f"{where}: the step of {item!r} must be a positive number"
    first, _, last = span.partition("-")
    start = low if first in ("*", "?") else _number(first, names)
    end = _number(last, names) if last else (high if first in ("*", "?") or step else start)
    for bound, number in ((first, start), (last, end)):
        if number is None or not low <= number <= high:
            return f"{where}: {bound!r} is outside {low}-{high}"
    if start is None or end is None or start > end:  # (None: refused just above)
        return f"{where}: the range {span!r} runs backwards"
    return range(start, end + 1, int(step or 1))


def field_values(value: str, field: Field, label: str = "cronSpec") -> set[int] | str:
    """The values one field (``*/10``, ``1,5-7``) stands for, or why it is not valid."""
    values: set[int] = set()
    for item in (i for i in value.split(",") if i):
        expanded = _item_values(item, field, value, label)
        if isinstance(expanded, str):
            return expanded
        values.update(expanded)
    return values


def five_fields(label: str) -> str:
    """What a schedule of five fields only (no seconds, no ``@every``) may be."""
    return (
        f"{label} takes five fields (minute hour day-of-month month day-of-week) or a macro "
        "such as @hourly"
    )


def cron_problem(spec: str, *, label: str = "cronSpec", seconds: bool = True) -> str | None:
    """Why ``spec`` is not a schedule we accept, or None. ``label`` names the field in the
    messages; ``seconds=False`` accepts five fields and the macros only (no ``@every``)."""
    if spec in MACROS or (seconds and re.fullmatch(EVERY, spec)):
        return None
    fields = spec.split()
    counts = (5, 6) if seconds else (5,)
    if len(fields) not in counts or spec.startswith("@"):
        shape = FIVE_FIELDS.replace("cronSpec", label, 1) if seconds else five_fields(label)
        return f"{shape}; got {len(fields)}: {spec!r}"
    layout = (SECONDS, *FIELDS) if len(fields) == 6 else FIELDS
    for value, field in zip(fields, layout, strict=True):
        values = field_values(value, field, label)
        if isinstance(values, str):
            return values
    return None


@dataclass(frozen=True)
class CronJobSchedule:
    """What a valid ``cronSpec`` becomes: the CronJob's ``schedule``, and, when that runs
    less often than asked (seconds), a sentence saying what was asked and what runs."""

    schedule: str
    rounded: str | None = None
    second: int = 0  # the second asked for, when the seconds field has one value


def cron_job_schedule(spec: str) -> CronJobSchedule:
    """The CronJob schedule of a valid ``cronSpec`` (five fields and macros unchanged)."""
    fields = spec.split()
    if spec.startswith("@") or len(fields) != 6:
        return CronJobSchedule(spec)
    schedule = " ".join(fields[1:])
    seconds = field_values(fields[0], SECONDS)
    if isinstance(seconds, str):
        raise ValueError(seconds)
    if len(seconds) == 1:
        return CronJobSchedule(schedule, second=next(iter(seconds)))
    rounded = (
        f"cronSpec {spec!r} asks for {len(seconds)} runs a minute (seconds field "
        f"{fields[0]!r}); a CronJob starts at most once a minute, so it runs on {schedule!r}"
    )
    return CronJobSchedule(schedule, rounded)
