"""`appstack run` as a real process: flags, probes, metrics, leader election, JSON logs,
and a clean exit on SIGTERM that releases the Lease."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import aiohttp

from appstack.controllers.appservice import APP_SERVICE
from appstack.manifests import monitoring, rbac
from appstack.runtime.client import Client
from appstack.runtime.metricsauth import SUBJECT_ACCESS_REVIEW
from appstack.runtime.resources import LEASE, SERVICE_ACCOUNT, Resource
from appstack_testbed.waiting import eventually
from tests.e2e.conftest import Program, appstack_run, program, until

CLUSTER_ROLE_BINDING = Resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _token(client: Client, namespace: str, name: str = "nobody") -> str:
    await client.create(
        SERVICE_ACCOUNT,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        },
    )
    answer = await client.request(
        "POST",
        SERVICE_ACCOUNT.path(namespace, name, "token"),
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    return str(answer["status"]["token"])


async def _reader_token(client: Client, namespace: str) -> str:
    """A token of a ServiceAccount bound to the generated metrics-reader ClusterRole by the
    binding deploy/monitoring/ ships beside the ServiceMonitor (for the scraper's account:
    the ServiceMonitor sends the scraper's own token)."""
    token = await _token(client, namespace, "scraper")
    binding = monitoring.reader_binding(rbac.NAMESPACE, "scraper", namespace)
    assert binding["roleRef"]["name"] == rbac.metrics_reader()["metadata"]["name"]
    binding["metadata"]["name"] = f"scraper-{namespace}"  # one per test, not the install's
    await client.create(CLUSTER_ROLE_BINDING, binding)
    # The API server's RBAC authorizer learns of a new binding from its own informer: a
    # scrape sent at once may be refused (seen on 1.30 under load) and the refusal then
    # remembered by the operator for failure_ttl. Wait until the authorizer grants it.
    review = {
        "apiVersion": SUBJECT_ACCESS_REVIEW.api_version,
        "kind": "SubjectAccessReview",
        "metadata": {},
        "spec": {
            "user": f"system:serviceaccount:{namespace}:scraper",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"],
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }
    await eventually(
        lambda: client.create(SUBJECT_ACCESS_REVIEW, review),
        lambda answer: (answer.get("status") or {}).get("allowed"),
        timeout=30,
        what="the API server's authorizer to grant the scraper's new binding",
    )
    return token


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _standby_scrape(
    http: aiohttp.ClientSession, argv: list[str], reader: dict[str, str], tmp_path: Path
) -> str:
    """Start a second replica like ``argv`` (the first holds the Lease) on other ports and
    scrape its /metrics with ``reader``: the text."""
    metrics, health = _free_port(), _free_port()
    flags = {"--metrics-bind-address": metrics, "--health-probe-bind-address": health}
    standby_argv = [
        next((f"{f}=127.0.0.1:{p}" for f, p in flags.items() if a.startswith(f"{f}=")), a)
        for a in argv
    ]
    url = f"https://127.0.0.1:{metrics}/metrics"
    with program(standby_argv, tmp_path / "standby.log") as standby:

        async def scrape() -> str:
            assert standby.proc.poll() is None, standby.tail()
            async with http.get(url, headers=reader) as r:
                assert r.status == 200, (r.status, standby.tail())
                return await r.text()

        return await eventually(
            scrape,
            lambda _: True,
            timeout=30,
            what="the standby to answer",
            interval=0.2,
            retry_on=(aiohttp.ClientConnectionError,),
            diagnose=standby.tail,
        )


async def operator_ready(http: aiohttp.ClientSession, operator: Program, health: int) -> None:
    """Until the operator's ``/readyz`` answers 200 (failing at once if it exited)."""

    async def ready() -> bool:
        assert operator.proc.poll() is None, operator.tail()
        async with http.get(f"http://127.0.0.1:{health}/readyz") as r:
            return r.status == 200

    await eventually(
        ready,
        timeout=30,
        what="the operator ready",
        interval=0.2,
        retry_on=(aiohttp.ClientError,),
        diagnose=operator.tail,
    )


async def test_appstack_run_serves_probes_and_metrics_and_stops_cleanly_on_sigterm(
    client: Client, namespace: str, operator_kubeconfig: Path, tmp_path: Path
) -> None:
    metrics, health = _free_port(), _free_port()
    argv = appstack_run(
        operator_kubeconfig,
        namespace,
        "--leader-elect",
        # The Lease is granted only in the operator's own namespace (a Role).
        f"--leader-election-namespace={rbac.NAMESPACE}",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
        "--log-format=json",
    )
    with program(argv, tmp_path / "operator.log") as operator:
        try:
            unverified = aiohttp.TCPConnector(ssl=False)
            async with aiohttp.ClientSession(connector=unverified) as http:
                await operator_ready(http, operator, health)

                await client.create(
                    APP_SERVICE,
                    {
                        "apiVersion": "appstack.dev/v1",
                        "kind": "AppService",
                        "metadata": {"name": "proc", "namespace": namespace},
                        "spec": {"image": "nginx:1.27", "ports": [{"port": 80}]},
                    },
                )
                await until(
                    client,
                    APP_SERVICE,
                    "proc",
                    namespace,
                    lambda a: any(
                        c["type"] == "Ready" and c["status"] == "True"
                        for c in (a.get("status") or {}).get("conditions") or []
                    ),
                    60,
                    "the AppService to be Ready",
                )
                async with http.get(f"http://127.0.0.1:{health}/healthz") as r:
                    assert r.status == 200
                # HTTPS with the self-signed certificate made at start-up (unverifiable:
                # the ServiceMonitor's insecureSkipVerify), guarded as before.
                url = f"https://127.0.0.1:{metrics}/metrics"
                async with http.get(url) as r:
                    assert r.status == 401  # anonymous
                async with http.get(url, headers=_bearer(await _token(client, namespace))) as r:
                    assert r.status == 403  # a valid token, not allowed to read metrics
                reader = _bearer(await _reader_token(client, namespace))
                async with http.get(url, headers=reader) as r:
                    assert r.status == 200
                    text = await r.text()
                # A standby replica (the Lease is held) answers scrapes too (issue #28 P1.6:
                # its TokenReview used to be refused by its own write fence: 500).
                standby = await _standby_scrape(http, argv, reader, tmp_path)
                assert 'leader_election_master_status{name="appstack-operator"} 0.0' in standby
            assert (
                'controller_runtime_reconcile_total{controller="appservice",result="success"}'
                in text
            )
            assert 'leader_election_master_status{name="appstack-operator"} 1.0' in text
            lease = await client.get(LEASE, "appstack-operator", rbac.NAMESPACE)
            assert lease["spec"]["holderIdentity"]
        finally:
            await client.delete(CLUSTER_ROLE_BINDING, f"scraper-{namespace}")
    # Leaving program(): SIGTERM, and up to 30 s to exit.

    assert operator.proc.returncode == 0, operator.tail()
    lease = await client.get(LEASE, "appstack-operator", rbac.NAMESPACE)
    assert lease["spec"]["holderIdentity"] == ""  # released for an immediate successor
    lines = [json.loads(line) for line in operator.log.read_text().splitlines()]  # JSON only
    reconciles = [line for line in lines if line.get("controller") == "appservice"]
    assert reconciles
    assert all(
        line["object"] == f"{namespace}/proc" and line["reconcile_id"] for line in reconciles
    )
