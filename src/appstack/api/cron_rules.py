"""The admission rules of ``cronSpec`` (:data:`CRON_RULES`, CEL in the CRD schema): the
shape (five fields, six with seconds first, or a macro), the characters, positive steps
and ranges that do not run backwards, each message naming the field. Values outside a
field's bounds are left to the models (:func:`appstack.api.cron.cron_problem`), which the
controller reports as ``Ready=False``, reason ``InvalidSchedule``. Used by
:mod:`appstack.api.crontab` (:data:`CRON_RULES`) and :mod:`appstack.api.etcdcluster_backup`
(:func:`cron_rules` of five fields only).
"""

from __future__ import annotations

from typing import Any

from appstack.api.cron import EVERY, FIELDS, FIVE_FIELDS, MACROS, SECONDS, five_fields

_MACRO_RE = "|".join(m.lstrip("@") for m in MACROS)
_SHAPE = r"^\s*\S+(\s+\S+){4,5}\s*$"
_CHARS = r"^\s*[0-9A-Za-z*?/,-]+(\s+[0-9A-Za-z*?/,-]+){4,5}\s*$"
_FIELD = r"\S+"
_RANGE = "^[0-9A-Za-z*?]+-[0-9A-Za-z]+(/[0-9]+)?$"


def _lit(pattern: str) -> str:
    """A regular expression as a single-quoted CEL string literal (backslashes escaped)."""
    return "'" + pattern.replace("\\", "\\\\") + "'"


_FIELDS = f"self.findAll({_lit(_FIELD)})"  # every field, in order


def _cel_value(var: str, low: int, names: dict[str, int]) -> str:
    """CEL: the number bound ``var`` stands for (unknown names: left to the models)."""
    number = f"({var}.matches('^[0-9]{{1,9}}$') ? int({var}) : {low})"
    if not names:
        return f"({var} == '*' || {var} == '?' ? {low} : {number})"
    table = "{" + ", ".join(f"'{k}': {v}" for k, v in names.items()) + "}"
    upper = f"{var}.upperAscii()"
    named = f"({upper} in {table} ? {table}[{upper}] : {number})"
    return f"({var} == '*' || {var} == '?' ? {low} : {named})"


def _backwards_rule(
    index: str, guard: str, field: tuple[str, int, int, dict[str, int]], label: str
) -> Any:
    """No range ``a-b`` of the field at ``index`` (a CEL expression) runs backwards."""
    name, low, _high, names = field
    bounds = "x.split('/')[0].split('-')"
    start = _cel_value(f"{bounds}[0]", low, names)
    end = _cel_value(f"{bounds}[1]", low, names)
    return {
        "rule": f"self.startsWith('@') || {guard} || {_FIELDS}[{index}].split(',').all(x, "
        f"!x.matches('{_RANGE}') || {start} <= {end})",
        "message": f"{label} {name}: a range a-b must not run backwards (a <= b)",
    }


def cron_rules(label: str = "cronSpec", *, seconds: bool = True) -> list[Any]:
    """The rules of a schedule field named ``label``: five fields, six with seconds first
    and ``@every`` too unless ``seconds`` is false."""
    if seconds:
        shape = f"self.matches({_lit(EVERY)}) || self.matches({_lit(_SHAPE)})"
        chars, message = _CHARS, FIVE_FIELDS.replace("cronSpec", label, 1)
    else:
        shape = f"self.matches({_lit(_SHAPE.replace('{4,5}', '{4}'))})"
        chars, message = _CHARS.replace("{4,5}", "{4}"), five_fields(label)
    backwards = [
        # Five fields: minute is field 0; six (seconds first): field 1.
        _backwards_rule(f"size({_FIELDS}) - 5 + {i}", f"!(size({_FIELDS}) in [5, 6])", f, label)
        for i, f in enumerate(FIELDS)
    ]
    if seconds:
        backwards.insert(0, _backwards_rule("0", f"size({_FIELDS}) != 6", SECONDS, label))
    return [
        {"rule": f"self.matches('^@({_MACRO_RE})$') || {shape}", "message": message},
        {
            "rule": f"self.startsWith('@') || self.matches({_lit(chars)})",
            "message": f"{label} fields may only contain digits, names (JAN, MON), * ? / , and -",
        },
        {
            "rule": "!self.matches('/0*([^0-9]|$)')",
            "message": f"{label}: a step /n must be a positive number",
        },
        *backwards,
    ]


CRON_RULES: list[Any] = cron_rules()
