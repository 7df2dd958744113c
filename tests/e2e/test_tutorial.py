"""docs/runtime.md and docs/any-kind.md are run as written: a page's ``# greeting.py``
(``# secret_copier.py``) blocks become a module, its ``# test_greeting.py``
(``# test_secret_copier.py``) blocks that module's test, and pytest runs the test in a
fresh process against this session's control plane (the plugin's existing-cluster mode),
exactly as a user following the page would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
