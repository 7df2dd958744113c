"""Assemble and run the operator process: client → manager (cache, leader election, HTTP
endpoints) → every registered controller → run until SIGTERM. Used by ``appstack run``."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from dataclasses import dataclass, field

import structlog

from appstack.controllers.registry import ALL
from appstack.runtime import logging as rt_logging
from appstack.runtime.client import Client
from appstack.runtime.events import EventRecorder
from appstack.runtime.leaderelection import LeaderElectionConfig, LeadershipLost
from appstack.runtime.manager import Manager

log = structlog.get_logger("appstack.operator")
LEASE_NAME = "appstack-operator"


@dataclass
class OperatorOptions:
    kubeconfig: str | None = None
    namespaces: list[str] = field(default_factory=list)
    concurrency: int = 4
    leader_elect: bool = False
    leader_election_namespace: str = "default"
    metrics_address: str | None = ":8080"
    health_address: str | None = ":8081"
    log_format: rt_logging.Format = "auto"
    log_level: str = "info"


def identity() -> str:
    """Pod name (or host name) plus a random suffix: unique per process."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


async def _run(options: OperatorOptions) -> None:
    client = await Client.connect(options.kubeconfig)
    me = identity()
    election = (
        LeaderElectionConfig(LEASE_NAME, options.leader_election_namespace, me)
        if options.leader_elect
        else None
    )
    manager = Manager(
        client,
        namespaces=options.namespaces or None,
        leader_election=election,
        metrics_address=options.metrics_address,
        health_address=options.health_address,
    )
    recorder = EventRecorder(client, instance=me)
    for controller in ALL:
        controller.setup(manager, recorder, concurrency=controller.workers(options.concurrency))
    manager.install_signal_handlers()
    log.info(
        "starting",
        identity=me,
        namespaces=options.namespaces or "all",
        leader_elect=options.leader_elect,
    )
    try:
        await manager.run()
    finally:
        await client.close()


def run_operator(options: OperatorOptions) -> int:
    rt_logging.configure(options.log_format, options.log_level)
    try:
        asyncio.run(_run(options))
    except LeadershipLost:
        return 1
    return 0
