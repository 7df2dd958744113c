"""The scaffolder's commands (appstack/scaffold/commands.py) without a cluster: what init and
create api write, every refusal naming its flag with nothing written, re-running that
leaves a user's edits byte for byte, --force, the webhook markers, and kubebuilder's PROJECT
schema read back."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from appstack.scaffold import commands, manifests
from appstack.scaffold.project import Project, Refused, default_plural, read
from appstack.sdk import config
from tests.support.files import file_digests


def config_files_of(directory: Path) -> list[str]:
    return list(config.config_files(manifests.load(directory)))


def _snapshot(directory: Path) -> dict[str, str]:
    return file_digests(directory)


def test_init_writes_a_project_in_kubebuilders_layout(project: Path) -> None:
    written = set(_snapshot(project))
    for path in (
        "PROJECT",
        "pyproject.toml",
        "Makefile",
        "Dockerfile",
        ".gitignore",
        ".dockerignore",
        "README.md",
        "src/guestbook/__main__.py",
        "src/guestbook/identity.py",
        "src/guestbook/controllers/__init__.py",
        "config/default/kustomization.yaml",
        "config/manager/manager.yaml",
        "config/rbac/role.yaml",
        "config/rbac/leader_election_role.yaml",
        "config/rbac/metrics_auth_role.yaml",
        "config/prometheus/monitor.yaml",
        "config/samples/kustomization.yaml",
        "tests/test_config.py",
        "tests/e2e/test_e2e.py",
    ):
        assert path in written, path
    data = yaml.safe_load((project / "PROJECT").read_text())
    assert data["version"] == "3"
    assert data["domain"] == "tutorial.kubebuilder.io"
    assert data["repo"] == "tutorial.kubebuilder.io/project"
    assert data["projectName"] == "guestbook"
    assert data["layout"] == ["python.appstack.dev/v1"]
    default = yaml.safe_load((project / "config/default/kustomization.yaml").read_text())
    assert default["namespace"] == "guestbook-system"
    assert default["namePrefix"] == "guestbook-"
    makefile = (project / "Makefile").read_text()
    for target in (
        "help",
        "manifests",
        "generate",
        "fmt",
        "vet",
        "lint",
        "lint-fix",
        "test",
        "test-e2e",
        "setup-test-e2e",
        "cleanup-test-e2e",
        "build",
        "run",
        "docker-build",
        "docker-push",
        "build-installer",
        "helm",
        "install",
        "uninstall",
        "deploy",
        "undeploy",
        "image-oci",
    ):
        assert f"\n{target}:" in makefile, target
        assert f".PHONY: {target}" in makefile


def test_init_refuses_and_writes_nothing(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(Refused, match="not empty"):
        commands.init(busy, domain="example.com", repo="x/y")
    assert _snapshot(busy) == {"notes.txt": hashlib.sha256(b"mine").hexdigest()}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / ".git").mkdir()  # a git repository is fine
    for kwargs, flag in (
        ({"domain": "Example.COM", "repo": "x/y"}, "--domain"),
        ({"domain": "example.com", "repo": ""}, "--repo"),
        ({"domain": "example.com", "repo": "x/y", "project_name": "My_Op"}, "--project-name"),
        ({"domain": "example.com", "repo": "x/y", "license": "gpl"}, "--license"),
    ):
        with pytest.raises(Refused, match=flag):
            commands.init(fresh, **kwargs)  # type: ignore[arg-type]
        assert _snapshot(fresh) == {}
    repo_root = Path(__file__).resolve().parents[4]
    with pytest.raises(Refused, match=r"appstack's own checkout|not empty|PROJECT"):
        commands.init(repo_root, domain="example.com", repo="x/y")


def test_seed_003s_init_needs_no_repo(tmp_path: Path) -> None:
    """Seed 003 types ``kubebuilder init --domain com.d3os`` (no ``--repo``: kubebuilder
    takes the Go module; a Python project has none) and then its ``create api``: both as
    typed; PROJECT records no repo, and records one when given."""
    from click.testing import CliRunner  # noqa: PLC0415

    from appstack.cli import main  # noqa: PLC0415

    project = tmp_path / "d3os-operator"
    runner = CliRunner()
    inited = runner.invoke(main, ["init", "--domain", "com.d3os", "--directory", str(project)])
    assert inited.exit_code == 0, inited.output
    api = ["api", "--group", "d3os-product", "--version", "v1", "--kind", "DataService"]
    created = runner.invoke(main, ["create", *api, "--directory", str(project)])
    assert created.exit_code == 0, created.output
    data = yaml.safe_load((project / "PROJECT").read_text())
    assert "repo" not in data
    assert data["projectName"] == "d3os-operator"
    (resource,) = read(project).resources
    assert (resource.group, resource.version, resource.kind) == (
        "d3os-product",
        "v1",
        "DataService",
    )
    named = tmp_path / "first-operator"
    commands.init(named, domain="example.com", repo="github.com/njlkj/first-operator")
    assert (
        yaml.safe_load((named / "PROJECT").read_text())["repo"] == "github.com/njlkj/first-operator"
    )


def test_init_refuses_a_project(project: Path) -> None:
    before = _snapshot(project)
    with pytest.raises(Refused, match="already has a PROJECT"):
        commands.init(project, domain="example.com", repo="x/y")
    assert _snapshot(project) == before


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"group": "webapp", "version": "v1", "kind": "guestbook"}, "--kind"),
        ({"group": "webapp", "version": "1", "kind": "Guestbook"}, "--version"),
        ({"group": "webapp", "version": "v1beta", "kind": "Guestbook"}, "--version"),
        ({"group": "web.app", "version": "v1", "kind": "Guestbook"}, "--group"),
        ({"group": "WebApp", "version": "v1", "kind": "Guestbook"}, "--group"),
        ({"group": "webapp", "version": "v1", "kind": "Guestbook", "plural": "Books"}, "--plural"),
        (
            {"group": "webapp", "version": "v1", "kind": "Guestbook", "resource": False},
            "--no-resource",
        ),
    ],
)
def test_bad_input_to_create_api_names_the_flag_and_writes_nothing(
    project: Path, kwargs: dict[str, object], flag: str
) -> None:
    before = _snapshot(project)
    with pytest.raises(Refused, match=flag):
        commands.create_api(project, **kwargs)  # type: ignore[arg-type]
    assert _snapshot(project) == before


def test_versions_kubernetes_accepts(project: Path) -> None:
    for n, version in enumerate(("v1", "v1alpha1", "v2beta3", "v10")):
        commands.create_api(project, group="webapp", version=version, kind=f"Kind{n}")
    assert [r.version for r in read(project).resources] == ["v1", "v1alpha1", "v2beta3", "v10"]


def test_a_second_kind_leaves_edited_files_as_they_are(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    kind = project / "src/guestbook/api/v1/guestbook.py"
    controller = project / "src/guestbook/controllers/guestbook.py"
    kind.write_text(
        kind.read_text().replace("foo: str | None", "size: int = 1\n    foo: str | None")
    )
    controller.write_text(controller.read_text() + "\n# my own note\n")
    edited = {p: p.read_bytes() for p in (kind, controller)}
    commands.create_api(project, group="crew", version="v1", kind="Captain")
    assert {p: p.read_bytes() for p in edited} == edited
    registry = (project / "src/guestbook/controllers/__init__.py").read_text()
    assert '"guestbook.controllers.guestbook",' in registry
    assert '"guestbook.controllers.captain",' in registry
    assert '"guestbook.api.v1.captain:Captain",' in registry
    # the same kind again: refused, unless --force (which rewrites only its own files)
    with pytest.raises(Refused, match="--force"):
        commands.create_api(project, group="crew", version="v1", kind="Captain")
    captain = project / "src/guestbook/controllers/captain.py"
    captain.write_text("# broken by hand\n")
    commands.create_api(project, group="crew", version="v1", kind="Captain", force=True)
    assert captain.read_text() != "# broken by hand\n"
    assert {p: p.read_bytes() for p in edited} == edited
    assert len(read(project).resources) == 2
    # the same kind name in another group (kubebuilder's multigroup): modules of its own
    commands.create_api(project, group="other", version="v1", kind="Captain")
    assert {p: p.read_bytes() for p in edited} == edited
    assert captain.read_text() != "# broken by hand\n"  # the crew Captain's, untouched
    for path in (
        "src/guestbook/api/v1/other_captain.py",
        "src/guestbook/controllers/other_captain.py",
        "tests/test_other_captain_desired.py",
        "config/samples/other_v1_captain.yaml",
    ):
        assert (project / path).is_file(), path
    registry = (project / "src/guestbook/controllers/__init__.py").read_text()
    assert '"guestbook.api.v1.other_captain:Captain",' in registry
    assert '"guestbook.api.v1.captain:Captain",' in registry
    groups = sorted(k.group for k in manifests.load(project).kinds if k.kind == "Captain")
    assert groups == ["crew.tutorial.kubebuilder.io", "other.tutorial.kubebuilder.io"]
    roles = [p for p in config_files_of(project) if p.startswith("rbac/") and "captain" in p]
    assert "rbac/crew_captain_admin_role.yaml" in roles
    assert "rbac/other_captain_editor_role.yaml" in roles
    # and in a third group with another version: its controller module would clash too
    commands.create_api(project, group="third", version="v2", kind="Captain")
    assert (project / "src/guestbook/controllers/third_captain.py").is_file()


def test_a_file_in_the_way_is_never_overwritten_without_force(project: Path) -> None:
    """A file create api would write that already exists with other content (written by
    hand, or left by another kind) refuses the command, nothing written."""
    mine = project / "src/guestbook/controllers/guestbook.py"
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("# my own controller, written before create api\n")
    before = _snapshot(project)
    with pytest.raises(Refused, match=r"controllers/guestbook\.py already exists"):
        commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    assert _snapshot(project) == before
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook", force=True)
    assert mine.read_text() != "# my own controller, written before create api\n"


def test_force_lists_the_edited_files_it_rewrites_before_writing(project: Path) -> None:
    """``appstack create api --force`` says which files that differ from their scaffold
    (someone's edits) it replaces, on stderr, before the list of what it wrote; files still
    as scaffolded are rewritten without a word."""
    from click.testing import CliRunner  # noqa: PLC0415

    from appstack.cli import main  # noqa: PLC0415

    args = ["create", "api", "--group", "webapp", "--version", "v1", "--kind", "Guestbook"]
    runner = CliRunner()
    first = runner.invoke(main, [*args, "--directory", str(project)])
    assert first.exit_code == 0, first.output
    edited = project / "src/guestbook/controllers/guestbook.py"
    edited.write_text(edited.read_text() + "# my edit\n")
    again = runner.invoke(main, [*args, "--force", "--directory", str(project)])
    assert again.exit_code == 0, again.output
    assert again.stderr.splitlines() == [
        "--force: rewriting 1 file that differs from the scaffold (what you wrote in it is "
        "replaced):",
        "  src/guestbook/controllers/guestbook.py",
    ]
    assert "# my edit" not in edited.read_text()
    assert "wrote src/guestbook/controllers/guestbook.py" in again.stdout
    # nothing edited: nothing listed
    quiet = runner.invoke(main, [*args, "--force", "--directory", str(project)])
    assert quiet.exit_code == 0
    assert quiet.stderr == ""


def test_operator_sdks_api_version_and_a_controller_added_later(tmp_path: Path) -> None:
    directory = tmp_path / "first-operator"
    commands.init(directory, domain="example.com", repo="github.com/njlkj/first-operator")
    commands.create_api(
        directory,
        group="app",
        domain="example.com",
        version="v1alpha1",
        kind="AppService",
        controller=False,
    )
    assert not (directory / "src/first_operator/controllers/appservice.py").exists()
    commands.create_api(
        directory,
        group="app",
        domain="example.com",
        version="v1alpha1",
        kind="AppService",
        resource=False,
        controller=True,
    )
    (resource,) = read(directory).resources
    assert (resource.full_group, resource.version, resource.kind) == (
        "app.example.com",
        "v1alpha1",
        "AppService",
    )
    assert resource.api
    assert resource.controller
    assert (directory / "src/first_operator/controllers/appservice.py").exists()


def test_create_webhook_conversion_is_alone(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    before = _snapshot(project)
    with pytest.raises(Refused, match="--conversion: alone"):
        commands.create_webhook(
            project,
            group="webapp",
            version="v1",
            kind="Guestbook",
            defaulting=True,
            validation=False,
            conversion=True,
        )
    assert _snapshot(project) == before


def test_manifests_twice_change_nothing_and_name_the_crd_as_kubebuilder(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    first = manifests.generate(project)
    assert project / "config/crd/bases/webapp.tutorial.kubebuilder.io_guestbooks.yaml" in first
    assert manifests.generate(project) == []
    assert manifests.stale(project) == []
    role = yaml.safe_load_all((project / "config/rbac/role.yaml").read_text())
    (manager,) = list(role)
    resources = {r for rule in manager["rules"] for r in rule["resources"]}
    assert {"guestbooks", "guestbooks/status", "configmaps", "events", "namespaces"} <= resources
    manager = yaml.safe_load_all((project / "config/manager/manager.yaml").read_text())
    (deployment,) = [o for o in manager if o["kind"] == "Deployment"]
    assert deployment["metadata"]["name"] == "controller-manager"  # default/ prefixes it
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "guestbook"]
    default = yaml.safe_load((project / "config/default/kustomization.yaml").read_text())
    assert (default["namePrefix"], default["namespace"]) == ("guestbook-", "guestbook-system")
    commands.edit(project, image="registry.local/guestbook:1")
    images = yaml.safe_load((project / "config/manager/kustomization.yaml").read_text())
    assert images["images"] == [
        {"name": "controller", "newName": "registry.local/guestbook", "newTag": "1"}
    ]
    assert manifests.stale(project) == []


def test_the_users_edits_in_config_survive_make_manifests_and_edit(project: Path) -> None:
    """Issue #47: every file of config/ said "Do not edit" and make manifests reverted a
    user's edits to manager.yaml and default/kustomization.yaml. Now what is scaffolded
    once is the user's: make manifests leaves it, the staleness check ignores it, and
    `edit` changes only the flags its settings decide."""
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    manifests.generate(project)
    manager = project / "config/manager/manager.yaml"
    default = project / "config/default/kustomization.yaml"
    manager.write_text(manager.read_text().replace("memory: 256Mi", "memory: 300Mi"))
    default.write_text(default.read_text() + "patches:\n- path: my_patch.yaml\n")
    edited = {p: p.read_text() for p in (manager, default)}
    commands.create_api(project, group="crew", version="v1", kind="Captain")
    assert project / "config/crd/bases/crew.tutorial.kubebuilder.io_captains.yaml" in (
        manifests.generate(project)
    )
    assert {p: p.read_text() for p in edited} == edited
    assert manifests.stale(project) == []
    commands.edit(project, enable_all_namespaces=True)
    text = manager.read_text()
    assert "--enable-all-namespaces" in text
    assert "memory: 300Mi" in text
    assert default.read_text() == edited[default]
    manifests.generate(project)  # the policies follow the setting
    assert "--enable-all-namespaces" in manager.read_text()
    # a file scaffolded once and deleted is written again
    default.unlink()
    assert manifests.stale(project) == ["config/default/kustomization.yaml"]
    manifests.generate(project)
    assert "patches" not in default.read_text()
    with pytest.raises(Refused, match="--image"):
        commands.edit(project, image="not an image")


def test_the_project_file_round_trips_and_plurals_follow_kubebuilder(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Policy")
    text = (project / "PROJECT").read_text()
    assert Project.from_text(text).to_text() == text
    assert [default_plural(k) for k in ("Guestbook", "Policy", "Class", "Key", "Box")] == [
        "guestbooks",
        "policies",
        "classes",
        "keys",
        "boxes",
    ]
