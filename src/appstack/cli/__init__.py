"""The ``appstack`` command line.

Here: ``run`` (the operator: every registered controller against a cluster) and
``render`` (what the operator would apply, offline, as YAML or JSON). In
:mod:`appstack.cli.install`: ``manifests`` (deploy/, the Helm chart, or an install for
your image and namespaces), ``uninstall`` and ``status``. Other distributions add command
groups through the ``appstack.cli`` entry-point group: the test bed (``appstack-testbed``, in
``testbed/`` of the repository, not part of this distribution) adds ``appstack cluster ...``,
the local cluster for development, the demo and the tests. Heavy modules are imported
lazily, so that ``--help`` stays fast. The same group is the kubectl plugin
``kubectl-appstack`` (:func:`kubectl_plugin`). A user's error (no kubeconfig, an API
server that does not answer, CRDs not installed) is one or two lines and exit status 1
from every command (:mod:`appstack.cli.errors`; ``APPSTACK_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from appstack import __version__
from appstack.cli import run as run_command


class _Commands(click.Group):
    """The command group: ``run`` is here from the start; the other commands' modules and
    other distributions' groups (entry points, read with ``importlib.metadata``) are
    registered the first time any other command, or the list of them, is asked for — so
    ``appstack run`` never imports them (0.6 MiB for the operator's whole life)."""

    _registered = False

    def _register_all(self) -> None:
        if not self._registered:
            self._registered = True
            _register()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            self._register_all()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._register_all()
        return super().list_commands(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands by what they are for (:data:`SECTIONS`), each with its whole first
        sentence (click would cut it at 45 characters)."""
        commands = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                commands[name] = command.get_short_help_str(limit=200)
        sections = [(title, [n for n in names if n in commands]) for title, names in SECTIONS]
        placed = {name for _, names in sections for name in names}
        sections.append(("Other commands", [n for n in commands if n not in placed]))
        for title, names in sections:
            if names:
                with formatter.section(title):
                    formatter.write_dl([(name, commands[name]) for name in names])

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name in ELSEWHERE and self.get_command(ctx, name) is None:
            ctx.fail(f"No such command {name!r}: {ELSEWHERE[name]}")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        """Every command, with the user's errors (a kubeconfig, an API server, CRDs) said
        in a line or two instead of a traceback (:mod:`appstack.cli.errors`)."""
        try:
            return super().invoke(ctx)
        except Exception as error:
            from appstack.cli import errors  # noqa: PLC0415

            explained = None if errors.debugging() else errors.explain(error)
            if explained is None:
                raise
            raise explained from error


#: Commands other distributions add, and where to get them.
#: The top-level help's sections: the commands by what they are for.
SECTIONS = (
    ("Operate appstack", ("run", "status", "uninstall", "render", "manifests", "etcd-backup")),
    ("Build an operator", ("init", "create", "edit", "generate", "new", "add")),
    ("Local cluster (the test bed)", ("cluster",)),
    ("Shell", ("completion",)),
)
ELSEWHERE = {
    "cluster": "the cluster commands (the local cluster for development, the demo and the "
    "tests) come from the test bed, appstack-testbed in the repository's testbed/; install it "
    "with `make venv` or `pip install -e testbed`",
}


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="appstack")
def main() -> None:
    """appstack: run applications on Kubernetes from one custom resource."""


main.add_command(run_command.run)


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


#: What kubectl reads in a directory given to -f.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _manifests(paths: tuple[str, ...], recursive: bool) -> list[tuple[str, str]]:
    """(name, text) of every file ``-f`` names, in order: ``-`` is stdin, a directory its
    .yaml/.yml/.json files (sorted; with ``-R`` its subdirectories' too), as kubectl reads
    them."""
    found: list[tuple[str, str]] = []
    for given in paths:
        if given == "-":
            found.append(("<stdin>", sys.stdin.read()))
            continue
        path = Path(given)
        if path.is_dir():
            pattern = "**/*" if recursive else "*"
            files = sorted(p for p in path.glob(pattern) if p.suffix in MANIFEST_SUFFIXES)
            found += [(str(p), p.read_text()) for p in files if p.is_file()]
        else:
            found.append((given, path.read_text()))
    return found


@main.command(cls=_KindsCommand)
@click.option(
    "-f",
    "--filename",
    "filenames",
    required=True,
    multiple=True,
    type=click.Path(exists=True, allow_dash=True),
    help="A YAML or JSON file with appstack objects, and any others; a directory of them; "
    "'-' for stdin. Repeatable, as kubectl's.",
)
@click.option(
    "-R",
    "--recursive",
    is_flag=True,
    help="Read the directories given to -f and their subdirectories, as kubectl's -R.",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["yaml", "json"]),
    default="yaml",
    show_default=True,
    help="yaml: a multi-document stream; json: a v1 List.",
)
def render(filenames: tuple[str, ...], recursive: bool, output: str) -> None:
    """Print what the {kinds} objects in files become, without a cluster.

    The files are validated with the same rules as admission; invalid input prints
    field-level errors and exits 1, as does input without objects. A seed operator's kind
    (its own API group) is an error saying what to change. Other objects are printed as
    they are (another operator's kind with a note on stderr naming it).

    \b
    Examples:
      appstack render -f examples/appservice.yaml
      appstack render -f team-a/ -f shared.yaml -o json
      kubectl get appstack shop -o yaml | appstack render -f -
    """
    import yaml  # noqa: PLC0415

    from appstack.cli.render import RenderError, render_documents  # noqa: PLC0415

    notes: list[str] = []
    try:
        documents: list[Any] = []
        manifests = _manifests(filenames, recursive)
        for _, text in manifests:
            documents += list(yaml.safe_load_all(text))
        if not any(documents):
            names = ", ".join(name for name, _ in manifests) or ", ".join(filenames)
            raise RenderError([f"no objects in {names}: nothing to render"])
        objects = render_documents(documents, notes)
    except RenderError as error:
        for line in error.problems:
            click.echo(f"error: {line}", err=True)
        sys.exit(1)
    except yaml.YAMLError as error:
        click.echo(f"error: not valid YAML: {error}", err=True)
        sys.exit(1)
    for line in notes:
        click.echo(f"note: {line}", err=True)
    if output == "json":
        import json  # noqa: PLC0415

        click.echo(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
    else:
        click.echo(yaml.safe_dump_all(objects, sort_keys=False), nl=False)


@main.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (commands, flags, choices).

    \b
    Examples:
      source <(appstack completion bash)                  # this shell
      appstack completion bash > /etc/bash_completion.d/appstack
      appstack completion zsh > "${fpath[1]}/_appstack"
      appstack completion fish > ~/.config/fish/completions/appstack.fish
    """
    from click.shell_completion import get_completion_class  # noqa: PLC0415

    completer = get_completion_class(shell)
    if completer is None:  # pragma: no cover - the three are click's own
        raise click.UsageError(f"no completion for {shell}")
    script = completer(main, {}, "appstack", "_APPSTACK_COMPLETE").source()
    click.echo(script)


PLUGIN_GROUP = "appstack.cli"


def _register() -> None:
    # the command groups live in their own modules; registered once, when first needed
    from importlib.metadata import entry_points  # noqa: PLC0415

    from appstack.cli.etcd_backup import etcd_backup  # noqa: PLC0415
    from appstack.cli.install import manifests, status, uninstall  # noqa: PLC0415
    from appstack.cli.scaffold import COMMANDS  # noqa: PLC0415

    for command in (manifests, uninstall, status, etcd_backup):
        main.add_command(command)
    for name, group in COMMANDS.items():  # the operator workflow (init, create api, ...)
        main.add_command(group, name)
    # Command groups of other installed distributions (e.g. `cluster` from appstack-testbed).
    for entry in entry_points(group=PLUGIN_GROUP):
        main.add_command(entry.load(), entry.name)


def kubectl_plugin() -> None:
    """``kubectl-appstack``: the same commands as a kubectl plugin (``kubectl appstack
    status NAME``) when it is on ``PATH``; kubectl passes the arguments after ``appstack``
    and its environment (``KUBECONFIG``)."""
    main(prog_name="kubectl appstack")
