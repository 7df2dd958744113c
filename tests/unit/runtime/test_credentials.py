"""The credentials' bookkeeping (runtime/credentials.py): a 401 re-reads a rotated token
file and the request is retried once, and rejections are timed until a request is accepted.
Against a real API server: tests/e2e/test_credentials.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from appstack.runtime.credentials import Credentials, token_file
from tests.support.scripted_transport import scripted_client


async def test_a_401_re_reads_a_rotated_token_file_and_retries_once(tmp_path: Path) -> None:
    client, transport = scripted_client()
    path = tmp_path / "token"
    path.write_text("old\n")

    class Configuration:
        def __init__(self) -> None:
            self.api_key = {"BearerToken": "Bearer old"}

    configuration = Configuration()
    client.credentials = Credentials.install(configuration, token_file(str(path)))
    path.write_text("new\n")
    transport.answer(401, {"kind": "Status", "code": 401}).answer(200, {"ok": True})
    assert await client.request("GET", "/api") == {"ok": True}
    assert configuration.api_key["BearerToken"] == "Bearer new"
    assert client.credentials.rejected_for() == 0  # accepted again
    transport.answer(401, {"kind": "Status", "code": 401})
    with pytest.raises(Exception, match="401"):  # same token: no second retry
        await client.request("GET", "/api")


def test_rejections_are_timed_until_a_request_is_accepted() -> None:
    now = [100.0]
    credentials = Credentials(clock=lambda: now[0])
    credentials.observe("PATCH", 403)  # a write forbidden by RBAC is not a credentials problem
    assert credentials.rejected_for() == 0
    credentials.observe("GET", 403)
    now[0] += 5
    credentials.observe("PATCH", 401)
    assert credentials.rejected_for() == 5
    credentials.observe("GET", 404)
    assert credentials.rejected_for() == 0
