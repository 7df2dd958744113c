"""What is kept of an object's ``metadata.managedFields``: one field manager's own apply entry.

Server-side apply records, per field manager, which fields it set; an object returned by
the API server carries every manager's entry (often more bytes than its spec). A
controller needs only its own apply entry — what its last apply set, which an apply
without them would remove — so both the informer (:mod:`appstack.runtime.informer`,
before an object is cached) and a writer keeping the object a write returned (read your
own writes) cut the list with :func:`keep_applied_by`, the same way.
"""

from __future__ import annotations

from appstack.runtime.resources import Obj

#: The path of the managed-fields list in an object.
MANAGED_FIELDS: tuple[str, str] = ("metadata", "managedFields")


def keep_applied_by(obj: Obj, manager: str | None) -> Obj:
    """``obj`` (changed in place) with only ``manager``'s server-side apply entry left in
    ``metadata.managedFields`` — the fields that manager's last apply set, which an apply
    without them would remove. No entry of its own (or no ``manager``): the key is removed."""
    meta = obj.get("metadata") or {}
    entries = [
        entry
        for entry in meta.pop("managedFields", None) or []
        if manager is not None
        and entry.get("manager") == manager
        and entry.get("operation") == "Apply"
        and not entry.get("subresource")
    ]
    if entries:
        meta["managedFields"] = entries
    return obj
