"""``make demo``: the operator running on the local cluster, as it would in production, and
the seed's examples running for real on its real node.

:func:`run`: the cluster up (a real node when root); the generated CRDs, RBAC and admission
policies installed; ``appstack run`` in the background with a token of its ServiceAccount
(so it has exactly the generated permissions); namespace ``default`` enabled for appstack
(``kubectl label namespace default appstack.dev/enabled=true``, the platform team's step);
``examples/appservice.yaml`` (the seed
operator's sample, unchanged) applied and Ready, and its nginx answering on NodePort 30002;
the ``uuc-token`` Secret the DataService example asks its user for, created as its comment
says; ``examples/dataservice.yaml`` (an AppStack of 12 members) applied, its members shown
as they come up in dependency order, and the web tier's answer — a request through web →
proxy → auth → the real MariaDB, with the credentials the operator generated — printed.
It ends with what runs and how to look at it. A failure ends with what is not Ready and
why, read from the objects' status (:class:`DemoFailed`), never a traceback.
The operator is a managed process of the cluster: ``appstack cluster down`` stops it too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from appstack.api.namespaces import ENABLED
from appstack.manifests import bundle, crds, rbac, workload
from appstack_testbed.build import BuildError
from appstack_testbed.cluster import LocalCluster
from appstack_testbed.process import ComponentError
from appstack_testbed.rootfs import ImageBuildError

OPERATOR = "appstack-operator"
Say = Callable[[str], None]
# The DataService web tier's NodePort (examples/dataservice.yaml) and a request that goes
# through every tier to the database: web (nginx) -> proxy -> auth -> MySQL.
WEB_NODE_PORT = 30160
THROUGH_THE_STACK = "/api/call/dataservice-auth:9081/"


class DemoFailed(RuntimeError):
    """What did not come up, and why (from the objects' status); the CLI prints it."""


def install(cluster: LocalCluster) -> Path:
    """Apply CRDs, RBAC and admission policies; return a kubeconfig with the operator's
    ServiceAccount token."""
    objects = [
        workload.namespace(),
        *crds.all_crds(),
        *bundle.permissions(),  # RBAC and the admission policies, as installed
    ]
    cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=appstack-demo",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(objects),
    )
    for crd in crds.all_crds():
        cluster.kubectl(
            "wait", "--for=condition=Established", "--timeout=30s", f"crd/{crd['metadata']['name']}"
        )
    token = cluster.kubectl(
        "create", "token", rbac.NAME, f"--namespace={rbac.NAMESPACE}", "--duration=24h"
    ).stdout.strip()
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": rbac.NAME, "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = rbac.NAME
    path = cluster.directory / "config" / "operator.kubeconfig"
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(config))
    return path


def start_operator(cluster: LocalCluster, kubeconfig: Path) -> int:
    proc = cluster.process(OPERATOR)
    if proc.running():
        proc.stop()  # pick up new code and a fresh token
    return proc.start(
        [
            sys.executable,
            "-m",
            "appstack",
            "run",
            f"--kubeconfig={kubeconfig}",
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
            "--log-format=json",
        ]
    )


def _status(cluster: LocalCluster, ref: str) -> dict[str, Any]:
    out = cluster.kubectl("get", ref, "-o", "json", check=False)
    return (json.loads(out.stdout).get("status") or {}) if out.returncode == 0 else {}


def _not_ready(conditions: Any) -> str:
    for c in conditions if isinstance(conditions, list) else []:
        if c.get("type") == "Ready" and c.get("status") != "True":
            return f"{c.get('reason')}: {c.get('message')}"
    return "no Ready condition yet"


def wait_app(cluster: LocalCluster, name: str, say: Say, timeout: float = 180.0) -> None:
    """Until the AppService is Ready; else :class:`DemoFailed` with its Ready condition."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = _status(cluster, f"appservice/{name}")
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        ):
            return
        time.sleep(0.5)
    status = _status(cluster, f"appservice/{name}")
    raise DemoFailed(
        f"AppService {name} was not Ready within {timeout:.0f}s: "
        f"{_not_ready(status.get('conditions'))}\n"
        + cluster.kubectl("get", "pods", "-o", "wide", check=False).stdout
    )


def watch_stack(cluster: LocalCluster, name: str, say: Say, timeout: float = 300.0) -> None:
    """Print the stack's members whenever their states change, until it is Ready; else
    :class:`DemoFailed` naming every member that is not, with its message."""
    last = ""
    deadline = time.monotonic() + timeout
    members: list[dict[str, str]] = []
    while time.monotonic() < deadline:
        status = _status(cluster, f"appstack/{name}")
        members = status.get("members") or []
        line = "  ".join(f"{m['name']}={m['state']}" for m in members)
        if line and line != last:
            say(f"[{status.get('readyMembers', '?')}] {line}")
            last = line
        if members and all(m["state"] == "Ready" for m in members):
            return
        time.sleep(0.5)
    status = _status(cluster, f"appstack/{name}")
    lines = [
        f"  {m['name']}: {m['state']} — {m.get('message', '')}"
        for m in members
        if m["state"] != "Ready"
    ]
    raise DemoFailed(
        f"AppStack {name} was not Ready within {timeout:.0f}s "
        f"({_not_ready(status.get('conditions'))}); members not Ready:\n" + "\n".join(lines)
    )


def http_get(url: str, timeout: float = 60.0) -> str:
    """The body of ``url`` once it answers 200 (a Service's endpoints may lag a moment)."""
    deadline = time.monotonic() + timeout
    error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - the node
                return str(response.read().decode())
        except (urllib.error.URLError, OSError) as failure:
            error = failure
            time.sleep(1)
    raise DemoFailed(f"GET {url} did not answer within {timeout:.0f}s: {error}")


def _show(cluster: LocalCluster, say: Say, *args: str) -> None:
    say(f"\n$ kubectl {' '.join(args)}")
    say(cluster.kubectl(*args).stdout.rstrip())


def run(cluster: LocalCluster, example: Path, say: Say, stack_example: Path | None = None) -> None:
    """The demo (see the module docstring); :class:`DemoFailed` when something is not up."""
    started = time.monotonic()
    try:
        cluster.up()
    except (
        ComponentError,
        BuildError,
        ImageBuildError,
        OSError,
        subprocess.SubprocessError,
    ) as error:
        # a build, a tool or a process of the test bed: said in one line, not a traceback
        raise DemoFailed(
            f"the local cluster did not start: {type(error).__name__}: {error}"
        ) from error
    _show(cluster, say, "get", "nodes", "-o", "wide")
    real = cluster.real()
    node = real.nodes()[0].node.address if real is not None else None
    kubeconfig = install(cluster)
    pid = start_operator(cluster, kubeconfig)
    say(
        f"\noperator running (pid {pid}) as ServiceAccount {rbac.NAMESPACE}/{rbac.NAME}; "
        f"log: {cluster.process(OPERATOR).log_file}"
    )
    # the platform team's step: the operator acts only in namespaces opted in
    _show(cluster, say, "label", "namespace", "default", f"{ENABLED}=true", "--overwrite")
    say(f"\n$ kubectl apply -f {example}")
    say(cluster.kubectl("apply", "-f", str(example)).stdout.rstrip())
    name = yaml.safe_load(example.read_text())["metadata"]["name"]
    wait_app(cluster, name, say)
    _show(cluster, say, "get", "appservice,deployment,service,pods", "-o", "wide")
    _show(cluster, say, "events", f"--for=appservice/{name}")
    answers: list[str] = []
    if node is not None:
        url = f"http://{node}:30002/"
        page = http_get(url)
        title = page.split("<title>", 1)[-1].split("</title>", 1)[0] if "<title>" in page else ""
        say(f"\n$ curl {url}\n{page.strip()[:400]}")
        answers.append(f"  {url}  ({title or 'answers'}: nginx in a real container)")
    if stack_example is not None:
        run_stack(cluster, stack_example, say, node, answers)
    say(summary(cluster, name, answers, time.monotonic() - started))


def run_stack(
    cluster: LocalCluster, stack_example: Path, say: Say, node: str | None, answers: list[str]
) -> None:
    docs = [d for d in yaml.safe_load_all(stack_example.read_text()) if d]
    stack = next(d for d in docs if d.get("kind") == "AppStack")["metadata"]["name"]
    # The example's own instruction to its user (its comment and the README).
    secret = ["create", "secret", "generic", "uuc-token", "--from-literal=token=demo-token"]
    if cluster.kubectl("get", "secret", "uuc-token", check=False).returncode != 0:
        say(f"\n$ kubectl {' '.join(secret)}")
        say(cluster.kubectl(*secret).stdout.rstrip())
    say(f"\n$ kubectl apply -f {stack_example}")
    say(cluster.kubectl("apply", "-f", str(stack_example)).stdout.rstrip())
    say("members as they start (each waits until what it depends on is ready):")
    watch_stack(cluster, stack, say)
    _show(cluster, say, "get", "appstack")
    _show(cluster, say, "get", "statefulset,deployment,pods", "-o", "wide")
    if node is not None:
        url = f"http://{node}:{WEB_NODE_PORT}{THROUGH_THE_STACK}"
        answer = http_get(url)
        say(f"\n$ curl {url}   # web -> proxy -> auth -> MySQL\n{answer.strip()}")
        mysql = json.loads(answer)["answer"]["connections"].get("mysql", {})
        if "error" in mysql:
            raise DemoFailed(f"auth could not use MySQL with the injected settings: {mysql}")
        answers.append(
            f"  {url}  (web -> proxy -> auth -> MySQL {mysql.get('server', '')} as "
            f"{mysql.get('user', '')})"
        )


def summary(cluster: LocalCluster, app: str, answers: list[str], seconds: float) -> str:
    kubectl = cluster.toolchain.binary("kubectl")
    lines = [
        "",
        f"Demo done in {seconds:.0f}s. Running on the local cluster {cluster.name!r}:",
        f"  the operator (log: {cluster.process(OPERATOR).log_file})",
        f"  AppService {app} (examples/appservice.yaml) and AppStack dataservice "
        "(examples/dataservice.yaml), their pods in real containers",
    ]
    if answers:
        lines += ["Answering now:", *answers]
    lines += [
        "Look at it:",
        f"  export KUBECONFIG={cluster.kubeconfig}   (kubectl: {kubectl})",
        "  kubectl get appstack-all",
        f"  kubectl get pods -o wide; kubectl logs deploy/{app}",
        f"  kubectl scale appservice/{app} --replicas=3",
        "  appstack status dataservice",
        "Stop everything with: make demo-down  (appstack cluster down)",
    ]
    return "\n".join(lines)
