"""``appstack manifests``, ``appstack uninstall`` and ``appstack status``: installing,
removing and inspecting appstack on a cluster. Registered on the ``appstack`` group by
:mod:`appstack.cli`; heavy modules are imported inside the commands."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from appstack.cli.errors import CommandError
from appstack.cli.run import CONTEXT, KUBECONFIG
from appstack.core import defaults
from appstack.core.duration import DEFAULT_SYNC_PERIOD
from appstack.sdk import Duration, check_duration

if TYPE_CHECKING:
    from pathlib import Path

    from appstack.runtime import Client


def _deprecated(
    ctx: click.Context, param: click.Parameter, value: bool | None, instead: str
) -> bool | None:
    """The callback of a hidden deprecated ``--x/--no-x`` spelling: its value when given
    (None otherwise), with one line on stderr naming the spelling to use, ``instead``."""
    if value is None or ctx.get_parameter_source(param.name or "") not in _GIVEN:
        return None
    opts = param.opts if value else getattr(param, "secondary_opts", param.opts)
    use = instead if value else f"--no-{instead.removeprefix('--')}"
    click.echo(f"warning: {opts[0]} is deprecated: use {use}", err=True)
    return value


_GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


async def _connect(kubeconfig: str | None, context: str | None) -> Client:
    """The commands' client: the API server's warnings (a deprecated version, an admission
    webhook's) printed on stderr as kubectl prints them, ``Warning: <text>``, once each."""
    from appstack.runtime import Client  # noqa: PLC0415

    client = await Client.connect(kubeconfig, context)
    client.on_warning = _print_warning
    return client


def _print_warning(text: str) -> None:
    click.echo(f"Warning: {text}", err=True)


def _autoscale(given: str | None, shards: int) -> tuple[int, int] | None:
    """``--autoscale MIN:MAX`` as (MIN, MAX), checked against ``--shards``."""
    if given is None:
        return None
    if not shards:
        raise click.UsageError(
            "--autoscale sets the shards of a sharded install: add --shards (the fewest)"
        )
    low, sep, high = given.partition(":")
    if not (sep and low.isdigit() and high.isdigit()):
        raise click.UsageError(f"--autoscale {given}: MIN:MAX, e.g. 2:6")
    from appstack.manifests.install import check_autoscale  # noqa: PLC0415

    bounds = int(low), int(high)
    try:
        check_autoscale(*bounds)
    except ValueError as error:
        raise click.UsageError(f"--autoscale {given}: {error}, e.g. 2:6") from None
    if not bounds[0] <= shards <= bounds[1]:
        raise click.UsageError(f"--autoscale {given}: --shards {shards} is outside it")
    return bounds


@click.command(short_help="Write the install: CRDs, RBAC, the operator, one bundle; the chart.")
@click.option(
    "--output-dir",
    default="deploy",
    show_default=True,
    type=click.Path(),
    help="The directory to write the manifests to.",
)
@click.option(
    "-o",
    "--output",
    default=None,
    help="Print the install bundle to stdout instead, as kubectl's -o: yaml (a multi-document "
    "stream; '-' says the same) or json (a v1 List).",
)
@click.option("--check", is_flag=True, help="Only check that the files are up to date.")
@click.option(
    "--image",
    default=None,
    help="Operator image, REPOSITORY:TAG or by digest REPOSITORY@sha256:DIGEST (as "
    "dist/install.yaml of `make dist`) [default: appstack:VERSION].",
)
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
    "--sync-period",
    default=DEFAULT_SYNC_PERIOD,
    show_default=True,
    callback=check_duration,
    help="The operator's --sync-period (how often every object is reconciled again).",
)
@click.option(
    "--enable-all-namespaces",
    is_flag=True,
    help="The operator acts in every namespace, not only those a cluster administrator "
    "labelled appstack.dev/enabled=true (single-team clusters: whoever may create our kinds "
    "anywhere gets the operator's writes there; docs/security.md).",
)
@click.option(
    "--replicas",
    default=2,
    show_default=True,
    type=click.IntRange(1, 10),
    help="Operator replicas (one leads, the others stand by).",
)
@click.option(
    "--shards",
    default=0,
    type=click.IntRange(0, 10),
    help="Sharded: this many replicas (2 or more), each active on its own share of the "
    "objects (the operator's --sharding), with the RBAC and admission guards that needs "
    "(docs/sharding.md). Overrides --replicas.",
)
@click.option(
    "--autoscale",
    default=None,
    metavar="MIN:MAX",
    help="With --shards: a HorizontalPodAutoscaler sets the shards between MIN and MAX "
    "(at 80% of the pods' CPU requests; needs the cluster's metrics-server), and the "
    "Deployment has no replicas of its own (--shards, within MIN:MAX, then only turns "
    "sharding on); the chart's autoscaling, docs/sharding.md.",
)
@click.option(
    "--log-level",
    default=defaults.LOG_LEVEL,
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
    help="The operator's --log-level.",
)
@click.option(
    "--concurrency",
    default=defaults.CONCURRENCY,
    show_default=True,
    type=click.IntRange(1, 512),
    help="The operator's --concurrency (reconciles at once, shared by its controllers).",
)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=True,
    show_default=True,
    help="The operator's --leader-elect (off: one replica only, never two; chart value "
    "leaderElection.enabled).",
)
@click.option(
    "--leader-election/--no-leader-election",
    "leader_election",
    default=None,
    hidden=True,
    callback=lambda ctx, param, value: _deprecated(ctx, param, value, "--leader-elect"),
    help="Deprecated: --leader-elect.",
)
@click.option(
    "--metrics-secure/--no-metrics-secure",
    default=True,
    show_default=True,
    help="/metrics over HTTPS with authentication (off: plain HTTP, no authentication).",
)
@click.option(
    "--metrics-cert-secret",
    default=None,
    help="A kubernetes.io/tls Secret of the operator's namespace to serve /metrics with "
    "(default: a self-signed certificate made at start-up).",
)
@click.option(
    "--allow-external-ips",
    is_flag=True,
    help="The operator's --allow-external-ips (external middleware may be an IP address).",
)
@click.option(
    "--external-deny-cidr",
    "external_deny_cidrs",
    multiple=True,
    help="The operator's --external-deny-cidr: a range external middleware may not point at "
    "(repeatable).",
)
@click.option(
    "--allow-external-cluster-names",
    is_flag=True,
    help="The operator's --allow-external-cluster-names.",
)
@click.option(
    "--extra-arg",
    "extra_args",
    multiple=True,
    help="Any other flag of `appstack run`, e.g. "
    "--extra-arg=--leader-elect-lease-duration=30s (repeatable).",
)
@click.option(
    "--image-pull-secret",
    "image_pull_secrets",
    multiple=True,
    help="A Secret of the operator's namespace to pull its image with (repeatable).",
)
@click.option(
    "--image-pull-policy",
    default=None,
    type=click.Choice(["Always", "IfNotPresent", "Never"]),
    help="The operator container's imagePullPolicy (default: Kubernetes').",
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
    output: str | None,
    check: bool,
    image: str | None,
    namespace: str,
    watch_namespaces: tuple[str, ...],
    sync_period: str,
    enable_all_namespaces: bool,
    chart_dir: str | None,
    replicas: int,
    shards: int,
    autoscale: str | None,
    log_level: str,
    concurrency: int,
    leader_elect: bool,
    leader_election: bool | None,
    metrics_secure: bool,
    metrics_cert_secret: str | None,
    allow_external_ips: bool,
    external_deny_cidrs: tuple[str, ...],
    allow_external_cluster_names: bool,
    extra_args: tuple[str, ...],
    image_pull_secrets: tuple[str, ...],
    image_pull_policy: str | None,
) -> None:
    """Generate the install: CRDs (from the API models), RBAC (from what the controllers
    use), the operator Deployment and the single install.yaml bundle.

    Without options this regenerates deploy/. Every value an installer sets on the chart
    has a flag of the same meaning here. For your cluster, e.g.:

    \b
    appstack manifests --image REGISTRY/appstack:TAG \\
      --watch-namespace team-a -o yaml | kubectl apply -f -
    appstack manifests --output-dir my-install/
    """
    from pathlib import Path  # noqa: PLC0415

    from appstack.manifests import bundle, chart  # noqa: PLC0415
    from appstack.manifests.install import InstallOptions, install  # noqa: PLC0415
    from appstack.manifests.workload import IMAGE, OperatorFlags  # noqa: PLC0415

    if output not in (None, "-", "yaml", "json"):
        raise click.UsageError(
            f"-o {output}: -o is the output format (yaml or json, printed to stdout); write "
            f"files with --output-dir {output}",
        )
    if leader_election is not None:  # the deprecated spelling, given
        leader_elect = leader_election
    if shards == 1:
        raise click.UsageError("--shards 1 is one replica: give 2 or more, or leave it out")
    if shards and not leader_elect:
        raise click.UsageError("--shards elects its coordinator: leave out --no-leader-elect")
    bounds = _autoscale(autoscale, shards)
    if replicas > 1 and not leader_elect:
        spelt = "--no-leader-elect" if leader_election is None else "--no-leader-election"
        raise click.UsageError(f"{spelt} runs one replica only: add --replicas=1")
    options = InstallOptions(
        namespace=namespace,
        image=image or IMAGE,
        watch_namespaces=tuple(watch_namespaces),
        replicas=replicas,
        sync_period=sync_period,
        enable_all_namespaces=enable_all_namespaces,
        log_level=log_level,
        concurrency=concurrency,
        metrics_cert_secret=metrics_cert_secret,
        shards=shards,
        autoscale=bounds,
        flags=OperatorFlags(
            leader_election=leader_elect,
            metrics_secure=metrics_secure,
            allow_external_ips=allow_external_ips,
            external_deny_cidrs=tuple(external_deny_cidrs),
            allow_external_cluster_names=allow_external_cluster_names,
            extra_args=tuple(extra_args),
            image_pull_secrets=tuple(image_pull_secrets),
            image_pull_policy=image_pull_policy,
        ),
    )
    if output == "json":
        import json  # noqa: PLC0415

        objects = install(options).objects()
        click.echo(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
        return
    if output is not None or output_dir == "-":
        click.echo(bundle.bundle_text(options), nl=False)
        return
    outputs = {Path(output_dir): bundle.render(options)}
    if chart_dir:
        outputs[Path(chart_dir)] = chart.render()
    _written(outputs, check=check)


def _written(outputs: dict[Path, dict[str, str]], *, check: bool) -> None:
    """Write each directory's files, removing those a former run generated and this one
    does not; or (``check``) list what is out of date and exit 1 if anything is."""
    from appstack.manifests import bundle  # noqa: PLC0415

    if check:
        stale = [d / rel for d, files in outputs.items() for rel in bundle.stale(d, files)]
        stale += [path for d, files in outputs.items() for path in bundle.leftover(d, files)]
        for path in stale:
            click.echo(f"out of date: {path}", err=True)
        sys.exit(1 if stale else 0)
    for directory, files in outputs.items():
        for path in bundle.leftover(directory, files):  # generated before, no longer
            path.unlink()
            click.echo(f"removed {path}")
        for path in bundle.write(directory, files):
            click.echo(f"wrote {path}")


@click.command(short_help="Remove appstack from a cluster: every object of ours, the operator.")
@KUBECONFIG
@CONTEXT
@click.option(
    "--timeout",
    type=Duration(),
    default="5m",
    show_default=True,
    help="How long to wait for each step (e.g. 90s, 10m, or seconds).",
)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "-n",
    "--namespace",
    default=None,
    help="Remove only the install in this namespace: the custom resources in the namespaces "
    "it watches, its operator and its RBAC; the CRDs only if no other install remains "
    "[default: every install].",
)
def uninstall(
    kubeconfig: str | None, context: str | None, timeout: float, yes: bool, namespace: str | None
) -> None:
    """Remove appstack from a cluster: every custom resource in all namespaces (waiting
    for the still-running operator to finalize them and for their children to go), then
    the operator (Deployment, RBAC, ServiceAccount), then the CRDs and its Namespace.
    With --namespace, only that install (other installs keep working)."""
    import asyncio  # noqa: PLC0415

    from appstack.cli import uninstall as removal  # noqa: PLC0415

    if not yes:
        question = (
            f"Delete the install in namespace {namespace} (the custom resources it watches, "
            "then its operator; the CRDs if it is the last install)?"
            if namespace
            else "Delete every appstack custom resource in all namespaces, then the operator "
            "and the CRDs?"
        )
        click.confirm(question, abort=True)

    async def go() -> None:
        async with await _connect(kubeconfig, context) as client:
            await removal.uninstall(client, click.echo, timeout, namespace)

    try:
        asyncio.run(go())
    except removal.UninstallError as error:
        raise CommandError(str(error)) from error
    click.echo("appstack uninstalled.")


@click.command(short_help="Show an object of ours and what it is made of, as a tree.")
@click.argument("target", metavar="[KIND/]NAME")
@click.option(
    "-n",
    "--namespace",
    default=None,
    help="Default: the kubeconfig's current namespace, else default (as kubectl).",
)
@KUBECONFIG
@CONTEXT
@click.option(
    "-o",
    "--output",
    type=click.Choice(["tree", "json", "yaml", "dot", "mermaid"]),
    default="tree",
    show_default=True,
    help="tree: drawn as text; json, yaml: what is drawn, as data; dot (Graphviz), mermaid: "
    "the dependency graph (implies --graph).",
)
@click.option(
    "--graph",
    is_flag=True,
    help="The dependency graph instead of the tree: the waves members start in, what each "
    "needs (dependsOn, uses) and who blocks whom (AppStack).",
)
@click.option(
    "-w",
    "--watch",
    is_flag=True,
    help="After drawing it, draw it again each time it changes, until interrupted (Ctrl-C) "
    "or the object is deleted.",
)
def status(
    *,
    target: str,
    namespace: str | None,
    kubeconfig: str | None,
    context: str | None,
    output: str,
    graph: bool,
    watch: bool,
) -> None:
    """Show one object of ours and what it is made of: an AppStack (NAME or appstack/NAME)
    as a tree of its members and their objects (like `crossplane beta trace`);
    appservice/NAME with its pods and why they wait; etcd/NAME with its members, leader and
    last backup; crontab/NAME with its schedule, newest run and Jobs.

    \b
    Examples:
      appstack status dataservice                  # the tree
      appstack status dataservice --graph          # waves, needs, who blocks whom
      appstack status dataservice -o mermaid       # the graph for a Markdown page
      appstack status dataservice --graph --watch  # redrawn at each change
      appstack status appservice/web -n team-a -o yaml"""
    import asyncio  # noqa: PLC0415

    from appstack.cli import status_kinds  # noqa: PLC0415
    from appstack.runtime import NotFound, current_namespace  # noqa: PLC0415

    namespace = namespace or current_namespace(kubeconfig, context)
    kind_name, _, name = target.rpartition("/")
    resource = status_kinds.resolve(kind_name or status_kinds.DEFAULT_KIND)
    if resource is None:
        raise CommandError(
            f"{kind_name!r} is not a kind of ours", f"use one of: {status_kinds.kind_names()}"
        )
    graph = graph or output in {"dot", "mermaid"}
    if graph and not status_kinds.has_graph(resource):
        raise CommandError(
            f"{resource.kind} draws no dependency graph",
            "drop --graph (and -o dot|mermaid) to see its tree",
        )

    def draw(tree: dict[str, object]) -> str:
        return status_kinds.draw(tree, output, graph=graph)

    async def once() -> dict[str, object]:
        async with await _connect(kubeconfig, context) as client:
            try:
                return await status_kinds.collect(client, resource, name, namespace)
            except NotFound:
                await status_kinds.require_served(client)  # else: the object is not there
                raise

    async def watching() -> None:
        async with await _connect(kubeconfig, context) as client:
            first = True
            try:
                async for tree in status_kinds.follow(client, resource, name, namespace):
                    if tree is None:
                        click.echo(f"{resource.kind} {namespace}/{name} deleted")
                        return
                    if not first and output != "json":  # as kubectl -w: one after another
                        click.echo("---" if output == "yaml" else "")
                    click.echo(draw(tree), nl=False)
                    first = False
            except NotFound:
                await status_kinds.require_served(client)
                raise

    try:
        if watch:
            asyncio.run(watching())
            return
        tree = asyncio.run(once())
    except NotFound as error:
        raise CommandError(f"{resource.kind} {namespace}/{name} not found") from error
    except KeyboardInterrupt:  # Ctrl-C ends --watch: not an error
        return
    click.echo(draw(tree), nl=False)
