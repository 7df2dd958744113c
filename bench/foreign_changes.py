"""What a tenant's changes to objects that are not the operator's cost it (issue #46, item
6): the fifth security review measured 88 ms of the operator's one event loop per change of
a ConfigMap carrying 1.3 MB of labels. Since then a user's ConfigMaps are watched only in
enabled namespaces, as key and version, and ours only as metadata outside them.

On a running cluster with appstack's CRDs installed (``kubectl apply --server-side -f
deploy/crds/``), ``appstack run`` (default flags but the addresses, the admin kubeconfig)
runs beside two namespaces: one enabled (``appstack.dev/enabled=true``), one not. In each,
a ConfigMap with ``--labels`` labels of 63 characters (16,000: ≈ 1.3 MB, the review's) is
created and left to settle, then changed ``--changes`` times (one label's value each time,
as a tenant with ``edit`` may); the operator's CPU time (utime + stime,
``/proc/<pid>/stat``) is read before the first change and after the last one has settled;
the same wall time idle is the baseline. Prints ms of the operator's CPU per change, in
each namespace, idle subtracted.

    python bench/foreign_changes.py --kubeconfig "$(appstack cluster kubeconfig)" [--changes 40]

The figures in docs/reliability.md ("A tenant's objects and the operator's CPU") are this
script's output.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
ENABLED = "appstack.dev/enabled"


def _kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _configmap(namespace: str, labels: int, generation: int) -> str:
    values = {f"k{i}": f"{generation:03d}" + "v" * 60 for i in range(labels)}
    values["changed"] = str(generation)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ballast", "namespace": namespace, "labels": values},
        "data": {"note": "a tenant's"},
    }
    return json.dumps(body)


def _create(kubeconfig: str, namespace: str, labels: int) -> None:
    body = _configmap(namespace, labels, 0)
    _kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=body)


def _changes(kubeconfig: str, namespace: str, count: int) -> None:
    for generation in range(1, count + 1):
        patch = json.dumps({"metadata": {"labels": {"changed": str(generation)}}})
        _kubectl(kubeconfig, "-n", namespace, "patch", "configmap", "ballast", "-p", patch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--changes", type=int, default=40)
    parser.add_argument("--labels", type=int, default=16_000)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after the last")
    args = parser.parse_args()
    suffix = uuid.uuid4().hex[:6]
    namespaces = {"enabled": f"open-{suffix}", "not enabled": f"closed-{suffix}"}
    for which, name in namespaces.items():
        _kubectl(args.kubeconfig, "create", "namespace", name)
        if which == "enabled":
            _kubectl(args.kubeconfig, "label", "namespace", name, f"{ENABLED}=true")
    health = _free_port()
    operator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "appstack",
            "run",
            f"--kubeconfig={args.kubeconfig}",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{health}",
            "--log-level=warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not _ready(health):
            if time.monotonic() > deadline or operator.poll() is not None:
                raise SystemExit("the operator did not get ready")
            time.sleep(0.2)
        time.sleep(args.settle)
        results = {}
        for which, name in namespaces.items():
            _create(args.kubeconfig, name, args.labels)
            time.sleep(args.settle)
            before, started = _cpu_seconds(operator.pid), time.monotonic()
            _changes(args.kubeconfig, name, args.changes)
            time.sleep(args.settle)
            spent, wall = _cpu_seconds(operator.pid) - before, time.monotonic() - started
            results[which] = (spent, wall)
        before = _cpu_seconds(operator.pid)
        idle_wall = max(wall for _, wall in results.values())
        time.sleep(idle_wall)
        idle_rate = (_cpu_seconds(operator.pid) - before) / idle_wall
        print(f"{args.changes} changes of a ConfigMap with {args.labels} labels of 63 characters")
        print(f"idle: {idle_rate * 1000:.1f} ms of CPU per second")
        for which, (spent, wall) in results.items():
            per_change = (spent - idle_rate * wall) / args.changes * 1000
            print(
                f"{which}: {spent:.2f} s CPU over {wall:.1f} s; "
                f"{per_change:.2f} ms per change, idle subtracted"
            )
    finally:
        operator.terminate()
        operator.wait(timeout=60)
        for name in namespaces.values():
            _kubectl(args.kubeconfig, "delete", "namespace", name, "--wait=false")


if __name__ == "__main__":
    main()
