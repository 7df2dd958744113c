"""The idle operator's memory (issue #26): RSS after each import, and of ``appstack run`` idle.

Both are measured in fresh processes of a Python that holds only what the image holds: by
default a venv made (once) in ``--venv`` from Debian's ``python3`` and ``requirements.lock``
alone, as the image's Containerfile makes it, with this source tree installed editable (so
what only the development venv has, e.g. ``rich`` and ``colorama`` which structlog would
import, is not charged to the operator).

* imports: the modules ``appstack run`` imports, in the order it imports them, one step at a
  time in one process; RSS (``/proc/self/status``) after each step;
* idle (with ``--kubeconfig``): ``appstack run`` with default flags but the addresses (one
  empty watched namespace, made here; metrics over TLS with the self-signed certificate,
  metrics auth on), RSS ``--seconds`` after start, split into anonymous and file-backed
  memory, with its threads and sockets.

    python bench/idle.py --kubeconfig "$(appstack cluster kubeconfig --name NAME)" [--repeat 3]
    python bench/idle.py --env MALLOC_ARENA_MAX=2 --python-flag=-OO ...   # a variant

The docs' table (docs/performance.md, "Idle process") is this script's output.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# (label, modules imported in that step): the order ``appstack run`` imports them in.
STEPS: list[tuple[str, list[str]]] = [
    ("the interpreter", []),
    ("ssl", ["ssl"]),
    ("asyncio", ["asyncio"]),
    ("click, appstack.cli", ["click", "appstack.cli"]),
    (
        "aiohttp client, multidict, yarl (as appstack.sdk.process imports it)",
        ["appstack.sdk.process:import_aiohttp"],
    ),
    ("aiohttp.web", ["aiohttp.web"]),
    ("structlog", ["structlog"]),
    ("prometheus-client", ["prometheus_client"]),
    ("pydantic", ["pydantic"]),
    ("the first kind's model (BaseModel's machinery)", ["appstack.api.appservice"]),
    ("appstack.runtime", ["appstack.runtime.manager", "appstack.runtime.client"]),
    ("the client's transport and kubeconfig loader", ["appstack.runtime.transport"]),
    ("the controllers and kinds", ["appstack.controllers.registry"]),
    ("appstack.operator", ["appstack.operator"]),
]

# One argument per step, its modules comma-separated (``module:function``: imported, then
# the function called); nothing imported but the steps.
_IMPORTS = """
import sys
def rss():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmRSS:")) / 1024
for step in sys.argv[1:]:
    before = len(sys.modules)
    for module in filter(None, step.split(",")):
        name, _, function = module.partition(":")
        __import__(name)
        if function:
            getattr(sys.modules[name], function)()
    print(round(rss(), 2), len(sys.modules) - before, flush=True)
"""


def image_venv(path: Path, base: str) -> Path:
    """A venv like the image's: Debian's python3, the locked dependencies, this tree."""
    python = path / "bin" / "python"
    if not python.exists():
        subprocess.run([base, "-m", "venv", "--without-pip", str(path)], check=True)
        pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
        subprocess.run(
            [*pip, "--require-hashes", "-r", str(ROOT / "requirements.lock")], check=True
        )
        subprocess.run([*pip, "-e", str(ROOT)], check=True)
    # the image's wheel install compiles every module: without .pyc files (the development
    # environment sets PYTHONDONTWRITEBYTECODE) each start would compile ours, +0.9 MiB
    compile_tree = [str(python), "-m", "compileall", "-q", str(ROOT / "src")]
    subprocess.run(compile_tree, check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
    return python


def environment(pairs: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(pair.split("=", 1) for pair in pairs)  # type: ignore[misc]
    return env


def imports(python: Path, flags: list[str], env: dict[str, str]) -> list[list[Any]]:
    out = subprocess.run(
        [str(python), *flags, "-c", _IMPORTS, *(",".join(modules) for _, modules in STEPS)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = [line.split() for line in out.splitlines()]
    return [
        [label, float(rss), int(count)]
        for (label, _), (rss, count) in zip(STEPS, rows, strict=True)
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    keys = ("VmRSS", "RssAnon", "RssFile", "VmHWM", "Threads")
    return {k: int(fields[k].split()[0]) for k in keys}


def _sockets(pid: int) -> int:
    fds = Path(f"/proc/{pid}/fd")
    return sum(1 for fd in fds.iterdir() if os.readlink(fd).startswith("socket:"))


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _metrics_tls(port: int) -> bool:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=1) as raw,
            context.wrap_socket(raw),
        ):
            return True
    except OSError:
        return False


def idle(
    python: Path, flags: list[str], env: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    metrics, health = _free_port(), _free_port()
    started = time.monotonic()
    operator = subprocess.Popen(
        [
            str(python),
            *flags,
            "-c",
            "import sys; from appstack.cli import main; sys.exit(main())",
            "run",
            f"--kubeconfig={args.kubeconfig}",
            f"--namespace={args.namespace}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            f"--health-probe-bind-address=127.0.0.1:{health}",
            "--log-level=warning",
        ],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not (_ready(health) and _metrics_tls(metrics)):
            if operator.poll() is not None or time.monotonic() - started > args.seconds:
                raise SystemExit(f"the operator did not become ready (exit {operator.poll()})")
            time.sleep(0.2)
        ready = time.monotonic() - started
        time.sleep(max(0.0, args.seconds - ready))
        status = _status(operator.pid)
        sockets = _sockets(operator.pid)
    finally:
        operator.terminate()
        operator.wait(30)
    mib = {k: round(v / 1024, 1) for k, v in status.items() if k != "Threads"}
    return {**mib, "Threads": status["Threads"], "sockets": sockets, "ready_s": round(ready, 2)}


def _namespace(kubeconfig: str, name: str, verb: str) -> None:
    subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", verb, "namespace", name],
        check=True,
        capture_output=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", help="measure the idle operator on this cluster too")
    parser.add_argument(
        "--venv", default=Path.home() / ".cache/appstack/bench-idle-venv", type=Path
    )
    parser.add_argument(
        "--base-python",
        default="/usr/bin/python3",
        help="the Python --venv is made from (the image's: Debian 12's python3)",
    )
    parser.add_argument("--python", type=Path, help="this Python instead of --venv's")
    parser.add_argument("--no-imports", action="store_true", help="measure the idle process only")
    parser.add_argument("--python-flag", action="append", default=[], help="e.g. -OO")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for both")
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    python = args.python or image_venv(args.venv, args.base_python)
    env = environment(args.env)
    result: dict[str, Any] = {"flags": args.python_flag, "env": args.env}
    runs = (
        []
        if args.no_imports
        else [imports(python, args.python_flag, env) for _ in range(args.repeat)]
    )
    result["imports"] = [
        [label, round(statistics.median(run[i][1] for run in runs), 1), count]
        for i, (label, _, count) in enumerate(runs[0] if runs else [])
    ]
    previous = 0.0
    print(f"{'step':<50}{'+MiB':>7}{'RSS MiB':>9}{'modules':>9}")
    for label, rss, count in result["imports"]:
        print(f"{label:<50}{rss - previous:>7.1f}{rss:>9.1f}{count:>9}")
        previous = rss
    if args.kubeconfig:
        args.namespace = f"bench-idle-{uuid.uuid4().hex[:6]}"
        _namespace(args.kubeconfig, args.namespace, "create")
        try:
            idles = [idle(python, args.python_flag, env, args) for _ in range(args.repeat)]
        finally:
            _namespace(args.kubeconfig, args.namespace, "delete")
        result["idle"] = idles
        for run in idles:
            print("idle:", json.dumps(run))
        median = statistics.median(run["VmRSS"] for run in idles)
        print(f"idle RSS after {args.seconds:.0f} s, median of {len(idles)}: {median} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
