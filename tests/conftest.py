"""Shared test configuration: the local control plane fixtures (see appstack_testbed), the
CEL engine the models' tests need, and the order parallel workers take the modules in.

The fixtures come from the test bed's pytest plugin (appstack_testbed.pytest_plugin), loaded
through its pytest11 entry point.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

# Each module's seconds (set-up, calls and tear-downs) in the parallel phase of a `make test`
# run, written by `--store-durations`: the order the workers take the modules in.
DURATIONS = Path(__file__).with_name("durations.json")
# A module not measured yet: handed out among the e2e modules of about this length.
UNMEASURED = 30.0


def pytest_sessionstart(session: pytest.Session) -> None:
    """The models refuse what admission refuses by evaluating the CRDs' CEL rules
    (appstack.sdk.cel): without the engine, every test of a refusal would fail, each for the
    same reason. Say it once instead."""
    from appstack.sdk import cel  # noqa: PLC0415 - after pytest's own set-up

    if not cel.available():
        raise pytest.UsageError(
            "the tests need the CEL engine: pip install -e '.[dev]' (the cel extra: "
            "cel-expr-python, Python 3.11+ on Linux x86-64, macOS arm64 or Windows)"
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-durations",
        action="store_true",
        help=f"write each module's seconds in this run into {DURATIONS.name} (the modules "
        "not run keep theirs): the order parallel workers take the modules in",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With parallel workers (``make test``: pytest-xdist, ``--dist loadfile
    --no-loadscope-reorder``: a module's tests on one worker, in order, so a module-scoped
    fixture — a cluster of its own, a scaffolded project, an installed release — is made
    once) the workers take the modules longest first, as :data:`DURATIONS` measured them:
    the longest poles start at once, and the short modules fill the gaps at the end instead
    of a long one starting last. Stable: a module's tests keep their order."""
    measured = _durations()
    items.sort(key=lambda item: -measured.get(_module(item.nodeid), UNMEASURED))


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _durations() -> dict[str, float]:
    if not DURATIONS.is_file():
        return {}
    return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}


_SPENT: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _SPENT[_module(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("store_durations") or hasattr(config, "workerinput"):
        return  # a worker's reports reach the controller too: it writes the file, once
    merged = {**_durations(), **{module: round(s, 1) for module, s in _SPENT.items()}}
    DURATIONS.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
