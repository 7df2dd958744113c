"""Every operator built on the SDK serves what its users run (sdk/kit/kind_metrics.py): its
kinds' readiness and the gauges a kind declares on its registration, under its own metric
prefix — a tutorial's guestbook here, not appstack."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from appstack.runtime.resources import Resource
from appstack.sdk import Alert, Gauges, KindMetrics, Sample
from appstack.sdk.kit import kind_metrics
from tests.support.guestbook import IDENTITY, PROJECT


def _length(obj: dict[str, Any], labels: dict[str, str]) -> Iterator[Sample]:
    yield "guestbook_foo_length", labels, float(len((obj.get("spec") or {}).get("foo") or ""))


GAUGES = Gauges({"guestbook_foo_length": "How long the guestbook's foo is"}, _length)
(PLAIN,) = PROJECT.controllers
MEASURED = replace(PLAIN, gauges=GAUGES)


def _book(name: str, foo: str, ready: str) -> dict[str, Any]:
    return {
        "kind": "Guestbook",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"foo": foo},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


class Cache:
    def iter_objects(self, resource: Resource) -> Iterator[dict[str, Any]]:
        if resource.kind == "Guestbook":
            yield _book("a", "hello", "True")
            yield _book("b", "", "False")


def test_a_users_kind_and_its_own_gauge_are_served() -> None:
    registry = CollectorRegistry()
    registry.register(KindMetrics(Cache(), [MEASURED], IDENTITY))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert 'guestbook_object_ready{kind="Guestbook",name="a",namespace="team"} 1.0' in text
    assert 'guestbook_object_ready{kind="Guestbook",name="b",namespace="team"} 0.0' in text
    assert 'guestbook_foo_length{name="a",namespace="team"} 5.0' in text
    assert "# HELP guestbook_foo_length How long the guestbook's foo is" in text


def test_families_name_the_prefix_and_refuse_a_gauge_declared_twice() -> None:
    assert kind_metrics.families([PLAIN], IDENTITY) == {
        "guestbook_object_ready": "1 if the object's Ready condition is True"
    }
    with pytest.raises(ValueError, match="guestbook_foo_length is declared twice"):
        kind_metrics.families([MEASURED, MEASURED], IDENTITY)


SHORT = Alert(
    "GuestbookFooEmpty",
    "max by (namespace, name) (guestbook_foo_length) == 0",
    "Guestbook {{ $labels.namespace }}/{{ $labels.name }} has an empty foo",
    for_="10m",
    description="Set spec.foo.",
)


def test_a_kinds_alerts_are_rules_of_its_operators_prometheus_rule() -> None:
    alerted = replace(MEASURED, alerts=(SHORT,))
    assert kind_metrics.alert_rules([PLAIN]) == []
    assert kind_metrics.alert_rules([alerted]) == [
        {
            "alert": "GuestbookFooEmpty",
            "expr": "max by (namespace, name) (guestbook_foo_length) == 0",
            "for": "10m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Guestbook {{ $labels.namespace }}/{{ $labels.name }} has an empty foo",
                "description": "Set spec.foo.",
            },
        }
    ]
    with pytest.raises(ValueError, match="the alert GuestbookFooEmpty is declared twice"):
        kind_metrics.alert_rules([alerted, alerted])


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"name": "Foo Empty"}, "name: not a Prometheus metric name"),
        ({"for_": "10 minutes"}, "for_: '10 minutes' is not a duration"),
        ({"for_": ""}, "for_: '' is not a duration"),
        ({"expr": " "}, "expr: empty"),
        ({"summary": ""}, "summary: empty"),
    ],
)
def test_an_alert_prometheus_would_refuse_is_refused_where_it_is_declared(
    change: dict[str, str], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        replace(SHORT, **change)


def test_every_operator_gets_alerts_of_its_own_over_its_own_series() -> None:
    """The alerts every SDK operator gets are named after the project and select its own
    series: its controllers' names, its Lease, its metric prefix — never another
    operator's (appstack's controllers are not guestbook's)."""
    alerts = kind_metrics.operator_alerts(IDENTITY, [PLAIN], lease_duration=15)
    by_name = {a.name: a for a in alerts}
    assert list(by_name) == [
        "GuestbookReconcileErrors",
        "GuestbookWorkqueueStuck",
        "GuestbookNoLeader",
        "GuestbookObjectNotReady",
        "GuestbookShardKeysUnassigned",
    ]
    name = PLAIN.name
    assert f'controller_runtime_reconcile_errors_total{{controller=~"{name}"}}' in (
        by_name["GuestbookReconcileErrors"].expr
    )
    assert f'workqueue_depth{{name=~"{name}"}}' in by_name["GuestbookWorkqueueStuck"].expr
    lease = f'leader_election_master_status{{name="{IDENTITY.lease_name}"}}'
    assert by_name["GuestbookNoLeader"].expr == f"(max({lease}) or vector(0)) < 1"
    assert by_name["GuestbookNoLeader"].severity == "critical"
    assert "guestbook_object_ready" in by_name["GuestbookObjectNotReady"].expr
    shards = by_name["GuestbookShardKeysUnassigned"].expr
    assert shards == "max by (resource) (guestbook_shard_oldest_unassigned_seconds) > 15"
    listing = f"kubectl get {PLAIN.primary.plural} -A -o wide"
    assert listing in by_name["GuestbookReconcileErrors"].description


def test_the_operators_alerts_come_first_and_a_kind_may_not_take_their_names() -> None:
    declared = Alert("GuestbookFooLong", "guestbook_foo_length > 3", "foo is long")
    rules = kind_metrics.alerting_rules(
        IDENTITY, [replace(PLAIN, alerts=(declared,))], lease_duration=15
    )
    assert [r["alert"] for r in rules][-2:] == ["GuestbookShardKeysUnassigned", "GuestbookFooLong"]
    clash = Alert("GuestbookNoLeader", "vector(1)", "mine")
    with pytest.raises(ValueError, match="GuestbookNoLeader is the operator's own"):
        kind_metrics.alerting_rules(IDENTITY, [replace(PLAIN, alerts=(clash,))], lease_duration=15)


def test_a_controller_name_with_regex_characters_is_matched_exactly() -> None:
    """``guest-book`` and ``a.b`` are regex-escaped for PromQL's double-quoted string
    (``\\\\-``, ``\\\\.``): ``\\-`` alone is no PromQL escape and fails the rule's load
    (tests/integration/test_alert_rules.py loads it with promtool)."""
    named = [replace(PLAIN, name="guest-book"), replace(PLAIN, name="a.b")]
    alerts = {a.name: a for a in kind_metrics.operator_alerts(IDENTITY, named, lease_duration=15)}
    assert '{controller=~"guest\\\\-book|a\\\\.b"}' in alerts["GuestbookReconcileErrors"].expr
