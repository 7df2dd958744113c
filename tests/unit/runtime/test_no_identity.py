"""The runtime names no product (issue #35): who writes, who reports Events and how its own
metrics are prefixed are the program's to pass (appstack's operator passes its own:
``appstack.operator``). In src/appstack/runtime/ the word ``appstack`` (any case) appears
only as the distribution's name in a module path or in the extra a user is told to install.
"""

from __future__ import annotations

import re
import socket

import pytest

from appstack.runtime import EventRecorder, Metrics
from appstack.runtime.program import program_name
from tests.support.paths import REPO_ROOT
from tests.support.scripted_transport import scripted_client

RUNTIME = REPO_ROOT / "src" / "appstack" / "runtime"

#: Where the word may appear: the distribution's name, never the product's identity.
ALLOWED = (
    re.compile(r"appstack\.runtime\b"),  # its own modules: imports, docstring references
    re.compile(r"appstack\.core\.resource\b"),  # its one dependency in the distribution
    re.compile(re.escape("appstack[legacy-auth]")),  # the extra its error message names
)
#: Whole lines allowed for now, by file; each fails the test once it is gone (then delete
#: it here): the runtime's last identity literal, waiting for the code that reads it.
TRANSITIONAL: set[tuple[str, str]] = set()
WORD = re.compile("appstack", re.IGNORECASE)


def _found() -> tuple[list[str], set[tuple[str, str]]]:
    """Lines naming the product, as ``file:line: text``, and the transitional lines seen."""
    found, transitional = [], set()
    files = [p for p in RUNTIME.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert any(p.name == "client.py" for p in files)  # the walk found the runtime
    for path in sorted(files):
        name = str(path.relative_to(RUNTIME))
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if (name, line.strip()) in TRANSITIONAL:
                transitional.add((name, line.strip()))
                continue
            rest = line
            for pattern in ALLOWED:
                rest = pattern.sub("", rest)
            if WORD.search(rest):
                found.append(f"src/appstack/runtime/{name}:{number}: {line.strip()}")
    return found, transitional


def test_the_runtime_names_no_product() -> None:
    found, _ = _found()
    assert not found, "pass it in from the operator instead:\n" + "\n".join(found)


def test_every_transitional_exception_is_still_needed() -> None:
    _, seen = _found()
    assert seen == TRANSITIONAL, f"gone, remove from TRANSITIONAL: {TRANSITIONAL - seen}"


# A Kubernetes qualified name without a prefix: what an Event's reportingController must be.
QUALIFIED = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


@pytest.mark.parametrize(
    ("argv0", "name"),
    [
        ("/usr/local/bin/greeting", "greeting"),
        ("greeting.py", "greeting"),
        ("/src/greeting/__main__.py", "greeting"),  # python -m greeting
        ("", "unknown"),  # an interactive interpreter
        ("-c", "unknown"),  # python -c
        ("/opt/my operator!.py", "my-operator"),
        ("__main__.py", "unknown"),
        ("x" * 100, "x" * 63),
    ],
)
def test_the_program_name_is_a_valid_field_manager_and_event_source(argv0: str, name: str) -> None:
    assert program_name(argv0) == name
    assert QUALIFIED.match(name)


async def test_without_a_name_given_the_runtime_names_the_program() -> None:
    client, _ = scripted_client()
    assert client.field_manager == program_name()
    recorder = EventRecorder(client)
    assert recorder.controller == program_name()
    assert recorder.instance == f"{program_name()}-{socket.gethostname()}"[:128]
    named = EventRecorder(client, controller="example.com/widgets", instance="widgets-0")
    assert (named.controller, named.instance) == ("example.com/widgets", "widgets-0")


def test_the_runtimes_own_metrics_take_the_programs_prefix_and_none_by_default() -> None:
    def names(metrics: Metrics) -> set[str]:
        return {m.name for m in metrics.registry.collect()}

    plain, prefixed = names(Metrics()), names(Metrics(prefix="widgets"))
    for own in ("events_dropped", "metrics_auth_reviews", "metrics_auth_throttled"):
        assert own in plain
        assert f"widgets_{own}" in prefixed
    # controller-runtime's names whatever the prefix
    shared = {"controller_runtime_reconcile", "workqueue_depth", "rest_client_requests"}
    assert shared <= plain & prefixed
