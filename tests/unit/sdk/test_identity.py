"""An operator's identity (sdk/identity.py): every name below the assembly comes from it."""

from __future__ import annotations

import pytest

from appstack.api.identity import IDENTITY
from appstack.sdk.identity import OperatorIdentity


def test_names_default_from_the_project_and_the_domain() -> None:
    guestbook = OperatorIdentity(project="guestbook", domain="webapp.example.com")
    assert guestbook.name == "guestbook-operator"
    assert guestbook.namespace == "guestbook-system"
    assert guestbook.field_manager == "guestbook"
    assert guestbook.lease_name == "guestbook-operator"
    assert guestbook.event_source == "webapp.example.com/operator"
    assert guestbook.metric_prefix == "guestbook"
    assert guestbook.enabled_label == "webapp.example.com/enabled"
    assert guestbook.managed_by == {"app.kubernetes.io/managed-by": "guestbook"}
    assert guestbook.install_labels["app.kubernetes.io/part-of"] == "guestbook"
    assert guestbook.user_agent("0.1.0", "pod-1") == "guestbook/0.1.0 (pod-1)"
    assert OperatorIdentity(project="first-operator", domain="x.io").metric_prefix == (
        "first_operator"
    )


def test_appstack_is_one_identity_among_others() -> None:
    assert IDENTITY.project == "appstack"
    assert IDENTITY.domain == "appstack.dev"
    assert IDENTITY.name == "appstack-operator"
    assert IDENTITY.field_manager == "appstack"
    assert IDENTITY.event_source == "appstack.dev/operator"
    assert IDENTITY.metric_prefix == "appstack"


@pytest.mark.parametrize(
    ("project", "domain"), [("Guestbook", "x.io"), ("a_b", "x.io"), ("ok", ""), ("ok", "X.io")]
)
def test_bad_names_are_refused(project: str, domain: str) -> None:
    with pytest.raises(ValueError, match=r"project|domain"):
        OperatorIdentity(project=project, domain=domain)
