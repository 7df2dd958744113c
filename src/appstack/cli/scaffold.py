"""The operator workflow of the seeds, in Python: ``appstack init``, ``create api``,
``create webhook``, ``edit``, ``generate manifests`` / ``installer`` / ``k8s`` — kubebuilder's
names, flags and meanings — and operator-sdk's spellings as aliases (``appstack new``,
``add api``, ``add controller``). The command layer only: each command parses its options
and calls its one function in :mod:`appstack.scaffold.commands`, which checks the input and
writes; a refusal (:class:`~appstack.scaffold.project.Refused`, the flag named) becomes
one line ``Error: ...`` on stderr and exit status 2, here in one place
(:func:`_refusals`), nothing written. Registered on the CLI group by :mod:`appstack.cli`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

DIRECTORY = click.option(
    "--directory",
    "-C",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The project's directory.",
)


class _Refusal(click.ClickException):
    """A refused command: ``Error: <what and which flag>`` on stderr, exit status 2."""

    exit_code = 2


@contextmanager
def _refusals() -> Iterator[None]:
    """The one place a scaffolder's refusal becomes the command's error."""
    from appstack.scaffold.project import Refused  # noqa: PLC0415

    try:
        yield
    except Refused as error:
        raise _Refusal(str(error)) from error


def _refusing(action: Callable[[], list[Path]], directory: Path, then: str = "") -> None:
    """Run ``action`` (refused: :func:`_refusals`), then list what it wrote, relative to
    ``directory``, and say what comes next."""
    with _refusals():
        written = action()
    for path in written:
        click.echo(f"wrote {path.relative_to(directory.resolve()) if path.is_absolute() else path}")
    if then:
        click.echo(then)


def _rewriting(paths: list[str]) -> None:
    """``--force``: the edited files it is about to replace, on stderr, before it writes."""
    one = len(paths) == 1
    click.echo(
        f"--force: rewriting {len(paths)} file{'' if one else 's'} that "
        f"differ{'s' if one else ''} from the scaffold (what you wrote in "
        f"{'it' if one else 'them'} is replaced):",
        err=True,
    )
    for path in paths:
        click.echo(f"  {path}", err=True)


NEXT_API = "Next: make manifests (then make test)"
NEXT_STORAGE = (
    "Next: the controller reconciles the new storage version once it imports the kind's "
    "models from the new version's module (docs/versions.md, Seed 000); then make manifests "
    "test-unit"
)


@click.command()
@click.option(
    "--domain", required=True, help="The domain of the project's API groups (example.com)."
)
@click.option(
    "--repo",
    default=None,
    help="The project's repository (github.com/you/project), recorded in PROJECT [default: none].",
)
@click.option("--project-name", default=None, help="The project's name [default: the directory's].")
@click.option(
    "--namespaced/--cluster-wide",
    default=False,
    show_default=True,
    help="The operator watches only its own namespace (a Role), or every namespace.",
)
@click.option("--owner", default="", help="The copyright owner in the license headers.")
@click.option(
    "--license",
    "license_",
    type=click.Choice(["apache2", "none"]),
    default="apache2",
    show_default=True,
    help="The license header of the generated files.",
)
@DIRECTORY
def init(
    *,
    domain: str,
    repo: str | None,
    project_name: str | None,
    namespaced: bool,
    owner: str,
    license_: str,
    directory: Path,
) -> None:
    """Initialize a new operator project (kubebuilder init) in an empty directory."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    _refusing(
        lambda: commands.init(
            directory,
            domain=domain,
            repo=repo,
            project_name=project_name,
            namespaced=namespaced,
            owner=owner,
            license=license_,
        ),
        directory,
        "Next: appstack create api --group <group> --version v1 --kind <Kind>",
    )


def _api_options(command: F) -> F:
    for option in reversed(
        [
            click.option(
                "--resource/--no-resource",
                default=None,
                help="Scaffold the kind (its model, CRD and sample) [default: yes; no for a "
                "built-in group or --external-api-domain, which are not the project's].",
            ),
            click.option(
                "--controller/--no-controller",
                default=True,
                show_default=True,
                help="Scaffold its controller (and its tests).",
            ),
            click.option(
                "--namespaced/--cluster-scoped",
                default=True,
                show_default=True,
                help="The kind's scope.",
            ),
            click.option(
                "--plural", default=None, help="The kind's plural [default: kubebuilder's rule]."
            ),
            click.option(
                "--force",
                is_flag=True,
                help="Rewrite this kind's scaffold files, edited or not (listed first).",
            ),
            DIRECTORY,
        ]
    ):
        command = option(command)
    return command


@click.group()
def create() -> None:
    """Scaffold an API or a webhook (kubebuilder create)."""


@create.command("api")
@click.option(
    "--group",
    required=True,
    help="The API group, without the domain (webapp); a built-in group as it is (core, apps, "
    "batch, networking.k8s.io...): a controller of its kind, --no-resource.",
)
@click.option("--version", required=True, help="The API version (v1, v1alpha1, v2beta3...).")
@click.option("--kind", required=True, help="The kind, UpperCamelCase (Guestbook).")
@click.option(
    "--external-api-domain",
    default=None,
    help="Another project's API: the group is <group>.<this> (cert-manager + io), its CRD "
    "installed by it; a controller of its kind, --no-resource.",
)
@click.option(
    "--storage",
    is_flag=True,
    help="A new version of a kind of one version, as its storage version (the hub): the "
    "first converted to and from it, deprecated, then migrated by the operator.",
)
@_api_options
def create_api(
    *,
    group: str,
    version: str,
    kind: str,
    external_api_domain: str | None,
    storage: bool,
    resource: bool | None,
    controller: bool,
    namespaced: bool,
    plural: str | None,
    force: bool,
    directory: Path,
) -> None:
    """Scaffold a kind and its controller (kubebuilder create api); or the controller of a
    kind someone else declares (a built-in group, --external-api-domain)."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    _refusing(
        lambda: commands.create_api(
            directory,
            group=group,
            version=version,
            kind=kind,
            external_api_domain=external_api_domain,
            resource=resource,
            controller=controller,
            namespaced=namespaced,
            plural=plural,
            force=force,
            rewriting=_rewriting,
            storage=storage,
        ),
        directory,
        NEXT_STORAGE if storage else NEXT_API,
    )


@create.command("webhook")
@click.option("--group", required=True, help="The kind's API group, without the domain.")
@click.option("--version", required=True, help="The kind's API version.")
@click.option("--kind", required=True, help="The kind.")
@click.option(
    "--defaulting",
    is_flag=True,
    help="A defaulting (mutating) webhook in Python, served by the operator, and its tests.",
)
@click.option(
    "--programmatic-validation",
    "validation",
    is_flag=True,
    help="A validating webhook in Python, served by the operator, and its tests.",
)
@click.option(
    "--conversion",
    is_flag=True,
    help="The conversion of a kind of several versions (--version: its storage version), "
    "served by the operator; create api of a new version writes it already.",
)
@click.option(
    "--spoke",
    multiple=True,
    help="With --conversion: a version converted to and from --version [default: every other].",
)
@DIRECTORY
def create_webhook(
    *,
    group: str,
    version: str,
    kind: str,
    defaulting: bool,
    validation: bool,
    conversion: bool,
    spoke: tuple[str, ...],
    directory: Path,
) -> None:
    """A kind's admission webhooks in Python, served by the operator with the kind's
    controller (config/webhook from make manifests), each with its tests; or the conversion
    between a kind's versions (--conversion), served by the operator."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    _refusing(
        lambda: commands.create_webhook(
            directory,
            group=group,
            version=version,
            kind=kind,
            defaulting=defaulting,
            validation=validation,
            conversion=conversion,
            spoke=spoke,
        ),
        directory,
        NEXT_API,
    )


@click.command(short_help="Change the project's settings (kubebuilder edit).")
@click.option(
    "--namespaced/--cluster-wide",
    default=None,
    help="The operator watches only its own namespace (a Role), or every namespace.",
)
@click.option(
    "--enable-all-namespaces/--enabled-namespaces-only",
    default=None,
    help="The generated install acts in every namespace, or (the default) only in those "
    "labelled <domain>/enabled=true.",
)
@click.option(
    "--image",
    default=None,
    help="The operator's image in config/manager/kustomization.yaml (as `kustomize edit set "
    "image controller=IMAGE`; make deploy does it with IMG).",
)
@DIRECTORY
def edit(
    namespaced: bool | None,
    enable_all_namespaces: bool | None,
    image: str | None,
    directory: Path,
) -> None:
    """Change the project's settings (kubebuilder edit): in PROJECT, and the flags they
    decide in config/manager/manager.yaml (the rest of that file, yours, kept)."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    _refusing(
        lambda: commands.edit(
            directory,
            namespaced=namespaced,
            enable_all_namespaces=enable_all_namespaces,
            image=image,
        ),
        directory,
        "Next: make manifests",
    )


# ------------------------------------------------------------------ operator-sdk's spellings
@click.command()
@click.argument("name")
@click.option(
    "--repo",
    default=None,
    help="The project's repository (github.com/you/name), recorded in PROJECT [default: none].",
)
@click.option(
    "--domain",
    default="example.com",
    show_default=True,
    help="The domain of the project's API groups.",
)
@click.option("--owner", default="", help="The copyright owner in the license headers.")
def new(name: str, repo: str | None, domain: str, owner: str) -> None:
    """Create a project in a new directory NAME (operator-sdk new)."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = Path(name).resolve()
    _refusing(
        lambda: commands.new(name, repo=repo, domain=domain, owner=owner),
        directory,
        f"Next: cd {name} && appstack add api "
        f"--api-version=<group>.{domain}/v1alpha1 --kind=<Kind>",
    )


@click.group()
def add() -> None:
    """operator-sdk's add api / add controller."""


@add.command("api")
@click.option(
    "--api-version",
    required=True,
    help="<group>.<domain>/<version>, e.g. app.example.com/v1alpha1.",
)
@click.option("--kind", required=True, help="The kind, UpperCamelCase (AppService).")
@click.option(
    "--controller/--no-controller",
    default=False,
    show_default=True,
    help="Also scaffold its controller (operator-sdk adds it with add controller).",
)
@DIRECTORY
def add_api(api_version: str, kind: str, controller: bool, directory: Path) -> None:
    """Scaffold a kind (operator-sdk add api)."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    _refusing(
        lambda: commands.add_api(
            directory,
            api_version=api_version,
            kind=kind,
            controller=controller,
            rewriting=_rewriting,
        ),
        directory,
        NEXT_API,
    )


@add.command("controller")
@click.option("--api-version", required=True, help="<group>.<domain>/<version> of the kind.")
@click.option("--kind", required=True, help="The kind.")
@DIRECTORY
def add_controller(api_version: str, kind: str, directory: Path) -> None:
    """Scaffold the controller of a kind added before (operator-sdk add controller)."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    _refusing(
        lambda: commands.add_controller(
            directory, api_version=api_version, kind=kind, rewriting=_rewriting
        ),
        directory,
        NEXT_API,
    )


# ----------------------------------------------------------------------------- generate
@click.group()
def generate() -> None:
    """Generate what the code implies (controller-gen's job): manifests, the installer,
    the Helm chart."""


@generate.command("manifests")
@DIRECTORY
def generate_manifests(directory: Path) -> None:
    """Write config/ (CRDs, RBAC, the install) from the project's code (make manifests)."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    _refusing(lambda: commands.generate_manifests(directory), directory)


@generate.command("k8s")
@DIRECTORY
def generate_k8s(directory: Path) -> None:
    """operator-sdk generate k8s: Python models need no generated code; the CRDs are
    regenerated from them (the same as generate manifests)."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    click.echo("Python models need no deepcopy code; the CRDs come from them:")
    _refusing(lambda: commands.generate_manifests(directory), directory)


@generate.command("installer")
@click.option(
    "--image", default="controller:latest", show_default=True, help="The operator's image."
)
@click.option("-o", "--output", default="-", show_default=True, help="A file, or - for stdout.")
@DIRECTORY
def generate_installer(image: str, output: str, directory: Path) -> None:
    """The install of IMAGE as one YAML stream (make build-installer): the image set in
    config/manager, then `kubectl kustomize config/default` ($KUBECTL, else kubectl on
    PATH) — your edits in config/ included."""
    from appstack.scaffold import commands  # noqa: PLC0415

    kubectl = os.environ.get("KUBECTL") or "kubectl"
    with _refusals():
        text = commands.generate_installer(directory.resolve(), image, kubectl)
    if output == "-":
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text)
        click.echo(f"wrote {output}")


@generate.command("chart")
@click.option("--image", default="", help="The operator's image (default: config/manager's).")
@click.option("--force", is_flag=True, help="Rewrite the chart's files you edited too.")
@DIRECTORY
def generate_chart(image: str, force: bool, directory: Path) -> None:
    """The Helm chart in dist/chart/ (make helm), derived from `kubectl kustomize
    config/default` ($KUBECTL, else kubectl on PATH) — your edits in config/ included; a
    file of the chart you edited is kept (--force rewrites it)."""
    from appstack.scaffold import commands  # noqa: PLC0415

    directory = directory.resolve()
    kubectl = os.environ.get("KUBECTL") or "kubectl"
    with _refusals():
        written, kept = commands.generate_chart(directory, image, kubectl, force=force)
    for path in written:
        click.echo(f"wrote {path.relative_to(directory)}")
    for path in kept:
        click.echo(f"kept {path.relative_to(directory)} (edited; --force rewrites it)")


COMMANDS = {
    "init": init,
    "create": create,
    "edit": edit,
    "new": new,
    "add": add,
    "generate": generate,
}
