"""The Secret-copier of docs/any-kind.md beside the same operator written with kopf 1.45, in
one run on one cluster (issue #48's report): lines of code, idle RSS, the time to copy a
labelled Secret into 50 enabled namespaces, and the API requests each made for it.

Both copy a Secret labelled ``copier.example.com/replicate=true`` into every namespace
labelled ``copier.example.com/enabled=true`` (a namespace enabled later too), and remove
the copies when the source goes (a finalizer). appstack's is the page's module as written;
kopf's (:data:`KOPF_COPIER`) is the same behaviour as a kopf user writes it — handlers on
Secrets filtered by label, the official ``kubernetes`` client, kopf's own finalizer — run
with ``kopf run --standalone --all-namespaces``. Each runs under a ServiceAccount of its own
(cluster-admin: what kopf needs is not derived for it), in turn, on a quiet cluster:

* lines: non-blank lines that are not comments, of the operator's module;
* idle RSS: ``/proc/<pid>/status`` VmRSS 5 s after the operator is ready, with the 51
  namespaces and no source yet;
* copy time: from creating the source to the 50th copy listed;
* requests: writes by the operator's user in the API server's audit log over the run, and
  all requests (reads too) from the API server's ``apiserver_request_total`` over the copy,
  less the bench's own (counted by its client).

    python bench/secret_copier.py --kubeconfig "$(appstack cluster kubeconfig --name bench)"

kopf and the ``kubernetes`` client are installed into ``~/.cache/appstack/bench/kopf`` the
first time (PyPI). The figures in docs/performance.md ("A controller of any kind: the
Secret-copier beside kopf") are this script's output.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from appstack.runtime import NAMESPACE, SECRET, Client, NotFound, Resource
from appstack.sdk import binding, cluster_role
from appstack_testbed.audit import read_audit_events
from appstack_testbed.operators import token_kubeconfig

REPO = Path(__file__).resolve().parents[1]
KOPF_VERSION = "1.45.2"
KOPF_ENV = Path.home() / ".cache" / "appstack" / "bench" / f"kopf-{KOPF_VERSION}"
ENABLED = "copier.example.com/enabled"
REPLICATE = "copier.example.com/replicate"
COPY_OF = "copier.example.com/copy-of"
ACCOUNT = Resource("", "v1", "ServiceAccount", "serviceaccounts")
ROLE = Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False)
BINDING = Resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False
)
AGENT = "secret-copier-bench"

KOPF_COPIER = '''"""Copies labelled Secrets into every enabled namespace, with kopf."""

import kopf
import kubernetes

REPLICATE = "copier.example.com/replicate"
COPY_OF = "copier.example.com/copy-of"
ENABLED = "copier.example.com/enabled"
SOURCES = {REPLICATE: "true"}


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.persistence.finalizer = "copier.example.com/copies"
    kubernetes.config.load_kube_config()


def targets(source_namespace):
    api = kubernetes.client.CoreV1Api()
    found = api.list_namespace(label_selector=f"{ENABLED}=true").items
    return [n.metadata.name for n in found if n.metadata.name != source_namespace]


def copy_into(body, namespace):
    api = kubernetes.client.CoreV1Api()
    meta = body["metadata"]
    copy = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": meta["name"], "labels": {COPY_OF: meta["namespace"]}},
        "type": body.get("type", "Opaque"),
        "data": dict(body.get("data") or {}),
    }
    try:
        there = api.read_namespaced_secret(meta["name"], namespace)
    except kubernetes.client.ApiException as error:
        if error.status != 404:
            raise
        api.create_namespaced_secret(namespace, copy)
        return
    if (there.metadata.labels or {}).get(COPY_OF) != meta["namespace"]:
        kopf.warn(body, reason="CopyConflict", message=f"{namespace}/{meta['name']} exists")
        return
    api.replace_namespaced_secret(meta["name"], namespace, copy)


@kopf.on.resume("", "v1", "secrets", labels=SOURCES)
@kopf.on.create("", "v1", "secrets", labels=SOURCES)
@kopf.on.update("", "v1", "secrets", labels=SOURCES)
def copy(body, namespace, **_):
    for target in targets(namespace):
        copy_into(body, target)


@kopf.on.create("", "v1", "namespaces", labels={ENABLED: "true"})
@kopf.on.update("", "v1", "namespaces", labels={ENABLED: "true"})
def enabled(name, **_):
    api = kubernetes.client.CoreV1Api()
    for source in api.list_secret_for_all_namespaces(label_selector=f"{REPLICATE}=true").items:
        if source.metadata.namespace != name:
            copy_into(api.api_client.sanitize_for_serialization(source), name)


@kopf.on.delete("", "v1", "secrets", labels=SOURCES)
def remove(name, namespace, **_):
    api = kubernetes.client.CoreV1Api()
    copies = api.list_secret_for_all_namespaces(label_selector=f"{COPY_OF}={namespace}").items
    for copy in copies:
        if copy.metadata.name == name:
            api.delete_namespaced_secret(name, copy.metadata.namespace)
'''


def lines_of_code(text: str) -> int:
    """Non-blank lines that are not comments."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def appstack_copier() -> str:
    """docs/any-kind.md's ``# secret_copier.py`` blocks, as the page's test runs them."""
    sys.path.insert(0, str(REPO))
    from tests.e2e.test_tutorial import DOCS, tutorial_files  # noqa: PLC0415

    return tutorial_files((DOCS / "any-kind.md").read_text())["secret_copier.py"]


def kopf_python() -> Path:
    python = KOPF_ENV / "bin" / "python"
    if not python.exists():
        print(f"installing kopf {KOPF_VERSION} into {KOPF_ENV}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(KOPF_ENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"kopf=={KOPF_VERSION}", "kubernetes"],
            check=True,
        )
    return python


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def until(probe: Callable[[], Awaitable[Any]], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = await probe()
        except (NotFound, OSError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.05)


async def request_total(kubeconfig: Path) -> int:
    """The API server's ``apiserver_request_total``, summed over every label (read with
    kubectl: the metrics are text, not an object)."""
    text = await asyncio.to_thread(
        subprocess.run,
        ["kubectl", f"--kubeconfig={kubeconfig}", "get", "--raw", "/metrics"],
        capture_output=True,
        text=True,
        check=True,
    )
    total = 0.0
    for line in text.stdout.splitlines():
        if line.startswith("apiserver_request_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def own_requests(client: Client) -> int:
    """The bench's own requests so far (its client's counter)."""
    total = 0.0
    for family in client.metrics.registry.collect():
        if family.name == "rest_client_requests":
            total += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return int(total)


async def _prepare(client: Client, prefix: str, namespaces: int, work: Path) -> list[str]:
    """The enabled namespaces (the source's first) and a cluster-admin ServiceAccount; its
    kubeconfig in ``work``."""
    names = [f"{prefix}-src", *(f"{prefix}-{i}" for i in range(namespaces))]
    for ns in names:
        await client.create(NAMESPACE, {"metadata": {"name": ns, "labels": {ENABLED: "true"}}})
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": prefix, "namespace": names[0]}}  # fmt: skip
    await client.apply(ACCOUNT, account)
    everything = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    role = cluster_role(prefix, everything)
    await client.apply(ROLE, role)
    await client.apply(BINDING, binding(prefix, role, (names[0], prefix)))
    return names


async def _ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    def get() -> bool:
        with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310 - http://127.0.0.1
            return bool(answer.status == 200)

    async def probe() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"the operator exited: {log.read_text()[-2000:]}")
        return await asyncio.to_thread(get)

    await until(probe, 120, "ready")


async def _copies(client: Client, source_namespace: str) -> int:
    copies, _ = await client.list(SECRET, label_selector=f"{COPY_OF}={source_namespace}")
    return len(copies)


async def _copy_and_remove(
    client: Client, kubeconfig: Path, source_namespace: str, wanted: int
) -> dict[str, Any]:
    """Create the source, time its copies, count the requests; then delete it and wait for
    its copies to go."""
    before_all, before_own = await request_total(kubeconfig), own_requests(client)
    started = time.monotonic()
    await client.create(SECRET, {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db", "namespace": source_namespace, "labels": {REPLICATE: "true"}},
        "stringData": {"password": "s3cret"},
    })  # fmt: skip

    async def all_copied() -> bool:
        return await _copies(client, source_namespace) >= wanted

    await until(all_copied, 300, "every copy")
    seconds = time.monotonic() - started
    after_all, after_own = await request_total(kubeconfig), own_requests(client)
    await client.delete(SECRET, "db", source_namespace)

    async def removed() -> bool:
        return await _copies(client, source_namespace) == 0

    await until(removed, 300, "copies removed")
    return {
        "copy_seconds": round(seconds, 2),
        "requests_during_copy": (after_all - before_all) - (after_own - before_own),
    }


async def run_one(
    name: str, command: Callable[[Path, int], list[str]], source_code: str, args: argparse.Namespace
) -> dict[str, Any]:
    """One operator's figures (see the module docstring)."""
    kubeconfig = Path(args.kubeconfig)
    prefix = f"bench-{name}"
    work = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    async with await Client.connect(str(kubeconfig), user_agent=AGENT) as client:
        names = await _prepare(client, prefix, args.namespaces, work)
        token = token_kubeconfig(kubeconfig, names[0], prefix, work / "kubeconfig")
        module = work / f"{name}_copier.py"
        module.write_text(source_code)
        port, log = free_port(), work / "operator.log"
        started = datetime.datetime.now(datetime.timezone.utc)
        env = {**os.environ, "KUBECONFIG": str(token), "PYTHONPATH": str(work)}
        with log.open("wb") as out:
            proc = subprocess.Popen(
                command(module, port), cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            path = "readyz" if name == "appstack" else "healthz"
            await _ready(proc, f"http://127.0.0.1:{port}/{path}", log)
            await asyncio.sleep(5)  # settled: idle
            idle = rss_mib(proc.pid)
            figures = await _copy_and_remove(client, kubeconfig, names[0], args.namespaces)
            finished = datetime.datetime.now(datetime.timezone.utc)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        user = f"system:serviceaccount:{names[0]}:{prefix}"
        writes: dict[str, int] = {}
        for event in read_audit_events(kubeconfig.parent):
            if event.user == user and started <= event.received <= finished:
                writes[event.verb] = writes.get(event.verb, 0) + 1
        for ns in names:
            await client.delete(NAMESPACE, ns)

        async def namespaces_gone() -> bool:  # the next run must not see them, enabled
            for ns in names:
                try:
                    await client.get(NAMESPACE, ns)
                except NotFound:
                    continue
                return False
            return True

        await until(namespaces_gone, 600, "the run's namespaces deleted")
        await client.delete(BINDING, prefix)
        await client.delete(ROLE, prefix)
    return {
        "operator": name,
        "lines": lines_of_code(source_code),
        "idle_rss_mib": round(idle, 1),
        **figures,
        "writes_during_run": dict(sorted(writes.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True, help="the test bed cluster's kubeconfig")
    parser.add_argument("--namespaces", type=int, default=50)
    args = parser.parse_args()
    kopf = kopf_python()

    def appstack_command(module: Path, port: int) -> list[str]:
        return [sys.executable, str(module), "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{port}"]  # fmt: skip

    def kopf_command(module: Path, port: int) -> list[str]:
        return [str(kopf), "-m", "kopf", "run", "--standalone", "--all-namespaces", "--quiet",
                f"--liveness=http://127.0.0.1:{port}/healthz", str(module)]  # fmt: skip

    results = [
        asyncio.run(run_one("appstack", appstack_command, appstack_copier(), args)),
        asyncio.run(run_one("kopf", kopf_command, KOPF_COPIER, args)),
    ]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
