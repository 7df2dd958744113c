"""``appstack create webhook --programmatic-validation --defaulting`` (issue #49): Python
handlers of the kind's admission webhooks and their tests, as kubebuilder's CustomValidator
and CustomDefaulter — the generated tests run and pass, the code lints with the project's
settings (its mypy runs in tests/e2e/test_scaffold.py's make test), ``make manifests``
configures both webhooks; one flag then the other, or the same again, adds only what is
missing and keeps the user's edits byte for byte; what cannot be served (an old project's
registry without the marker, a kind without a controller, a version that is not the
storage version) is refused in one line, nothing written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from appstack.cli import main
from appstack.scaffold import commands, manifests
from appstack.scaffold import templates as t
from appstack.scaffold.project import Refused, read
from tests.support.files import file_digests

HOOK = {"group": "webapp", "version": "v1", "kind": "Guestbook", "conversion": False}
VALIDATOR = "src/guestbook/webhooks/guestbook_validator.py"
DEFAULTER = "src/guestbook/webhooks/guestbook_defaulter.py"
REGISTRY = "src/guestbook/controllers/__init__.py"


def _webhook(project: Path, *, defaulting: bool, validation: bool) -> set[str]:
    written = commands.create_webhook(
        project,
        group="webapp",
        version="v1",
        kind="Guestbook",
        defaulting=defaulting,
        validation=validation,
        conversion=False,
    )
    return {str(p.relative_to(project)) for p in written}


def _run(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=project, capture_output=True, text=True, check=False)


def test_both_flags_write_handlers_whose_tests_pass_and_lint_clean(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    written = _webhook(project, defaulting=True, validation=True)
    assert written == {
        "src/guestbook/webhooks/__init__.py",
        VALIDATOR,
        DEFAULTER,
        "tests/test_guestbook_validator.py",
        "tests/test_guestbook_defaulter.py",
        REGISTRY,
        "PROJECT",
    }
    registry = (project / REGISTRY).read_text()
    assert (
        '    "guestbook.webhooks.guestbook_validator",\n'
        '    "guestbook.webhooks.guestbook_defaulter",\n'
        f"    {t.MARK_WEBHOOKS}\n"
    ) in registry
    assert 'deny("forbidden is not a foo: choose another value", field="spec.foo")' in (
        (project / VALIDATOR).read_text()
    )
    (resource,) = read(project).resources
    assert resource.webhooks is not None
    assert (resource.webhooks.defaulting, resource.webhooks.validation) == (True, True)
    manifests.generate(project)
    configured = list(yaml.safe_load_all((project / "config/webhook/manifests.yaml").read_text()))
    paths = {
        o["kind"]: [w["clientConfig"]["service"]["path"] for w in o["webhooks"]] for o in configured
    }
    assert paths == {
        "ValidatingWebhookConfiguration": ["/validate-webapp-tutorial-kubebuilder-io-v1-guestbook"],
        "MutatingWebhookConfiguration": ["/default-webapp-tutorial-kubebuilder-io-v1-guestbook"],
    }
    tests = _run(
        project,
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:xdist",
        "tests/test_guestbook_validator.py",
        "tests/test_guestbook_defaulter.py",
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "passed" in tests.stdout
    assert "skipped" not in tests.stdout
    tools = Path(sys.executable).parent
    for check in (
        [str(tools / "ruff"), "check", "src", "tests"],
        [str(tools / "ruff"), "format", "--check", "src", "tests"],
    ):
        linted = _run(project, *check)
        assert linted.returncode == 0, linted.stdout + linted.stderr


def test_one_flag_then_the_other_adds_only_what_is_missing(project: Path) -> None:
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    first = _webhook(project, defaulting=False, validation=True)
    assert VALIDATOR in first
    assert DEFAULTER not in first
    validator, test = project / VALIDATOR, project / "tests/test_guestbook_validator.py"
    validator.write_text(validator.read_text().replace('== "forbidden"', '== "not-allowed"'))
    test.write_text(test.read_text() + "\n# my own check\n")
    edited = {p: p.read_bytes() for p in (validator, test)}
    second = _webhook(project, defaulting=True, validation=False)
    assert {DEFAULTER, "tests/test_guestbook_defaulter.py"} <= second
    assert VALIDATOR not in second
    assert {p: p.read_bytes() for p in edited} == edited
    (resource,) = read(project).resources
    assert resource.webhooks is not None
    assert (resource.webhooks.defaulting, resource.webhooks.validation) == (True, True)
    before = file_digests(project)
    again = _webhook(project, defaulting=True, validation=True)  # nothing missing
    assert again == {REGISTRY, "PROJECT"}
    assert file_digests(project) == before
    assert (project / REGISTRY).read_text().count("guestbook.webhooks.guestbook_") == 2


def _refused(project: Path, match: str, **flags: bool) -> None:
    before = file_digests(project)
    with pytest.raises(Refused, match=match):
        _webhook(project, **{"defaulting": True, "validation": True, **flags})
    assert file_digests(project) == before


def test_what_cannot_be_served_is_refused_with_nothing_written(project: Path) -> None:
    _refused(project, r"^--kind Guestbook: no API webapp.tutorial.kubebuilder.io/v1 Guestbook")
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook", controller=False)
    _refused(project, r"^--kind Guestbook: it has no controller in this project")
    commands.create_api(
        project, group="webapp", version="v1", kind="Guestbook", resource=False, controller=True
    )
    commands.create_api(project, group="webapp", version="v2", kind="Guestbook")
    with pytest.raises(
        Refused,
        match=r"^--version v2: Guestbook's webhooks are served at its storage version.*v1\)$",
    ):
        commands.create_webhook(
            project,
            group="webapp",
            version="v2",
            kind="Guestbook",
            defaulting=True,
            validation=False,
            conversion=False,
        )
    _refused(
        project,
        "needs --defaulting and/or --programmatic-validation",
        defaulting=False,
        validation=False,
    )


def test_a_project_from_before_the_webhooks_marker_is_told_what_to_add(project: Path) -> None:
    """Its registry (as an older appstack wrote it, and maybe edited since) is never
    rewritten: the refusal, one line through the command line, says what to add."""
    commands.create_api(project, group="webapp", version="v1", kind="Guestbook")
    registry = project / REGISTRY
    registry.write_text(registry.read_text().replace(f"    {t.MARK_WEBHOOKS}\n", ""))
    _refused(
        project,
        "^" + re.escape(f"--programmatic-validation: {REGISTRY} has no '{t.MARK_WEBHOOKS}' line"),
    )
    refused = CliRunner().invoke(
        main,
        [
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
            "--defaulting",
            "--directory",
            str(project),
        ],
    )
    assert refused.exit_code != 0
    (line,) = refused.stderr.strip().splitlines()
    assert "with_webhooks(<the registrations>, WEBHOOK_MODULES)" in line
    assert "nothing was written" in line
