"""``/metrics`` of `appstack run` as a real process over HTTPS, and what scrapes may cost the
API server: a certificate from ``--metrics-cert-dir`` verified against its CA; a flood of
made-up tokens costs no more TokenReviews than the review budget (counted in the API
server's audit log, by the operator's user agent); ``--no-metrics-secure`` serves plain
HTTP. The self-signed default is scraped by test_operator_process.py."""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from appstack.runtime.client import Client
from appstack.runtime.reviewlimit import ReviewBudget
from appstack_testbed.audit import read_audit_events
from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually_sync
from tests.e2e.conftest import appstack_run, program
from tests.e2e.test_operator_process import (
    CLUSTER_ROLE_BINDING,
    _bearer,
    _free_port,
    _reader_token,
    operator_ready,
)
from tests.support.certs import serving_cert_files

# Serial (on a quiet machine): it counts the API server's reviews in the audit log, which every
# test writes to.
pytestmark = pytest.mark.serial

FLOOD = 300


def _cert_dir(directory: Path) -> Path:
    """A CA (ca.crt) and a serving certificate it signed for 127.0.0.1 and the metrics
    Service's name (tls.crt, tls.key), as cert-manager writes a Secret."""
    return serving_cert_files(
        directory, ["appstack-operator-metrics.appstack-system.svc"], ["127.0.0.1"]
    )


def _metric(text: str, name: str) -> float:
    """The sum of every sample of ``name`` in the exposition ``text``."""
    return sum(float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def _token_reviews(cluster: ClusterHandle, agent: str) -> int:
    events = read_audit_events(cluster.require_local().directory)
    return sum(e.resource == "tokenreviews" and agent in e.user_agent for e in events)


async def test_metrics_over_https_with_a_mounted_certificate_and_a_review_budget(  # noqa: PLR0917
    client: Client,
    namespace: str,
    operator_kubeconfig: Path,
    kube_cluster: ClusterHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    certs = _cert_dir(tmp_path / "certs")
    agent = f"metrics-{namespace}"
    monkeypatch.setenv("POD_NAME", agent)  # the user agent the audit log shows
    metrics, health = _free_port(), _free_port()
    argv = appstack_run(
        operator_kubeconfig,
        namespace,
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        f"--metrics-cert-dir={certs}",
    )
    verified = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    url = f"https://127.0.0.1:{metrics}/metrics"
    reader = _bearer(await _reader_token(client, namespace))
    try:
        with program(argv, tmp_path / "operator.log") as operator:
            connector = aiohttp.TCPConnector(ssl=verified, limit=50)
            async with aiohttp.ClientSession(connector=connector) as http:
                await operator_ready(http, operator, health)
                async with http.get(url) as r:
                    assert r.status == 401  # anonymous, over a verified TLS connection
                async with http.get(url, headers=reader) as r:
                    assert r.status == 200, operator.tail()
                with pytest.raises(aiohttp.ServerDisconnectedError):  # no plain HTTP
                    async with http.get(f"http://127.0.0.1:{metrics}/metrics") as r:
                        pytest.fail(f"answered plain HTTP: {r.status}")

                before = _token_reviews(kube_cluster, agent)
                start = time.monotonic()

                async def scrape(i: int) -> int:
                    async with http.get(url, headers=_bearer(f"made-up-{i}")) as r:
                        return r.status

                answers = Counter(await asyncio.gather(*(scrape(i) for i in range(FLOOD))))
                elapsed = time.monotonic() - start
                async with http.get(url, headers=reader) as r:  # remembered: no review
                    assert r.status == 200
                    text = await r.text()
            reviews = _metric(text, "appstack_metrics_auth_reviews_total")
            eventually_sync(
                lambda: _token_reviews(kube_cluster, agent) == reviews,
                timeout=10,
                what=f"{reviews:.0f} TokenReviews in the audit log",
            )
    finally:
        await client.delete(CLUSTER_ROLE_BINDING, f"scraper-{namespace}")

    flood_reviews = _token_reviews(kube_cluster, agent) - before
    assert set(answers) <= {401, 429}, answers
    assert answers[401] == flood_reviews  # each refusal after a review, the rest not asked
    assert answers[429] == _metric(text, "appstack_metrics_auth_throttled_total") > 0
    assert 1 <= flood_reviews <= ReviewBudget().allowed_in(elapsed), (flood_reviews, elapsed)


async def test_no_metrics_secure_serves_plain_http(
    namespace: str, operator_kubeconfig: Path, tmp_path: Path
) -> None:
    metrics, health = _free_port(), _free_port()
    argv = appstack_run(
        operator_kubeconfig,
        namespace,
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        "--no-metrics-secure",
    )
    with program(argv, tmp_path / "operator.log") as operator:
        async with aiohttp.ClientSession() as http:
            await operator_ready(http, operator, health)
            async with http.get(f"http://127.0.0.1:{metrics}/metrics") as r:
                assert r.status == 401  # plain HTTP, still guarded
