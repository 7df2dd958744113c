"""The SDK's Helm text helpers that choose between two installs (pure):
:meth:`appstack.sdk.HelmText.either` — what a scaffolded project's chart and appstack's own
chart use for ``sharding.enabled`` — keeps a part both installs have alike once, puts one
that differs in an if/else and one only the varied install has in an if, and refuses a
varied install that drops or reorders the plain one's objects."""

from __future__ import annotations

import pytest

from appstack.sdk import HelmText

OPEN = HelmText.SHARDED


def test_alike_once_differing_in_if_else_added_in_if() -> None:
    plain = [("a", "A\n"), ("b", "B\n"), ("c", "C\n")]
    varied = [("a", "A\n"), ("x", "X\n"), ("b", "B'\n"), ("c", "C\n")]
    assert HelmText.either(OPEN, plain, varied) == [
        "A\n",
        OPEN,
        "X\n",
        "{{- end }}",
        OPEN,
        "B'\n",
        "{{- else }}",
        "B\n",
        "{{- end }}",
        "C\n",
    ]


def test_unset_it_is_the_plain_install_in_its_order() -> None:
    plain = [("a", "A\n"), ("b", "B\n")]
    parts = HelmText.either(OPEN, plain, [("b0", "N\n"), ("a", "A2\n"), ("b", "B\n")])
    kept: list[str] = []
    skipping = False
    for part in parts:  # render with the value unset: the if branches dropped
        if part == OPEN:
            skipping = True
        elif part in ("{{- else }}", "{{- end }}"):
            skipping = False
        elif not skipping:
            kept.append(part)
    assert kept == ["A\n", "B\n"]


@pytest.mark.parametrize(
    "varied",
    [
        [("a", "A\n")],  # an object dropped
        [("b", "B\n"), ("a", "A\n")],  # reordered
    ],
)
def test_a_varied_install_may_only_add_and_change_objects(varied: list[tuple[str, str]]) -> None:
    with pytest.raises(ValueError, match="every object of the plain one"):
        HelmText.either(OPEN, [("a", "A\n"), ("b", "B\n")], varied)


def test_the_schema_rules_name_the_values_they_need() -> None:
    rules = HelmText.sharding_schema_rules()
    assert [sorted(rule["if"]["properties"]) for rule in rules] == [
        ["sharding"],
        ["autoscaling", "sharding"],
        ["autoscaling"],
    ]
    assert rules[1]["then"]["properties"]["replicas"]["minimum"] == HelmText.SHARDS_MIN == 2
