"""The namespace labels (api/namespaces.py): a namespace is opted in by its enabled label set
to exactly ``true``, the labels only a grant may set are the operator's own under its group,
and an object in a namespace not opted in is told which label to set."""

from __future__ import annotations

import pytest

from appstack.api.kind import GROUP
from appstack.api.namespaces import (
    ALLOW_PRIVILEGED,
    ENABLED,
    GUARDED,
    LABEL_GRANT,
    MAY_WRITE,
    is_enabled,
    not_enabled_message,
)


@pytest.mark.parametrize(
    ("labels", "enabled"),
    [
        ({ENABLED: "true"}, True),
        ({ENABLED: "true", "team": "a"}, True),
        ({ENABLED: "True"}, False),  # label values are compared exactly, as a selector does
        ({ENABLED: "false"}, False),
        ({ENABLED: ""}, False),
        ({"team": "a"}, False),
        ({}, False),
        (None, False),  # a namespace without labels
    ],
)
def test_only_the_enabled_label_set_to_true_opts_a_namespace_in(
    labels: dict[str, str] | None, enabled: bool
) -> None:
    assert is_enabled(labels) is enabled


def test_the_guarded_labels_are_the_operators_under_its_group() -> None:
    assert ENABLED in GUARDED
    assert set(GUARDED) == {ENABLED, ALLOW_PRIVILEGED, MAY_WRITE}
    assert all(label.startswith(f"{GROUP}/") for label in GUARDED)
    assert len(set(GUARDED)) == len(GUARDED)
    assert LABEL_GRANT[:2] == (GROUP, "namespaces")


def test_an_object_in_a_namespace_not_enabled_is_told_what_to_set() -> None:
    message = not_enabled_message("shop")
    assert "shop" in message
    assert f"{ENABLED}=true" in message
