"""``appstack run``: the operator's flags (the SDK's, :func:`appstack.sdk.flags.operator_flags`,
with appstack's identity) and appstack's own (where external middleware may point) ->
:func:`appstack.operator.run_operator`. Registered on the CLI group by :mod:`appstack.cli`;
the operator itself is imported only when the command runs."""

from __future__ import annotations

import sys
from typing import Any

import click

from appstack.api.identity import IDENTITY
from appstack.sdk import CONTEXT_OPTION as CONTEXT
from appstack.sdk import KUBECONFIG_OPTION as KUBECONFIG
from appstack.sdk import OperatorOptions, operator_flags

__all__ = ["CONTEXT", "KUBECONFIG", "run"]


@click.command()
@operator_flags(IDENTITY)
@click.option(
    "--allow-external-ips/--no-allow-external-ips",
    default=False,
    show_default=True,
    help="Let external middleware be an IP address (an EndpointSlice the operator writes); "
    "loopback, link-local, metadata and --external-deny-cidr ranges are refused even then.",
)
@click.option(
    "--external-deny-cidr",
    "external_deny_cidrs",
    multiple=True,
    help="A range external middleware may not point at, e.g. the cluster's pod and service "
    "ranges (repeatable).",
)
@click.option(
    "--allow-external-cluster-names/--no-allow-external-cluster-names",
    default=False,
    show_default=True,
    help="Let external middleware be a host name inside the cluster or the node (localhost, "
    "kubernetes.default, <svc>.<ns>.svc, *.cluster.local, metadata names).",
)
@click.option(
    "--backup-image",
    envvar="APPSTACK_BACKUP_IMAGE",
    default=None,
    help="The image EtcdCluster backup Jobs and restores run to reach an S3 object store: "
    "this operator's own (the chart and install.yaml set it; default appstack:<version>).",
)
def run(
    *,
    allow_external_ips: bool,
    backup_image: str | None,
    allow_external_cluster_names: bool,
    external_deny_cidrs: tuple[str, ...],
    **flags: Any,
) -> None:
    """Run the operator (all controllers) against a cluster."""
    from appstack.sdk import import_aiohttp  # noqa: PLC0415

    import_aiohttp()  # before the operator's modules import it
    from appstack.operator import AppstackOptions, run_operator  # noqa: PLC0415
    from appstack.sdk import check_options as check  # noqa: PLC0415

    options = OperatorOptions.from_flags(**flags)
    try:
        check(options)
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    own = AppstackOptions(
        allow_external_ips=allow_external_ips,
        external_deny_cidrs=list(external_deny_cidrs),
        allow_external_cluster_names=allow_external_cluster_names,
        **({"backup_image": backup_image} if backup_image else {}),
    )
    sys.exit(run_operator(options, own))
