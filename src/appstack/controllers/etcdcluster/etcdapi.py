"""A small client of etcd's v3 JSON gateway (HTTP + JSON, no gRPC), with timeouts.

The EtcdCluster reconciler uses it to list, add, promote and remove members, read each
member's status (leader, raft index, version, database size), move leadership, compact,
defragment, list and disarm alarms, and take snapshots; the
e2e tests use it to write and read keys. Every call names the endpoint
(``http://<pod IP>:2379``, or ``https://`` with client TLS: then the client presents the
certificate of its ``ssl`` context and checks each member's certificate against the name
:attr:`EtcdClient.server_names` gives for the endpoint, e.g. the member's DNS name while
connecting to its pod IP) it goes to and fails with :class:`EtcdError` within its
timeout: a reconcile never waits on etcd for longer, it requeues. Tested against real
etcd processes (tests/integration/test_etcdapi.py).
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp


class EtcdError(Exception):
    """A call failed: unreachable, timed out, or refused by etcd (``message`` says why)."""


@dataclass(frozen=True)
class Member:
    """A member as the member list reports it (``name`` is empty until it has started)."""

    id: int
    name: str
    peer_urls: tuple[str, ...]
    client_urls: tuple[str, ...]
    is_learner: bool

    @property
    def started(self) -> bool:
        return bool(self.name)


@dataclass(frozen=True)
class EndpointStatus:
    """What one member says about itself (``/v3/maintenance/status``)."""

    member_id: int
    cluster_id: int
    leader: int
    raft_index: int
    raft_applied_index: int
    version: str
    is_learner: bool
    errors: tuple[str, ...]
    db_size: int = 0  # bytes of the database file
    db_size_in_use: int = 0  # bytes of it holding data (the rest is free after compaction)
    revision: int = 0  # the store's current revision

    @property
    def alarms(self) -> tuple[str, ...]:
        """The alarms raised in the cluster (``NOSPACE``, ``CORRUPT``) its errors list
        (each once, although each member that raised one is listed)."""
        return tuple(
            sorted({e.split("alarm:", 1)[1].split()[0] for e in self.errors if "alarm:" in e})
        )

    @property
    def failures(self) -> tuple[str, ...]:
        """Its errors other than alarms (an alarm is the cluster's, not this member's)."""
        return tuple(e for e in self.errors if "alarm:" not in e)


#: The most a member's answer may hold (member lists and statuses are a few KiB).
MAX_ANSWER = 1 << 20
#: A snapshot is at most etcd's largest backend quota (8 GiB), in lines of 64 KiB chunks.
MAX_SNAPSHOT = 8 << 30
MAX_SNAPSHOT_LINE = 4 << 20


async def _bounded(response: aiohttp.ClientResponse, limit: int, what: str) -> str:
    """The body as text, refused past ``limit`` bytes (read no further than that)."""
    body = b""
    async for piece in response.content.iter_chunked(1 << 16):
        body += piece
        if len(body) > limit:
            raise EtcdError(f"{what}: answer larger than {limit} bytes (refused)")
    if response.headers.get("Content-Encoding", "identity") not in ("identity", ""):
        raise EtcdError(f"{what}: answer encoded {response.headers['Content-Encoding']!r}")
    return body.decode("utf-8", errors="replace")


def _snapshot_line(line: bytes, out: Any, endpoint: str) -> int:
    """Write one ``{"result": {"blob": ...}}`` line of a snapshot; the bytes written."""
    if not line.strip():
        return 0
    chunk = json.loads(line)
    if "error" in chunk:
        raise EtcdError(f"{endpoint}: snapshot: {chunk['error']}")
    blob = base64.b64decode(chunk["result"].get("blob", ""))
    out.write(blob)
    return len(blob)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _member(raw: dict[str, Any]) -> Member:
    return Member(
        id=int(raw["ID"]),
        name=raw.get("name", ""),
        peer_urls=tuple(raw.get("peerURLs") or ()),
        client_urls=tuple(raw.get("clientURLs") or ()),
        is_learner=bool(raw.get("isLearner")),
    )


#: Calls that change the etcd cluster: under leader election they pass the same fence as
#: the operator's writes to the API server (a replica that may have lost the Lease never
#: removes a member after a successor took over).
CHANGES = frozenset(
    {
        "cluster/member/add",
        "cluster/member/remove",
        "cluster/member/promote",
        "maintenance/transfer-leadership",
        "maintenance/alarm",
        "kv/compaction",
        "kv/put",
    }
)


class EtcdClient:
    """Calls the gateway of any member; one aiohttp session (closed by :meth:`close` or
    ``async with``), ``timeout`` seconds per call; ``tls`` for ``https`` endpoints;
    ``guard``: the write fence (:meth:`~appstack.runtime.leaderelection.LeaderElector.fence`:
    seconds of leadership left, or raises), asked right before every call in
    :data:`CHANGES`, whose timeout it also bounds."""

    def __init__(
        self,
        timeout: float = 2.0,
        tls: ssl.SSLContext | None = None,
        guard: Callable[[], float] | None = None,
    ) -> None:
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.tls = tls
        self.guard = guard
        self.server_names: dict[str, str] = {}  # endpoint -> name its certificate must have
        self._session: aiohttp.ClientSession | None = None

    def _tls_of(self, endpoint: str) -> dict[str, Any]:
        if not endpoint.startswith("https://"):
            return {}
        return {"ssl": self.tls or True, "server_hostname": self.server_names.get(endpoint)}

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # A member's answer is untrusted (the image is the tenant's choice): never
            # inflated (a 0.6 MiB gzip answer once cost 1.8 GiB), never read past a limit.
            self._session = aiohttp.ClientSession(
                timeout=self.timeout,
                auto_decompress=False,
                headers={"Accept-Encoding": "identity"},
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def __aenter__(self) -> EtcdClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def call(
        self, endpoint: str, path: str, body: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        """POST ``body`` to ``endpoint`` + ``/v3/`` + ``path``; the decoded answer."""
        seconds = timeout or self.timeout.total
        if self.guard is not None and path in CHANGES:
            left = self.guard()  # raises once the Lease may be lost
            seconds = left if seconds is None else min(seconds, left)
        limit = aiohttp.ClientTimeout(total=seconds)
        try:
            async with self._open().post(
                f"{endpoint}/v3/{path}", json=body, timeout=limit, **self._tls_of(endpoint)
            ) as response:
                text = await _bounded(response, MAX_ANSWER, f"{endpoint}/v3/{path}")
        except (aiohttp.ClientError, TimeoutError) as error:
            raise EtcdError(f"{endpoint}: {type(error).__name__}: {error}") from error
        try:
            answer: dict[str, Any] = json.loads(text) if text else {}
        except json.JSONDecodeError as error:
            raise EtcdError(f"{endpoint}/v3/{path}: not JSON: {text[:200]}") from error
        if response.status >= 400 or "error" in answer:
            message = answer.get("message") or answer.get("error") or text[:200]
            raise EtcdError(f"{endpoint}/v3/{path}: {message}")
        return answer

    async def members(self, endpoint: str) -> tuple[int, list[Member]]:
        """The cluster ID and its members, as the leader knows them (linearizable)."""
        answer = await self.call(endpoint, "cluster/member/list", {"linearizable": True})
        members = [_member(m) for m in answer.get("members") or []]
        return int(answer["header"]["cluster_id"]), members

    async def status(self, endpoint: str) -> EndpointStatus:
        answer = await self.call(endpoint, "maintenance/status", {})
        header = answer.get("header") or {}
        return EndpointStatus(
            member_id=int(header.get("member_id", 0)),
            cluster_id=int(header.get("cluster_id", 0)),
            leader=int(answer.get("leader", 0)),
            raft_index=int(answer.get("raftIndex", 0)),
            raft_applied_index=int(answer.get("raftAppliedIndex", 0)),
            version=str(answer.get("version", "")),
            is_learner=bool(answer.get("isLearner")),
            errors=tuple(answer.get("errors") or ()),
            db_size=int(answer.get("dbSize", 0)),
            db_size_in_use=int(answer.get("dbSizeInUse", 0)),
            revision=int(header.get("revision", 0)),
        )

    async def add_member(self, endpoint: str, peer_url: str, *, learner: bool = True) -> Member:
        body = {"peerURLs": [peer_url], "isLearner": learner}
        answer = await self.call(endpoint, "cluster/member/add", body)
        return _member(answer["member"])

    async def remove_member(self, endpoint: str, member_id: int) -> None:
        await self.call(endpoint, "cluster/member/remove", {"ID": str(member_id)})

    async def promote_member(self, endpoint: str, member_id: int) -> None:
        await self.call(endpoint, "cluster/member/promote", {"ID": str(member_id)})

    async def move_leader(self, leader_endpoint: str, target_id: int) -> None:
        """Hand leadership to ``target_id``; must be sent to the current leader."""
        body = {"targetID": str(target_id)}
        await self.call(leader_endpoint, "maintenance/transfer-leadership", body, timeout=10)

    async def compact(self, endpoint: str, revision: int) -> None:
        """Compact the key space up to ``revision`` and wait until it is applied on disk
        (``physical``); compacting again to the same revision is not an error."""
        body = {"revision": str(revision), "physical": True}
        try:
            await self.call(endpoint, "kv/compaction", body, timeout=60)
        except EtcdError as error:
            if "required revision has been compacted" not in str(error):
                raise

    async def defragment(self, endpoint: str, timeout: float = 300) -> None:
        """Defragment one member's database (it serves nothing while it runs)."""
        await self.call(endpoint, "maintenance/defragment", {}, timeout=timeout)

    async def alarms(self, endpoint: str) -> list[tuple[int, str]]:
        """The raised alarms as (member ID, alarm), e.g. ``(0x8e9e05c52164694d, "NOSPACE")``."""
        answer = await self.call(endpoint, "maintenance/alarm", {"action": "GET"})
        return [
            (int(a.get("memberID", 0)), str(a.get("alarm", ""))) for a in answer.get("alarms") or []
        ]

    async def disarm(self, endpoint: str, member_id: int, alarm: str) -> None:
        body = {"action": "DEACTIVATE", "memberID": str(member_id), "alarm": alarm}
        await self.call(endpoint, "maintenance/alarm", body)

    async def put(self, endpoint: str, key: str, value: str) -> int:
        """Write ``key``; the revision it was written at."""
        answer = await self.call(endpoint, "kv/put", {"key": _b64(key), "value": _b64(value)})
        return int(answer["header"]["revision"])

    async def get(self, endpoint: str, key: str) -> str | None:
        answer = await self.call(endpoint, "kv/range", {"key": _b64(key)})
        kvs = answer.get("kvs") or []
        return base64.b64decode(kvs[0].get("value", "")).decode() if kvs else None

    async def snapshot(self, endpoint: str, target: Path, timeout: float = 120) -> int:
        """Save a snapshot of the member's database as ``target``; its size in bytes.

        The gateway streams one JSON object per line and chunk (``{"result": {"blob":
        ...}}``); the file is written next to ``target`` and renamed once complete."""
        partial = target.with_name(target.name + ".part")
        size = 0
        limit = aiohttp.ClientTimeout(total=timeout)
        try:
            async with self._open().post(
                f"{endpoint}/v3/maintenance/snapshot",
                json={},
                timeout=limit,
                **self._tls_of(endpoint),
            ) as response:
                if response.status >= 400:
                    detail = await _bounded(response, MAX_ANSWER, f"{endpoint}: snapshot")
                    raise EtcdError(f"{endpoint}: snapshot: {detail[:200]}")
                with partial.open("wb") as out:
                    pending = b""
                    async for piece in response.content.iter_chunked(1 << 16):
                        pending += piece
                        if len(pending) > MAX_SNAPSHOT_LINE:
                            raise EtcdError(
                                f"{endpoint}: snapshot: a line over {MAX_SNAPSHOT_LINE} bytes"
                            )
                        *lines, pending = pending.split(b"\n")
                        for line in lines:
                            size += _snapshot_line(line, out, endpoint)
                        if size > MAX_SNAPSHOT:
                            raise EtcdError(
                                f"{endpoint}: snapshot larger than {MAX_SNAPSHOT} bytes"
                            )
                    size += _snapshot_line(pending, out, endpoint)
        except (aiohttp.ClientError, TimeoutError) as error:
            partial.unlink(missing_ok=True)
            raise EtcdError(f"{endpoint}: snapshot: {error}") from error
        except EtcdError:
            partial.unlink(missing_ok=True)
            raise
        partial.rename(target)
        return size
