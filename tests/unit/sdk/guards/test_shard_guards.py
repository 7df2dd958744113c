"""The admission guards of an operator installed sharded (docs/sharding.md), for the
tutorial's guestbook (tests/support/guestbook.py), evaluated client-side with the CEL
engine (tests/support/admission.py): its token may change the two shard labels of its
kinds' objects and no other label; nobody else may set, change or remove them (the
``<project>-shard-labels`` policy, made only for a sharded install); an unsharded install's
guards are as they were. The RBAC a sharded install adds: tests/unit/sdk/test_rbac.py."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from appstack.runtime import SECRET, Result
from appstack.sdk import ObjectReconciler, Registration
from appstack.sdk import config as sdk_config
from appstack.sdk.guards import GuardedOperator, policies
from appstack.sdk.guards.kinds import kinds_policy, shard_labels_policy
from tests.support.admission import namespace_object, refusals
from tests.support.guestbook import IDENTITY, PROJECT

UNSHARDED = sdk_config.guarded(PROJECT)
SHARDED = replace(UNSHARDED, sharded=True)
SHARD, DRAIN = IDENTITY.shard_labels
SHOP = namespace_object("shop", label=IDENTITY.enabled_label)
OWNER = {
    "apiVersion": "webapp.example.com/v1",
    "kind": "Guestbook",
    "metadata": {"name": "book", "namespace": "shop", "uid": "gb-1", "labels": {"team": "a"}},
    "spec": {"foo": "bar"},
}


def _labelled(obj: dict[str, Any], **labels: str | None) -> dict[str, Any]:
    found = copy.deepcopy(obj)
    merged = {**found["metadata"].get("labels", {}), **labels}
    found["metadata"]["labels"] = {k: v for k, v in merged.items() if v is not None}
    return found


def _said(policy: dict[str, Any] | None, *args: Any) -> str:
    assert policy is not None
    return " ".join(refusals(policy, *args, namespace=SHOP))


def test_the_label_keys_come_from_the_identity() -> None:
    assert (SHARD, DRAIN) == (
        "shard.webapp.example.com/guestbook",
        "drain.shard.webapp.example.com/guestbook",
    )


def test_a_sharded_operator_changes_the_shard_labels_and_no_other() -> None:
    kinds = kinds_policy(SHARDED)
    assigned = _labelled(OWNER, **{SHARD: "s1"})
    drained = _labelled(assigned, **{DRAIN: "s1"})
    for new, old in ((assigned, OWNER), (drained, assigned), (OWNER, drained)):
        assert _said(kinds, "UPDATE", new, old) == ""
    for new, old in ((_labelled(assigned, team="b"), assigned), (_labelled(OWNER, x="1"), OWNER)):
        assert "never their spec, labels (but the shard labels" in _said(kinds, "UPDATE", new, old)
    unlabelled = copy.deepcopy(OWNER)
    del unlabelled["metadata"]["labels"]
    assert _said(kinds, "UPDATE", _labelled(unlabelled, **{SHARD: "s"}), unlabelled) == ""
    assert "never their spec" in _said(kinds, "UPDATE", unlabelled, OWNER)  # team removed


def test_an_unsharded_operator_changes_no_label() -> None:
    said = _said(kinds_policy(UNSHARDED), "UPDATE", _labelled(OWNER, **{SHARD: "s1"}), OWNER)
    assert "never their spec, labels or annotations" in said
    assert shard_labels_policy(UNSHARDED) is None
    names = [p["metadata"]["name"] for p in policies(UNSHARDED)]
    assert not any("shard-labels" in name for name in names)


@pytest.mark.parametrize(
    ("operation", "new", "old"),
    [
        ("CREATE", _labelled(OWNER, **{SHARD: "s1"}), None),
        ("CREATE", _labelled(OWNER, **{DRAIN: "s1"}), None),
        ("UPDATE", _labelled(OWNER, **{SHARD: "s1"}), OWNER),
        ("UPDATE", _labelled(OWNER, **{SHARD: "s2"}), _labelled(OWNER, **{SHARD: "s1"})),
        ("UPDATE", OWNER, _labelled(OWNER, **{SHARD: "s1"})),
        (
            "UPDATE",
            _labelled(OWNER, **{SHARD: "s1"}),
            _labelled(OWNER, **{SHARD: "s1", DRAIN: "s1"}),
        ),
    ],
)
def test_nobody_else_sets_changes_or_removes_them(
    operation: str, new: dict[str, Any], old: dict[str, Any] | None
) -> None:
    guard = shard_labels_policy(SHARDED)
    assert "only the guestbook operator sets the labels" in _said(guard, operation, new, old)


def test_everything_else_a_tenant_does_is_left_to_the_other_guards() -> None:
    guard = shard_labels_policy(SHARDED)
    assert guard is not None
    assert _said(guard, "CREATE", OWNER, None) == ""
    mine = _labelled(OWNER, **{SHARD: "s1"})
    edited = {**_labelled(mine, team="b"), "spec": {"foo": "baz"}}
    assert _said(guard, "UPDATE", edited, mine) == ""
    (condition,) = guard["spec"]["matchConditions"]  # anyone without the operator's marker
    assert condition["expression"].startswith("!authorizer.group('webapp.example.com')")
    assert guard in policies(SHARDED)


class _Copier(ObjectReconciler):
    """A controller of a built-in kind (docs/any-kind.md): Secrets as its primary."""

    primary = SECRET

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        return None


def test_the_shard_labels_of_a_built_in_primary_are_guarded_too() -> None:
    """A sharded operator that reconciles Secrets (an ObjectReconciler's primary) routes
    them by the same labels: a tenant may not set or change them on a Secret either, the
    operator may (the writes guard lets it write those unowned), an unsharded install
    has no such guard; an operator of built-in kinds only gets it as well."""
    copier = Registration(name="copier", reconciler=_Copier)
    sharded = replace(
        GuardedOperator.of(IDENTITY, [*PROJECT.controllers, copier], rules=UNSHARDED.rules),
        sharded=True,
    )
    policy = shard_labels_policy(sharded)
    assert policy is not None
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert [(r["apiGroups"], r["resources"]) for r in rules] == [
        (["webapp.example.com"], ["guestbooks"]),
        ([""], ["secrets"]),
    ]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"}}
    assert "only the guestbook operator sets the labels" in _said(
        policy, "CREATE", _labelled(secret, **{SHARD: "s1"})
    )
    assert "only the guestbook operator" in _said(
        policy, "UPDATE", _labelled(secret, **{DRAIN: "s1"}), secret
    )
    assert _said(policy, "UPDATE", _labelled(secret, team="a"), secret) == ""
    only_copier = replace(GuardedOperator.of(IDENTITY, [copier]), sharded=True)
    alone = shard_labels_policy(only_copier)
    assert alone is not None
    assert alone["spec"]["matchConstraints"]["resourceRules"] == [rules[1]]
    assert shard_labels_policy(GuardedOperator.of(IDENTITY, [copier])) is None
