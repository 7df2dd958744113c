"""Pure judgements about child writes: is the wanted object already so (every wanted field
set, and no field our last apply set left out of it), is a refusal the user's to fix, what
of a status a user acts on (its gist), the merge patch of a typed status, and a
create-only apply?
Used by :class:`~appstack.sdk.kit.children.ChildWriter` (and its unit tests).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from appstack.runtime import errors
from appstack.sdk.kit.quantity import same_quantity
from appstack.sdk.model import KubeModel


def users_problem(error: errors.ApiError) -> bool:
    """Whether a rejected apply is the user's to fix (reported), not the server's (retried).

    The API server's refusals of the object itself (400, 403, 404 of a missing namespace
    aside, 405, 422) are the user's, and so is the HTTP 500 server-side apply answers when
    it cannot build the patch (duplicate list keys, a list item without its key); busy or
    failing servers (429, other 5xx) and authentication (401) are transient or ours.
    """
    if isinstance(error, errors.ServerError) and not isinstance(error, errors.ServerTimeout):
        return any(marker in error.message for marker in _SSA_MARKERS)
    return not error.retryable and not isinstance(
        error, (errors.Unauthorized, errors.NotFound, errors.Conflict, errors.Gone)
    )


def node_port_taken(error: errors.ApiError) -> bool:
    """Whether the API server refused a Service for a node port it asks for (taken, or
    outside the cluster's node-port range): 422 with a ``FieldValueInvalid`` cause on
    ``spec.ports[i].nodePort`` — read from the Status' causes, not its message text."""
    return isinstance(error, errors.Invalid) and any(
        cause.reason == "FieldValueInvalid"
        and cause.field.startswith("spec.ports[")
        and cause.field.endswith("].nodePort")
        for cause in error.causes
    )


# What server-side apply says (HTTP 500, reason InternalError, no cause: the one refusal with
# nothing but its text to tell it by) when the applied object itself is malformed.
_SSA_MARKERS = ("failed to create typed patch object", "duplicate entries for key")


# Maps whose values are resource quantities (container resources, claim requests).
_QUANTITY_MAPS = frozenset({"limits", "requests"})


def is_subset(desired: Any, actual: Any, *, quantities: bool = False) -> bool:
    """True when every field we want is already so in ``actual`` (server defaults ignored;
    quantities compared as numbers, as the API server canonicalises them)."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(
            k in actual and is_subset(v, actual[k], quantities=quantities or k in _QUANTITY_MAPS)
            for k, v in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(desired) == len(actual)
            and all(is_subset(d, a) for d, a in zip(desired, actual, strict=True))
        )
    if quantities:
        return same_quantity(desired, actual)
    return bool(desired == actual)


def already_so(desired: Any, current: Mapping[str, Any], manager: str) -> bool:
    """Whether ``current`` is ``desired`` already: every wanted field is so
    (:func:`is_subset`), and ``manager``'s last apply set no field ``desired`` has dropped
    (:func:`would_remove`: a removed env var is then applied away)."""
    return is_subset(desired, current) and not would_remove(
        applied_fields(current, manager), desired
    )


def applied_fields(obj: Mapping[str, Any], manager: str) -> Mapping[str, Any]:
    """The fields (``fieldsV1``) that ``manager``'s last server-side apply of ``obj`` set,
    from its ``managedFields`` (empty when it never applied it)."""
    for entry in obj.get("metadata", {}).get("managedFields") or []:
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Apply"
            and not entry.get("subresource")
        ):
            return dict(entry.get("fieldsV1") or {})
    return {}


def would_remove(fields: Mapping[str, Any], desired: Any) -> bool:
    """Whether applying ``desired`` would remove one of ``fields`` (a ``fieldsV1`` tree of
    what our last apply set): a field, map key, list item (``k:`` by its keys, ``v:`` by
    value, ``i:`` by index) that ``desired`` no longer has. Server-side apply prunes those
    — but only if we apply, so a child whose wanted fields are all there is still stale."""
    for key, below in fields.items():
        kind, _, name = key.partition(":")
        if kind == "f":
            if not isinstance(desired, dict) or name not in desired:
                return True
            child = desired[name]
        elif kind == "k":
            child = _keyed_item(desired, json.loads(name))
            if child is None:
                return True
        elif kind == "v":
            if not isinstance(desired, list) or json.loads(name) not in desired:
                return True
            continue
        elif kind == "i":
            if not isinstance(desired, list) or int(name) >= len(desired):
                return True
            child = desired[int(name)]
        else:  # "." (the item itself) and anything newer
            continue
        if below and would_remove(below, child):
            return True
    return False


def _keyed_item(items: Any, keys: Mapping[str, Any]) -> Any:
    """The item of ``items`` with ``keys``; a key the item leaves out matches (the server
    defaults it: ``protocol: TCP`` of a port)."""
    if not isinstance(items, list):
        return None
    for item in items:
        if (
            isinstance(item, dict)
            and any(k in item for k in keys)
            and all(item.get(k, v) == v for k, v in keys.items())
        ):
            return item
    return None


def status_gist(status: dict[str, Any]) -> tuple[Any, ...]:
    """What a user acts on in a status: observedGeneration and each condition's status and
    reason (not replica counts, not messages, which repeat the counts)."""
    conditions = status.get("conditions") or []
    return status.get("observedGeneration"), *(
        (c.get("type"), c.get("status"), c.get("reason")) for c in conditions
    )


def status_patch(old: Mapping[str, Any], status: KubeModel) -> dict[str, Any]:
    """The merge patch that writes ``status`` (a kind's typed status model): its wire form
    without the fields left unset or None — the stored value of those is kept — except a
    top-level field explicitly set to None that ``old`` (the stored status) has, sent as
    null: the merge patch removes it."""
    out = status.to_dict()
    fields = type(status).model_fields
    for name in status.model_fields_set:
        key = fields[name].alias or name
        if getattr(status, name) is None and key in old:
            out[key] = None
    return out


# A resourceVersion no stored object has (etcd's first write is revision 2): applied with
# it, server-side apply creates an absent object and answers 409 for an existing one.
_NEVER_STORED = "1"


def create_only(want: dict[str, Any]) -> dict[str, Any]:
    """``want`` as an apply that creates it if absent and never touches an existing one."""
    return {**want, "metadata": {**want["metadata"], "resourceVersion": _NEVER_STORED}}


def unowned_with_labels(current: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    """Whether ``current`` has no owner and carries every label of ``meta`` (kept after its
    owner was deleted, or while its owner's data is retained: its owner adopts it)."""
    unowned = not current["metadata"].get("ownerReferences")
    return unowned and is_subset(meta.get("labels") or {}, current["metadata"].get("labels") or {})


def owners_to_write(
    current: Mapping[str, Any], meta: Mapping[str, Any], owner_uid: str
) -> list[dict[str, Any]] | None:
    """The ownerReferences ``current`` must get so its owner is the one ``meta`` wants (ours,
    or none), keeping any other owner's; None when it already has them."""
    have = list(current["metadata"].get("ownerReferences") or [])
    others = [ref for ref in have if ref.get("uid") != owner_uid]
    want = [*others, *(meta.get("ownerReferences") or [])]
    return None if want == have else want
