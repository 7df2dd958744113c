"""The ``appstack`` command line.

The operator's commands: ``run`` (every registered controller against a cluster),
``render`` (what the operator would apply, offline) and ``manifests`` (generate deploy/).
``appstack cluster ...`` manages the local control plane used for development, the demo
and the tests (see :mod:`appstack.testing`). Heavy modules are imported lazily, so that
``--help`` stays fast and the operator image needs no testing extra.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, TextIO

import click

from appstack import __version__, run_command

if TYPE_CHECKING:  # the testing extra (cryptography) is not in the operator image: import lazily
    from appstack.testing.cluster import LocalCluster

_NAME = click.option(
    "--name",
    default=lambda: os.environ.get("APPSTACK_CLUSTER", "appstack"),
    show_default="$APPSTACK_CLUSTER or appstack",
    help="Cluster name.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="appstack")
def main() -> None:
    """appstack: run applications on Kubernetes from one custom resource."""


main.add_command(run_command.run)


@main.command()
@click.option(
    "-o",
    "--output-dir",
    default="deploy",
    show_default=True,
    type=click.Path(),
    help="Where to write the manifests ('-': print the install bundle to stdout).",
)
@click.option("--check", is_flag=True, help="Only check that the files are up to date.")
@click.option("--image", default=None, help="Operator image [default: appstack:VERSION].")
@click.option(
    "-n",
    "--namespace",
    default="appstack-system",
    show_default=True,
    help="Namespace the operator runs in.",
)
@click.option(
    "--watch-namespace",
    "watch_namespaces",
    multiple=True,
    help="Install namespaced: a Role + RoleBinding in this namespace, and the operator watches "
    "only it (repeatable; default: a ClusterRole, all namespaces).",
)
@click.option(
    "--chart-dir",
    default=None,
    type=click.Path(),
    help="Also write the Helm chart there (charts/appstack in this repository).",
)
def manifests(
    *,
    output_dir: str,
    check: bool,
    image: str | None,
    namespace: str,
    watch_namespaces: tuple[str, ...],
    chart_dir: str | None,
) -> None:
    """Generate the install: CRDs (from the API models), RBAC (from what the controllers
    use), the operator Deployment and the single install.yaml bundle.

    Without options this regenerates deploy/. For your cluster, e.g.:

    \b
    appstack manifests --image REGISTRY/appstack:TAG \\
      --watch-namespace team-a -o - | kubectl apply -f -
    """
    from pathlib import Path  # noqa: PLC0415

    from appstack.manifests import bundle, chart  # noqa: PLC0415
    from appstack.manifests.install import InstallOptions  # noqa: PLC0415
    from appstack.manifests.workload import IMAGE  # noqa: PLC0415

    options = InstallOptions(
        namespace=namespace, image=image or IMAGE, watch_namespaces=tuple(watch_namespaces)
    )
    if output_dir == "-":
        click.echo(bundle.bundle_text(options), nl=False)
        return
    outputs = {Path(output_dir): bundle.render(options)}
    if chart_dir:
        outputs[Path(chart_dir)] = chart.render()
    if check:
        stale = [d / rel for d, files in outputs.items() for rel in bundle.stale(d, files)]
        for path in stale:
            click.echo(f"out of date: {path}", err=True)
        sys.exit(1 if stale else 0)
    for directory, files in outputs.items():
        for path in bundle.write(directory, files):
            click.echo(f"wrote {path}")


@main.command()
@click.option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    default=None,
    help="Kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, or in-cluster).",
)
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait for each step.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def uninstall(kubeconfig: str | None, timeout: float, yes: bool) -> None:
    """Remove appstack from a cluster: every custom resource in all namespaces (waiting
    for the still-running operator to finalize them and for their children to go), then
    the operator (Deployment, RBAC, ServiceAccount), then the CRDs and its Namespace."""
    import asyncio  # noqa: PLC0415

    from appstack import uninstall as removal  # noqa: PLC0415
    from appstack.runtime.client import Client  # noqa: PLC0415

    if not yes:
        click.confirm(
            "Delete every appstack custom resource in all namespaces, then the operator and "
            "the CRDs?",
            abort=True,
        )

    async def go() -> None:
        async with await Client.connect(kubeconfig) as client:
            await removal.uninstall(client, click.echo, timeout)

    try:
        asyncio.run(go())
    except removal.UninstallError as error:
        raise click.ClickException(str(error)) from error
    click.echo("appstack uninstalled.")


class _KindsCommand(click.Command):
    """A command whose help names the registered kinds (``{kinds}``), looked up only when
    the help is shown."""

    def _with_kinds(self) -> None:
        if self.help and "{kinds}" in self.help:
            from appstack.controllers.registry import ALL  # noqa: PLC0415

            self.help = self.help.replace("{kinds}", ", ".join(c.kind.kind for c in ALL))

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._with_kinds()
        super().format_help_text(ctx, formatter)

    def get_short_help_str(self, limit: int = 45) -> str:
        self._with_kinds()
        return super().get_short_help_str(limit)


@main.command(cls=_KindsCommand)
@click.option(
    "-f",
    "--filename",
    required=True,
    type=click.File(),
    help="YAML file with appstack objects, and any others ('-' for stdin).",
)
def render(filename: TextIO) -> None:
    """Print what the {kinds} objects in a file become, without a cluster.

    The file is validated with the same rules as admission; invalid input prints
    field-level errors and exits 1. Other objects are printed as they are.
    """
    import yaml  # noqa: PLC0415

    from appstack.rendering import RenderError, render_documents  # noqa: PLC0415

    try:
        objects = render_documents(list(yaml.safe_load_all(filename)))
    except RenderError as error:
        for line in error.problems:
            click.echo(f"error: {line}", err=True)
        sys.exit(1)
    except yaml.YAMLError as error:
        click.echo(f"error: not valid YAML: {error}", err=True)
        sys.exit(1)
    click.echo(yaml.safe_dump_all(objects, sort_keys=False), nl=False)


@main.group()
def cluster() -> None:
    """A local Kubernetes control plane (etcd, kube-apiserver, controller-manager,
    scheduler, kwok fake nodes) running as processes on 127.0.0.1."""


def _local(name: str, nodes: int = 2, pods_per_node: int = 5000) -> LocalCluster:
    from appstack.testing.cluster import LocalCluster  # noqa: PLC0415 - lazy, see above

    return LocalCluster(name, nodes=nodes, pods_per_node=pods_per_node)


@cluster.command()
def build() -> None:
    """Build the control-plane binaries from Go modules (cached; shows progress)."""
    from appstack.testing.build import GoBuilder  # noqa: PLC0415
    from appstack.testing.versions import Toolchain  # noqa: PLC0415

    toolchain = Toolchain()
    GoBuilder(toolchain).ensure_all()
    click.echo(toolchain.bin_dir)


@cluster.command()
@click.option("--tag", default=f"appstack:{__version__}", show_default=True, help="Image name.")
@click.option("--refresh", is_flag=True, help="Rebuild the Debian root filesystems too.")
def image(tag: str, refresh: bool) -> None:
    """Build the operator image without a container daemon (root; mmdebstrap + buildah).

    Same contents as the Dockerfile; prints the path of the oci-archive (cached).
    """
    from appstack.testing.image import build_image  # noqa: PLC0415
    from appstack.testing.rootfs import ImageBuildError  # noqa: PLC0415

    try:
        built = build_image(ref=tag, refresh=refresh)
    except ImageBuildError as error:
        raise click.ClickException(str(error)) from error
    click.echo(built.archive)
    click.echo(
        f"load or push it with: podman load -i {built.archive}  |  "
        f"skopeo copy oci-archive:{built.archive} docker://REGISTRY/{tag}",
        err=True,
    )


@cluster.command()
@_NAME
@click.option("--nodes", default=2, show_default=True, help="Number of kwok fake nodes.")
@click.option("--pods-per-node", default=5000, show_default=True, help="Pod capacity per node.")
def up(name: str, nodes: int, pods_per_node: int) -> None:
    """Start the cluster (idempotent: starts only what is not running)."""
    from appstack.testing.process import ComponentError  # noqa: PLC0415

    local = _local(name, nodes=nodes, pods_per_node=pods_per_node)
    try:
        local.up()
    except ComponentError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    kubectl = local.toolchain.binary("kubectl")
    click.echo(
        f"\nCluster {name!r} is running. Use it with:\n"
        f"  export KUBECONFIG={local.kubeconfig}\n"
        f"  {kubectl} get nodes\n"
        f"or: appstack cluster kubectl -- get nodes\n"
        f"Stop it with: appstack cluster down --name {name}"
    )


@cluster.command()
@_NAME
@click.option(
    "--example",
    default="examples/appservice.yaml",
    show_default=True,
    type=click.Path(exists=True),
    help="What to apply once the operator runs.",
)
@click.option(
    "--stack-example",
    default="examples/dataservice.yaml",
    show_default=True,
    type=click.Path(exists=True),
    help="The AppStack to apply next, watching its members start in order.",
)
def demo(name: str, example: str, stack_example: str) -> None:
    """Cluster up, CRDs and RBAC installed, the operator running in the background under its
    ServiceAccount, the example applied and Ready."""
    from pathlib import Path  # noqa: PLC0415

    from appstack.testing import demo as demo_module  # noqa: PLC0415

    demo_module.run(_local(name), Path(example), click.echo, Path(stack_example))


@cluster.command()
@_NAME
def down(name: str) -> None:
    """Stop the cluster (and the demo's operator) and delete its state."""
    _local(name).down()
    click.echo(f"Cluster {name!r} stopped and removed.")


@cluster.command()
@_NAME
def status(name: str) -> None:
    """Show each component's process and health; exit 1 unless all are healthy."""
    local = _local(name)
    statuses = local.status()
    for item in statuses:
        click.echo(f"{item.name:<25} {item.state:<10} pid={item.pid or '-'}")
    if local.kubeconfig.exists():
        click.echo(f"kubeconfig: {local.kubeconfig}")
    sys.exit(0 if all(s.healthy for s in statuses) else 1)


@cluster.command()
@_NAME
def kubeconfig(name: str) -> None:
    """Print the path of the cluster's admin kubeconfig."""
    click.echo(_local(name).kubeconfig)


@cluster.command(context_settings={"ignore_unknown_options": True})
@_NAME
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def kubectl(name: str, args: tuple[str, ...]) -> None:
    """Run the cluster's kubectl with its kubeconfig: appstack cluster kubectl -- get pods -A"""
    local = _local(name)
    binary = str(local.toolchain.binary("kubectl"))
    os.execv(binary, [binary, f"--kubeconfig={local.kubeconfig}", *args])  # noqa: S606
