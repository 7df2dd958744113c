"""Which Pod Security level a namespace enforces, read from its label."""

from __future__ import annotations

from appstack.controllers.util.podsecurity import level_of


def test_only_an_enforced_restricted_label_makes_pods_restricted() -> None:
    assert level_of({"pod-security.kubernetes.io/enforce": "restricted"}) == "restricted"
    assert level_of({"pod-security.kubernetes.io/enforce": "baseline"}) == "baseline"
    assert level_of({"pod-security.kubernetes.io/warn": "restricted"}) == "baseline"
    assert level_of(None) == "baseline"
