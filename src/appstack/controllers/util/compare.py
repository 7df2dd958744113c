"""Pure judgements about child writes: is the wanted object already so, and is a refusal
the user's to fix? Used by :class:`~appstack.controllers.children.ChildWriter` (and its
unit tests).
"""

from __future__ import annotations

from typing import Any

from appstack.controllers.util.quantity import same_quantity
from appstack.runtime import errors


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


# What server-side apply says (HTTP 500) when the applied object itself is malformed.
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
