"""The files ``appstack init``, ``create api`` and ``create webhook`` write (pure: text from
a :class:`~appstack.scaffold.project.Project`), each from a template file beside this
module, package data loaded with :mod:`importlib.resources`: ``Makefile.tmpl`` for the
``Makefile``, ``src/{package}/controllers/kind.py.tmpl`` for a kind's controller...;
``fragments/`` holds the parts that some files have and others not (the license header,
the example of a cluster-scoped kind's controller, docstrings). A template is
filled with :meth:`str.format_map` from plain named fields (``{kind}``, ``{package}``: no
attribute or index lookups; ``{{``/``}}`` for a literal brace), so the generated Python,
YAML and Makefile keep their braces. A thin scaffold — what the operator does lives in
appstack's SDK, imported by the project, not in copied text: a kind's module declares the
kind, a controller module says what the kind makes (a pure function) and the status it
writes, ``__main__`` is one call into the SDK's assembly.

Every template names the scaffold markers it keeps (``# +appstack:scaffold:...``): later
commands insert only there (:func:`appstack.scaffold.commands.insert_at`), so the files a
user edited stay as they are. Used by :mod:`appstack.scaffold.commands`.
"""

from __future__ import annotations

import datetime
import textwrap
from functools import cache
from importlib.resources import files

from appstack.scaffold.project import Project, Resource
from appstack.sdk import OperatorIdentity

MARK_CONTROLLERS = "# +appstack:scaffold:controllers"
MARK_KINDS = "# +appstack:scaffold:kinds"
MARK_SAMPLES = "# +appstack:scaffold:samples"
MARK_VERSIONS = "# +appstack:scaffold:versions"
MARK_WEBHOOKS = "# +appstack:scaffold:webhooks"

Fields = dict[str, str]


@cache
def template(name: str) -> str:
    """The text of the template file ``name`` (a path under this package, ``/``-separated)."""
    found = files(__name__)
    for part in name.split("/"):
        found = found / part
    return found.read_text(encoding="utf-8")


def render(name: str, fields: Fields) -> str:
    """The template ``name`` filled with ``fields`` (more fields than it uses are fine)."""
    return template(name).format_map(fields)


def _paragraph(name: str, fields: Fields, indent: str = "") -> str:
    """A fragment that is one paragraph (a docstring with its quotes), filled, then wrapped
    to the generated project's lines."""
    return textwrap.fill(
        render(name, fields).rstrip("\n"),
        width=92,
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
    )


def header(project: Project, comment: str = "#") -> str:
    """The license header of a generated source file (none with ``--license none``)."""
    if project.license == "none":
        return ""
    owner = project.owner or "The " + project.project_name + " authors"
    year = str(datetime.date.today().year)
    fields = {"year": year, "owner": owner}
    lines = [
        line.format_map(fields) for line in template("fragments/license_header.tmpl").splitlines()
    ]
    return "".join(f"{comment} {line}".rstrip() + "\n" for line in lines) + "\n"


def _identity(project: Project) -> OperatorIdentity:
    """The identity ``identity.py`` declares."""
    return OperatorIdentity(project=project.project_name, domain=project.domain)


def project_fields(project: Project) -> Fields:
    """The fields every template may use: the project's names, its license header."""
    enabled, privileged, may_write = _identity(project).opt_in_labels
    return {
        "header": header(project),
        "project_name": project.project_name,
        "package": project.package,
        "domain": project.domain,
        "enabled": enabled,
        "privileged": privileged,
        "may_write": may_write,
        "mark_controllers": MARK_CONTROLLERS,
        "mark_kinds": MARK_KINDS,
        "mark_samples": MARK_SAMPLES,
        "mark_versions": MARK_VERSIONS,
        "mark_webhooks": MARK_WEBHOOKS,
    }


def resource_fields(project: Project, resource: Resource) -> Fields:
    """The fields of a kind's templates: :func:`project_fields` and the kind's names."""
    return {
        **project_fields(project),
        "kind": resource.kind,
        "kind_lower": resource.kind.lower(),
        "module": resource.module_name,
        "group": resource.full_group,
        "version": resource.version,
        "plural": resource.plural,
        "api_version": _api_version(resource),
        # where an own kind's model is (api/<version>/<module>.py)
        "resource_path": f"{project.package}.api.{resource.version}.{resource.module_name}",
        "sample": sample_file(resource),
        "sample_name": f"{resource.kind.lower()}-sample",
    }


# ------------------------------------------------------------------------------- init
def pyproject(project: Project) -> str:
    return render("pyproject.toml.tmpl", project_fields(project))


def makefile(project: Project, appstack_source: str) -> str:
    return render("Makefile.tmpl", {**project_fields(project), "appstack_source": appstack_source})


def dockerfile(project: Project) -> str:
    return render("Dockerfile.tmpl", project_fields(project))


def gitignore() -> str:
    return render(".gitignore.tmpl", {})


def dockerignore() -> str:
    return render(".dockerignore.tmpl", {})


def readme(project: Project) -> str:
    return render("README.md.tmpl", project_fields(project))


def package_init(project: Project) -> str:
    return render("src/{package}/__init__.py.tmpl", project_fields(project))


def package_main(project: Project) -> str:
    return render("src/{package}/__main__.py.tmpl", project_fields(project))


def identity(project: Project) -> str:
    return render("src/{package}/identity.py.tmpl", project_fields(project))


def api_init(project: Project) -> str:
    return render("src/{package}/api/__init__.py.tmpl", project_fields(project))


def version_init(project: Project, version: str) -> str:
    fields = {**project_fields(project), "version": version}
    return render("src/{package}/api/{version}/__init__.py.tmpl", fields)


def controllers_init(project: Project) -> str:
    return render("src/{package}/controllers/__init__.py.tmpl", project_fields(project))


# ---------------------------------------------------------------------------- create api
def kind_module(project: Project, resource: Resource) -> str:
    scope = "" if resource.namespaced else "\n    namespaced=False,"
    fields = {**resource_fields(project, resource), "scope": scope}
    return render("src/{package}/api/{version}/kind.py.tmpl", fields)


def _spoke_fields(project: Project, spoke: Resource, hub: Resource) -> Fields:
    """The fields of a version added to a kind (``spoke``) whose storage version is ``hub``."""
    return {
        **resource_fields(project, spoke),
        "scope": "" if spoke.namespaced else "\n    namespaced=False,",
        "hub_version": hub.version,
        "hub_path": hub.path,
        "hub_class": f"{hub.kind}{hub.version.capitalize()}",
        "hub_sample": sample_file(hub).rpartition("/")[2],
        "spoke_path": spoke.path,
        "spoke_sample": sample_file(spoke).rpartition("/")[2],
        "kind_constant": spoke.kind.upper(),
        "sample_name": f"{spoke.kind.lower()}-{spoke.version}-sample",
    }


def spoke_module(project: Project, spoke: Resource, hub: Resource) -> str:
    """The module of a version added to a kind: its model, its conversion to and from the
    ``hub`` (field by field, lossless), and the kind's versions declared."""
    fields = _spoke_fields(project, spoke, hub)
    fields["docstring"] = _paragraph("fragments/spoke_kind_docstring.tmpl", fields)
    return render("src/{package}/api/{version}/spoke_kind.py.tmpl", fields)


def storage_module(project: Project, hub: Resource, old: Resource) -> str:
    """The module of a version added to a kind as its storage version (``create api
    --storage``): its model, the kind's first version ``old`` (kept as it is) converted to
    and from it (field by field, lossless, deprecated), and the kind's versions declared."""
    fields = {
        **resource_fields(project, hub),
        "scope": "" if hub.namespaced else "\n    namespaced=False,",
        "old_version": old.version,
        "old_path": old.path,
        "old_class": f"{old.kind}{old.version.capitalize()}",
        "kind_constant": hub.kind.upper(),
    }
    fields["docstring"] = _paragraph("fragments/storage_kind_docstring.tmpl", fields)
    return render("src/{package}/api/{version}/storage_kind.py.tmpl", fields)


def spoke_sample(project: Project, spoke: Resource, hub: Resource) -> str:
    """The sample of a version added to a kind (named apart from the first version's)."""
    return render("config/samples/sample.yaml.tmpl", _spoke_fields(project, spoke, hub))


def test_conversion(project: Project, spoke: Resource, hub: Resource) -> str:
    """The round trips of a version added to a kind, on the samples, without a cluster."""
    return _conversion_test(project, spoke, hub, spoke.path)


def storage_test_conversion(project: Project, old: Resource, hub: Resource) -> str:
    """The round trips of a kind's first version (``old``) and the version added as its
    storage version (``create api --storage``), whose module declares the versions."""
    return _conversion_test(project, old, hub, hub.path)


def _conversion_test(project: Project, spoke: Resource, hub: Resource, versions: str) -> str:
    fields = _spoke_fields(project, spoke, hub)
    fields["versions_path"] = versions
    fields["docstring"] = _paragraph("fragments/conversion_test_docstring.tmpl", fields)
    return render("tests/test_kind_conversion.py.tmpl", fields)


def api_init_before_versions(project: Project) -> str:
    """``api/__init__.py`` as projects scaffolded before versions could be added have it
    (no versions marker): still that, it is the scaffolder's to rewrite."""
    return (
        f'{header(project)}"""The {project.project_name} operator\'s kinds, one module per kind '
        'under its version."""\n'
    )


def controller_module(project: Project, resource: Resource) -> str:
    return render("src/{package}/controllers/kind.py.tmpl", resource_fields(project, resource))


def _api_version(resource: Resource) -> str:
    group = resource.full_group
    return f"{group}/{resource.version}" if group else resource.version


def _call(target: str, function: str, args: list[str]) -> str:
    """``target = function(args)`` as ruff format writes it (the project's ``make lint``)."""
    line = f"{target} = {function}({', '.join(args)})"
    if len(line) <= 100:
        return line
    inner = f"    {', '.join(args)}"
    if len(inner) <= 100:
        return f"{target} = {function}(\n{inner}\n)"
    return f"{target} = {function}(\n" + "".join(f"    {arg},\n" for arg in args) + ")"


def object_controller_module(project: Project, resource: Resource) -> str:
    """The controller of a kind the project does not declare (``create api --group core
    --no-resource``, ``--external-api-domain``): an ``ObjectReconciler`` of it."""
    kind = resource.kind
    fields = resource_fields(project, resource)
    if resource.external:
        fields["whose"] = (
            f"{resource.full_group}'s: another project's CRD (until it is installed, the "
            "operator waits at start, not ready)"
        )
    else:
        fields["whose"] = "Kubernetes' own: every cluster serves it"
    args = [
        f'"{resource.full_group}"',
        f'"{resource.version}"',
        f'"{kind}"',
        f'"{resource.plural}"',
    ]
    fields["about"] = _paragraph("fragments/object_kind_module_docstring.tmpl", fields)
    fields["primary"] = _call(
        "PRIMARY", "Resource", [*args, *([] if resource.namespaced else ["namespaced=False"])]
    )
    fields["registration"] = _call(
        "CONTROLLER",
        "Registration",
        [f'name="{resource.module_name}"', f"reconciler={kind}Reconciler"],
    )
    if resource.namespaced:
        fields["identity"] = f"\nfrom {project.package}.identity import IDENTITY\n"
        fields["docstring"] = _paragraph(
            "fragments/object_kind_reconciler_docstring.tmpl", fields, "    "
        )
        fields["example"] = render("fragments/object_kind_example_namespaced.tmpl", fields)
    else:
        fields["identity"] = ""
        fields["example"] = render("fragments/object_kind_example_cluster_scoped.tmpl", fields)
    return render("src/{package}/controllers/object_kind.py.tmpl", fields)


def sample(project: Project, resource: Resource) -> str:
    return render("config/samples/sample.yaml.tmpl", resource_fields(project, resource))


def sample_file(resource: Resource) -> str:
    """kubebuilder's sample name: ``<group>_<version>_<kind>.yaml``."""
    group = resource.group or resource.domain.split(".")[0]
    return f"config/samples/{group}_{resource.version}_{resource.kind.lower()}.yaml"


def samples_kustomization() -> str:
    return render("config/samples/kustomization.yaml.tmpl", {"mark_samples": MARK_SAMPLES})


# ---------------------------------------------------------------------------------- tests
def test_conftest(project: Project) -> str:
    return render("tests/conftest.py.tmpl", project_fields(project))


def test_desired(project: Project, resource: Resource) -> str:
    return render("tests/test_kind_desired.py.tmpl", resource_fields(project, resource))


def test_controller(project: Project, resource: Resource) -> str:
    return render("tests/test_kind_controller.py.tmpl", resource_fields(project, resource))


def test_in_memory(project: Project, resource: Resource) -> str:
    return render("tests/test_kind_in_memory.py.tmpl", resource_fields(project, resource))


def test_object_in_memory(project: Project, resource: Resource) -> str:
    """The in-memory test of a controller of a kind the project does not declare."""
    fields = resource_fields(project, resource)
    fields["docstring"] = _paragraph("fragments/object_kind_in_memory_docstring.tmpl", fields)
    return render("tests/test_object_kind_in_memory.py.tmpl", fields)


def test_config(project: Project) -> str:
    return render("tests/test_config.py.tmpl", project_fields(project))


def test_e2e(project: Project) -> str:
    return render("tests/e2e/test_e2e.py.tmpl", project_fields(project))


# ------------------------------------------------------------------------- create webhook
def webhooks_init(project: Project) -> str:
    """The package of the kinds' admission webhooks (``src/<package>/webhooks/``)."""
    return render("src/{package}/webhooks/__init__.py.tmpl", project_fields(project))


def _webhook_fields(project: Project, resource: Resource) -> Fields:
    return {**resource_fields(project, resource), "resource_path": resource.path}


def validator_module(project: Project, resource: Resource) -> str:
    """A kind's validating webhook (``create webhook --programmatic-validation``): a
    handler that refuses with the field named, and warns."""
    return render(
        "src/{package}/webhooks/kind_validator.py.tmpl", _webhook_fields(project, resource)
    )


def defaulter_module(project: Project, resource: Resource) -> str:
    """A kind's defaulting webhook (``create webhook --defaulting``): a handler that fills a
    field and returns the object."""
    return render(
        "src/{package}/webhooks/kind_defaulter.py.tmpl", _webhook_fields(project, resource)
    )


def test_validator(project: Project, resource: Resource) -> str:
    """The validating webhook's tests, without a cluster (``appstack.sdk.webhook_review``)."""
    return render("tests/test_kind_validator.py.tmpl", _webhook_fields(project, resource))


def test_defaulter(project: Project, resource: Resource) -> str:
    """The defaulting webhook's tests, without a cluster (``appstack.sdk.webhook_review``)."""
    return render("tests/test_kind_defaulter.py.tmpl", _webhook_fields(project, resource))
