"""A kind's CEL rules evaluated client-side (sdk/cel.py), on a kind declared with the SDK as
an operator author would: where each rule sits in the schema, defaults applied first, the
field each violation names, messageExpression, transition rules on updates only (list items
correlated by their keys, not their places), errors of evaluation, the Kubernetes functions
the engine lacks, and a whole object's model refusing what admission refuses. The same rules
on the real API server: tests/e2e/test_cel_parity.py (appstack's kinds)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ConfigDict, Field, ValidationError, model_validator

from appstack.sdk import cel
from appstack.sdk.kind import CustomObject, custom_kind
from appstack.sdk.model import KubeModel
from appstack.sdk.names import NameRule


class Item(KubeModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "self.weight <= 10", "message": "weight is at most 10"},
                {
                    "rule": "self.weight >= oldSelf.weight",
                    "message": "weight never goes down",
                    "fieldPath": ".weight",
                },
            ]
        }
    )

    name: str
    weight: int = 1


class WidgetSpec(KubeModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.replicas <= self.limit",
                    "message": "replicas may not exceed limit",
                    "fieldPath": ".replicas",
                },
                {
                    "rule": "!has(self.tags) || self.tags.all(t, self.tags[t] != 'bad')",
                    "message": "no tag is bad",
                    "messageExpression": "'tag ' + self.tags.filter(t, self.tags[t] == 'bad')[0]"
                    " + ' is bad'",
                    "fieldPath": ".tags",
                },
                {
                    "rule": "!has(self.code) || size(self.code.findAll('[0-9]')) == 3",
                    "message": "code has three digits",
                    "fieldPath": ".code",
                },
            ]
        }
    )

    replicas: int = 1
    limit: int = 3  # a default the rule above reads: applied before it is evaluated
    items: list[Item] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    tags: dict[str, str] | None = None
    code: str | None = None
    labels: dict[str, str] | None = Field(
        default=None,
        json_schema_extra={
            "additionalProperties": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "size(self) <= 3", "message": "short"}],
            }
        },
    )


class WidgetStatus(KubeModel):
    ready: bool | None = None


def _even(name: str, spec: Any) -> bool:
    return len(name) % 2 == 0


@custom_kind(group="widgets.example.com", plural="widgets")
class Widget(CustomObject):
    NAME_RULES = (
        NameRule("self.metadata.name.startsWith('w')", "metadata.name must start with w"),
        NameRule(None, "metadata.name must have an even length", _even),
    )

    spec: WidgetSpec
    status: WidgetStatus | None = None


RULES = cel.rules_of(Widget.KIND)


def _obj(name: str = "wx", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def test_the_rules_are_those_of_the_generated_crd_where_they_sit() -> None:
    assert {(r.where, r.message) for r in RULES.rules} == {
        ("", "metadata.name must start with w"),
        (".spec", "replicas may not exceed limit"),
        (".spec", "no tag is bad"),
        (".spec", "code has three digits"),
        (".spec.items[*]", "weight is at most 10"),
        (".spec.items[*]", "weight never goes down"),
        (".spec.labels{*}", "short"),
    }
    assert [r.transition for r in RULES.rules if r.where == ".spec.items[*]"] == [False, True]


def test_a_valid_object_breaks_nothing() -> None:
    assert RULES.violations(_obj(replicas=3, items=[{"name": "a", "weight": 10}])) == []


def test_defaults_are_applied_before_the_rules_read_them() -> None:
    assert RULES.violations(_obj(replicas=4)) == [
        cel.Violation("spec.replicas", "replicas may not exceed limit")
    ]
    assert RULES.violations(_obj(replicas=4, limit=4)) == []


def test_a_null_is_pruned_as_the_api_server_prunes_it() -> None:
    """``tags: null`` (a bare ``tags:`` in YAML) is no tags, not a map the rules fail on."""
    assert RULES.violations(_obj(tags=None, replicas=None)) == []
    assert Widget.model_validate(_obj(tags=None)).spec.tags is None


def test_each_item_and_map_value_is_named_by_its_place() -> None:
    items = [{"name": "a"}, {"name": "b", "weight": 11}]
    assert RULES.violations(_obj(items=items, labels={"ok": "abc", "long": "abcd"})) == [
        cel.Violation("spec.items[1]", "weight is at most 10"),
        cel.Violation("spec.labels[long]", "short"),
    ]


def test_a_message_expression_says_what_the_rule_found() -> None:
    (violation,) = RULES.violations(_obj(tags={"x": "good", "y": "bad"}))
    assert violation == cel.Violation("spec.tags", "tag y is bad")


def test_kubernetes_find_all_is_there() -> None:
    assert RULES.violations(_obj(code="a1b2c3")) == []
    assert RULES.violations(_obj(code="a1b2")) == [
        cel.Violation("spec.code", "code has three digits")
    ]


def test_rules_at_the_root_name_no_field() -> None:
    assert RULES.violations(_obj(name="xy")) == [
        cel.Violation("", "metadata.name must start with w")
    ]


def test_transition_rules_only_on_updates_with_items_correlated_by_key() -> None:
    old = _obj(items=[{"name": "a", "weight": 5}, {"name": "b", "weight": 5}])
    lowered = _obj(items=[{"name": "b", "weight": 5}, {"name": "a", "weight": 4}])
    assert RULES.violations(lowered) == []  # a create: no old object
    assert RULES.violations(lowered, old) == [
        cel.Violation("spec.items[1].weight", "weight never goes down")
    ]
    added = _obj(items=[{"name": "a", "weight": 5}, {"name": "c", "weight": 1}])
    assert RULES.violations(added, old) == []  # c is new: nothing to compare with


def test_a_rule_that_cannot_be_evaluated_is_a_violation_that_says_so() -> None:
    (violation,) = RULES.violations(_obj(replicas="many"))
    assert violation.field == "spec.replicas"
    assert violation.error
    assert "evaluation error" in violation.message


def test_the_object_given_is_not_changed() -> None:
    obj = _obj(replicas=2)
    RULES.violations(obj)
    assert obj == {"metadata": {"name": "wx"}, "spec": {"replicas": 2}}


def test_the_whole_objects_model_refuses_what_admission_refuses_naming_the_field() -> None:
    with pytest.raises(ValidationError) as refused:
        Widget.model_validate(_obj(replicas=9, items=[{"name": "a", "weight": 12}]))
    assert [(e["loc"], e["msg"], e["type"]) for e in refused.value.errors()] == [
        (("spec", "replicas"), "replicas may not exceed limit", "cel_rule"),
        (("spec", "items", 0), "weight is at most 10", "cel_rule"),
    ]
    assert Widget.model_validate(_obj(replicas=2)).spec.limit == 3


def test_the_spec_model_alone_checks_no_cel_rule() -> None:
    """A spec the reconciler validates was admitted: its CEL rules held then."""
    assert WidgetSpec.model_validate({"replicas": 9}).replicas == 9


def test_a_name_rule_no_cel_can_afford_is_checked_in_python() -> None:
    with pytest.raises(ValidationError, match="even length"):
        Widget.model_validate(_obj(name="wxy"))


def test_a_name_rule_is_cel_or_a_check_never_both() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        NameRule("true", "both", _even)
    with pytest.raises(ValueError, match="exactly one"):
        NameRule(None, "neither")


def test_without_the_engine_the_rules_are_left_to_the_api_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cel, "available", lambda: False)
    assert Widget.model_validate(_obj(replicas=9)).spec.replicas == 9


def test_a_rule_this_engine_cannot_compile_is_left_to_the_api_server_with_a_warning() -> None:
    rules = [
        {"rule": "quantity(self.size).isGreaterThan(quantity('1Gi'))", "message": "big"},
        {"rule": "self.size != ''", "message": "a size"},
    ]
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-validations": rules}},
    }
    with pytest.warns(UserWarning, match=r"not evaluated client-side.*\.spec: quantity"):
        compiled = cel.KindRules(schema)
    assert [str(e).split(":")[0] for e in compiled.skipped] == [".spec"]
    assert compiled.violations({"spec": {"size": ""}}) == [cel.Violation("spec", "a size")]


def test_refusal_names_each_field_as_a_location() -> None:
    error = cel.refusal("Widget", [cel.Violation("spec.a[2].b", "bad"), cel.Violation("", "r")])
    assert [(e["loc"], e["msg"], e["type"]) for e in error.errors()] == [
        (("spec", "a", 2, "b"), "bad", "cel_rule"),
        ((), "r", "cel_rule"),
    ]
    assert cel.location("spec.labels[long].x") == ("spec", "labels", "long", "x")


class Graph(KubeModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": "self.n >= 0", "message": "n is not negative"}]
        }
    )

    n: int

    @model_validator(mode="after")
    def _beyond_cel(self) -> Graph:
        if self.n % 2:
            raise ValueError("n is even")
        return self


@custom_kind(group="widgets.example.com", plural="graphs")
class Gadget(CustomObject):
    spec: Graph
    status: WidgetStatus | None = None


def test_what_admission_refuses_is_said_before_a_check_beyond_cel() -> None:
    with pytest.raises(ValidationError) as refused:
        Gadget.model_validate(_obj(n=-1))
    assert [(e["loc"], e["msg"]) for e in refused.value.errors()] == [
        (("spec",), "n is not negative")
    ]
    with pytest.raises(ValidationError, match="n is even"):
        Gadget.model_validate(_obj(n=3))
