"""appstack's own operator flags, after the SDK's (:func:`appstack.sdk.operator_command`'s
``flags``): where external middleware may point, the backup image. Declared once: ``appstack
run`` takes them (:mod:`appstack.cli.run`), their values reach the controllers through
:func:`appstack.operator.controller_options`, and its chart has them as values by the SDK's
:func:`~appstack.sdk.chart_flags` (:mod:`appstack.manifests.chart`), as a scaffolded
operator's chart has its own. Light: click only (the CLI imports it for ``--help``)."""

from __future__ import annotations

import click

from appstack.sdk import ChartOption

#: appstack's own flags, after the SDK's: each a value of its chart too (but the backup image,
#: which the chart sets to the operator's own image through the environment).
OWN_FLAGS = (
    click.option(
        "--allow-external-ips/--no-allow-external-ips",
        cls=ChartOption,
        chart_value="allowExternalIPs",
        default=False,
        show_default=True,
        help="Let external middleware be an IP address (an EndpointSlice the operator "
        "writes); loopback, link-local, metadata and --external-deny-cidr ranges are refused "
        "even then.",
    ),
    click.option(
        "--external-deny-cidr",
        "external_deny_cidrs",
        cls=ChartOption,
        chart_value="externalDenyCIDRs",
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
        cls=ChartOption,
        in_chart=False,
        envvar="APPSTACK_BACKUP_IMAGE",
        default=None,
        help="The image EtcdCluster backup Jobs and restores run to reach an S3 object "
        "store: this operator's own (the chart and install.yaml set it; default "
        "appstack:<version>).",
    ),
)


def own_chart_command() -> click.Command:
    """A command of only these flags: what :func:`appstack.sdk.chart_flags` reads them from
    without importing the CLI."""
    command = click.command("run")(lambda **_: None)
    for flag in OWN_FLAGS:
        command = flag(command)
    return command
