"""docs/runtime.md is run as written: its ``# greeting.py`` blocks become a module, its
``# test_greeting.py`` blocks that module's test, and pytest runs the test in a fresh
process against this session's control plane (the plugin's existing-cluster mode), exactly
as a user following the tutorial would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TUTORIAL = Path(__file__).parents[2] / "docs" / "runtime.md"
_BLOCK = re.compile(r"```python\n# (?P<file>[\w.]+)\n(?P<code>.*?)```", re.S)


def tutorial_files(text: str) -> dict[str, str]:
    """File name → the concatenated code blocks headed ``# <file name>``."""
    files: dict[str, str] = {}
    for block in _BLOCK.finditer(text):
        files[block["file"]] = files.get(block["file"], "") + block["code"] + "\n"
    return files


def test_the_tutorial_blocks_form_a_module_and_its_test() -> None:
    files = tutorial_files(TUTORIAL.read_text())
    assert sorted(files) == ["greeting.py", "test_greeting.py"]
    assert "class GreetingReconciler" in files["greeting.py"]
    assert "def test_" in files["test_greeting.py"]


def test_the_tutorial_runs_against_the_control_plane(kubeconfig: Path, tmp_path: Path) -> None:
    for name, code in tutorial_files(TUTORIAL.read_text()).items():
        (tmp_path / name).write_text(code)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {
        **os.environ,
        "APPSTACK_TEST_KUBECONFIG": str(kubeconfig),
        "PYTHONPATH": str(tmp_path),
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_greeting.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "1 passed" in run.stdout
