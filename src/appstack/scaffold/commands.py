"""What each scaffolder command does to a project directory — ``init``, ``create api``,
``create webhook``, ``edit``, ``generate manifests`` / ``installer`` and operator-sdk's
``new``, ``add api``, ``add controller``: kubebuilder's commands and meanings, in Python,
one function per command; ``create api`` of a kind the project has, at another version, adds
that version to it (:func:`add_version`: the kind's conversion, no file rewritten). All the
checks and refusals are here: each command checks all of its input first
(:class:`~appstack.scaffold.project.Refused` names the flag) and writes nothing when it
refuses; a later command inserts only at the scaffold markers (:func:`insert_at`), so files
a user edited are left byte for byte as they are; ``--force`` rewrites only that kind's own
scaffold files. ``create api`` of a kind the project does not declare — Kubernetes' own
(``--group core``, ``apps``...: :mod:`.builtin`) or another project's CRD
(``--external-api-domain``) — scaffolds a controller of any kind
(:func:`create_object_controller`), as kubebuilder does for core and external types. The
files' text comes from :mod:`.templates`. Used by :mod:`appstack.cli.scaffold` (the click
commands: options in, one call, a refusal turned into the command's error) and by tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import yaml

from appstack.scaffold import builtin
from appstack.scaffold import templates as t
from appstack.scaffold.project import (
    Project,
    Refused,
    Resource,
    Webhooks,
    check_domain,
    check_group,
    check_kind,
    check_plural,
    check_project_name,
    check_version,
    default_plural,
    read,
    split_api_version,
    write,
)
from appstack.sdk import ConfigProject, OperatorIdentity, config_files

Files = dict[str, str]


def _is_appstack_checkout(directory: Path) -> bool:
    return (directory / "src" / "appstack" / "__init__.py").is_file() or (
        directory / "testbed" / "src" / "appstack_testbed"
    ).is_dir()


def appstack_source() -> str:
    """The appstack checkout this command runs from (for the Makefile's default), if any."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "testbed").is_dir():
            return str(parent)
    return "../appstack"


def _write(directory: Path, files: Files) -> list[Path]:
    written = []
    for rel, text in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def init(
    directory: Path,
    *,
    domain: str,
    repo: str | None = None,
    project_name: str | None = None,
    namespaced: bool = False,
    owner: str = "",
    license: str = "apache2",
    source: str | None = None,
) -> list[Path]:
    """Scaffold a new project in ``directory`` (empty, or holding only ``.git``). ``repo``
    (kubebuilder's ``--repo``, the Go module there) is recorded in PROJECT when given: a
    Python project needs none, so seed 003's ``init --domain com.d3os`` works as typed."""
    if (directory / "PROJECT").exists():
        raise Refused(f"{directory} already has a PROJECT file: it is a project (use create api)")
    if _is_appstack_checkout(directory):
        raise Refused(f"{directory} is appstack's own checkout: init a project in a new directory")
    present = (
        [p.name for p in directory.iterdir() if p.name != ".git"] if directory.exists() else []
    )
    if present:
        raise Refused(
            f"{directory} is not empty ({', '.join(sorted(present)[:5])}): init needs an empty "
            "directory (or one holding only .git)"
        )
    check_domain(domain)
    if repo is not None and (not repo or any(c.isspace() for c in repo)):
        raise Refused(f"--repo {repo!r}: the project's repository, e.g. github.com/you/name")
    name = check_project_name(project_name or directory.resolve().name)
    if license not in ("apache2", "none"):
        raise Refused(f"--license {license!r}: apache2 or none")
    project = Project(domain, repo or "", name, namespaced, owner, license)
    pkg = project.package
    files: Files = {
        "PROJECT": project.to_text(),
        "pyproject.toml": t.pyproject(project),
        "Makefile": t.makefile(project, source or appstack_source()),
        "Dockerfile": t.dockerfile(project),
        ".gitignore": t.gitignore(),
        ".dockerignore": t.dockerignore(),
        "README.md": t.readme(project),
        f"src/{pkg}/__init__.py": t.package_init(project),
        f"src/{pkg}/__main__.py": t.package_main(project),
        f"src/{pkg}/identity.py": t.identity(project),
        f"src/{pkg}/api/__init__.py": t.api_init(project),
        f"src/{pkg}/controllers/__init__.py": t.controllers_init(project),
        "config/samples/kustomization.yaml": t.samples_kustomization(),
        "tests/__init__.py": "",
        "tests/conftest.py": t.test_conftest(project),
        "tests/test_config.py": t.test_config(project),
        "tests/e2e/__init__.py": "",
        "tests/e2e/test_e2e.py": t.test_e2e(project),
    }
    files.update(_config(project))
    directory.mkdir(parents=True, exist_ok=True)
    return _write(directory, files)


def new(
    name: str, *, repo: str | None = None, domain: str = "example.com", owner: str = ""
) -> list[Path]:
    """operator-sdk's ``new NAME``: :func:`init` in the new directory ``NAME``, the project
    named after it."""
    return init(
        Path(name).resolve(), domain=domain, repo=repo, project_name=Path(name).name, owner=owner
    )


def _config(project: Project) -> Files:
    """config/ of a project with no kind yet (the rest comes with ``make manifests``)."""
    generated = config_files(
        ConfigProject(
            identity=OperatorIdentity(project=project.project_name, domain=project.domain),
            package=project.package,
            controllers=[],
            kinds=[],
            namespaced=project.namespaced,
            enable_all_namespaces=project.enable_all_namespaces,
        )
    )
    return {f"config/{rel}": text for rel, text in generated.items()}


def insert_at(text: str, marker: str, line: str) -> str:
    """``text`` with ``line`` inserted just above the line holding ``marker`` (at its
    indentation), unless it is there already; :class:`Refused` if the marker is gone."""
    lines = text.splitlines(keepends=True)
    for index, current in enumerate(lines):
        if marker in current:
            indent = current[: len(current) - len(current.lstrip())]
            new = f"{indent}{line}\n"
            if new in lines[:index]:
                return text
            return "".join([*lines[:index], new, *lines[index:]])
    raise Refused(
        f"the scaffold marker {marker!r} is missing: put it back to let appstack add here"
    )


def create_api(
    directory: Path,
    *,
    group: str,
    version: str,
    kind: str,
    resource: bool | None = None,
    controller: bool = True,
    namespaced: bool = True,
    plural: str | None = None,
    force: bool = False,
    domain: str | None = None,
    external_api_domain: str | None = None,
    rewriting: Callable[[list[str]], None] | None = None,
    storage: bool = False,
) -> list[Path]:
    """Scaffold a kind (``--resource``, the default) and/or its controller
    (``--controller``); ``storage``: a new version of a kind of one version, as its
    storage version (:func:`add_version`). With ``force``, the files it replaces whose
    content is not what it writes (edits of yours, lost) are passed to ``rewriting`` first,
    before anything is written. ``external_api_domain``, or ``--no-resource`` for a kind of
    a built-in group the project does not have a kind of its own of (kubebuilder's rule:
    ``--group batch --kind CronJob`` with a resource is the project's ``batch.<domain>``):
    the controller of a kind someone else declares (:func:`create_object_controller`)."""
    if external_api_domain is not None or (
        domain is None
        and resource is False
        and builtin.builtin_group(group)
        and not _own_kind(directory, group, kind)
    ):
        if storage:
            raise Refused(
                "--storage: a version of the project's own kind only (no CRD of this one is "
                "made here); nothing was written"
            )
        return create_object_controller(
            directory,
            group=group,
            version=version,
            kind=kind,
            resource=bool(resource),
            controller=controller,
            namespaced=namespaced,
            plural=plural,
            force=force,
            external_api_domain=external_api_domain,
            rewriting=rewriting,
        )
    resource = True if resource is None else resource
    project = read(directory)
    check_group(group)
    check_version(version)
    check_kind(kind)
    if domain is not None:
        check_domain(domain, "--api-version")
    plural = check_plural(plural) if plural else default_plural(kind)
    if not resource and not controller:
        raise Refused("--no-resource --no-controller: nothing to scaffold")
    domain = domain if domain is not None else project.domain
    full_group = f"{group}.{domain}" if group else domain
    existing = project.find(full_group, version, kind)
    versions = project.versions(full_group, kind)
    _storage_checked(storage, f"{full_group}/{version} {kind}", existing, versions)
    if versions and existing is None:
        return add_version(
            directory,
            project,
            versions[0],
            version=version,
            resource=resource,
            namespaced=namespaced,
            plural=plural,
            storage=storage,
        )
    if existing is not None and versions and existing is not versions[0]:
        raise Refused(
            f"--version {version}: {kind} {version} was added to {full_group} {kind} as a "
            f"version converted to and from {versions[0].version}: its module is yours to "
            "edit (--force does not rewrite it)"
        )
    module = existing.module_name if existing is not None else kind.lower()
    # a kind's modules (api/<version>/, controllers/, tests/) are named once per project
    taken = {r.module_name for r in project.resources if r is not existing}
    if module in taken and group:
        # the same kind in another group (kubebuilder's multigroup): modules of its own
        module = f"{group.replace('-', '_')}_{kind.lower()}"
    if module in taken:
        raise Refused(
            f"--kind {kind}: the module {module}.py is another kind's already: choose "
            "another kind name"
        )
    wanted = Resource(
        group=group,
        version=version,
        kind=kind,
        domain=domain,
        plural=plural,
        path=f"{project.package}.api.{version}.{module}",
        api=resource,
        namespaced=namespaced,
        controller=controller,
    )
    if existing is not None:
        if resource and existing.api and not force:
            raise Refused(
                f"--kind {kind}: {wanted.full_group}/{version} {kind} already exists "
                "(--force rewrites its scaffold files)"
            )
        if controller and existing.controller and not resource and not force:
            raise Refused(f"--kind {kind}: its controller already exists (--force rewrites it)")
    if not resource and (existing is None or not existing.api):
        raise Refused(
            f"--no-resource: {wanted.full_group}/{version} {kind} has no API in this project "
            "(create it with --resource first)"
        )
    merged = (
        replace(
            existing,
            api=existing.api or resource,
            controller=existing.controller or controller,
            namespaced=namespaced if resource else existing.namespaced,
            plural=plural if resource else existing.plural,
        )
        if existing is not None
        else wanted
    )
    files = _api_files(directory, project, merged, resource=resource, controller=controller)
    files = _overwriting(directory, project.package, files, force=force, rewriting=rewriting)
    project.resources = [r for r in project.resources if r is not existing] + [merged]
    files["PROJECT"] = project.to_text()
    return _write(directory, files)


def add_version(
    directory: Path,
    project: Project,
    hub: Resource,
    *,
    version: str,
    resource: bool = True,
    namespaced: bool = True,
    plural: str | None = None,
    storage: bool = False,
) -> list[Path]:
    """``create api`` of a kind the project has (``hub``: its storage version), at another
    ``version`` (kubebuilder's multiversion tutorial): new files only — the version's module
    (its model, its conversion to and from the hub, field by field and lossless, and the
    kind's versions declared with :func:`~appstack.sdk.versioned_kind`), its sample, the
    round-trip test — and a line at the versions marker of ``api/__init__.py``. The first
    version's module and the kind's controller are never touched: the hub stays the storage
    version, the one the controller reconciles; no controller for the new version (one per
    kind). Refused, with nothing written, when a file it would write exists, and when
    ``api/__init__.py`` was edited and lost its marker (the message says what to add).
    With ``storage``, the new version is the storage version instead
    (:func:`_add_storage_version`)."""
    kind = hub.kind
    if not resource:
        raise Refused(
            f"--no-resource: {kind}'s controller reconciles {hub.version}, its storage "
            f"version (one controller per kind); {version} would be a version of its API"
        )
    if namespaced != hub.namespaced:
        scope = "namespaced" if hub.namespaced else "cluster-scoped"
        raise Refused(
            f"{'--namespaced' if namespaced else '--cluster-scoped'}: {kind} is {scope} at "
            f"{hub.version}, and every version of a kind has its scope: "
            f"{'drop --cluster-scoped' if hub.namespaced else 'pass --cluster-scoped'}"
        )
    if plural is not None and plural != hub.plural:
        raise Refused(
            f"--plural {plural}: {kind} is served as {hub.plural}, at every version (one CRD)"
        )
    if storage:
        return _add_storage_version(directory, project, hub, version=version)
    pkg, module = project.package, hub.module_name
    spoke = replace(
        hub,
        version=version,
        path=f"{pkg}.api.{version}.{module}",
        controller=False,
        webhooks=None,
    )
    files: Files = {}
    version_init = f"src/{pkg}/api/{version}/__init__.py"
    if not (directory / version_init).exists():
        files[version_init] = t.version_init(project, version)
    files[f"src/{pkg}/api/{version}/{module}.py"] = t.spoke_module(project, spoke, hub)
    sample = t.sample_file(spoke)
    files[sample] = t.spoke_sample(project, spoke, hub)
    samples = directory / "config/samples/kustomization.yaml"
    text = samples.read_text() if samples.exists() else t.samples_kustomization()
    files["config/samples/kustomization.yaml"] = insert_at(
        text, t.MARK_SAMPLES, f"- {Path(sample).name}"
    )
    files[f"tests/test_{module}_{version}_conversion.py"] = t.test_conversion(project, spoke, hub)
    registry = f"src/{pkg}/api/__init__.py"
    files[registry] = _versions_registered(directory, project, registry, spoke)
    files = _refuse_overwriting(directory, pkg, files, marked=(*MARKED_FILES, registry))
    hooks = hub.webhooks or Webhooks()
    hub.webhooks = replace(hooks, conversion=True, spoke=[*hooks.spoke, version])
    project.resources.append(spoke)
    files["PROJECT"] = project.to_text()
    return _write(directory, files)


def _storage_checked(
    storage: bool, wanted: str, existing: Resource | None, versions: list[Resource]
) -> None:
    """``create api --storage`` of ``wanted`` (``<group>/<version> <Kind>``) refused,
    saying why, unless it adds a version to a kind the project has."""
    if not storage:
        return
    if not versions:
        raise Refused(
            f"--storage: {wanted} is a new kind, whose first version is its storage version "
            "(drop --storage); nothing was written"
        )
    if existing is not None:
        raise Refused(
            f"--storage: {wanted} exists already"
            + (
                ", and is the storage version"
                if existing is versions[0]
                else ": moving the storage to it rewrites modules that are yours (by hand: "
                'docs/versions.md, "To store v2 instead")'
            )
            + "; nothing was written"
        )


def _add_storage_version(
    directory: Path, project: Project, old: Resource, *, version: str
) -> list[Path]:
    """``create api --storage``: ``version`` added to a kind of one version (``old``) as its
    storage version, the hub — new files only: its module (its model, ``old`` converted to
    and from it, field by field and lossless, deprecated, and the kind's versions declared
    with the new one ``storage=True``), its sample, the round-trip test of ``old``; a line
    at the versions marker of ``api/__init__.py``; and in ``controllers/__init__.py`` the
    kind's ``KIND_MODELS`` line, as the scaffolder wrote it, naming the new module instead
    (the CRD is the hub's). ``old``'s module and the controller are never touched: the
    controller reconciles the hub once it imports the new module's models (its one edit;
    the command's next step says so). Refused, with nothing written, when the kind has
    other versions already (their conversions are to and from ``old``: rewriting them is
    yours), a file it would write exists, or ``KIND_MODELS`` has neither line (the message
    names the line to change by hand)."""
    kind = old.kind
    versions = project.versions(old.full_group, kind)
    if len(versions) > 1:
        raise Refused(
            f"--storage: {kind} has versions {', '.join(r.version for r in versions)} already, "
            f"converted to and from {old.version}: moving the storage rewrites their modules, "
            'yours (by hand: docs/versions.md, "To store v2 instead"); nothing was written'
        )
    pkg, module = project.package, old.module_name
    hub = replace(
        old,
        version=version,
        path=f"{pkg}.api.{version}.{module}",
        controller=False,
        webhooks=Webhooks(conversion=True, spoke=[old.version]),
    )
    files: Files = {}
    version_init = f"src/{pkg}/api/{version}/__init__.py"
    if not (directory / version_init).exists():
        files[version_init] = t.version_init(project, version)
    files[f"src/{pkg}/api/{version}/{module}.py"] = t.storage_module(project, hub, old)
    sample = t.sample_file(hub)
    files[sample] = t.spoke_sample(project, hub, old)
    samples = directory / "config/samples/kustomization.yaml"
    text = samples.read_text() if samples.exists() else t.samples_kustomization()
    files["config/samples/kustomization.yaml"] = insert_at(
        text, t.MARK_SAMPLES, f"- {Path(sample).name}"
    )
    files[f"tests/test_{module}_{old.version}_conversion.py"] = t.storage_test_conversion(
        project, old, hub
    )
    registry = f"src/{pkg}/api/__init__.py"
    files[registry] = _versions_registered(directory, project, registry, hub)
    kinds = f"src/{pkg}/controllers/__init__.py"
    files[kinds] = _kind_model_moved(directory, kinds, old, hub)
    files = _refuse_overwriting(directory, pkg, files, marked=(*MARKED_FILES, registry))
    project.resources.append(hub)
    files["PROJECT"] = project.to_text()
    return _write(directory, files)


def _kind_model_moved(directory: Path, registry: str, old: Resource, hub: Resource) -> str:
    """``controllers/__init__.py`` with the ``KIND_MODELS`` line of ``old``'s model (as
    :func:`_api_files` wrote it) naming ``hub``'s — as it is if it names ``hub``'s already;
    refused, saying which line to change by hand, when it has neither line, once."""
    path = directory / registry
    text = path.read_text() if path.exists() else ""
    before, after = f'"{old.path}:{old.kind}",', f'"{hub.path}:{hub.kind}",'
    lines = text.splitlines(keepends=True)
    if [line.strip() for line in lines].count(after) == 1:
        return text
    found = [i for i, line in enumerate(lines) if line.strip() == before]
    if len(found) != 1:
        raise Refused(
            f"--storage: {registry} was edited and has no line `{before}` in KIND_MODELS: "
            f"make its {old.kind} entry `{after}` by hand, then run this again; nothing was "
            "written"
        )
    lines[found[0]] = lines[found[0]].replace(before, after)
    return "".join(lines)


def _versions_registered(directory: Path, project: Project, registry: str, spoke: Resource) -> str:
    """``api/__init__.py`` importing ``spoke``'s module at the versions marker; rewritten
    whole only while it is what the scaffolder wrote before the marker existed; refused
    (saying what to add by hand) when it was edited and has no marker."""
    line = f"import {spoke.path}  # noqa: F401 - declares {spoke.kind}'s versions"
    path = directory / registry
    text = path.read_text() if path.exists() else t.api_init(project)
    if t.MARK_VERSIONS not in text and text == t.api_init_before_versions(project):
        text = t.api_init(project)
    if t.MARK_VERSIONS not in text:
        raise Refused(
            f"--version {spoke.version}: {registry} was edited and has no "
            f"'{t.MARK_VERSIONS}' line: add `{line}` and, under it, that line by hand, then "
            "run this again; nothing was written"
        )
    return insert_at(text, t.MARK_VERSIONS, line)


def add_api(
    directory: Path,
    *,
    api_version: str,
    kind: str,
    controller: bool = False,
    rewriting: Callable[[list[str]], None] | None = None,
) -> list[Path]:
    """operator-sdk's ``add api``: :func:`create_api` of a kind given as
    ``<group>.<domain>/<version>``, its controller only with ``controller``."""
    group, domain, version = split_api_version(api_version)
    return create_api(
        directory,
        group=group,
        version=version,
        kind=kind,
        domain=domain,
        resource=True,
        controller=controller,
        rewriting=rewriting,
    )


def add_controller(
    directory: Path,
    *,
    api_version: str,
    kind: str,
    rewriting: Callable[[list[str]], None] | None = None,
) -> list[Path]:
    """operator-sdk's ``add controller``: the controller of a kind :func:`add_api` added."""
    group, domain, version = split_api_version(api_version)
    return create_api(
        directory,
        group=group,
        version=version,
        kind=kind,
        domain=domain,
        resource=False,
        controller=True,
        rewriting=rewriting,
    )


def _foreign_group(
    project: Project, group: str, version: str, kind: str, external_api_domain: str | None
) -> tuple[tuple[str, str], str, str, builtin.Served | None]:
    """A group the project does not own, checked: its (group, domain) as ``PROJECT``
    records them, its API group, what it is (for messages), and the kind's plural and
    scope when they are known (:mod:`.builtin`)."""
    if external_api_domain is None:
        found = builtin.builtin_group(group)
        if found is None:
            raise Refused(f"--group {group!r}: not a built-in API group")
        answer = builtin.served(found, version, kind)
        if isinstance(answer, str):
            raise Refused(answer)
        shown = found.api_group or "core"
        what = f"{shown} is a built-in API group (Kubernetes serves it)"
        return (found.name, found.domain), found.api_group, what, answer
    if not group:
        raise Refused("--group: an external API's group (cert-manager for cert-manager.io)")
    check_group(group)
    check_domain(external_api_domain, "--external-api-domain")
    full_group = f"{group}.{external_api_domain}"
    if full_group == project.domain or full_group.endswith(f".{project.domain}"):
        raise Refused(
            f"--external-api-domain {external_api_domain}: {full_group} is this project's "
            "own group (create api without --external-api-domain)"
        )
    what = f"{full_group} is another project's API (its CRD is installed by it)"
    return (group, external_api_domain), full_group, what, None


def _own_kind(directory: Path, group: str, kind: str) -> bool:
    """Whether the project declares ``kind`` in its own group ``group``.<domain> already
    (then ``--no-resource`` adds its controller, as kubebuilder decides)."""
    project = read(directory)
    return any(
        r.api and r.kind == kind and r.full_group == f"{group}.{project.domain}"
        for r in project.resources
    )


def create_object_controller(
    directory: Path,
    *,
    group: str,
    version: str,
    kind: str,
    resource: bool = False,
    controller: bool = True,
    namespaced: bool = True,
    plural: str | None = None,
    force: bool = False,
    external_api_domain: str | None = None,
    rewriting: Callable[[list[str]], None] | None = None,
) -> list[Path]:
    """The controller of a kind the project reconciles but does not declare: one of
    Kubernetes' (``group`` a built-in group, :mod:`.builtin`: used as it is, never with
    the project's domain) or another project's CRD (``<group>.<external_api_domain>``,
    kubebuilder's ``--external-api-domain``) — an :class:`~appstack.sdk.ObjectReconciler`
    module registered at the controllers' marker, its in-memory test, and a ``PROJECT``
    entry with ``core: true`` or ``external: true``. No CRD: ``resource`` is refused."""
    project = read(directory)
    check_version(version)
    check_kind(kind)
    recorded, full_group, what, known = _foreign_group(
        project, group, version, kind, external_api_domain
    )
    if resource:
        raise Refused(
            f"--resource: {what}: no CRD of it is made here; scaffold its controller with "
            "--controller --no-resource"
        )
    if not controller:
        raise Refused("--no-resource --no-controller: nothing to scaffold")
    if plural:
        check_plural(plural)
        if known is not None and plural != known.plural:
            raise Refused(f"--plural {plural}: {kind} is served as {known.plural}")
    plural = plural or (known.plural if known is not None else default_plural(kind))
    namespaced = known.namespaced if known is not None else namespaced
    existing = project.find(full_group, version, kind)
    for other in project.resources:
        if other.full_group == full_group and other.kind == kind and other.version != version:
            raise Refused(
                f"--version {version}: {kind} of {full_group or 'core'} has a controller "
                f"here already, for {other.version}: one controller per kind"
            )
    if existing is not None and not force:
        raise Refused(f"--kind {kind}: its controller already exists (--force rewrites it)")
    module = existing.module_name if existing is not None else kind.lower()
    taken = {r.module_name for r in project.resources if r is not existing}
    if module in taken:
        module = f"{recorded[0].replace('-', '_').replace('.', '_')}_{kind.lower()}"
    if module in taken:
        raise Refused(
            f"--kind {kind}: the module {module}.py is another kind's already: nothing was written"
        )
    pkg = project.package
    res = Resource(
        group=recorded[0],
        version=version,
        kind=kind,
        domain=recorded[1],
        plural=plural,
        path=f"{pkg}.controllers.{module}",
        api=False,
        namespaced=namespaced,
        controller=True,
        core=external_api_domain is None,
        external=external_api_domain is not None,
    )
    registry = f"src/{pkg}/controllers/__init__.py"
    files: Files = {
        f"src/{pkg}/controllers/{module}.py": t.object_controller_module(project, res),
        registry: insert_at(
            (directory / registry).read_text(), t.MARK_CONTROLLERS, f'"{res.path}",'
        ),
    }
    if res.namespaced:  # an object and its Event in one namespace, as the template's
        files[f"tests/test_{module}_in_memory.py"] = t.test_object_in_memory(project, res)
    files = _overwriting(directory, pkg, files, force=force, rewriting=rewriting)
    project.resources = [r for r in project.resources if r is not existing] + [res]
    files["PROJECT"] = project.to_text()
    return _write(directory, files)


def _overwriting(
    directory: Path,
    package: str,
    files: Files,
    *,
    force: bool,
    rewriting: Callable[[list[str]], None] | None,
) -> Files:
    """What ``create api`` writes: without ``force``, refused if it would replace an edited
    file (:func:`_refuse_overwriting`); with it, all of ``files``, the edited ones passed to
    ``rewriting`` first."""
    if not force:
        return _refuse_overwriting(directory, package, files, marked=MARKED_FILES)
    rewritten = _clashing(directory, package, files, marked=MARKED_FILES)
    if rewritten and rewriting is not None:
        rewriting(rewritten)
    return files


#: Files a command changes only by inserting a line at a scaffold marker
#: (:func:`insert_at`): what the user wrote around the markers is kept.
MARKED_FILES = (
    "PROJECT",
    "config/samples/kustomization.yaml",
    "src/{package}/controllers/__init__.py",
)


def _refuse_overwriting(
    directory: Path,
    package: str,
    files: Files,
    *,
    marked: tuple[str, ...],
    pristine: Files | None = None,
) -> Files:
    """``files`` to write, refused before anything is written if one would replace a file
    that exists with different content — but for the ``marked`` ones (``{package}`` filled
    in; changed at their markers only) and those still exactly as the scaffolder wrote
    them (``pristine``): any other may hold the user's edits, and a generator never
    overwrites those (``--force`` does, for a kind's own scaffold files). A file whose
    scaffold has nothing new (its text is the ``pristine`` one) is left as it is."""
    unedited = pristine or {}
    clashing = _clashing(directory, package, files, marked=marked, pristine=unedited)
    if clashing:
        raise Refused(
            f"{', '.join(clashing)} already exist{'s' if len(clashing) == 1 else ''} "
            "and may hold your edits: nothing was written"
        )
    kept = {m.format(package=package) for m in marked}
    # a file whose scaffold has nothing new (still the pristine text) stays as it is
    return {
        rel: text
        for rel, text in files.items()
        if rel in kept or text != unedited.get(rel) or not (directory / rel).exists()
    }


def _clashing(
    directory: Path,
    package: str,
    files: Files,
    *,
    marked: tuple[str, ...],
    pristine: Files | None = None,
) -> list[str]:
    """The files of ``files`` that exist with content neither what would be written nor
    their ``pristine`` scaffold (and are not ``marked``: changed at markers only), sorted:
    writing them would replace what someone else wrote."""
    kept = {m.format(package=package) for m in marked}
    unedited = pristine or {}
    clashing = []
    for rel, text in files.items():
        path = directory / rel
        if rel in kept or not path.exists() or text == unedited.get(rel):
            continue
        if path.read_text() not in (text, unedited.get(rel)):
            clashing.append(rel)
    return sorted(clashing)


def _api_files(
    directory: Path, project: Project, res: Resource, *, resource: bool, controller: bool
) -> Files:
    pkg, module, version = project.package, res.module_name, res.version
    files: Files = {}
    version_init = f"src/{pkg}/api/{version}/__init__.py"
    if not (directory / version_init).exists():
        files[version_init] = t.version_init(project, version)
    if resource:
        files[f"src/{pkg}/api/{version}/{module}.py"] = t.kind_module(project, res)
        sample = t.sample_file(res)
        files[sample] = t.sample(project, res)
        samples = directory / "config/samples/kustomization.yaml"
        text = samples.read_text() if samples.exists() else t.samples_kustomization()
        files["config/samples/kustomization.yaml"] = insert_at(
            text, t.MARK_SAMPLES, f"- {Path(sample).name}"
        )
    registry = f"src/{pkg}/controllers/__init__.py"
    text = (directory / registry).read_text()
    if resource:
        text = insert_at(text, t.MARK_KINDS, f'"{res.path}:{res.kind}",')
    if controller:
        files[f"src/{pkg}/controllers/{module}.py"] = t.controller_module(project, res)
        files[f"tests/test_{module}_desired.py"] = t.test_desired(project, res)
        files[f"tests/test_{module}_controller.py"] = t.test_controller(project, res)
        if res.namespaced:  # its sample and child in one namespace, as the template's
            files[f"tests/test_{module}_in_memory.py"] = t.test_in_memory(project, res)
        text = insert_at(text, t.MARK_CONTROLLERS, f'"{pkg}.controllers.{module}",')
    files[registry] = text
    return files


def create_webhook(
    directory: Path,
    *,
    group: str,
    version: str,
    kind: str,
    defaulting: bool,
    validation: bool,
    conversion: bool,
    spoke: tuple[str, ...] = (),
) -> list[Path]:
    """``--programmatic-validation`` and ``--defaulting`` (kubebuilder's CustomValidator
    and CustomDefaulter, in Python): per flag a module of the kind's webhook under
    ``src/<package>/webhooks/`` (a validating handler that refuses with the field named and
    warns, a defaulting one that fills a field and returns the object), its tests without a
    cluster, and the module's line at the webhooks marker of ``controllers/__init__.py``
    (``WEBHOOK_MODULES``: the operator serves them with the kind's controller; ``make
    manifests`` writes ``config/webhook``). What exists is kept as it is — running it again,
    or with the other flag, adds only what is missing. Refused, nothing written, for a kind
    the project does not declare, one without a controller, a version that is not its
    storage version, and a registry without the marker (the message says what to add).
    ``--conversion`` (:func:`create_conversion`): the conversion of a kind of several
    versions, served by the operator."""
    project = read(directory)
    if conversion:
        if defaulting or validation:
            raise Refused(
                "--conversion: alone (the defaulting and validation webhooks are the storage "
                "version's: run create webhook again for them)"
            )
        return create_conversion(directory, group=group, version=version, kind=kind, spoke=spoke)
    if spoke:
        raise Refused("--spoke: only with --conversion")
    if not (defaulting or validation):
        raise Refused("create webhook needs --defaulting and/or --programmatic-validation")
    flag = "--programmatic-validation" if validation else "--defaulting"
    full_group = f"{group}.{project.domain}" if group else project.domain
    res = project.find(full_group, version, kind)
    if res is None or not res.api:
        raise Refused(f"--kind {kind}: no API {full_group}/{version} {kind} in this project")
    hub = project.versions(full_group, kind)[0]
    if hub is not res:
        raise Refused(
            f"--version {version}: {kind}'s webhooks are served at its storage version, the "
            f"one its controller reconciles (--version {hub.version})"
        )
    if not res.controller:
        raise Refused(
            f"--kind {kind}: it has no controller in this project, and webhooks are served "
            f"with their kind's controller (create api --no-resource --controller first)"
        )
    pkg, module = project.package, res.module_name
    registry = f"src/{pkg}/controllers/__init__.py"
    text = (directory / registry).read_text()
    if t.MARK_WEBHOOKS not in text:
        raise Refused(
            f"{flag}: {registry} has no '{t.MARK_WEBHOOKS}' line (it was scaffolded before "
            "create webhook wrote Python handlers): add a WEBHOOK_MODULES list holding that "
            "line and make CONTROLLERS with_webhooks(<the registrations>, WEBHOOK_MODULES), "
            "from appstack.sdk, as appstack init writes it now; nothing was written"
        )
    wanted = {
        "validator": (validation, t.validator_module, t.test_validator),
        "defaulter": (defaulting, t.defaulter_module, t.test_defaulter),
    }
    files: Files = {}
    package_init = f"src/{pkg}/webhooks/__init__.py"
    if not (directory / package_init).exists():
        files[package_init] = t.webhooks_init(project)
    for role, (asked, handler, test) in wanted.items():
        if not asked:
            continue
        path = f"src/{pkg}/webhooks/{module}_{role}.py"
        for rel, text_of in ((path, handler), (f"tests/test_{module}_{role}.py", test)):
            files[rel] = text_of(project, res)
        text = insert_at(text, t.MARK_WEBHOOKS, f'"{pkg}.webhooks.{module}_{role}",')
    files[registry] = text
    # a file there already is kept as it is (yours, or the scaffold's): only what is missing
    files = {
        rel: body
        for rel, body in files.items()
        if rel == registry or not (directory / rel).exists()
    }
    hooks = res.webhooks or Webhooks()
    res.webhooks = replace(
        hooks,
        defaulting=defaulting or hooks.defaulting,
        validation=validation or hooks.validation,
    )
    files["PROJECT"] = project.to_text()
    return _write(directory, files)


def create_conversion(
    directory: Path, *, group: str, version: str, kind: str, spoke: tuple[str, ...] = ()
) -> list[Path]:
    """``create webhook --conversion --version HUB [--spoke V ...]``: the conversion of a
    kind of several versions. ``create api`` of a new version of a kind writes that
    version's conversion to and from the storage version (the hub) already, working, and
    its round-trip test; this command writes again what of it is missing — the round-trip
    test of each ``spoke`` (every version but the hub when none is named) — and records the
    conversion in ``PROJECT``. It never rewrites a version's module: refused, saying why,
    when ``version`` is not the hub, a spoke is not a version of the kind, the kind has one
    version, a spoke's module declares no ``to_hub``/``from_hub``, or nothing is missing."""
    project = read(directory)
    full_group = f"{group}.{project.domain}" if group else project.domain
    versions = project.versions(full_group, kind)
    if not versions:
        raise Refused(f"--kind {kind}: no API {full_group} {kind} in this project")
    hub, others = versions[0], [r.version for r in versions[1:]]
    if not others:
        raise Refused(
            f"--conversion: {kind} has one version ({hub.version}): add one with create api "
            f"--version <v2> (it writes the conversion); nothing was written"
        )
    if version != hub.version:
        raise Refused(
            f"--version {version}: {kind}'s storage version (the hub) is {hub.version}: "
            f"conversions are to and from it (--version {hub.version} --spoke {version})"
        )
    unknown = [v for v in spoke if v not in others]
    if unknown:
        raise Refused(
            f"--spoke {unknown[0]}: not a version of {kind} besides {hub.version} "
            f"({', '.join(others)})"
        )
    files: Files = {}
    for spoke_version in spoke or tuple(others):
        res = next(r for r in versions if r.version == spoke_version)
        module = directory / f"src/{project.package}/api/{spoke_version}/{res.module_name}.py"
        text = module.read_text() if module.is_file() else ""
        if "def to_hub(" not in text or "def from_hub(" not in text:
            raise Refused(
                f"--spoke {spoke_version}: {module.relative_to(directory)} declares no "
                "to_hub/from_hub, and the scaffolder never rewrites a version's module: "
                "write them by hand (docs/versions.md); nothing was written"
            )
        test = f"tests/test_{res.module_name}_{spoke_version}_conversion.py"
        if not (directory / test).exists():
            files[test] = t.test_conversion(project, res, hub)
    hooks = hub.webhooks or Webhooks()
    spokes = [*hooks.spoke, *(v for v in others if v not in hooks.spoke)]
    recorded = replace(hooks, conversion=True, spoke=spokes)
    if not files and recorded == hooks:
        raise Refused(
            f"--conversion: {kind}'s conversion ({hub.version} to and from "
            f"{', '.join(others)}) is scaffolded already, with its tests: nothing to add"
        )
    hub.webhooks = recorded
    files["PROJECT"] = project.to_text()
    return _write(directory, files)


def edit(
    directory: Path,
    *,
    namespaced: bool | None = None,
    enable_all_namespaces: bool | None = None,
    image: str | None = None,
) -> list[Path]:
    """Change project-wide settings (``--namespaced``: the operator watches only its own
    namespace, with a Role; ``--enable-all-namespaces``: the install acts in every
    namespace, not only in those labelled ``<domain>/enabled=true``) — in ``PROJECT`` and in
    the flags of ``config/manager/manager.yaml`` that they decide, the rest of that file
    kept; regenerate the manifests afterwards. ``--image``: the image
    ``config/manager/kustomization.yaml`` names (``kustomize edit set image``)."""
    from appstack.scaffold import manifests  # noqa: PLC0415 - imports the project's code

    if image is not None and (not image.strip() or any(c.isspace() for c in image)):
        raise Refused(f"--image {image!r}: an image reference, e.g. registry/name:tag")
    project = read(directory)
    if namespaced is not None:
        project.namespaced = namespaced
    if enable_all_namespaces is not None:
        project.enable_all_namespaces = enable_all_namespaces
    write(directory, project)
    changed = [directory / "PROJECT"]
    if namespaced is not None or enable_all_namespaces is not None:
        manager = manifests.set_args(directory)
        changed += [manager] if manager else []
    if image is not None:
        changed.append(manifests.set_image(directory, image))
    return changed


def generate_manifests(directory: Path) -> list[Path]:
    """``generate manifests`` (and operator-sdk's ``generate k8s``): the project's
    ``config/`` from its code (:func:`appstack.scaffold.manifests.generate`)."""
    from appstack.scaffold import manifests  # noqa: PLC0415 - imports the project's code

    return manifests.generate(directory)


def generate_installer(directory: Path, image: str, kubectl: str) -> str:
    """``generate installer``: the install of ``image`` as one YAML stream, kustomize's
    build of ``config/default`` by ``kubectl`` (:func:`appstack.scaffold.manifests.installer`);
    refused when ``kubectl`` is not there."""
    from appstack.scaffold import manifests  # noqa: PLC0415 - imports the project's code

    try:
        return manifests.installer(directory, image, kubectl)
    except FileNotFoundError:
        raise Refused(
            f"{kubectl} not found: the installer is kustomize's build of config/default "
            "(kubectl kustomize); install kubectl or set KUBECTL"
        ) from None


def generate_chart(
    directory: Path, image: str, kubectl: str, *, force: bool = False
) -> tuple[list[Path], list[Path]]:
    """``generate chart`` (``make helm``): the Helm chart in ``dist/chart`` from the
    project's install (:func:`appstack.scaffold.manifests.write_chart`): (written, kept —
    the files edited since they were generated); refused when ``kubectl`` is not there."""
    from appstack.scaffold import manifests  # noqa: PLC0415 - imports the project's code

    if image and any(c.isspace() for c in image):
        raise Refused(f"--image {image!r}: an image reference, e.g. registry/name:tag")
    try:
        return manifests.write_chart(directory, image, kubectl, force=force)
    except FileNotFoundError:
        raise Refused(
            f"{kubectl} not found: the chart is made from kustomize's build of config/default "
            "(kubectl kustomize); install kubectl or set KUBECTL"
        ) from None


def sample_objects(directory: Path) -> list[dict[str, object]]:
    """The project's samples (config/samples), as objects."""
    samples = directory / "config" / "samples"
    objects = []
    for path in sorted(samples.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            objects += [o for o in yaml.safe_load_all(path.read_text()) if o]
    return objects
