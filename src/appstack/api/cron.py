"""Cron schedules as Kubernetes' CronJob validation reads them (robfig/cron's standard parser),
checked at admission (:data:`CRON_RULES`, CEL) and in Python (:func:`cron_problem`). Pure.

What the API server accepts, found by creating CronJobs on the test bed: fields separated by
any run of whitespace (leading and trailing whitespace ignored); exactly five fields, or a
descriptor (``@hourly`` ..., case-sensitive, or ``@every <duration>``); per field a comma
list of ``*``/``?``, a value, a range ``a-b`` with ``a <= b`` (``*-b`` counts from the
minimum), each with an optional step ``/n``, ``n > 0``; month and day-of-week names in any
case; day of week 0-6 (``7`` is refused). Admission refuses the wrong shape, ``/0`` and
ranges that run backwards; values outside a field's bounds are left to the models, which the
controller reports as ``Ready=False``, reason ``InvalidSchedule``. Used by
:mod:`appstack.api.crontab`.
"""

from __future__ import annotations

import re
from typing import Any

MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (  # name, low, high, names
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i for i, m in enumerate(MONTHS, start=1)}),
    ("day of week", 0, 6, {d: i for i, d in enumerate(DAYS)}),
)
FIVE_FIELDS = (
    "cronSpec takes five fields (minute hour day-of-month month day-of-week) or a "
    "macro such as @hourly"
)
_DURATION = r"([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)"
EVERY = rf"^@every {_DURATION}({_DURATION})*$"
_MACRO_RE = "|".join(m.lstrip("@") for m in MACROS)
_SHAPE = r"^\s*\S+\s+\S+\s+\S+\s+\S+\s+\S+\s*$"
_CHARS = r"^\s*[0-9A-Za-z*?/,-]+(\s+[0-9A-Za-z*?/,-]+){4}\s*$"
_FIELD = r"\S+"
_RANGE = "^[0-9A-Za-z*?]+-[0-9A-Za-z]+(/[0-9]+)?$"


def _lit(pattern: str) -> str:
    """A regular expression as a single-quoted CEL string literal (backslashes escaped)."""
    return "'" + pattern.replace("\\", "\\\\") + "'"


def _cel_value(var: str, low: int, names: dict[str, int]) -> str:
    """CEL: the number bound ``var`` stands for (unknown names: left to the models)."""
    number = f"({var}.matches('^[0-9]{{1,9}}$') ? int({var}) : {low})"
    if not names:
        return f"({var} == '*' || {var} == '?' ? {low} : {number})"
    table = "{" + ", ".join(f"'{k}': {v}" for k, v in names.items()) + "}"
    upper = f"{var}.upperAscii()"
    named = f"({upper} in {table} ? {table}[{upper}] : {number})"
    return f"({var} == '*' || {var} == '?' ? {low} : {named})"


def _backwards_rule(index: int, name: str, low: int, names: dict[str, int]) -> dict[str, str]:
    bounds = "x.split('/')[0].split('-')"
    start = _cel_value(f"{bounds}[0]", low, names)
    end = _cel_value(f"{bounds}[1]", low, names)
    return {
        "rule": f"self.startsWith('@') || size(self.findAll({_lit(_FIELD)})) != 5 || "
        f"self.findAll({_lit(_FIELD)})[{index}].split(',').all(x, !x.matches('{_RANGE}') || "
        f"{start} <= {end})",
        "message": f"cronSpec {name}: a range a-b must not run backwards (a <= b)",
    }


CRON_RULES: list[Any] = [
    {
        "rule": f"self.matches('^@({_MACRO_RE})$') || self.matches({_lit(EVERY)}) || "
        f"self.matches({_lit(_SHAPE)})",
        "message": FIVE_FIELDS,
    },
    {
        "rule": f"self.startsWith('@') || self.matches({_lit(_CHARS)})",
        "message": "cronSpec fields may only contain digits, names (JAN, MON), * ? / , and -",
    },
    {
        "rule": "!self.matches('/0*([^0-9]|$)')",
        "message": "cronSpec: a step /n must be a positive number",
    },
    *(_backwards_rule(i, name, low, names) for i, (name, low, _high, names) in enumerate(FIELDS)),
]

_ITEM = re.compile(r"^(\*|\?|[0-9A-Za-z]+)(-[0-9A-Za-z]+)?(/[0-9]+)?$")


def _number(bound: str, names: dict[str, int]) -> int | None:
    if bound.upper() in names:
        return names[bound.upper()]
    return int(bound) if bound.isdigit() else None


def _item_problem(item: str, field: tuple[str, int, int, dict[str, int]], value: str) -> str | None:
    name, low, high, names = field
    where = f"cronSpec {name} {value!r}"
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
    if start is not None and end is not None and start > end:
        return f"{where}: the range {span!r} runs backwards"
    return None


def cron_problem(spec: str) -> str | None:
    """Why ``spec`` is not a schedule Kubernetes accepts, or None."""
    if spec in MACROS or re.match(EVERY, spec):
        return None
    fields = spec.split()
    if len(fields) != 5 or spec.startswith("@"):
        return f"{FIVE_FIELDS}; got {len(fields)}: {spec!r}"
    for value, field in zip(fields, FIELDS, strict=True):
        for item in (i for i in value.split(",") if i):
            problem = _item_problem(item, field, value)
            if problem:
                return problem
    return None
