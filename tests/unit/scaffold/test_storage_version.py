"""``create api --storage`` (appstack/scaffold/commands.py): a version added to a kind of one
version as its storage version, without a cluster — the first version's module, its sample
and the controller, edited, left byte for byte; new files only, marker lines and the kind's
``KIND_MODELS`` line; the CRD of both versions, the new one stored, the first deprecated
and converted; the controller reconciling the hub after its one edit; the generated
round-trip tests passing and linting clean; every refusal one line, nothing written
(issue #49)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.scaffold import commands, manifests
from appstack.scaffold.project import Refused, read
from appstack.sdk import config
from appstack.sdk.versions import spokes_differ
from tests.support.files import file_digests

GROUP = "webapp.tutorial.kubebuilder.io"
API = "src/guestbook/api"
CONTROLLER = "src/guestbook/controllers/guestbook.py"
KINDS = "src/guestbook/controllers/__init__.py"
EDITED = (f"{API}/v1/guestbook.py", CONTROLLER, "config/samples/webapp_v1_guestbook.yaml")
NEW = {
    f"{API}/v2/__init__.py",
    f"{API}/v2/guestbook.py",
    "config/samples/webapp_v2_guestbook.yaml",
    "tests/test_guestbook_v1_conversion.py",
}
MARKED = {f"{API}/__init__.py", "config/samples/kustomization.yaml", "PROJECT", KINDS}


def _v1_edited(project: Path) -> dict[str, bytes]:
    """Guestbook at v1 with a field of its own (``size``), an edited controller and
    sample: their bytes."""
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    model, controller, sample = (project / p for p in EDITED)
    model.write_text(
        model.read_text().replace("    foo: str | None", "    size: int = 1\n    foo: str | None")
    )
    controller.write_text(controller.read_text() + "\n# my own reconcile step\n")
    sample.write_text(sample.read_text() + "  size: 2\n")
    return {p: (project / p).read_bytes() for p in EDITED}


def _stored_v2(project: Path, **options: Any) -> list[Path]:
    return commands.create_api(
        project, group="webapp", version="v2", kind="Guestbook", storage=True, **options
    )


def test_v2_is_added_as_the_storage_version_beside_the_edited_v1(project: Path) -> None:
    edited = _v1_edited(project)
    kinds_before = (project / KINDS).read_text()
    before = file_digests(project)
    written = {str(p.relative_to(project)) for p in _stored_v2(project)}
    assert written == NEW | MARKED
    after = file_digests(project)
    assert {p: (project / p).read_bytes() for p in EDITED} == edited  # byte for byte
    assert {p for p in before if before[p] != after.get(p)} == MARKED
    assert set(after) - set(before) == NEW
    # controllers/__init__.py: the kind's KIND_MODELS line, and nothing else, names v2
    assert (project / KINDS).read_text() == kinds_before.replace(
        '"guestbook.api.v1.guestbook:Guestbook",', '"guestbook.api.v2.guestbook:Guestbook",'
    )

    loaded = manifests.load(project)
    (kind,) = loaded.kinds
    assert [(v.name, v.storage, v.deprecated) for v in kind.versions] == [
        ("v2", True, False),
        ("v1", False, True),
    ]
    assert spokes_differ(kind)
    made = yaml.safe_load(config.config_files(loaded)[f"crd/bases/{GROUP}_guestbooks.yaml"])
    assert [(v["name"], v["storage"]) for v in made["spec"]["versions"]] == [
        ("v2", True),
        ("v1", False),
    ]
    assert made["spec"]["conversion"]["strategy"] == "Webhook"
    assert made["spec"]["versions"][1]["deprecationWarning"] == (
        f"{GROUP}/v1 Guestbook is deprecated; use v2"
    )
    (controller,) = loaded.controllers
    assert controller.kind is not kind  # v1's model: the controller's one edit is to make
    project_file = read(project)
    hub, spoke = project_file.versions(GROUP, "Guestbook")
    assert (hub.version, hub.controller, hub.path) == ("v2", False, "guestbook.api.v2.guestbook")
    assert hub.webhooks is not None
    assert (hub.webhooks.conversion, hub.webhooks.spoke) == (True, ["v1"])
    assert (spoke.version, spoke.controller) == ("v1", True)
    assert project_file.to_text() == (project / "PROJECT").read_text()

    # the edit the command's next step names: the controller's models from v2's module
    controller_file = project / CONTROLLER
    controller_file.write_text(
        controller_file.read_text().replace(
            "from guestbook.api.v1.guestbook import", "from guestbook.api.v2.guestbook import"
        )
    )
    loaded = manifests.load(project)
    (kind,) = loaded.kinds
    (controller,) = loaded.controllers
    assert controller.kind is kind  # it reconciles the hub, every version known


def test_the_generated_conversion_tests_pass_and_the_code_lints_clean(project: Path) -> None:
    """The round trips of both samples (tests/test_guestbook_v1_conversion.py) — v1's
    ``size`` kept through v2, which lacks it — and ruff with the project's settings."""
    _v1_edited(project)
    _stored_v2(project)
    manifests.generate(project)
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:xdist",
            "tests/test_guestbook_v1_conversion.py",
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


def _refused(project: Path, match: str, call: Callable[[], object]) -> str:
    before = file_digests(project)
    with pytest.raises(Refused, match=match) as refused:
        call()
    assert file_digests(project) == before
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_refusals_are_one_line_and_write_nothing(project: Path) -> None:
    _refused(
        project,
        f"^--storage: {GROUP}/v1 Guestbook is a new kind, whose first version is its storage",
        lambda: commands.create_api(
            project, group="webapp", version="v1", kind="Guestbook", storage=True
        ),
    )
    _refused(
        project,
        "^--storage: a version of the project's own kind only",
        lambda: commands.create_api(
            project, group="apps", version="v1", kind="Deployment", resource=False, storage=True
        ),
    )
    _v1_edited(project)
    _refused(
        project,
        f"^--storage: {GROUP}/v1 Guestbook exists already, and is the storage version",
        lambda: commands.create_api(
            project, group="webapp", version="v1", kind="Guestbook", storage=True
        ),
    )
    # KIND_MODELS rewritten by hand, the kind's line gone: which line to change, said
    kinds = project / KINDS
    scaffolded = kinds.read_text()
    kinds.write_text(
        scaffolded.replace(
            '    "guestbook.api.v1.guestbook:Guestbook",\n',
            '    "guestbook.api.v1.guestbook:Guestbook", "guestbook.api.v1.guestbook:Guestbook",\n',
        )
    )
    said = _refused(
        project, rf"^--storage: {KINDS} was edited and has no line", lambda: _stored_v2(project)
    )
    assert '`"guestbook.api.v2.guestbook:Guestbook",` by hand' in said
    # done by hand as said: then it goes through, that file left as it is
    by_hand = scaffolded.replace("guestbook.api.v1.guestbook:", "guestbook.api.v2.guestbook:")
    kinds.write_text(by_hand)
    _stored_v2(project)
    assert kinds.read_text() == by_hand
    # a third version: the storage moves by hand (the spokes' modules are the user's)
    _refused(
        project,
        r"^--storage: Guestbook has versions v2, v1 already, converted to and from v2",
        lambda: commands.create_api(
            project, group="webapp", version="v3", kind="Guestbook", storage=True
        ),
    )
    _refused(
        project,
        f"^--storage: {GROUP}/v1 Guestbook exists already: moving the storage to it",
        lambda: commands.create_api(
            project, group="webapp", version="v1", kind="Guestbook", storage=True
        ),
    )


def test_a_file_of_someone_elses_where_the_module_goes_is_kept(project: Path) -> None:
    _v1_edited(project)
    mine = project / f"{API}/v2/guestbook.py"
    mine.parent.mkdir(parents=True)
    mine.write_text("# mine\n")
    _refused(project, r"api/v2/guestbook\.py already exists", lambda: _stored_v2(project))
