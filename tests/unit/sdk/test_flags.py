"""The run command an operator's ``__main__`` makes (:func:`appstack.sdk.operator_command`):
its controllers and its cache table are loaded only when it runs, and reach the assembly."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from appstack.runtime import POD, Resource, Transform
from appstack.sdk import OperatorIdentity, operator_command
from appstack.sdk import operator as assembly
from appstack.sdk.options import OperatorOptions

IDENTITY = OperatorIdentity(project="guestbook", domain="webapp.example.com")


def _status_only(pod: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": pod["metadata"], "status": pod.get("status") or {}}


def test_the_controllers_and_the_cache_table_reach_the_assembly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: dict[str, Any] = {}
    loaded: list[str] = []

    def run_operator(controllers: Any, identity: Any, options: Any, **kwargs: Any) -> int:
        ran.update(controllers=controllers, identity=identity, options=options, **kwargs)
        return 0

    def controllers() -> list[Any]:
        loaded.append("controllers")
        return []

    def cache() -> dict[Resource, Transform]:
        loaded.append("cache")
        return {POD: _status_only}

    monkeypatch.setattr(assembly, "run_operator", run_operator)
    command = operator_command(controllers, IDENTITY, version="1.2.3", cache=cache)
    assert loaded == []  # nothing until it runs
    result = CliRunner().invoke(command, ["--namespace", "team"])
    assert result.exit_code == 0, result.output
    assert sorted(loaded) == ["cache", "controllers"]
    assert ran["cache"] == {POD: _status_only}
    assert ran["version"] == "1.2.3"
    assert ran["identity"] is IDENTITY
    assert ran["options"].namespaces == ["team"]


def test_without_a_cache_table_objects_are_kept_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: dict[str, Any] = {}
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kwargs: ran.update(kwargs) or 0)
    result = CliRunner().invoke(operator_command(lambda: [], IDENTITY), [])
    assert result.exit_code == 0, result.output
    assert ran["cache"] is None


@pytest.mark.parametrize("seconds", ["0.5", "301", "2147483647"])
def test_a_lease_duration_out_of_its_range_is_refused_naming_the_flag(
    monkeypatch: pytest.MonkeyPatch, seconds: str
) -> None:
    """From 1 s to 300 s: the install's admission policy refuses a longer Lease from the
    operator's token (appstack.sdk.guards.writes.lease_policy), so a flag beyond
    it would be a Lease the operator could never write."""
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kwargs: 0)
    command = operator_command(lambda: [], IDENTITY)
    result = CliRunner().invoke(command, [f"--leader-elect-lease-duration={seconds}"])
    assert result.exit_code == 2, result.output
    assert "--leader-elect-lease-duration" in result.output
    assert CliRunner().invoke(command, ["--leader-elect-lease-duration=300"]).exit_code == 0
    with pytest.raises(ValueError, match="from 1s to 300s"):
        assembly.check(OperatorOptions(lease_duration=float(seconds)))
