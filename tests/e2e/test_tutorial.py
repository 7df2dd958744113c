"""docs/runtime.md and docs/any-kind.md are run as written: a page's ``# greeting.py``
(``# secret_copier.py``) blocks become a module, its ``# test_greeting.py``
(``# test_secret_copier.py``) blocks that module's test, and pytest runs the test in a
fresh process against this session's control plane (the plugin's existing-cluster mode),
exactly as a user following the page would. any-kind.md's "Start it from the scaffolder"
too: its commands (``init``, ``create api --group core ... --no-resource``) in a directory
of their own, the module put in the generated controller, ``generate manifests``, the
generated ClusterRole the page's, the project's operator run under it alone."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from appstack.runtime import NAMESPACE, SECRET, Client, NotFound, Resource
from appstack.sdk import binding
from appstack_testbed.operators import token_kubeconfig
from appstack_testbed.waiting import eventually

DOCS = Path(__file__).parents[2] / "docs"
TUTORIAL = DOCS / "runtime.md"
#: page -> its module and its test
PAGES = {
    "runtime.md": ("greeting.py", "test_greeting.py"),
    "any-kind.md": ("secret_copier.py", "test_secret_copier.py"),
}
_BLOCK = re.compile(r"```python\n# (?P<file>[\w.]+)\n(?P<code>.*?)```", re.S)


def tutorial_files(text: str) -> dict[str, str]:
    """File name → the concatenated code blocks headed ``# <file name>``."""
    files: dict[str, str] = {}
    for block in _BLOCK.finditer(text):
        files[block["file"]] = files.get(block["file"], "") + block["code"] + "\n"
    return files


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_blocks_form_a_module_and_its_test(page: str) -> None:
    module, test = PAGES[page]
    files = tutorial_files((DOCS / page).read_text())
    assert sorted(files) == sorted([module, test])
    assert "Reconciler" in files[module]
    assert "def test_" in files[test]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_runs_against_the_control_plane(
    page: str, kubeconfig: Path, tmp_path: Path
) -> None:
    for name, code in tutorial_files((DOCS / page).read_text()).items():
        (tmp_path / name).write_text(code)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {
        **os.environ,
        "APPSTACK_TEST_KUBECONFIG": str(kubeconfig),
        "PYTHONPATH": str(tmp_path),
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", PAGES[page][1]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "1 passed" in run.stdout


# ------------------------------------------- docs/any-kind.md, "Start it from the scaffolder"
def _scaffolder_section(text: str) -> tuple[str, str, list[Any]]:
    """The section's commands (its bash block), its edit of ``__main__.py`` (its Python
    block) and the rules its YAML block shows."""
    section = text.split("## Start it from the scaffolder", 1)[1].split("\n## ", 1)[0]
    (commands,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    (main,) = re.findall(r"```python\n(.*?)```", section, re.S)
    (rules,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    return commands, main, yaml.safe_load(rules)


def _collect(main_py: Path, edit: str) -> None:
    """The page's edit of the generated ``__main__.py``: its imports beside the others, its
    ``main = ...`` in place of the generated one."""
    imports = [line for line in edit.splitlines() if line.startswith("from ")]
    statement = edit[edit.index("main = ") :]
    text = main_py.read_text()
    generated = "main = operator_command(controllers, IDENTITY, version=__version__)\n"
    assert generated in text
    anchor = "from secret_copier.identity import IDENTITY\n"
    text = text.replace(generated, statement).replace(anchor, anchor + "\n".join(imports) + "\n")
    main_py.write_text(text)


def _ready(port: int, operator: subprocess.Popen[bytes]) -> bool:
    assert operator.poll() is None, "the operator exited"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
        return bool(answer.status == 200)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return str(answer.read().decode())


async def _gone(client: Client, name: str, namespace: str) -> bool:
    try:
        await client.get(SECRET, name, namespace)
    except NotFound:
        return True
    return False


def test_the_secret_copier_scaffolded_runs_under_the_role_make_manifests_derives(
    kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    """Issue #48: the Secret-copier started from ``create api --group core ... --no-resource``,
    its generated ClusterRole the page's, the project's operator running under it alone."""
    text = (DOCS / "any-kind.md").read_text()
    commands, edit, shown_rules = _scaffolder_section(text)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=tmp_path, env=env, check=True)
    project = tmp_path / "secret-copier"
    module = tutorial_files(text)["secret_copier.py"]
    (project / "src/secret_copier/controllers/secret.py").write_text(module)
    _collect(project / "src/secret_copier/__main__.py", edit)
    makefile = (project / "Makefile").read_text()
    assert "manifests: venv" in makefile
    assert "$(APPSTACK) generate manifests" in makefile
    env["PYTHONPATH"] = str(project / "src")  # what the project's Makefile exports
    subprocess.run(["appstack", "generate", "manifests"], cwd=project, env=env, check=True)
    role = yaml.safe_load((project / "config/rbac/role.yaml").read_text())
    assert role["kind"] == "ClusterRole"
    assert role["rules"] == shown_rules
    asyncio.run(_copies_under(role, Path(kubeconfig), namespace, project, env))


async def _copies_under(
    role: dict[str, Any], kubeconfig: Path, namespace: str, project: Path, env: dict[str, str]
) -> None:
    other = f"{namespace}-copies"
    name = f"secret-copier-{namespace}"
    role = {**role, "metadata": {"name": name}}
    account = Resource("", "v1", "ServiceAccount", "serviceaccounts")
    roles = Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False)
    bindings = Resource(
        "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False
    )
    enabled = {"copier.example.com/enabled": "true"}
    async with await Client.connect(str(kubeconfig), field_manager="copier-test") as client:
        await client.create(NAMESPACE, {"metadata": {"name": other, "labels": enabled}})
        try:
            await client.patch(NAMESPACE, namespace, {"metadata": {"labels": enabled}})
            await client.apply(account, {
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "secret-copier", "namespace": namespace},
            })  # fmt: skip
            await client.apply(roles, role)
            await client.apply(bindings, binding(name, role, (namespace, "secret-copier")))
            token = token_kubeconfig(kubeconfig, namespace, "secret-copier", project / "token")
            port, metrics = _free_port(), _free_port()
            operator = subprocess.Popen(
                [
                    sys.executable, "-m", "secret_copier", f"--kubeconfig={token}",
                    f"--metrics-bind-address=127.0.0.1:{metrics}", "--no-metrics-secure",
                    "--no-metrics-auth", f"--health-probe-bind-address=127.0.0.1:{port}",
                ],
                cwd=project,
                env=env,
            )  # fmt: skip
            try:
                await eventually(
                    lambda: asyncio.to_thread(_ready, port, operator),
                    timeout=60, what="the scaffolded operator ready", retry_on=(OSError,),
                )  # fmt: skip
                await client.create(SECRET, {
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "db", "namespace": namespace,
                                 "labels": {"copier.example.com/replicate": "true"}},
                    "stringData": {"password": "s3cret"},
                })  # fmt: skip
                copy = await eventually(
                    lambda: client.get(SECRET, "db", other),
                    timeout=30, what="the copy", retry_on=(NotFound,),
                )  # fmt: skip
                assert copy["data"] == {"password": "czNjcmV0"}
                await eventually(  # counted right after the copy is written
                    lambda: asyncio.to_thread(_scrape, metrics),
                    lambda text: "secret_copier_copies_written_total 1.0" in text.splitlines(),
                    timeout=10, what="the project's own counter on /metrics",
                )  # fmt: skip
                await client.delete(SECRET, "db", namespace)
                await eventually(
                    lambda: _gone(client, "db", other), timeout=30, what="the copy gone"
                )
            finally:
                operator.send_signal(signal.SIGTERM)
                assert operator.wait(timeout=30) == 0
        finally:
            await client.delete(NAMESPACE, other)
            await client.delete(bindings, name)
            await client.delete(roles, name)
