"""Pure judgements about child writes (sdk/kit/compare.py): which rejected applies are the
user's to fix, a node port taken told by the Status' cause, and whether a child already has
the quantities asked for."""

from __future__ import annotations

import pytest

from appstack.runtime import errors
from appstack.sdk.kit.compare import is_subset, node_port_taken, users_problem
from appstack.sdk.kit.quantity import same_quantity

_SSA_500 = (
    "failed to create typed patch object (apps/v1, Kind=Deployment): .spec.template.spec"
    '.containers[name="app"].env: duplicate entries for key [name="A"]'
)


@pytest.mark.parametrize(
    ("code", "reason", "message", "users"),
    [
        (422, "Invalid", "spec.ports[0].port: Invalid value", True),
        (400, "BadRequest", "bad", True),
        (403, "Forbidden", "exceeded quota", True),
        (500, "InternalError", _SSA_500, True),
        (500, "InternalError", "etcdserver: request timed out", False),
        (500, "Timeout", "failed to create typed patch object", False),
        (503, "ServiceUnavailable", "etcd down", False),
        (504, "Timeout", "timeout", False),
        (429, "TooManyRequests", "slow down", False),
        (401, "Unauthorized", "token expired", False),
        (404, "NotFound", 'namespaces "x" not found', False),
        (409, "Conflict", "the object has been modified", False),
    ],
)
def test_only_refusals_of_the_object_itself_are_the_users(
    code: int, reason: str, message: str, users: bool
) -> None:
    error = errors.from_response(code, {"kind": "Status", "reason": reason, "message": message})
    assert users_problem(error) is users


def test_a_taken_node_port_is_told_by_the_status_cause_not_its_text() -> None:
    def invalid(field: str, reason: str = "FieldValueInvalid", text: str = "") -> errors.ApiError:
        details = {"causes": [{"reason": reason, "message": text, "field": field}]}
        return errors.Invalid(422, "Invalid", "Service x is invalid", details)

    assert node_port_taken(invalid("spec.ports[0].nodePort", text="anything at all"))
    assert node_port_taken(invalid("spec.ports[12].nodePort"))
    assert not node_port_taken(invalid("spec.ports[0].port", text="already allocated"))
    assert not node_port_taken(invalid("spec.ports[0].nodePort", reason="FieldValueRequired"))
    assert not node_port_taken(errors.Conflict(409, "Conflict", "already allocated"))


def test_canonical_quantities_are_already_so_but_other_strings_are_compared_exactly() -> None:
    want = {
        "resources": {"limits": {"cpu": 1, "memory": "1024Mi"}, "requests": {"cpu": "0.5"}},
        "env": [{"name": "N", "value": "1.0"}],
    }
    server = {
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
        "env": [{"name": "N", "value": "1.0"}],
    }
    assert is_subset(want, server)
    assert not is_subset(want, {**server, "env": [{"name": "N", "value": "1"}]})
    more_cpu = {**server["resources"], "requests": {"cpu": "1"}}
    assert not is_subset(want, {**server, "resources": more_cpu})
    assert same_quantity("2Gi", "2048Mi")
    assert not same_quantity("2Gi", "2G")
