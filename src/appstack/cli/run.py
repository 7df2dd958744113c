"""``appstack run``: appstack's operator run as every SDK operator is — the SDK's run command
(:func:`appstack.sdk.operator_command`: its flags, :func:`appstack.sdk.operator_flags`, with
appstack's identity) with appstack's own flags after them (:mod:`appstack.api.flags`: where
external middleware may point, the backup image), which reach its controllers through
:func:`appstack.operator.controller_options`. Registered on the CLI group by
:mod:`appstack.cli`; the operator itself is imported only when the command runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from appstack import __version__
from appstack.api.flags import OWN_FLAGS
from appstack.api.identity import CRDS_HINT, IDENTITY
from appstack.sdk import CONTEXT_OPTION as CONTEXT
from appstack.sdk import KUBECONFIG_OPTION as KUBECONFIG
from appstack.sdk import operator_command

if TYPE_CHECKING:
    from appstack.runtime import Resource, Transform
    from appstack.sdk import Registration

__all__ = ["CONTEXT", "KUBECONFIG", "OWN_FLAGS", "run"]


def _controllers() -> list[Registration]:
    from appstack.operator import controllers  # noqa: PLC0415 - only when it runs

    return controllers()


def _cache() -> dict[Resource, Transform]:
    from appstack.operator import cache  # noqa: PLC0415 - only when it runs

    return cache()


def _controller_options(**own: Any) -> dict[str, dict[str, Any]]:
    from appstack.operator import controller_options  # noqa: PLC0415 - only when it runs

    return controller_options(**own)


run = operator_command(
    _controllers,
    IDENTITY,
    version=__version__,
    help="Run the operator (all controllers) against a cluster.",
    cache=_cache,
    flags=OWN_FLAGS,
    controller_options=_controller_options,
    crds_hint=CRDS_HINT,
)
