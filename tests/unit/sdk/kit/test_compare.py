"""Pure judgements about child writes (sdk/kit/compare.py): which rejected applies are the
user's to fix, a node port taken told by the Status' cause, whether a child already has the
quantities asked for; and what our last apply set, and whether the wanted object leaves
some of it out: a child with every wanted field is still stale when a field we applied
before (an env var, resources, a port) is no longer wanted."""

from __future__ import annotations

from typing import Any

import pytest

from appstack.runtime import errors
from appstack.runtime.managedfields import keep_applied_by
from appstack.sdk.kit.compare import (
    already_so,
    applied_fields,
    is_subset,
    node_port_taken,
    users_problem,
    would_remove,
)
from appstack.sdk.kit.quantity import same_quantity
from tests.support.managed_fields import APPLIED, deployment

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


def _want() -> dict[str, Any]:
    container = {
        "name": "app",
        "image": "nginx",
        "env": [{"name": "A", "value": "1"}],
        "ports": [{"containerPort": 80}],  # protocol: defaulted by the server, a key
        "resources": {"limits": {"cpu": "1"}},
    }
    return {
        "metadata": {
            "name": "web",
            "labels": {"app": "web"},
            "ownerReferences": [{"uid": "u1", "name": "web"}],
        },
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [container], "finalizers": ["x"]}},
        },
    }


def _container(want: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = want["spec"]["template"]["spec"]["containers"][0]
    return container


def test_nothing_is_removed_when_the_wanted_object_is_what_was_applied() -> None:
    assert not would_remove(APPLIED, _want())
    more = _want()
    _container(more)["env"].append({"name": "B", "value": "2"})  # more is not less
    assert not would_remove(APPLIED, more)
    assert not would_remove({}, _want())  # never applied: nothing of ours to remove


def test_a_removed_field_map_key_or_list_item_is_noticed() -> None:
    no_resources = _want()
    del _container(no_resources)["resources"]
    assert would_remove(APPLIED, no_resources)
    no_env = _want()
    _container(no_env)["env"] = [{"name": "B", "value": "1"}]
    assert would_remove(APPLIED, no_env)
    other_port = _want()
    _container(other_port)["ports"] = [{"containerPort": 9090}]
    assert would_remove(APPLIED, other_port)
    udp = _want()
    _container(udp)["ports"] = [{"containerPort": 80, "protocol": "UDP"}]
    assert would_remove(APPLIED, udp)
    no_label = _want()
    no_label["metadata"]["labels"] = {}
    assert would_remove(APPLIED, no_label)
    no_finalizer = _want()
    no_finalizer["spec"]["template"]["spec"]["finalizers"] = []
    assert would_remove(APPLIED, no_finalizer)
    by_index = {"f:args": {"i:1": {}}}
    assert not would_remove(by_index, {"args": ["a", "b"]})
    assert would_remove(by_index, {"args": ["a"]})


def test_our_applied_fields_are_read_from_our_own_apply_entry() -> None:
    kept = keep_applied_by(deployment(), "appstack")
    assert applied_fields(kept, "appstack") == {"f:x": {}}
    assert applied_fields(kept, "someone") == {}


def test_a_child_is_already_so_only_if_nothing_we_applied_is_dropped() -> None:
    current = _want()
    current["metadata"]["managedFields"] = [
        {"manager": "appstack", "operation": "Apply", "fieldsV1": APPLIED}
    ]
    assert already_so(_want(), current, "appstack")
    trimmed = _want()
    del _container(trimmed)["resources"]
    assert is_subset(trimmed, current)  # every wanted field is there...
    assert not already_so(trimmed, current, "appstack")  # ...but resources must go
    assert already_so(trimmed, current, "someone-else")  # not ours to remove
