"""Background tasks against the real API server (issue #48): of two replicas sharing a
Lease, only the leader runs a leader-only task — it writes a ConfigMap through the fenced
client — while a task for every replica runs on both; when the leader stops, the other
takes the Lease and starts its leader-only task, which goes on writing. Each leader's task
cleanup writes at its shutdown, before the Lease is released (its write not fenced)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from appstack.runtime import CONFIG_MAP, Client, LeaderElectionConfig, Manager, NotFound, Task
from appstack_testbed.waiting import eventually


async def test_a_leader_only_task_runs_on_the_leader_alone_and_moves_with_the_lease(
    kubeconfig: Path, namespace: str
) -> None:
    runs: dict[str, dict[str, int]] = {}

    def replica(client: Client, name: str) -> Manager:
        manager = Manager(
            client,
            namespaces=[namespace],
            leader_election=LeaderElectionConfig(
                "tasks", namespace, name, lease_duration=4, renew_deadline=3, retry_period=0.5
            ),
        )
        runs[name] = {"leading": 0, "everywhere": 0}

        async def stamp() -> None:
            runs[name]["leading"] += 1
            await client.apply(
                CONFIG_MAP,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "stamp", "namespace": namespace},
                    "data": {"by": name},
                },
            )

        async def farewell() -> None:  # at shutdown, still holding the Lease: not fenced
            await client.apply(
                CONFIG_MAP,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "farewell", "namespace": namespace},
                    "data": {"by": name},
                },
            )

        async def look() -> None:
            runs[name]["everywhere"] += 1

        manager.add_task(Task("stamp", stamp, every=0.2, cleanup=farewell))
        manager.add_task(Task("look", look, every=0.2, leader_only=False))
        return manager

    async with (
        await Client.connect(str(kubeconfig), field_manager="a") as a,
        await Client.connect(str(kubeconfig), field_manager="b") as b,
        await Client.connect(str(kubeconfig)) as reader,
    ):
        first = replica(a, "a")
        first_run = asyncio.create_task(first.run())
        elector = first.elector
        assert elector is not None
        await eventually(lambda: elector.is_leader, timeout=30, what="a leads")
        second = replica(b, "b")
        second_run = asyncio.create_task(second.run())

        async def stamped_by(name: str) -> bool:
            try:
                got = await reader.get(CONFIG_MAP, "stamp", namespace)
            except NotFound:
                return False
            return bool(got["data"]["by"] == name)

        await eventually(lambda: stamped_by("a"), timeout=30, what="a's task writes")
        await eventually(lambda: runs["b"]["everywhere"] >= 3, timeout=30, what="b's look")
        assert runs["b"]["leading"] == 0  # b waits for the Lease: its leader task never ran

        async def farewell_by() -> str | None:
            try:
                got = await reader.get(CONFIG_MAP, "farewell", namespace)
            except NotFound:
                return None
            return str(got["data"]["by"])

        assert await farewell_by() is None  # a cleanup runs at shutdown only
        first.stop()
        await asyncio.wait_for(first_run, 30)  # releases the Lease on the way out
        assert await farewell_by() == "a"  # its task's cleanup ran, before the release
        before = runs["a"]["leading"]
        await eventually(lambda: stamped_by("b"), timeout=30, what="b's task writes")
        assert runs["a"]["leading"] == before  # a's task stopped with it
        second.stop()
        await asyncio.wait_for(second_run, 30)
        assert await farewell_by() == "b"  # b led by then: its cleanup ran too
