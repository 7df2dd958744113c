"""The CEL parity table: for every CEL rule of every CRD we serve, objects that break exactly
that rule (and boundaries both sides accept), with the checks both sides share (pure, no
I/O).

:data:`CASES` is read by tests/unit/api/test_cel_parity.py (the Python models refuse each case
and name the field; every rule of the generated CRDs has a case) and by
tests/e2e/test_cel_parity.py (the API server refuses each case with the rule's message and
field, with server-side dry-run writes). The rules are enumerated from the generated CRDs
(:func:`~tests.cel_parity.table.crd_rules`), never from a hand list, so a rule added without
a case fails the unit test, naming it.
"""

from __future__ import annotations

from typing import Any

from tests.cel_parity.appstack_cases import APPSTACK_CASES, STACK
from tests.cel_parity.component_cases import MEMBER_CASES, URL_EDGES
from tests.cel_parity.kind_cases import BASES as _BASES
from tests.cel_parity.kind_cases import KIND_CASES
from tests.cel_parity.pod_cases import POD_CASES
from tests.cel_parity.schedule_cases import SCHEDULE_CASES
from tests.cel_parity.table import Case

CASES: tuple[Case, ...] = (
    *APPSTACK_CASES,
    *MEMBER_CASES,
    *URL_EDGES,
    *KIND_CASES,
    *SCHEDULE_CASES,
    *POD_CASES,
)

#: The valid base object of each kind, which every case changes.
BASES: dict[str, dict[str, Any]] = {"AppStack": STACK, **_BASES}
