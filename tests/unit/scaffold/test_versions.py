"""A version added to a kind by the scaffolder (appstack/scaffold/commands.py: create api of a
kind the project has, at another version; create webhook --conversion), without a cluster:
the first version's module and the controller, edited, left byte for byte; new files only
and marker lines; the CRD of both versions, the first the storage one, converted by the
operator's webhook; the generated round-trip tests passing and linting clean; every
refusal one line, nothing written; the same kind in another group still a kind of its own
(issues #47 and #49)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.scaffold import commands, manifests
from appstack.scaffold import templates as t
from appstack.scaffold.project import Refused, read
from appstack.sdk import config, crd
from appstack.sdk.versions import spokes_differ
from tests.support.files import file_digests

GROUP = "webapp.tutorial.kubebuilder.io"
API = "src/guestbook/api"
EDITED = (f"{API}/v1/guestbook.py", "src/guestbook/controllers/guestbook.py")
#: What adding v2 writes: new files, and lines at the markers of three it may change.
NEW = {
    f"{API}/v2/__init__.py",
    f"{API}/v2/guestbook.py",
    "config/samples/webapp_v2_guestbook.yaml",
    "tests/test_guestbook_v2_conversion.py",
}
MARKED = {f"{API}/__init__.py", "config/samples/kustomization.yaml", "PROJECT"}


def _v1_edited(project: Path) -> dict[str, bytes]:
    """Guestbook at v1 with a field of its own (``size``, which v2 will lack) and an
    edited controller: their bytes."""
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    model, controller = (project / p for p in EDITED)
    model.write_text(
        model.read_text().replace("    foo: str | None", "    size: int = 1\n    foo: str | None")
    )
    controller.write_text(controller.read_text() + "\n# my own reconcile step\n")
    return {p: (project / p).read_bytes() for p in EDITED}


def _add_v2(project: Path, **options: Any) -> list[Path]:
    return commands.create_api(project, group="webapp", version="v2", kind="Guestbook", **options)


def test_v2_is_added_beside_the_edited_v1_which_stays_the_storage_version(
    project: Path,
) -> None:
    edited = _v1_edited(project)
    before = file_digests(project)
    written = {str(p.relative_to(project)) for p in _add_v2(project)}
    assert written == NEW | MARKED
    after = file_digests(project)
    assert {p: (project / p).read_bytes() for p in EDITED} == edited  # byte for byte
    assert {p for p in before if before[p] != after.get(p)} == MARKED
    assert set(after) - set(before) == NEW

    loaded = manifests.load(project)
    (kind,) = loaded.kinds  # one CRD, both versions
    assert [(v.name, v.storage) for v in kind.versions] == [("v1", True), ("v2", False)]
    assert spokes_differ(kind)
    (controller,) = loaded.controllers
    assert controller.kind is kind  # the controller reconciles the hub, every version known
    generated = config.config_files(loaded)
    made = yaml.safe_load(generated[f"crd/bases/{GROUP}_guestbooks.yaml"])
    assert [(v["name"], v["storage"]) for v in made["spec"]["versions"]] == [
        ("v1", True),
        ("v2", False),
    ]
    client = made["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    assert (client["name"], client["path"]) == ("guestbook-webhook-service", "/convert")
    hub, spoke = read(project).resources
    assert hub.webhooks is not None
    assert (hub.webhooks.conversion, hub.webhooks.spoke) == (True, ["v2"])
    assert (spoke.version, spoke.controller, spoke.path) == (
        "v2",
        False,
        "guestbook.api.v2.guestbook",
    )
    assert read(project).to_text() == (project / "PROJECT").read_text()  # read back the same


def test_the_generated_conversion_tests_pass_and_the_code_lints_clean(project: Path) -> None:
    """The project's round trips (tests/test_guestbook_v2_conversion.py) on its samples —
    v1's ``size`` kept through v2, which lacks it — and ruff with the project's settings."""
    _v1_edited(project)
    _add_v2(project)
    manifests.generate(project)
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:xdist",
            "tests/test_guestbook_v2_conversion.py",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "2 passed" in tests.stdout
    ruff = Path(sys.executable).parent / "ruff"
    for check in (["check", "src", "tests"], ["format", "--check", "src", "tests"]):
        linted = subprocess.run(
            [str(ruff), *check], cwd=project, capture_output=True, text=True, check=False
        )
        assert linted.returncode == 0, linted.stdout + linted.stderr


def test_a_third_version_joins_the_first_two(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    _add_v2(project)
    commands.create_api(project, group="webapp", version="v3alpha1", kind="Guestbook")
    (kind,) = manifests.load(project).kinds
    assert [(v.name, v.storage) for v in kind.versions] == [
        ("v1", True),
        ("v2", False),
        ("v3alpha1", False),
    ]
    assert [
        v["name"] for v in crd(kind, conversion={"url": "https://h/convert"})["spec"]["versions"]
    ] == [
        "v1",
        "v2",
        "v3alpha1",
    ]


def _refused(project: Path, match: str, call: Callable[[], object]) -> str:
    before = file_digests(project)
    with pytest.raises(Refused, match=match) as refused:
        call()
    assert file_digests(project) == before
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_refusals_are_one_line_and_write_nothing(project: Path) -> None:
    _v1_edited(project)
    _refused(
        project,
        "^--no-resource: Guestbook's controller reconciles v1",
        lambda: _add_v2(project, resource=False),
    )
    _refused(
        project,
        "^--cluster-scoped: Guestbook is namespaced at v1",
        lambda: _add_v2(project, namespaced=False),
    )
    _refused(
        project,
        "^--plural books: Guestbook is served as guestbooks",
        lambda: _add_v2(project, plural="books"),
    )
    # a file of someone else's where the version's module goes
    mine = project / f"{API}/v2/guestbook.py"
    mine.parent.mkdir(parents=True)
    mine.write_text("# mine\n")
    _refused(project, r"api/v2/guestbook\.py already exists", lambda: _add_v2(project))
    mine.unlink()
    # the versions' registry edited, its marker gone: what to add, said in the message
    registry = project / f"{API}/__init__.py"
    registry.write_text('"""My kinds."""\n')
    said = _refused(
        project,
        r"^--version v2: src/guestbook/api/__init__\.py was edited",
        lambda: _add_v2(project),
    )
    assert "`import guestbook.api.v2.guestbook  # noqa: F401" in said
    assert t.MARK_VERSIONS in said
    # done by hand as said: then it goes through, the hand-written line not doubled
    registry.write_text(
        '"""My kinds."""\n\nimport guestbook.api.v2.guestbook  # noqa: F401 - declares '
        f"Guestbook's versions\n{t.MARK_VERSIONS}\n"
    )
    _add_v2(project)
    assert registry.read_text().count("import guestbook.api.v2.guestbook") == 1
    # v2 again, even with --force: its module is the user's
    _refused(project, "^--version v2: Guestbook v2 was added to", lambda: _add_v2(project))
    _refused(
        project, "^--version v2: Guestbook v2 was added to", lambda: _add_v2(project, force=True)
    )


def test_a_project_scaffolded_before_the_versions_marker_gets_it(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    registry = project / f"{API}/__init__.py"
    registry.write_text(t.api_init_before_versions(read(project)))  # as an older appstack wrote it
    _add_v2(project)
    assert t.MARK_VERSIONS in registry.read_text()
    assert "import guestbook.api.v2.guestbook" in registry.read_text()


def test_the_same_kind_in_another_group_is_a_kind_of_its_own(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    commands.create_api(project, group="crew", version="v2", kind="Guestbook")
    kinds = sorted((k.group, k.version, len(k.versions)) for k in manifests.load(project).kinds)
    assert kinds == [("crew.tutorial.kubebuilder.io", "v2", 0), (GROUP, "v1", 0)]
    assert (project / "src/guestbook/api/v2/crew_guestbook.py").is_file()
    assert (project / "src/guestbook/controllers/crew_guestbook.py").is_file()


def _conversion(project: Path, version: str = "v1", spoke: tuple[str, ...] = ()) -> list[Path]:
    return commands.create_webhook(
        project,
        group="webapp",
        version=version,
        kind="Guestbook",
        defaulting=False,
        validation=False,
        conversion=True,
        spoke=spoke,
    )


def test_create_webhook_conversion_writes_what_is_missing_or_says_why_not(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    _refused(
        project,
        r"^--conversion: Guestbook has one version \(v1\): add one with create api",
        lambda: _conversion(project),
    )
    _add_v2(project)
    _refused(
        project,
        r"^--conversion: Guestbook's conversion \(v1 to and from v2\) is scaffolded already",
        lambda: _conversion(project),
    )
    _refused(
        project,
        r"^--version v2: Guestbook's storage version \(the hub\) is v1",
        lambda: _conversion(project, "v2"),
    )
    _refused(
        project,
        r"^--spoke v9: not a version of Guestbook besides v1 \(v2\)",
        lambda: _conversion(project, spoke=("v9",)),
    )
    # its round-trip test deleted: written again, as the scaffold has it
    test = project / "tests/test_guestbook_v2_conversion.py"
    text = test.read_text()
    test.unlink()
    assert [p.name for p in _conversion(project, spoke=("v2",))] == [test.name, "PROJECT"]
    assert test.read_text() == text
    # a version's module without its conversion is never rewritten
    module = project / f"{API}/v2/guestbook.py"
    module.write_text(module.read_text().replace("def to_hub(", "def into_hub("))
    _refused(
        project,
        r"^--spoke v2: src/guestbook/api/v2/guestbook\.py declares no to_hub/from_hub",
        lambda: _conversion(project),
    )


def test_a_cluster_scoped_kind_gets_a_cluster_scoped_version(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook", namespaced=False)
    _refused(
        project,
        "^--namespaced: Guestbook is cluster-scoped at v1.*pass --cluster-scoped$",
        lambda: _add_v2(project),
    )
    _add_v2(project, namespaced=False)
    assert "    namespaced=False,\n" in (project / f"{API}/v2/guestbook.py").read_text()
    (kind,) = manifests.load(project).kinds
    assert not kind.namespaced
    assert [v.name for v in kind.versions] == ["v1", "v2"]
