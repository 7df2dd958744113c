"""The webhook serving certificate the replicas share through a Secret
(sdk/kit/webhookcert.py), against the in-memory API server: made once (a second replica's
create refused with 409 reads the first's), renewed a third of its lifetime before it
ends — by one replica, its write conditioned on what it read — with the old certificate
kept in ``ca.crt`` while it is valid; a Secret that says nothing usable is renewed."""

from __future__ import annotations

import asyncio
import base64
import datetime
import itertools

from appstack.runtime import NAMESPACE, SECRET, FakeApiServer
from appstack.runtime.client import Client
from appstack.runtime.servingcert import IssuedCertificate
from appstack.sdk.kit.webhookcert import SharedCertificate, Stored, due

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
DAY = datetime.timedelta(days=1)
COUNT = itertools.count(1)


def _fake_make(
    names: list[str], validity: float | None, at: datetime.datetime = T0
) -> IssuedCertificate:
    n = next(COUNT)
    lasts = datetime.timedelta(seconds=validity or 90 * 86400)
    return IssuedCertificate(f"CERT{n}:{names[0]}\n".encode(), f"KEY{n}\n".encode(), at, at + lasts)


async def _client() -> Client:
    client = Client(FakeApiServer())
    await client.create(NAMESPACE, {"metadata": {"name": "op-system"}})
    return client


def _shared(client: Client, at: datetime.datetime = T0) -> SharedCertificate:
    return SharedCertificate(
        client,
        "op-webhook-server-cert",
        "op-system",
        ["op-webhook-service.op-system.svc"],
        domain="op.example.com",
        make=lambda names, validity: _fake_make(names, validity, at),
        now=lambda: at,
    )


def test_a_certificate_is_due_a_third_of_its_lifetime_before_it_ends() -> None:
    stored = Stored(b"C", b"K", b"C", T0, T0 + 90 * DAY, "1")
    assert not due(stored, T0 + 59 * DAY)
    assert due(stored, T0 + 60 * DAY)
    assert due(Stored(b"C", b"K", b"C", None, None, "1"), T0)  # validity unknown
    assert due(Stored(b"", b"K", b"C", T0, T0 + 90 * DAY, "1"), T0)  # no certificate


async def test_the_first_replica_creates_it_and_the_others_read_it() -> None:
    client = await _client()
    first = await _shared(client).obtain()
    again = await _shared(client).obtain()
    assert first == again
    secret = await client.get(SECRET, "op-webhook-server-cert", "op-system")
    assert secret["type"] == "kubernetes.io/tls"
    assert base64.b64decode(secret["data"]["ca.crt"]) == first.cert
    notes = secret["metadata"]["annotations"]
    assert notes["op.example.com/webhook-cert-not-after"] == (T0 + 90 * DAY).isoformat()


async def test_a_create_that_another_replica_won_reads_the_winners() -> None:
    client = await _client()
    loser = _shared(client)
    winner = _shared(client)

    def make_while_the_other_wins(names: list[str], validity: float | None) -> IssuedCertificate:
        mine = _fake_make(names, validity)
        theirs = _fake_make(names, validity)
        secret = winner._secret(theirs, theirs.cert)
        # the other replica's create lands between our read and our create
        asyncio.run_coroutine_threadsafe(client.create(SECRET, secret), LOOP).result()
        return mine

    LOOP = asyncio.get_running_loop()
    loser.make = make_while_the_other_wins
    got = await loser.obtain()
    assert got == await winner.read()
    assert got.cert.startswith(b"CERT")


async def test_a_due_certificate_is_renewed_once_the_old_kept_in_the_bundle() -> None:
    client = await _client()
    old = await _shared(client).obtain()
    assert await _shared(client, T0 + 10 * DAY).refresh() == old  # not due: as it is
    late = T0 + 70 * DAY
    one, other = _shared(client, late), _shared(client, late)
    renewed = await one.refresh()
    assert renewed.cert != old.cert
    assert renewed.ca == renewed.cert + old.cert  # both trusted during the rotation
    # another replica that read the old Secret before the renewal loses its write
    reads = [old]
    fresh = other.read
    other.read = lambda: _stale(reads.pop()) if reads else fresh()  # type: ignore[method-assign]
    assert (await other.refresh()).cert == renewed.cert
    # after the old one ended, only the new is trusted
    expired = await _shared(client, T0 + 200 * DAY).refresh()
    assert expired.ca == expired.cert


async def _stale(stored: Stored) -> Stored:
    return stored


async def test_a_secret_without_a_certificate_is_renewed() -> None:
    client = await _client()
    await client.create(
        SECRET,
        {"metadata": {"name": "op-webhook-server-cert", "namespace": "op-system"}, "data": {}},
    )
    fixed = await _shared(client).obtain()  # what a replica starting finds: renewed
    assert fixed.cert.startswith(b"CERT")
    assert fixed.not_after is not None
    assert await _shared(client).obtain() == fixed
