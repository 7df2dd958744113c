"""What the ``appstack`` command prints for an error the user can fix: one line
``error: <what is wrong>``, often a second ``hint: <what to do>``, and exit status 1 —
never a traceback.

:class:`CommandError` is that error (a :class:`click.ClickException`); the commands raise
it for what they find themselves (an unknown kind, an object not found).
:func:`explain` turns the few exceptions a user's setup causes anywhere below a command
into one: a kubeconfig that cannot be used, an API server that cannot be reached or
rejects our credentials, a server that answers but is no Kubernetes API server
(:class:`NotKubernetes`: a proxy, a web server, the wrong port), CRDs not installed. The
command group (:mod:`appstack.cli`) applies it to every command, once; any other
exception is a bug and keeps its traceback.
``APPSTACK_DEBUG=1`` shows the traceback of the explained ones too. Light on purpose
(click only): the runtime is imported only when there is an exception to explain, so
``appstack run`` still imports aiohttp its own way (:mod:`appstack.sdk.process`).
"""

from __future__ import annotations

import os
from typing import IO, Any

import click

#: Set (to anything but ``0`` or empty) to see the traceback behind an explained error.
DEBUG = "APPSTACK_DEBUG"


class CommandError(click.ClickException):
    """``error: <message>`` and, when given, ``hint: <hint>`` on stderr; exit status 1."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", file=file, err=True)
        if self.hint:
            click.echo(f"hint: {self.hint}", file=file, err=True)


class NotKubernetes(Exception):
    """The server answered, but not as a Kubernetes API server does (HTML, JSON that is
    no object of the kind asked for: a proxy, a web server, the wrong port)."""

    def __init__(self, server: str) -> None:
        where = f"the server at {server}" if server else "the server"
        super().__init__(f"{where} did not answer as a Kubernetes API server")
        self.server = server


#: What to check when the kubeconfig points somewhere that is no API server.
NOT_KUBERNETES_HINT = (
    "is this the cluster's kubeconfig, and its server the API server's URL? "
    "(set KUBECONFIG or pass --kubeconfig)"
)


def debugging() -> bool:
    """Whether ``APPSTACK_DEBUG`` asks for tracebacks."""
    return os.environ.get(DEBUG, "") not in {"", "0"}


def explain(error: Exception) -> CommandError | None:
    """The user's error ``error`` is, said plainly; None for anything else (a bug)."""
    from appstack.runtime import Forbidden, KubeconfigError, TransportError, Unauthorized  # noqa: PLC0415 - only with an error
    from appstack.sdk import KUBECONFIG_HINT, MissingCRDs  # noqa: PLC0415

    for kind, hint in ((KubeconfigError, KUBECONFIG_HINT), (NotKubernetes, NOT_KUBERNETES_HINT)):
        if isinstance(error, kind):
            return CommandError(str(error), hint)
    if isinstance(error, TransportError):
        where = f" at {error.server}" if error.server else ""
        reason = error.reason
        hint = (
            "the kubeconfig's certificate-authority is not the one that signed this server's "
            "certificate: is this the kubeconfig of that cluster?"
            if reason.startswith("TLS")
            else "is the cluster running, and is this its kubeconfig? "
            "(set KUBECONFIG or pass --kubeconfig)"
        )
        return CommandError(f"cannot reach the API server{where} ({reason})", hint)
    if isinstance(error, MissingCRDs):
        return CommandError(
            f"the CRDs are not installed: the API server does not serve {', '.join(error.names)}",
            _crds_hint(),
        )
    if isinstance(error, Unauthorized):
        return CommandError(
            f"the API server rejected the kubeconfig's credentials ({error})",
            "log in again or use a kubeconfig whose token or certificate is valid here",
        )
    if isinstance(error, Forbidden):
        return CommandError(
            f"forbidden: {error.message or error}",
            "the kubeconfig's user lacks the RBAC rights for this: use another context or ask "
            "a cluster administrator",
        )
    return None


def _crds_hint() -> str:
    from appstack.api.identity import CRDS_HINT  # noqa: PLC0415 - as the operator says it

    return f"install them: make install (in a checkout), or {CRDS_HINT}"
