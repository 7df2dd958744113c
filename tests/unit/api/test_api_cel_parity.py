"""appstack.api as a whole: every admission rule is written once, in CEL, and the parity
table (tests/cel_parity) has a case for each. Here, without a cluster: every CEL rule of the
generated CRDs has a refused case and every case names one rule; the base objects are valid;
the rules evaluated client-side (appstack.sdk.cel) refuse each case with that rule's
message on the field the API server names, and nothing else unless the case says so (and
accept each boundary); a whole object's model refuses what they refuse; and what only the
models check (no CEL can afford it) is refused by the models. That the API server agrees,
case by case: tests/e2e/test_cel_parity.py."""

from __future__ import annotations

import pytest

from appstack.sdk.cel import rules_of
from tests.cel_parity import BASES, CASES
from tests.cel_parity.model_only import MODEL_ONLY, ModelOnly
from tests.cel_parity.table import (
    Case,
    client_refusal,
    crd_rules,
    edited,
    model_of,
    python_refusal,
    rule_of,
    said_by,
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
def test_every_rule_of_ours_is_evaluated_client_side(kind: str) -> None:
    assert rules_of(model_of(kind).KIND).skipped == []


@pytest.mark.parametrize("kind", sorted(BASES))
def test_the_base_objects_are_valid(kind: str) -> None:
    assert python_refusal(kind, BASES[kind]) is None


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_rules_evaluated_client_side_refuse_each_case_on_its_field(case: Case) -> None:
    found = client_refusal(case, BASES[case.kind])
    if not case.refused:
        assert found == []
        return
    (rule,) = rule_of(case, RULES)
    said = said_by(found, rule)
    assert [v.field for v in said] == [case.field], found
    assert not any(v.error for v in found), found
    assert len(found) == len(said) or case.also, f"{rule} and more: {found}"


@pytest.mark.parametrize("case", [c for c in CASES if c.old is None], ids=lambda c: c.id)
def test_a_whole_objects_model_refuses_what_the_rules_refuse(case: Case) -> None:
    """(A transition rule needs the old object: the rules refuse those, a model cannot.)"""
    errors = python_refusal(case.kind, case.obj(BASES[case.kind]))
    if not case.refused:
        assert errors is None
        return
    (rule,) = rule_of(case, RULES)
    assert errors is not None
    assert any(e.startswith(f"{case.field}: {rule.message}") for e in errors), errors


@pytest.mark.parametrize("one_sided", MODEL_ONLY, ids=lambda m: m.says)
def test_what_only_the_models_refuse(one_sided: ModelOnly) -> None:
    obj = edited(BASES[one_sided.kind], one_sided.edits)
    errors = python_refusal(one_sided.kind, obj)
    assert errors is not None
    assert any(one_sided.says in e for e in errors), errors
    assert (
        client_refusal(
            Case(one_sided.kind, "", "", one_sided.edits, refused=False), BASES[one_sided.kind]
        )
        == []
    ), "no CEL rule refuses it: it is the models' alone"
