"""appstack's own operator identity (:class:`~appstack.sdk.identity.OperatorIdentity`):
project ``appstack``, domain ``appstack.dev`` (the API group of its kinds,
:data:`~appstack.api.kind.GROUP`), the install in
``appstack-system``, the image ``appstack:<version>``; and how its CRDs are installed,
said when they are missing (:data:`CRDS_HINT`). The one place these names are typed; the
operator's assembly, its install and its CLI pass it down. Pure and light (no pydantic):
the CLI imports it for its flags' help."""

from __future__ import annotations

from appstack import __version__
from appstack.sdk import OperatorIdentity

IDENTITY = OperatorIdentity(
    project="appstack",
    domain="appstack.dev",
    name="appstack-operator",
    namespace="appstack-system",
    image=f"appstack:{__version__}",
)

#: How to install appstack's CRDs, said when they are missing (by the operator and the CLI).
CRDS_HINT = (
    "kubectl apply --server-side -f deploy/crds/, or helm install of charts/appstack "
    "(crd.enable=true)"
)
