"""``OperatorRunner`` (appstack.sdk, issue #48: kopf's ``KopfRunner``): an operator's
controllers run in the test's process against the real API server, assembled as its run
command assembles them — a reconcile seen, the operator stopped cleanly on leaving; one
whose kind's CRD is not installed raises at entry what the run command would exit with;
nothing process-wide changed."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Any

import pytest

from appstack.runtime import CONFIG_MAP, NAMESPACE, Client, Result
from appstack.sdk import (
    CustomObject,
    KindReconciler,
    KubeModel,
    KubeObject,
    MissingCRDs,
    ObjectReconciler,
    OperatorIdentity,
    OperatorRunner,
    Problem,
    Registration,
    custom_kind,
)

IDENTITY = OperatorIdentity(project="echo", domain="echo.example.com")
ECHO = "echo.example.com/echo"


class Echo(ObjectReconciler):
    """A labelled ConfigMap -> an annotation saying which data keys it has."""

    primary = CONFIG_MAP
    writes = (CONFIG_MAP,)
    selector = f"{ECHO}=yes"

    async def apply(self, obj: dict[str, Any]) -> Result | None:
        meta = obj["metadata"]
        keys = ",".join(sorted(obj.get("data") or {}))
        if (meta.get("annotations") or {}).get(ECHO) != keys:
            patch = {"metadata": {"annotations": {ECHO: keys}}}
            await self.client.patch(CONFIG_MAP, meta["name"], patch, namespace=meta["namespace"])
        return None


CONTROLLER = Registration(name="echo", reconciler=Echo)


async def test_the_runner_runs_the_operator_against_the_cluster_and_stops_it(
    kubeconfig: Path, namespace: str
) -> None:
    handlers = signal.getsignal(signal.SIGTERM), logging.getLogger().handlers[:]
    async with await Client.connect(str(kubeconfig), field_manager="runner-test") as client:
        enable = {"metadata": {"labels": {IDENTITY.enabled_label: "true"}}}
        await client.patch(NAMESPACE, namespace, enable)
        async with OperatorRunner(
            [CONTROLLER], IDENTITY, kubeconfig=str(kubeconfig), namespaces=[namespace]
        ) as running:
            assert running.manager.ready
            await client.create(CONFIG_MAP, {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": namespace, "labels": {ECHO: "yes"}},
                "data": {"b": "2", "a": "1"},
            })  # fmt: skip
            got = await running.until(
                lambda: _annotated(running, namespace, "a,b"), timeout=30, interval=0.1
            )
            assert got["metadata"]["annotations"][ECHO] == "a,b"
            task = running._running
        assert task is not None
        assert task.done()
        assert task.exception() is None  # stopped as SIGTERM stops it: drained, no error
    assert (signal.getsignal(signal.SIGTERM), logging.getLogger().handlers) == handlers


async def _annotated(running: OperatorRunner, namespace: str, keys: str) -> dict[str, Any] | None:
    got = await running.get(CONFIG_MAP, "c", namespace)
    if got and (got["metadata"].get("annotations") or {}).get(ECHO) == keys:
        return got
    return None


async def test_a_kind_whose_crd_is_not_installed_is_raised_at_entry(
    kubeconfig: Path, namespace: str
) -> None:
    runner = OperatorRunner(
        [NEVERS], IDENTITY, kubeconfig=str(kubeconfig), namespaces=[namespace], timeout=30
    )
    with pytest.raises(MissingCRDs) as raised:
        async with runner:
            pytest.fail("entered without the CRD")
    assert raised.value.names == ["nevers.echo.example.com"]
    assert runner._running is not None
    assert runner._running.done()


class NeverSpec(KubeModel):
    size: int = 1


class NeverStatus(KubeModel):
    seen: bool | None = None


@custom_kind(group="echo.example.com", plural="nevers")
class Never(CustomObject):
    """A kind of the project whose CRD the test never installs."""

    spec: NeverSpec
    status: NeverStatus | None = None


class NeverReconciler(KindReconciler[NeverSpec]):
    kind = Never.KIND

    def invalid_status(self, obj: KubeObject, problem: Problem) -> KubeModel:
        raise NotImplementedError

    async def apply(self, obj: KubeObject, spec: NeverSpec) -> Result | None:
        raise NotImplementedError


NEVERS = Registration(name="nevers", reconciler=NeverReconciler)
