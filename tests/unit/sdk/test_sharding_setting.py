"""The SDK's one setting for sharded operators (issue #50): ``--sharding`` and
``run_operator(..., sharding=True)`` reach the options; the sharding configuration derived
from the controllers and the identity (label keys, primaries with their selectors, the
coordinator's pace from the Lease's retry period) and a primary that another controller
follows refused. The runtime's side: tests/unit/runtime/test_sharding_wiring.py; end to
end: tests/e2e/test_sharding.py."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner
from structlog.testing import capture_logs

from appstack.runtime import CONFIG_MAP, SECRET, Result
from appstack.sdk import ObjectReconciler, OperatorIdentity, Registration, operator_command
from appstack.sdk import operator as assembly
from appstack.sdk.options import OperatorOptions

IDENTITY = OperatorIdentity(project="guestbook", domain="webapp.example.com")


class Copies(ObjectReconciler):
    primary = CONFIG_MAP
    selector = "copy=yes"

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        return None


class Secrets(ObjectReconciler):
    primary = SECRET
    owns = (CONFIG_MAP,)

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        return None


def test_the_flag_turns_sharding_on(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: dict[str, Any] = {}
    monkeypatch.setattr(assembly, "run_operator", lambda *args, **kwargs: ran.update(a=args) or 0)
    result = CliRunner().invoke(operator_command(lambda: [], IDENTITY), ["--sharding"])
    assert result.exit_code == 0, result.output
    assert ran["a"][2].sharding
    result = CliRunner().invoke(operator_command(lambda: [], IDENTITY), [])
    assert not ran["a"][2].sharding


def test_run_operator_with_sharding_runs_it_sharded(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[OperatorOptions] = []

    async def serve(controllers: Any, identity: Any, options: OperatorOptions, **_: Any) -> None:
        served.append(options)

    monkeypatch.setattr(assembly, "serve", serve)
    monkeypatch.setattr(assembly, "configure_logging", lambda *args, **kwargs: None)
    assert assembly.run_operator([], IDENTITY, OperatorOptions(), sharding=True) == 0
    assert served[0].sharding


def test_the_configuration_comes_from_the_identity_and_the_controllers() -> None:
    options = OperatorOptions(sharding=True, retry_period=0.5)
    config = assembly.sharding_config(
        [Registration(name="copies", reconciler=Copies)], IDENTITY, options
    )
    assert config.labels.shard == "shard.webapp.example.com/guestbook"
    assert config.labels.drain == "drain.shard.webapp.example.com/guestbook"
    assert config.lease_label == "webapp.example.com/shard-of"
    assert config.leaving_label == "webapp.example.com/shard-leaving"
    assert config.primaries == ((CONFIG_MAP, "copy=yes"),)
    assert config.interval == 0.5
    assert config.max_drains is None  # auto: the coordinator follows the objects
    faster = OperatorOptions(sharding=True, shard_max_drains=100)
    registrations = [Registration(name="copies", reconciler=Copies)]
    assert assembly.sharding_config(registrations, IDENTITY, faster).max_drains == 100


def test_a_primary_another_controller_follows_is_refused() -> None:
    controllers = [
        Registration(name="copies", reconciler=Copies),
        Registration(name="secrets", reconciler=Secrets),
    ]
    with pytest.raises(ValueError, match="followed by controller secrets; shard only root"):
        assembly.sharding_config(controllers, IDENTITY, OperatorOptions(sharding=True))


def test_an_operator_that_cannot_shard_exits_1_with_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(assembly, "configure_logging", lambda *args, **kwargs: None)
    controllers = [
        Registration(name="copies", reconciler=Copies),
        Registration(name="secrets", reconciler=Secrets),
    ]
    options = OperatorOptions(kubeconfig="/nonexistent", metrics_address=None)
    with capture_logs() as logs:
        assert assembly.run_operator(controllers, IDENTITY, options, sharding=True) == 1
    assert [entry["event"] for entry in logs] == ["cannot start"]
    assert "shard only root kinds" in logs[0]["error"]


def test_the_children_each_shard_caches_its_share_of_are_those_only_written() -> None:
    """appstack's kinds sharded: the children its controllers write and nobody watches or
    refers to are split between the shards (labelled with their root's shard and uid);
    Pods (watched: a Deployment's carry no label of ours) and the user's Secrets and
    ConfigMaps read by reference (their metadata-only caches) are cached whole."""
    from appstack.controllers.appservice import APP_SERVICE  # noqa: PLC0415
    from appstack.controllers.registry import ALL  # noqa: PLC0415
    from appstack.runtime import (  # noqa: PLC0415
        CONFIG_MAP,
        DEPLOYMENT,
        POD,
        PVC,
        SERVICE,
        STATEFUL_SET,
    )

    config = assembly.sharding_config(ALL, IDENTITY, OperatorOptions(sharding=True))
    assert config.root_label == "root.shard.webapp.example.com/guestbook"
    split = set(config.child_kinds)
    by_primary = dict(config.children)
    assert set(by_primary[APP_SERVICE]) == {DEPLOYMENT, SERVICE}
    assert {DEPLOYMENT, SERVICE, STATEFUL_SET, CONFIG_MAP, PVC, SECRET} <= split
    assert POD not in split
    assert not {SECRET.metadata_only(), CONFIG_MAP.metadata_only()} & split
    assert not {r for r, _ in config.primaries} & split


def test_a_child_written_in_a_sharded_reconcile_carries_its_roots_shard() -> None:
    """The SDK's children writer sends every child through ``wire``: in a sharded
    reconcile with the root's shard labels added (a copy; the wanted child is kept)."""
    from appstack.runtime.sharding import _CHILD_LABELS  # noqa: PLC0415
    from appstack.sdk.kit.parts import wire  # noqa: PLC0415

    want: Any = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "b"}},
    }
    assert wire(want) is want  # unsharded: as it is
    token = _CHILD_LABELS.set({"shard.x/y": "s1", "root.shard.x/y": "u1"})
    try:
        sent = wire(want)
    finally:
        _CHILD_LABELS.reset(token)
    assert sent["metadata"]["labels"] == {"a": "b", "shard.x/y": "s1", "root.shard.x/y": "u1"}
    assert want["metadata"]["labels"] == {"a": "b"}
