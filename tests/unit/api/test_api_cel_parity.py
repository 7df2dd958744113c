"""appstack.api as a whole: the Python side of the CEL parity table (tests/cel_parity) for
every kind's models and the rules they share (appstack_rules, cron_rules, managed_rules,
urls...). Every CEL rule of the generated CRDs has a case, every case names one rule, the
base objects are valid, and the models refuse each case naming the rule's field (and accept
each boundary). The API server side is tests/e2e/test_cel_parity.py."""

from __future__ import annotations

import pytest

from tests.cel_parity import BASES, CASES
from tests.cel_parity.model_only import MODEL_ONLY, ModelOnly
from tests.cel_parity.table import (
    Case,
    crd_rules,
    edited,
    names_field,
    python_refusal,
    rule_of,
)

RULES = crd_rules()


def test_every_rule_of_the_generated_crds_has_a_refused_case() -> None:
    refused = [c for c in CASES if c.refused]
    missing = [str(r) for r in RULES if not any(r in rule_of(c, RULES) for c in refused)]
    assert not missing, "CEL rules without a parity case:\n" + "\n".join(missing)


def test_the_table_covers_many_rules() -> None:
    assert len(RULES) >= 88
    assert {r.kind for r in RULES} == set(BASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_each_case_names_exactly_one_rule(case: Case) -> None:
    assert len(rule_of(case, RULES)) == 1


@pytest.mark.parametrize("kind", sorted(BASES))
def test_the_base_objects_are_valid(kind: str) -> None:
    assert python_refusal(kind, BASES[kind]) is None


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_models_agree(case: Case) -> None:
    if case.python is not None:
        assert case.old is not None  # only transition rules are out of the models' reach
        return
    errors = python_refusal(case.kind, case.obj(BASES[case.kind]))
    if not case.refused:
        assert errors is None
        return
    assert errors is not None, f"the models accept what {rule_of(case, RULES)} refuses"
    assert names_field(errors, case.field), errors


@pytest.mark.parametrize("one_sided", MODEL_ONLY, ids=lambda m: m.says)
def test_what_only_the_models_refuse(one_sided: ModelOnly) -> None:
    errors = python_refusal(one_sided.kind, edited(BASES[one_sided.kind], one_sided.edits))
    assert errors is not None
    assert any(one_sided.says in e for e in errors), errors
