"""appstack's own operator identity (:class:`~appstack.sdk.identity.OperatorIdentity`):
project ``appstack``, domain :data:`~appstack.api.kind.GROUP`, the install in
``appstack-system``, the image ``appstack:<version>``. The one place these names are
typed; the operator's assembly, its install and its CLI pass it down. Pure."""

from __future__ import annotations

from appstack import __version__
from appstack.api.kind import GROUP
from appstack.sdk.identity import OperatorIdentity

IDENTITY = OperatorIdentity(
    project="appstack",
    domain=GROUP,
    name="appstack-operator",
    namespace="appstack-system",
    image=f"appstack:{__version__}",
)
