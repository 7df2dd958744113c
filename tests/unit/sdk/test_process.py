"""The operator process's lean imports (appstack/sdk/process.py, the command group's lazy
registration): checked in a fresh interpreter, as the operator process starts."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys

import pytest

_AFTER_LEAN_IMPORT = """
import json, os, ssl, sys
from appstack.sdk import process as lean
names = ("SSL_CERT_FILE", "SSL_CERT_DIR", "FROZENLIST_NO_EXTENSIONS")
before = {k: os.environ.get(k) for k in names}
lean.import_aiohttp()
import aiohttp.connector as connector, frozenlist
print(json.dumps({
    "verified": connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "unverified": connector._SSL_CONTEXT_UNVERIFIED.cert_store_stats()["x509_ca"],
    "frozenlist": frozenlist.FrozenList.__module__,
    "environment_restored": before == {k: os.environ.get(k) for k in before},
    "defaults_later": ssl.create_default_context().cert_store_stats()["x509_ca"],
}))
"""


def _system_cas() -> int:
    return int(ssl.create_default_context().cert_store_stats()["x509_ca"])


def test_aiohttp_is_imported_without_the_system_ca_store_nor_frozenlists_c_module() -> None:
    if not _system_cas():
        pytest.skip("this machine has no system CA store to leave out")
    out = subprocess.run(
        [sys.executable, "-c", _AFTER_LEAN_IMPORT], check=True, capture_output=True, text=True
    ).stdout
    got = json.loads(out)
    assert got["verified"] == got["unverified"] == 0
    assert got["frozenlist"] == "frozenlist"  # the pure-Python class, not frozenlist._frozenlist
    assert got["environment_restored"]
    # a context made later with the defaults (a kubeconfig without a CA) has the system's CAs
    assert got["defaults_later"] == _system_cas()


def test_run_imports_neither_the_other_commands_nor_importlib_metadata() -> None:
    code = (
        "import sys\n"
        "from appstack.cli import main\n"
        "try:\n"
        "    main(['run', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m in "
        "('appstack.cli.install', 'importlib.metadata', 'appstack_testbed.cli')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    ).stdout
    assert out.splitlines()[-1] == "[]"
    assert "--metrics-bind-address" in out


def test_the_other_commands_are_listed_and_found() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "appstack", "--help"], check=True, capture_output=True, text=True
    ).stdout
    for command in ("run", "render", "manifests", "uninstall", "status", "cluster"):
        assert f"  {command} " in out
