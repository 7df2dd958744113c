"""The cache indexes objects and keeps indexes right on update/delete; API errors are typed."""

from __future__ import annotations

from typing import Any

from appstack.runtime import errors
from appstack.runtime.resources import CONFIG_MAP, DEPLOYMENT, NAMESPACE, object_key, split_key
from appstack.runtime.store import Store


def _obj(name: str, namespace: str = "ns", owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "X", "name": "x"}]
    return {"metadata": meta}


def test_objects_are_found_by_namespace_and_controller_owner() -> None:
    store = Store()
    store.upsert(_obj("a", "one", owner="u1"))
    store.upsert(_obj("b", "one", owner="u2"))
    store.upsert(_obj("c", "two", owner="u1"))

    assert {o["metadata"]["name"] for o in store.by_index("namespace", "one")} == {"a", "b"}
    # an owner is looked up within its namespace: "c" in namespace two naming u1 (an owner
    # of namespace one) is not u1's child
    assert {o["metadata"]["name"] for o in store.by_index("controller-uid", "one/u1")} == {"a"}
    assert {o["metadata"]["name"] for o in store.by_index("controller-uid", "two/u1")} == {"c"}


def test_iter_objects_unpacks_one_at_a_time_and_sees_the_store_as_it_was() -> None:
    store = Store()
    for name in ("a", "b", "c"):
        store.upsert(_obj(name))
    reading = store.iter_objects()
    first = next(reading)
    store.delete("ns/c")  # changed while read: no error, and what was there is still read
    store.upsert(_obj("d"))
    rest = list(reading)
    assert [o["metadata"]["name"] for o in [first, *rest]] == ["a", "b", "c"]
    assert sorted(o["metadata"]["name"] for o in store.iter_objects()) == ["a", "b", "d"]
    first["metadata"]["name"] = "changed"  # a reader's copy is its own
    assert store.get("ns/a") == _obj("a")


def test_updates_and_deletes_move_objects_between_index_values() -> None:
    store = Store()
    store.upsert(_obj("a", owner="u1"))
    previous = store.upsert(_obj("a", owner="u2"))

    assert previous is not None
    assert store.by_index("controller-uid", "ns/u1") == []
    assert len(store.by_index("controller-uid", "ns/u2")) == 1

    store.delete("ns/a")
    assert store.by_index("controller-uid", "ns/u2") == []
    assert len(store) == 0


def test_an_index_value_goes_from_one_object_to_several_and_back_and_is_forgotten() -> None:
    store = Store()

    def names(value: str) -> set[str]:
        return {o["metadata"]["name"] for o in store.by_index("namespace", value)}

    store.upsert(_obj("a"))
    store.upsert(_obj("a"))  # the same object again: still one
    assert names("ns") == {"a"}
    store.upsert(_obj("b"))
    store.upsert(_obj("c"))
    assert names("ns") == {"a", "b", "c"}
    store.delete("ns/b")
    store.delete("ns/a")
    assert names("ns") == {"c"}
    store.upsert(_obj("d"))
    assert names("ns") == {"c", "d"}
    store.delete("ns/c")
    store.delete("ns/d")
    assert names("ns") == set()
    store.delete("ns/d")  # gone already: nothing to do
    # a value no object has any more is not kept (deleted objects' owners and labels)
    assert "ns" not in store._indices["namespace"]


def test_a_custom_index_added_later_covers_existing_objects() -> None:
    store = Store()
    store.upsert(_obj("a"))
    store.add_indexer("name-length", lambda o: [str(len(o["metadata"]["name"]))])
    assert store.by_index("name-length", "1")[0]["metadata"]["name"] == "a"


def test_keys_and_paths() -> None:
    assert object_key(_obj("a", "ns")) == "ns/a"
    assert object_key({"metadata": {"name": "cluster-wide"}}) == "cluster-wide"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("cluster-wide") == (None, "cluster-wide")
    assert CONFIG_MAP.path("ns", "a") == "/api/v1/namespaces/ns/configmaps/a"
    assert DEPLOYMENT.path("ns", "d", "scale") == "/apis/apps/v1/namespaces/ns/deployments/d/scale"
    assert DEPLOYMENT.path() == "/apis/apps/v1/deployments"
    assert NAMESPACE.path("ignored", "x") == "/api/v1/namespaces/x"


def test_an_invalid_object_error_carries_its_field_causes() -> None:
    body = {
        "kind": "Status",
        "reason": "Invalid",
        "message": 'AppService.appstack.dev "x" is invalid: spec.size: Invalid value: -1',
        "details": {
            "causes": [
                {"field": "spec.size", "reason": "FieldValueInvalid", "message": "must be >= 0"}
            ]
        },
    }
    error = errors.from_response(422, body)
    assert isinstance(error, errors.Invalid)
    assert error.causes == [errors.Cause("spec.size", "FieldValueInvalid", "must be >= 0")]


def test_status_codes_and_reasons_map_to_types() -> None:
    assert isinstance(errors.from_response(404, None), errors.NotFound)
    assert isinstance(
        errors.from_response(409, {"kind": "Status", "reason": "AlreadyExists"}),
        errors.AlreadyExists,
    )
    assert isinstance(
        errors.from_response(409, {"kind": "Status", "reason": "Conflict"}), errors.Conflict
    )
    assert isinstance(
        errors.from_response(410, {"kind": "Status", "reason": "Expired"}), errors.Gone
    )
    assert isinstance(
        errors.from_response(500, {"kind": "Status", "reason": "Timeout"}), errors.ServerTimeout
    )
    assert isinstance(errors.from_response(503, None), errors.ServerError)
    assert isinstance(errors.from_response(403, None), errors.Forbidden)


def test_too_many_requests_honours_retry_after() -> None:
    throttled = errors.from_response(429, None, {"Retry-After": "3"})
    assert isinstance(throttled, errors.TooManyRequests)
    assert throttled.retry_after == 3.0
    assert throttled.retryable
    detail = errors.from_response(429, {"kind": "Status", "details": {"retryAfterSeconds": 7}})
    assert isinstance(detail, errors.TooManyRequests)
    assert detail.retry_after == 7.0


def test_a_taken_node_port_is_told_by_the_status_cause_not_its_text() -> None:
    from appstack.sdk.kit.compare import node_port_taken  # noqa: PLC0415

    def invalid(field: str, reason: str = "FieldValueInvalid", text: str = "") -> errors.ApiError:
        details = {"causes": [{"reason": reason, "message": text, "field": field}]}
        return errors.Invalid(422, "Invalid", "Service x is invalid", details)

    assert node_port_taken(invalid("spec.ports[0].nodePort", text="anything at all"))
    assert node_port_taken(invalid("spec.ports[12].nodePort"))
    assert not node_port_taken(invalid("spec.ports[0].port", text="already allocated"))
    assert not node_port_taken(invalid("spec.ports[0].nodePort", reason="FieldValueRequired"))
    assert not node_port_taken(errors.Conflict(409, "Conflict", "already allocated"))
