"""``appstack run``: appstack's operator run as every SDK operator is — the SDK's run command
(:func:`appstack.sdk.operator_command`: its flags, :func:`appstack.sdk.operator_flags`, with
appstack's identity) with appstack's own flags after them (where external middleware may
point, the backup image), which reach its controllers through
:func:`appstack.operator.controller_options`. Registered on the CLI group by
:mod:`appstack.cli`; the operator itself is imported only when the command runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from appstack import __version__
from appstack.api.identity import CRDS_HINT, IDENTITY
from appstack.sdk import CONTEXT_OPTION as CONTEXT
from appstack.sdk import KUBECONFIG_OPTION as KUBECONFIG
from appstack.sdk import operator_command

if TYPE_CHECKING:
    from appstack.runtime import Resource, Transform
    from appstack.sdk import Registration

__all__ = ["CONTEXT", "KUBECONFIG", "OWN_FLAGS", "run"]

#: appstack's own flags, after the SDK's: each a value of its chart too.
OWN_FLAGS = (
    click.option(
        "--allow-external-ips/--no-allow-external-ips",
        default=False,
        show_default=True,
        help="Let external middleware be an IP address (an EndpointSlice the operator "
        "writes); loopback, link-local, metadata and --external-deny-cidr ranges are refused "
        "even then.",
    ),
    click.option(
        "--external-deny-cidr",
        "external_deny_cidrs",
        multiple=True,
        help="A range external middleware may not point at, e.g. the cluster's pod and "
        "service ranges (repeatable).",
    ),
    click.option(
        "--allow-external-cluster-names/--no-allow-external-cluster-names",
        default=False,
        show_default=True,
        help="Let external middleware be a host name inside the cluster or the node "
        "(localhost, kubernetes.default, <svc>.<ns>.svc, *.cluster.local, metadata names).",
    ),
    click.option(
        "--backup-image",
        envvar="APPSTACK_BACKUP_IMAGE",
        default=None,
        help="The image EtcdCluster backup Jobs and restores run to reach an S3 object "
        "store: this operator's own (the chart and install.yaml set it; default "
        "appstack:<version>).",
    ),
)


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
