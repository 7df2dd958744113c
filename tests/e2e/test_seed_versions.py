"""Seed 000's path from v1alpha1 to v1 in a scaffolded project (issue #49), as the section
"Seed 000: from v1alpha1 to v1, in a scaffolded project" of docs/versions.md shows it: its
blocks run in order, against this session's control plane — the shell blocks as they stand
(``shop`` made a namespace of this test's own, ``make run`` in the background on free
ports), each Python block an edit of the file its first line names (its classes,
functions and assignments replace the file's of the same name, its imports are added),
each YAML block the file its first line names. Between the blocks the test checks what the
page says: the object created at v1alpha1 reconciled; ``create api --storage`` leaving the
edited files byte for byte; the object read, written back and patched at both versions
with the same data through the conversion webhook of ``make run``; the controller
reconciling the hub; the storage migrated by the operator (``storedVersions`` ``[v1]``);
v1alpha1 unserved, then removed, the objects still read and reconciled at v1.

The project's ``make`` runs on this checkout's virtual environment (a directory whose
``bin`` and ``lib`` are the checkout's ``.venv``'s, stamped as ``make venv`` leaves it), so
that nothing is installed: the test stays within its minute.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from appstack_testbed.pytest_plugin import ClusterHandle
from appstack_testbed.waiting import eventually_sync
from tests.doc_blocks import Fenced, fenced
from tests.e2e.test_scaffold import _free_port, _ok, _sh
from tests.support.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "versions.md"
SECTION = "## Seed 000: from v1alpha1 to v1, in a scaffolded project"
CRD = "appservices.app.example.com"
V1 = "appservices.v1.app.example.com"
V1ALPHA1 = "appservices.v1alpha1.app.example.com"
PORTS = [{"port": 80, "targetPort": 80, "nodePort": 30002, "protocol": "TCP"}]  # its default


def section_blocks() -> list[Fenced]:
    """The fenced blocks of the section, in order."""
    lines = PAGE.read_text().splitlines()
    start = lines.index(SECTION) + 1
    end = next((i + 1 for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [b for b in fenced(PAGE) if start < b.line < end]


def _span(node: ast.stmt) -> tuple[int, int]:
    """A top-level statement's lines (1-based, inclusive), its decorators included."""
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)])
    return first, node.end_lineno or node.lineno


def _named(node: ast.stmt) -> str | None:
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def edit(project: Path, block: Fenced) -> Path:
    """The file the block's first line names, as the section says: a YAML block is the
    whole file; a Python block's definitions replace the file's of the same name, its
    imports are added below ``from __future__ import annotations``."""
    first, *body = block.lines
    path = project / first.removeprefix("#").strip()
    if block.language == "yaml":
        path.write_text("\n".join(body).strip("\n") + "\n")
        return path
    source = "\n".join(body)
    source_lines = source.splitlines()
    text = path.read_text()
    for node in ast.parse(source).body:
        start, end = _span(node)
        snippet = "\n".join(source_lines[start - 1 : end])
        if isinstance(node, ast.Import | ast.ImportFrom):
            if snippet not in text:
                future = "from __future__ import annotations\n"
                text = text.replace(future, f"{future}\n{snippet}\n", 1)
            continue
        name = _named(node)
        found = [n for n in ast.parse(text).body if name is not None and _named(n) == name]
        assert len(found) == 1, f"{block.name}: {path.name} has no one {name} to replace"
        lines = text.splitlines()
        at, to = _span(found[0])
        text = "\n".join([*lines[: at - 1], snippet, *lines[to:]]) + "\n"
    path.write_text(text)
    return path


@pytest.fixture
def env(kube_cluster: ClusterHandle, tmp_path: Path) -> dict[str, str]:
    """A reader's shell: the checkout's venv as the project's ``VENV`` (appstack, pytest),
    the cluster's kubectl on PATH, KUBECONFIG the session's cluster."""
    local = kube_cluster.require_local()
    venv = tmp_path / "venv"
    venv.mkdir()
    checkout_venv = REPO_ROOT / ".venv"
    shutil.copy(checkout_venv / "pyvenv.cfg", venv / "pyvenv.cfg")
    for part in ("bin", "lib"):
        (venv / part).symlink_to(checkout_venv / part)
    path = [str(venv / "bin"), str(local.toolchain.bin_dir), os.environ.get("PATH", "/usr/bin")]
    return {
        **os.environ,
        "PATH": os.pathsep.join(path),
        "VENV": str(venv),
        "KUBECONFIG": str(kube_cluster.kubeconfig),
        "APPSTACK_TEST_KUBECONFIG": str(kube_cluster.kubeconfig),
        "APPSTACK_SOURCE": str(REPO_ROOT),
        "KUBECACHEDIR": str(tmp_path / "kube-cache"),
    }


def _stamp_venv(project: Path, env: dict[str, str]) -> None:
    """What ``make venv`` leaves: its stamp, newer than pyproject.toml."""
    makefile = (project / "Makefile").read_text()
    stamp = re.search(r"^\$\(VENV\)/(\.[\w.-]+-installed):", makefile, re.MULTILINE)
    assert stamp is not None, "the Makefile's venv stamp"
    (Path(env["VENV"]) / stamp.group(1)).touch()


@contextlib.contextmanager
def _make_run(project: Path, env: dict[str, str], block: Fenced) -> Iterator[Path]:
    """The block's ``make run`` in the background, on free ports; stopped after."""
    (command,) = block.commands
    assert command.startswith("make run"), block.name
    given = re.search(r"RUN_ARGS=(\S+)", command)
    args = (
        f"{given.group(1) if given else ''} --metrics-bind-address=127.0.0.1:{_free_port()} "
        f"--no-metrics-secure --no-metrics-auth "
        f"--health-probe-bind-address=127.0.0.1:{_free_port()} "
        f"--webhook-bind-address=127.0.0.1:{_free_port()}"
    )
    log = project / f"run-{uuid.uuid4().hex[:4]}.log"
    with open(log, "wb") as out:
        run = subprocess.Popen(
            ["make", "run", f"RUN_ARGS={args.strip()}"],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield log
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(timeout=60)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


@dataclass
class Reader:
    """A reader going through the section: its blocks in order, in ``project``, with the
    namespace ``ns`` for the page's ``shop``."""

    env: dict[str, str]
    home: Path
    ns: str = field(default_factory=lambda: f"shop-{uuid.uuid4().hex[:6]}")
    blocks: Iterator[Fenced] = field(default_factory=lambda: iter(section_blocks()))

    @property
    def project(self) -> Path:
        return self.home / "app-operator"

    def block(self, language: str) -> Fenced:
        block = next(self.blocks)
        assert block.language == language, f"{block.name}: not a {language} block"
        return block

    def run(self, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """The next block, a shell one: its commands, ``shop`` the test's namespace."""
        block = self.block("bash")
        script = re.sub(r"\bshop\b", self.ns, block.text)
        proc = _sh(script, cwd or self.project, self.env)
        _ok(proc, block.name)
        return proc

    def edit(self, language: str) -> Path:
        return edit(self.project, self.block(language))

    def sh(self, command: str, what: str) -> str:
        return _ok(_sh(command, self.project, self.env), what)

    def get(self, what: str) -> dict[str, Any]:
        got: dict[str, Any] = json.loads(self.sh(f"kubectl get {what} -o json", what))
        return got

    def crd(self) -> dict[str, Any]:
        return self.get(f"crd {CRD}")

    def reconciled(self, name: str, *, size: int, at: str) -> None:
        """``name``, read at ``at``, Ready at its generation, its ConfigMap saying ``size``."""

        def probe() -> tuple[object, ...]:
            obj = self.get(f"-n {self.ns} {at} {name}")
            status = obj.get("status") or {}
            ready = [c["status"] for c in status.get("conditions") or [] if c["type"] == "Ready"]
            child = _sh(
                f"kubectl -n {self.ns} get configmap {name}-appservice -o json",
                self.project,
                self.env,
            )
            data = json.loads(child.stdout)["data"] if child.returncode == 0 else {}
            current = status.get("observedGeneration") == obj["metadata"]["generation"]
            return ready, current, data.get("size")

        eventually_sync(
            probe,
            lambda seen: seen == (["True"], True, str(size)),
            timeout=60,
            interval=0.3,
            what=f"{name} Ready at its generation, its ConfigMap saying size {size}",
        )


def _at_v1alpha1(reader: Reader) -> list[Path]:
    """The project with the kind at v1alpha1, the seed's object reconciled; the files the
    reader edited."""
    reader.run(reader.home)  # init, create api v1alpha1
    _stamp_venv(reader.project, reader.env)
    edited = [reader.edit("python") for _ in range(3)]  # the spec, desired(), its test
    edited.append(reader.edit("yaml"))  # the sample
    reader.run()  # make manifests install, the namespace, the sample applied
    with _make_run(reader.project, reader.env, reader.block("bash")):
        reader.reconciled("nginx-app", size=2, at=V1ALPHA1)
    return edited


def _v1_stored(reader: Reader, edited: list[Path]) -> None:
    """v1 added as the storage version, the edited files as they were; the CRD of both."""
    before = {p: p.read_bytes() for p in edited}
    reader.run()  # create api --storage
    assert {p: p.read_bytes() for p in edited} == before
    kinds = (reader.project / "src/app_operator/controllers/__init__.py").read_text()
    assert '"app_operator.api.v1.appservice:AppService",' in kinds
    assert "api.v1alpha1.appservice:AppService" not in kinds
    reader.edit("python")  # v1's fields, the rename in the conversion
    reader.edit("yaml")  # v1's sample
    reader.run()  # the controller's edit, make manifests install test-unit
    crd = reader.crd()
    assert [(v["name"], v["storage"]) for v in crd["spec"]["versions"]] == [
        ("v1", True),
        ("v1alpha1", False),
    ]
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert crd["status"]["storedVersions"] == ["v1alpha1", "v1"]


def _read_and_written_at_both(reader: Reader, log: Path) -> None:
    """Migrated by the operator; the same data at both versions, a round trip at
    v1alpha1 changing nothing; the section's reads and writes; the hub reconciled."""
    eventually_sync(
        lambda: reader.crd()["status"]["storedVersions"],
        lambda stored: stored == ["v1"],
        timeout=60,
        interval=0.3,
        what="the storage migrated to v1 by the operator",
        diagnose=lambda: log.read_text()[-2000:],
    )
    reader.reconciled("nginx-app", size=2, at=V1)  # by the controller, at the hub
    new = reader.get(f"-n {reader.ns} {V1} nginx-app")
    old = reader.get(f"-n {reader.ns} {V1ALPHA1} nginx-app")
    assert new["spec"] == {"replicas": 2, "image": "nginx:1.7.9", "ports": PORTS}
    assert old["spec"] == {"size": 2, "image": "nginx:1.7.9", "ports": PORTS}
    written = subprocess.run(
        ["kubectl", "replace", "-n", reader.ns, "-f", "-"],
        input=json.dumps(old),
        cwd=reader.project,
        env=reader.env,
        capture_output=True,
        text=True,
        check=False,
    )
    _ok(written, "nginx-app written back at v1alpha1 as it was read")
    again = reader.get(f"-n {reader.ns} {V1} nginx-app")
    assert (again["spec"], again["metadata"]["generation"]) == (
        new["spec"],
        new["metadata"]["generation"],
    )
    said = reader.run()  # read and written at both versions
    printed = [line for line in said.stdout.splitlines() if " " not in line]
    assert printed == ["2", "2", "3", "1", '["v1"]'], said.stdout
    assert "app.example.com/v1alpha1 AppService is deprecated; use v1" in said.stderr
    reader.reconciled("nginx-app", size=3, at=V1)
    reader.reconciled("appservice-v1-sample", size=1, at=V1)
    assert "storage migrated" in log.read_text()


def _retired(reader: Reader) -> None:
    """v1alpha1 unserved, then removed; the objects read and reconciled at v1."""
    reader.edit("python")  # served=False
    reader.run()  # make manifests, the CRD replaced
    served = [(v["name"], v["served"]) for v in reader.crd()["spec"]["versions"]]
    assert served == [("v1", True), ("v1alpha1", False)]
    refused = eventually_sync(
        lambda: _sh(f"kubectl get -n {reader.ns} {V1ALPHA1} nginx-app", reader.project, reader.env),
        lambda proc: proc.returncode != 0,
        timeout=30,
        what="v1alpha1 no longer served",
    )
    assert "resource type" in refused.stderr or "not find" in refused.stderr, refused.stderr
    reader.edit("python")  # removed
    said = reader.run()  # its sample and test gone, make manifests, the CRD replaced
    assert said.stdout.splitlines()[-2:] == ["v1", "3"], said.stdout[-2000:]
    crd = reader.crd()
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]
    assert crd["status"]["storedVersions"] == ["v1"]
    patch = '\'{"spec": {"replicas": 4}}\''
    reader.sh(f"kubectl patch -n {reader.ns} {V1} nginx-app --type merge -p {patch}", "patch")
    reader.reconciled("nginx-app", size=4, at=V1)


@pytest.mark.our_names(exclusive=True)  # seed 000: an AppService of app.example.com
def test_seed_000_from_v1alpha1_to_v1_as_the_page_shows(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The section's blocks in order, checked between them; its wall time reported."""
    started = time.monotonic()
    phases: list[str] = []

    def phase(name: str) -> None:
        phases.append(f"{name} {time.monotonic() - started:.0f}s")

    reader = Reader(env, tmp_path)
    try:
        edited = _at_v1alpha1(reader)
        phase("v1alpha1 reconciled")
        _v1_stored(reader, edited)
        phase("v1 stored")
        with _make_run(reader.project, env, reader.block("bash")) as log:
            _read_and_written_at_both(reader, log)
            phase("migrated, read and written")
            _retired(reader)
        phase("retired")
        assert next(reader.blocks, None) is None, "a block of the section the test does not run"
    finally:
        # the objects deleted with the CRD need no conversion webhook (none runs now)
        none = '{"spec": {"conversion": {"strategy": "None", "webhook": null}}}'
        _sh(f"kubectl patch crd {CRD} --type merge -p '{none}'", tmp_path, env, timeout=60)
        _sh(f"kubectl delete namespace {reader.ns} --wait=false --ignore-not-found", tmp_path, env)
        _sh(f"kubectl delete crd {CRD} --wait=false --ignore-not-found", tmp_path, env)
    print(f"seed 000, from v1alpha1 to v1 retired: {', '.join(phases)}")
