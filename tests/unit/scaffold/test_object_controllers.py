"""``appstack create api`` of a kind the project does not declare (issue #48, "create api
for any kind"), through the CLI entry point and without a cluster: a built-in group (``core``
and the others, used as they are, never suffixed with the project's domain) or another
project's CRD (``--external-api-domain``) gets an ``ObjectReconciler`` module registered at
the controllers' marker, its in-memory test and a ``PROJECT`` entry with ``core: true`` or
``external: true``; ``make manifests`` derives its RBAC; ``--resource``, a kind or version
the built-in group does not serve and a second run are refused in one line, nothing
written; the generated project's own unit tests (``make test-unit``'s pytest run) pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from appstack.cli import main
from appstack.scaffold import manifests
from appstack.scaffold.project import Project, read
from tests.support.admission import namespace_object, refusals
from tests.support.files import file_digests

CREATE = ["create", "api", "--version", "v1"]


def _run(project: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*CREATE, *args, "--directory", str(project)])


def _snapshot(directory: Path) -> dict[str, str]:
    return file_digests(directory)


def _entry(project: Path, kind: str) -> dict[str, object]:
    data = yaml.safe_load((project / "PROJECT").read_text())
    (entry,) = [r for r in data["resources"] if r["kind"] == kind]
    return dict(entry)


def _manager_rules(project: Path) -> list[dict[str, list[str]]]:
    return list(yaml.safe_load((project / "config/rbac/role.yaml").read_text())["rules"])


def _verbs(project: Path, group: str, plural: str) -> set[str]:
    return {
        verb
        for rule in _manager_rules(project)
        if group in rule.get("apiGroups", []) and plural in rule.get("resources", [])
        for verb in rule["verbs"]
    }


def test_a_secret_controller_is_an_object_reconciler_of_the_core_group(project: Path) -> None:
    result = _run(project, "--group", "core", "--kind", "Secret", "--controller", "--no-resource")
    assert result.exit_code == 0, result.output
    written = {line.removeprefix("wrote ") for line in result.stdout.splitlines()}
    assert {
        "src/guestbook/controllers/secret.py",
        "src/guestbook/controllers/__init__.py",
        "tests/test_secret_in_memory.py",
        "PROJECT",
    } <= written
    assert not (project / "src/guestbook/api/v1").exists()  # no model, no CRD
    assert not list((project / "config/samples").glob("*secret*"))
    # recorded as kubebuilder records a core type: core: true, the group as it is, no domain
    assert _entry(project, "Secret") == {
        "controller": True,
        "core": True,
        "group": "core",
        "kind": "Secret",
        "path": "guestbook.controllers.secret",
        "version": "v1",
    }
    text = (project / "PROJECT").read_text()
    assert Project.from_text(text).to_text() == text
    registry = (project / "src/guestbook/controllers/__init__.py").read_text()
    assert '"guestbook.controllers.secret",' in registry
    # registered as every controller is; of the core group "" (never core.<domain>)
    loaded = manifests.load(project)
    (controller,) = loaded.controllers
    assert not controller.custom
    assert (controller.primary.group, controller.primary.plural) == ("", "secrets")
    assert loaded.kinds == []
    manifests.generate(project)
    assert _verbs(project, "", "secrets") == {"get", "list", "watch"}
    assert not list((project / "config/crd").rglob("*secrets*"))
    assert manifests.stale(project) == []


def test_a_built_in_group_with_a_resource_is_the_projects_own_group_as_in_kubebuilder(
    project: Path,
) -> None:
    """kubebuilder's rule: ``--group batch --kind CronJob`` with a resource (the default) is
    the project's own ``batch.<domain>`` CronJob (its CronJob tutorial); only
    ``--no-resource`` makes a built-in group Kubernetes' own — and then not for a kind the
    project declares in that group already (its controller is added instead)."""
    assert _run(project, "--group", "batch", "--kind", "CronJob").exit_code == 0
    own = _entry(project, "CronJob")
    assert own["group"] == "batch"
    assert own["domain"] == "tutorial.kubebuilder.io"
    assert "core" not in own
    assert (project / "src/guestbook/api/v1/cronjob.py").is_file()
    assert _run(project, "--group", "core", "--kind", "ConfigMap", "--no-resource").exit_code == 0
    assert "core" in _entry(project, "ConfigMap")


@pytest.mark.parametrize(
    ("group", "kind", "api_group", "recorded"),
    [
        ("apps", "Deployment", "apps", ("apps", None)),
        ("batch", "CronJob", "batch", ("batch", None)),
        ("policy", "PodDisruptionBudget", "policy", ("policy", None)),
        ("networking.k8s.io", "Ingress", "networking.k8s.io", ("networking", "k8s.io")),
        ("networking", "NetworkPolicy", "networking.k8s.io", ("networking", "k8s.io")),
        (
            "rbac.authorization.k8s.io",
            "Role",
            "rbac.authorization.k8s.io",
            ("rbac.authorization", "k8s.io"),
        ),
    ],
)
def test_a_built_in_group_is_used_as_it_is(
    project: Path, group: str, kind: str, api_group: str, recorded: tuple[str, str | None]
) -> None:
    result = _run(project, "--group", group, "--kind", kind, "--no-resource")
    assert result.exit_code == 0, result.output
    entry = _entry(project, kind)
    assert (entry["group"], entry.get("domain"), entry["core"]) == (*recorded, True)
    (controller,) = manifests.load(project).controllers
    assert controller.primary.group == api_group
    assert controller.primary.api_version == f"{api_group}/v1"
    plural = controller.primary.plural
    assert _verbs_of(project, api_group, plural) == {"get", "list", "watch"}


def _verbs_of(project: Path, group: str, plural: str) -> set[str]:
    manifests.generate(project)
    return _verbs(project, group, plural)


def test_plurals_and_scopes_of_known_kinds_and_the_plural_option(project: Path) -> None:
    for args in (
        ["--group", "core", "--kind", "Endpoints", "--no-resource"],
        ["--group", "core", "--kind", "Node", "--no-resource"],
        [
            "--group",
            "networking.k8s.io",
            "--kind",
            "IngressClass",
            "--cluster-scoped",
            "--no-resource",
        ],
        [
            "--group",
            "autoscaling",
            "--kind",
            "HorizontalPodAutoscaler",
            "--plural",
            "hpas",
            "--no-resource",
        ],
    ):
        result = _run(project, *args)
        assert result.exit_code == 0, result.output
    primaries = {c.primary.kind: c.primary for c in manifests.load(project).controllers}
    assert primaries["Endpoints"].plural == "endpoints"  # the table's, not "endpointses"
    assert _entry(project, "Endpoints")["plural"] == "endpoints"
    assert (primaries["Node"].plural, primaries["Node"].namespaced) == ("nodes", False)
    assert not primaries["IngressClass"].namespaced
    assert primaries["HorizontalPodAutoscaler"].plural == "hpas"
    # a cluster-scoped kind: no in-memory test (its Event would have no namespace)
    assert not (project / "tests/test_node_in_memory.py").exists()
    assert (project / "tests/test_endpoints_in_memory.py").is_file()
    assert [r.kind for r in read(project).resources] == [
        "Endpoints",
        "Node",
        "IngressClass",
        "HorizontalPodAutoscaler",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--group", "core", "--kind", "Guestbook", "--no-resource"],
            "--kind Guestbook: core/v1 serves no Guestbook",
        ),
        (
            ["--group", "apps", "--kind", "CronJob", "--no-resource"],
            "--kind CronJob: apps/v1 serves no CronJob",
        ),
        (
            ["--group", "batch", "--kind", "Job", "--version", "v2", "--no-resource"],
            "--version v2: the batch API group serves v1",
        ),
        (
            ["--group", "core", "--kind", "Secret", "--plural", "Secrets", "--no-resource"],
            "--plural 'Secrets'",
        ),
        (
            ["--group", "core", "--kind", "Secret", "--plural", "secretz", "--no-resource"],
            "--plural secretz: Secret is served as secrets",
        ),
        (
            ["--group", "webapp", "--kind", "Thing", "--external-api-domain", "Not_A.Domain"],
            "--external-api-domain 'Not_A.Domain'",
        ),
        (
            ["--group", "webapp", "--kind", "Thing",
             "--external-api-domain", "tutorial.kubebuilder.io"],
            "is this project's own group",
        ),
        (
            ["--group", "cert-manager", "--kind", "Certificate", "--external-api-domain", "io",
             "--resource"],
            "--resource: cert-manager.io is another project's API",
        ),
    ],
)  # fmt: skip
def test_what_a_foreign_group_does_not_serve_is_refused_in_one_line(
    project: Path, args: list[str], message: str
) -> None:
    before = _snapshot(project)
    result = _run(project, *args)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert message in line, line
    assert "Traceback" not in result.output
    assert _snapshot(project) == before


def test_another_projects_crd_gets_a_controller_and_its_rbac(project: Path) -> None:
    result = _run(
        project,
        "--group",
        "cert-manager",
        "--kind",
        "Certificate",
        "--controller",
        "--no-resource",
        "--external-api-domain",
        "io",
    )
    assert result.exit_code == 0, result.output
    assert _entry(project, "Certificate") == {
        "controller": True,
        "domain": "io",
        "external": True,
        "group": "cert-manager",
        "kind": "Certificate",
        "path": "guestbook.controllers.certificate",
        "version": "v1",
    }
    (controller,) = manifests.load(project).controllers
    # not the project's kind: the operator waits (not ready) until its CRD is served
    assert not controller.custom
    assert controller.primary.api_version == "cert-manager.io/v1"
    assert controller.primary.plural == "certificates"
    assert "waits at start, not ready" in " ".join(
        (project / "src/guestbook/controllers/certificate.py").read_text().split()
    )
    manifests.generate(project)
    assert _verbs(project, "cert-manager.io", "certificates") == {"get", "list", "watch"}
    assert not list((project / "config/crd").rglob("*certificates*"))


def test_running_it_again_keeps_the_edits_and_force_lists_them(project: Path) -> None:
    args = ["--group", "core", "--kind", "Secret", "--no-resource"]
    assert _run(project, *args).exit_code == 0
    controller = project / "src/guestbook/controllers/secret.py"
    controller.write_text(controller.read_text() + "# my own reconcile step\n")
    before = _snapshot(project)
    again = _run(project, *args)
    assert again.exit_code == 2
    assert again.stderr == (
        "Error: --kind Secret: its controller already exists (--force rewrites it)\n"
    )
    assert _snapshot(project) == before
    # a file in the way of a new one is never overwritten either
    mine = project / "tests/test_configmap_in_memory.py"
    mine.write_text("# mine\n")
    before = _snapshot(project)
    clash = _run(project, "--group", "core", "--kind", "ConfigMap")
    assert clash.exit_code == 2
    assert "tests/test_configmap_in_memory.py already exists" in clash.stderr
    assert _snapshot(project) == before
    forced = _run(project, *args, "--force")
    assert forced.exit_code == 0, forced.output
    assert forced.stderr.splitlines()[1:] == ["  src/guestbook/controllers/secret.py"]
    assert "# my own reconcile step" not in controller.read_text()
    assert [r.kind for r in read(project).resources] == ["Secret"]
    registry = (project / "src/guestbook/controllers/__init__.py").read_text()
    assert registry.count('"guestbook.controllers.secret",') == 1


def test_a_kind_of_the_projects_own_of_the_same_name_gets_modules_of_its_own(
    project: Path,
) -> None:
    assert _run(project, "--group", "webapp", "--kind", "Secret").exit_code == 0
    assert _run(project, "--group", "core", "--kind", "Secret", "--no-resource").exit_code == 0
    assert (project / "src/guestbook/controllers/secret.py").is_file()
    assert (project / "src/guestbook/controllers/core_secret.py").is_file()
    assert (project / "tests/test_core_secret_in_memory.py").is_file()
    groups = sorted(c.primary.group for c in manifests.load(project).controllers)
    assert groups == ["", "webapp.tutorial.kubebuilder.io"]


def test_the_generated_projects_unit_tests_pass(project: Path) -> None:
    """``make test-unit``'s pytest run (its venv step aside) in a project with its own kind,
    a Secret controller and a cert-manager Certificate controller: the generated in-memory
    tests run green, importing the project from its ``src`` (``pythonpath`` in its
    pyproject.toml), whatever else this environment has installed."""
    for args in (
        ["--group", "webapp", "--kind", "Guestbook"],
        ["--group", "core", "--kind", "Secret", "--controller", "--no-resource"],
        ["--group", "cert-manager", "--kind", "Certificate", "--external-api-domain", "io"],
    ):
        result = _run(project, *args)
        assert result.exit_code == 0, result.output
    assert 'pythonpath = ["src"]' in (project / "pyproject.toml").read_text()
    manifests.generate(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHONPATH"))}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests",
            "--ignore=tests/e2e",
            "--ignore-glob=tests/test_*_controller.py",
            "-q",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "6 passed" in proc.stdout, proc.stdout[-2000:]


def test_the_example_event_passes_the_generated_policies_where_enabled(project: Path) -> None:
    """The Secret controller's example Event about a Secret: admitted by the generated
    ``operator-events`` policy (evaluated client-side) in an enabled namespace only."""
    assert _run(project, "--group", "core", "--kind", "Secret", "--no-resource").exit_code == 0
    manifests.generate(project)
    path = project / "config/admission/operator_events_policy.yaml"
    (policy,) = [
        o for o in yaml.safe_load_all(path.read_text()) if o["kind"] == "ValidatingAdmissionPolicy"
    ]
    event: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "secret-sample.1", "namespace": "shop"},
        "reason": "Observed",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Secret",
            "name": "secret-sample",
            "namespace": "shop",
            "uid": "s-1",
        },
    }
    enabled = namespace_object("shop", label="tutorial.kubebuilder.io/enabled")
    assert refusals(policy, "CREATE", event, namespace=enabled) == []
    closed = namespace_object("shop", enabled=False)
    assert refusals(policy, "CREATE", event, namespace=closed) != []
    # about a kind it does not reconcile: refused
    other = {**event, "regarding": {**event["regarding"], "kind": "ConfigMap"}}
    assert refusals(policy, "CREATE", other, namespace=enabled) != []
