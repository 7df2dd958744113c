"""The operator ``appstack init`` + ``appstack create api`` generates, beside the same operator
written with kopf (issue #36): idle memory, start-up and imports, in one run on one cluster.

The appstack side is seed 002's Guestbook exactly as scaffolded (``appstack init --domain
tutorial.kubebuilder.io --repo tutorial.kubebuilder.io/guestbook`` then ``create api --group
webapp --version v1 --kind Guestbook``; its CRD from ``appstack generate manifests``), run as
``python -m guestbook`` with its default flags (metrics over TLS with authentication, the
namespace gate on) in a Python like the image's (bench/idle.py's venv: Debian's python3, the
locked dependencies) with the project on ``PYTHONPATH``. The kopf side is
``bench/peers/kopf_guestbook.py`` (the same ConfigMap child, status and restoration) under
``kopf run --standalone`` in a venv made once from Debian's python3 and PyPI (kopf and the
official ``kubernetes`` client, pinned below).

Per repeat, the two one after another (order reversed every other repeat), each in a fresh
namespace holding ``--apps`` Guestbooks made before the operator starts:

* *start → Ready*: seconds from the process start until every Guestbook has
  ``status.observedGeneration == metadata.generation``;
* *idle*: ``--seconds`` later, VmRSS / RssAnon / VmHWM / threads and the CPU time spent since
  start (``/proc``);
* *writes*: with ``--cluster``, the operator's writes in its namespace from its start until
  the idle reading (the test bed's API server audit log: creates, updates, patches and
  deletes by any user agent but kubectl's; Events are not audited) — per Guestbook, that is
  what reaching Ready and staying idle costs the API server;
* *restore*: one child ConfigMap deleted, seconds until it is back;
* *imports*: a second start under ``python -X importtime`` until Ready: the modules imported
  and the sum of the top-level imports' cumulative time (every import of the run, the lazy
  ones too; -X importtime itself slows imports, equally for both).

    python bench/scaffolded.py --cluster bench [--apps 1,100] [--repeat 3] [--json F]
    python bench/scaffolded.py --kubeconfig PATH ...

The docs' table (docs/performance.md, "The scaffolded operator beside kopf") is its output.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from idle import _free_port, image_venv

ROOT = Path(__file__).resolve().parents[1]
KOPF_OPERATOR = ROOT / "bench" / "peers" / "kopf_guestbook.py"
KOPF_PINS = ("kopf==1.45.2", "kubernetes==37.0.2")
GROUP, PLURAL = "webapp.tutorial.kubebuilder.io", "guestbooks"
RESOURCE = f"{PLURAL}.{GROUP}"
GATE = "tutorial.kubebuilder.io/enabled=true"
TICKS = os.sysconf("SC_CLK_TCK")


def _run(*command: str | Path, cwd: Path | None = None, **kwargs: Any) -> str:
    argv = [str(part) for part in command]
    done = subprocess.run(argv, check=False, cwd=cwd, capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise subprocess.CalledProcessError(done.returncode, command, done.stdout, done.stderr)
    return str(done.stdout)


def scaffold(directory: Path) -> Path:
    """Seed 002's Guestbook, scaffolded and its config/ generated: the project's src/."""
    appstack = Path(sys.executable).with_name("appstack")
    directory.mkdir(parents=True)
    repo = "tutorial.kubebuilder.io/guestbook"
    _run(appstack, "init", "--domain", "tutorial.kubebuilder.io", "--repo", repo, cwd=directory)
    kind = ("--group", "webapp", "--version", "v1", "--kind", "Guestbook")
    _run(appstack, "create", "api", *kind, cwd=directory)
    _run(appstack, "generate", "manifests", cwd=directory)
    return directory


def kopf_venv(path: Path, base: str) -> Path:
    """Debian's python3 with kopf and the official client from PyPI (made once)."""
    python = path / "bin" / "python"
    if not python.exists():
        print(f"[scaffolded] making {path} ({', '.join(KOPF_PINS)})", file=sys.stderr)
        _run(base, "-m", "venv", "--without-pip", path)
        _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", *KOPF_PINS)
    return python


class Cluster:
    """kubectl against the bench's cluster."""

    def __init__(self, kubeconfig: str, kubectl: str) -> None:
        self.kubeconfig, self.kubectl = kubeconfig, kubectl

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        return _run(self.kubectl, f"--kubeconfig={self.kubeconfig}", *args, input=stdin)

    def guestbooks(self, namespace: str) -> list[dict[str, Any]]:
        items = json.loads(self("get", RESOURCE, "-n", namespace, "-o", "json"))["items"]
        return list(items)

    def all_ready(self, namespace: str, count: int) -> bool:
        done = [
            item
            for item in self.guestbooks(namespace)
            if (item.get("status") or {}).get("observedGeneration")
            == item["metadata"]["generation"]
        ]
        return len(done) == count


def _guestbooks(namespace: str, count: int) -> str:
    return "\n---\n".join(
        json.dumps({
            "apiVersion": f"{GROUP}/v1",
            "kind": "Guestbook",
            "metadata": {"name": f"guestbook-{i}", "namespace": namespace},
            "spec": {"foo": f"bar-{i}"},
        })
        for i in range(count)
    )  # fmt: skip


def _proc(pid: int) -> dict[str, float]:
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    with open(f"/proc/{pid}/stat") as stat:
        after_name = stat.read().rsplit(")", 1)[1].split()
    cpu = (int(after_name[11]) + int(after_name[12])) / TICKS  # utime + stime
    mib = {k: round(int(fields[k].split()[0]) / 1024, 1) for k in ("VmRSS", "RssAnon", "VmHWM")}
    return {**mib, "Threads": int(fields["Threads"]), "cpu_s": round(cpu, 2)}


def _importtime(stderr: str) -> dict[str, float]:
    rows = [line.split("|") for line in stderr.splitlines() if line.startswith("import time:")]
    rows = [row for row in rows if row[1].strip().isdigit()]  # not the header
    top = [int(row[1]) for row in rows if not row[2][1:].startswith(" ")]
    return {"modules": len(rows), "import_s": round(sum(top) / 1e6, 3)}


class Operator:
    """One of the two operators: how to start it in a namespace."""

    def __init__(self, name: str, python: Path, args: list[str], env: dict[str, str]) -> None:
        self.name, self.python, self.args, self.env = name, python, args, env

    def command(self, namespace: str, importtime: bool) -> list[str]:
        flags = ["-X", "importtime"] if importtime else []
        extra = [f"--namespace={namespace}"]
        if self.name == "appstack":
            extra += [
                f"--metrics-bind-address=127.0.0.1:{_free_port()}",
                f"--health-probe-bind-address=127.0.0.1:{_free_port()}",
                "--log-level=warning",
            ]
        return [str(self.python), *flags, *self.args, *extra]


def writes_since(audit_dir: Path | None, namespace: str, since: datetime.datetime) -> int | None:
    """The writes recorded in ``namespace`` since ``since`` by anything but kubectl."""
    if audit_dir is None:
        return None
    from appstack_testbed.audit import read_audit_events  # noqa: PLC0415

    return sum(
        1
        for event in read_audit_events(audit_dir, namespace=namespace)
        if event.received >= since and not event.user_agent.startswith("kubectl")
    )


def measure(
    operator: Operator,
    cluster: Cluster,
    apps: int,
    args: argparse.Namespace,
    audit_dir: Path | None = None,
) -> dict[str, Any]:
    namespace = f"bench-scaffold-{uuid.uuid4().hex[:6]}"
    cluster("create", "namespace", namespace)
    cluster("label", "namespace", namespace, GATE)
    result: dict[str, Any] = {"operator": operator.name, "apps": apps}
    try:
        cluster("apply", "-f", "-", stdin=_guestbooks(namespace, apps))
        for importtime in (False, True):
            with tempfile.TemporaryFile("w+") as stderr:
                started = time.monotonic()
                wall = datetime.datetime.now(datetime.timezone.utc)
                process = subprocess.Popen(
                    operator.command(namespace, importtime),
                    env=operator.env,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    text=True,
                )
                try:
                    while not cluster.all_ready(namespace, apps):
                        if process.poll() is not None:
                            stderr.seek(0)
                            raise SystemExit(f"{operator.name} exited: {stderr.read()[-2000:]}")
                        if time.monotonic() - started > args.timeout:
                            raise SystemExit(f"{operator.name}: not Ready in {args.timeout} s")
                        time.sleep(0.1)
                    ready = time.monotonic() - started
                    if importtime:
                        stderr.seek(0)
                        result.update(_importtime(stderr.read()))
                        continue
                    result["ready_s"] = round(ready, 2)
                    time.sleep(max(0.0, args.seconds - ready))
                    result.update(_proc(process.pid))
                    writes = writes_since(audit_dir, namespace, wall)
                    if writes is not None:
                        result["writes"] = writes
                    result["restore_s"] = _restore(cluster, namespace)
                finally:
                    process.terminate()
                    process.wait(60)
            if not importtime:  # the second start sees a namespace made Ready again
                cluster("delete", RESOURCE, "--all", "-n", namespace, "--wait=true")
                cluster("apply", "-f", "-", stdin=_guestbooks(namespace, apps))
    finally:
        cluster("delete", "namespace", namespace, "--wait=false")
    return result


def _restore(cluster: Cluster, namespace: str) -> float:
    name = "guestbook-0-guestbook"
    cluster("delete", "configmap", name, "-n", namespace, "--wait=true")
    started = time.monotonic()
    while time.monotonic() - started < 60:
        try:
            cluster("get", "configmap", name, "-n", namespace)
            return round(time.monotonic() - started, 2)
        except subprocess.CalledProcessError as err:
            if "NotFound" not in err.stderr:
                raise
            time.sleep(0.05)
    raise SystemExit(f"{name} was not restored in 60 s")


KEYS = ("ready_s", "VmRSS", "RssAnon", "VmHWM", "Threads", "cpu_s", "writes", "restore_s",
        "import_s", "modules")  # fmt: skip
LABELS = {
    "ready_s": "start → all Ready (s)",
    "VmRSS": "idle RSS (MiB)",
    "RssAnon": "of which anonymous (MiB)",
    "VmHWM": "peak RSS (MiB)",
    "Threads": "threads",
    "cpu_s": "CPU since start (s)",
    "writes": "API writes to Ready and idle",
    "restore_s": "deleted child back (s)",
    "import_s": "imports, -X importtime (s)",
    "modules": "modules imported",
}


def table(records: list[dict[str, Any]], sizes: list[int]) -> str:
    lines = [
        "| Guestbooks | measure | appstack (scaffolded) | kopf | appstack / kopf |",
        "|---:|---|---:|---:|---:|",
    ]
    for apps in sizes:
        for key in KEYS:
            values = {
                name: [
                    r[key]
                    for r in records
                    if r["operator"] == name and r["apps"] == apps and key in r
                ]
                for name in ("appstack", "kopf")
            }
            if not all(values.values()):  # e.g. writes, counted on the local cluster only
                continue
            ours, theirs = (statistics.median(v) for v in values.values())

            def cell(vs: list[float], median: float) -> str:
                spread = f" ({min(vs):g}-{max(vs):g})" if len(vs) > 1 else ""
                return f"{median:g}{spread}"

            ratio = f"{ours / theirs:.2f}x" if theirs else "—"
            lines.append(
                f"| {apps:,} | {LABELS[key]} | {cell(values['appstack'], ours)} "
                f"| {cell(values['kopf'], theirs)} | {ratio} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--cluster", help="start (or reuse) this local test bed")
    where.add_argument("--kubeconfig")
    parser.add_argument("--apps", default="1,100", help="Guestbooks per run, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="RSS this long after start")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--base-python", default="/usr/bin/python3")
    cache = Path.home() / ".cache/appstack"
    parser.add_argument("--venv", type=Path, default=cache / "bench-idle-venv")
    parser.add_argument("--kopf-venv", type=Path, default=cache / "bench-kopf-venv")
    parser.add_argument("--json", help="write the records here")
    args = parser.parse_args()

    kubectl = "kubectl"
    kubeconfig = args.kubeconfig
    audit_dir: Path | None = None
    if args.cluster:
        from appstack_testbed.cluster import LocalCluster  # noqa: PLC0415

        local = LocalCluster(args.cluster)
        local.up()
        kubeconfig, kubectl = str(local.kubeconfig), str(local.toolchain.binary("kubectl"))
        audit_dir = local.directory
    cluster = Cluster(kubeconfig, kubectl)

    work = Path(tempfile.mkdtemp(prefix="bench-scaffolded-"))
    project = scaffold(work / "guestbook")
    cluster("apply", "--server-side", "--force-conflicts", "-f", str(project / "config/crd/bases"))
    cluster("wait", "--for=condition=Established", f"crd/{RESOURCE}", "--timeout=60s")
    ours = image_venv(args.venv, args.base_python)
    _run(ours, "-m", "compileall", "-q", project / "src",
         env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})  # fmt: skip
    theirs = kopf_venv(args.kopf_venv, args.base_python)
    base_env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH")}
    base_env["KUBECONFIG"] = kubeconfig
    operators = [
        Operator(
            "appstack",
            ours,
            ["-m", "guestbook", f"--kubeconfig={kubeconfig}"],
            {**base_env, "PYTHONPATH": str(project / "src")},
        ),
        Operator(
            "kopf",
            theirs,
            ["-m", "kopf", "run", "--standalone", "--quiet", str(KOPF_OPERATOR)],
            base_env,
        ),
    ]
    sizes = [int(n) for n in args.apps.split(",")]
    records: list[dict[str, Any]] = []
    for repeat in range(args.repeat):
        for apps in sizes:
            for operator in operators if repeat % 2 == 0 else operators[::-1]:
                record = measure(operator, cluster, apps, args, audit_dir)
                print(json.dumps(record), file=sys.stderr, flush=True)
                records.append(record)
    versions = {
        "kopf": _run(theirs, "-c", "import kopf, kubernetes, aiohttp; "
                     "print(kopf.__version__, kubernetes.__version__, aiohttp.__version__)"),
        "python": _run(ours, "--version"),
    }  # fmt: skip
    load = os.getloadavg()
    print(f"load {load[0]:.1f}/{load[1]:.1f}, {os.cpu_count()} cores; kopf, kubernetes, "
          f"aiohttp: {versions['kopf'].strip()}; {versions['python'].strip()}")  # fmt: skip
    print(table(records, sizes))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"versions": versions, "records": records}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
