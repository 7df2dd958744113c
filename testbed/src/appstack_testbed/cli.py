"""``appstack cluster ...``: the local cluster used for development, the demo and the tests.

Registered on the ``appstack`` command through the ``appstack.cli`` entry-point group (see
``testbed/pyproject.toml``), so it exists only where the test bed is installed, never in the
operator image. Heavy modules are imported inside the commands, so ``--help`` stays fast."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from appstack import __version__

if TYPE_CHECKING:
    from appstack_testbed.cluster import LocalCluster

_NAME = click.option(
    "--name",
    default=lambda: os.environ.get("APPSTACK_CLUSTER", "appstack"),
    show_default="$APPSTACK_CLUSTER or appstack",
    help="Cluster name.",
)


@click.group(short_help="A local Kubernetes cluster as processes, for development and tests.")
def cluster() -> None:
    """A local Kubernetes cluster as processes: etcd, kube-apiserver, controller-manager,
    scheduler and kwok fake nodes on 127.0.0.1, and (as root) a real node with a real
    kubelet, containerd and kube-proxy, CoreDNS and a local image registry."""


def _local(
    name: str, nodes: int = 2, pods_per_node: int = 5000, real_nodes: int | None = None
) -> LocalCluster:
    from appstack_testbed.cluster import LocalCluster  # noqa: PLC0415 - lazy, see above

    return LocalCluster(name, nodes=nodes, pods_per_node=pods_per_node, real_nodes=real_nodes)


def default_real_nodes() -> int:
    """One real node when root (it needs namespaces, mounts and cgroups), else none."""
    return 1 if os.geteuid() == 0 else 0


_REAL_NODES = click.option(
    "--real-nodes",
    type=click.IntRange(0, 32),
    default=default_real_nodes,
    show_default="1 as root, else 0",
    help="Real nodes: a real kubelet, containerd and kube-proxy each, in a network namespace "
    "of their own; images come from the local registry. Beside them the kwok nodes are "
    "tainted (only pods that tolerate kwok.x-k8s.io/node land there). 0: kwok nodes only.",
)


@cluster.command()
@click.option(
    "--etcd-releases",
    is_flag=True,
    help="Also the etcd releases the local etcd images are made of (etcd, etcdctl, etcdutl "
    "per version).",
)
@click.option(
    "--prometheus",
    "with_prometheus",
    is_flag=True,
    help="Also Prometheus and promtool (the monitoring tests).",
)
@click.option(
    "--versitygw",
    "with_versitygw",
    is_flag=True,
    help="Also Versity S3 Gateway, the S3 server of the etcd backup tests.",
)
@click.option(
    "--real-node",
    "with_real_node",
    is_flag=True,
    help="Also what a real node needs (as root; nothing otherwise): the host's packages, "
    "kubelet, kube-proxy, CoreDNS, the local registry (started) and the standard images in "
    "it — what the first cluster with a real node would build, minutes on a cold machine.",
)
def build(
    etcd_releases: bool, with_prometheus: bool, with_versitygw: bool, with_real_node: bool
) -> None:
    """Build the control-plane binaries from Go modules (cached; shows progress)."""
    from appstack_testbed.build import GoBuilder  # noqa: PLC0415
    from appstack_testbed.versions import Toolchain  # noqa: PLC0415

    toolchain = Toolchain()
    GoBuilder(toolchain).ensure_all()
    click.echo(toolchain.bin_dir)
    if with_real_node and default_real_nodes():
        from appstack_testbed.realnode.fleet import prepare  # noqa: PLC0415
        from appstack_testbed.registry import LocalRegistry  # noqa: PLC0415

        prepare(toolchain, LocalRegistry(click.echo), click.echo)
    if etcd_releases:
        from appstack_testbed import etcd_releases as releases  # noqa: PLC0415

        for version in releases.RELEASES:
            click.echo(releases.ensure(version))
    if with_prometheus:
        from appstack_testbed import prometheus  # noqa: PLC0415

        click.echo(prometheus.ensure().prometheus.parent)
    if with_versitygw:
        from appstack_testbed import versitygw  # noqa: PLC0415

        click.echo(versitygw.ensure().parent)


@cluster.command()
@click.option("--tag", default=f"appstack:{__version__}", show_default=True, help="Image name.")
@click.option("--refresh", is_flag=True, help="Rebuild the Debian root filesystems too.")
@click.option(
    "--push/--no-push",
    default=True,
    show_default=True,
    help="Push it into the local registry, where every local cluster's real nodes pull it "
    "from (as TAG: e.g. `make deploy IMG=TAG` then runs it).",
)
@click.option(
    "--project",
    default=None,
    type=click.Path(file_okay=False, exists=True),
    help="A project scaffolded with `appstack init`: its operator's image, built from its "
    "Dockerfile over the wheels `make build` put in its dist/.",
)
def image(tag: str, refresh: bool, push: bool, project: str | None) -> None:
    """Build the operator image without a container daemon (root; mmdebstrap + buildah).

    Same contents as the Dockerfile; prints the path of the oci-archive (cached). With
    --project, the image of an operator scaffolded with `appstack init`: its own Dockerfile's
    steps, run as `docker build` would (buildah), over the wheels in its dist/ (`make build`).
    """
    from pathlib import Path  # noqa: PLC0415

    from appstack_testbed.image import build_image, build_project_image  # noqa: PLC0415
    from appstack_testbed.images.build import push_archive  # noqa: PLC0415
    from appstack_testbed.registry import LocalRegistry  # noqa: PLC0415
    from appstack_testbed.rootfs import ImageBuildError  # noqa: PLC0415

    try:
        built = (
            build_project_image(Path(project), ref=tag, refresh=refresh)
            if project
            else build_image(ref=tag, refresh=refresh)
        )
    except ImageBuildError as error:
        raise click.ClickException(str(error)) from error
    click.echo(built.archive)
    if push:
        push_archive(
            built.archive, tag, LocalRegistry(lambda m: click.echo(m, err=True)), click.echo
        )
    click.echo(
        f"elsewhere, load or push it with: podman load -i {built.archive}  |  "
        f"skopeo copy oci-archive:{built.archive} docker://REGISTRY/{tag}",
        err=True,
    )


@cluster.command()
@_NAME
@_REAL_NODES
@click.option("--nodes", default=2, show_default=True, help="Number of kwok fake nodes.")
@click.option("--pods-per-node", default=5000, show_default=True, help="Pod capacity per node.")
def up(name: str, real_nodes: int, nodes: int, pods_per_node: int) -> None:
    """Start the cluster (idempotent: starts only what is not running)."""
    from appstack_testbed.process import ComponentError  # noqa: PLC0415

    local = _local(name, nodes=nodes, pods_per_node=pods_per_node, real_nodes=real_nodes)
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
@_REAL_NODES
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
def demo(name: str, real_nodes: int, example: str, stack_example: str) -> None:
    """Cluster up (a real node as root), CRDs and RBAC installed, the operator running in
    the background under its ServiceAccount, the seed's AppService and the DataService
    AppStack applied, Ready and answering over HTTP. On failure: what is not Ready and why,
    exit status 1."""
    from pathlib import Path  # noqa: PLC0415

    from appstack_testbed import demo as demo_module  # noqa: PLC0415

    try:
        demo_module.run(
            _local(name, real_nodes=real_nodes), Path(example), click.echo, Path(stack_example)
        )
    except demo_module.DemoFailed as error:
        click.echo(f"\nThe demo did not come up: {error}", err=True)
        click.echo("Stop it with: make demo-down  (appstack cluster down)", err=True)
        sys.exit(1)


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
