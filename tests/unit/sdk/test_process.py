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


_ALL_TUNING = """
import gc, json, sys
from appstack.sdk import process
process.import_aiohttp()
import aiohttp.connector as connector, frozenlist
from appstack.runtime.tlsbuffer import tls_read_buffer
process.tune_connections()
process.settle_heap()
print(json.dumps({
    "enabled": process.enabled(),
    "ca_store": connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "frozenlist": frozenlist.FrozenList.__module__,
    "tls_buffer": tls_read_buffer(),
    "threshold": gc.get_threshold()[0],
    "frozen": gc.get_freeze_count() > 0,
}))
"""


@pytest.mark.parametrize("switch", [None, "off", "0", "false"])
def test_one_switch_turns_every_tuning_off(switch: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPERATOR_PROCESS_TUNING"}
    if switch is not None:
        env["OPERATOR_PROCESS_TUNING"] = switch
    out = subprocess.run(
        [sys.executable, "-c", _ALL_TUNING], capture_output=True, text=True, env=env, check=True
    )
    got = json.loads(out.stdout)
    if switch is None:  # tuned: every change of the table in process.py's docstring
        assert got["enabled"]
        assert got["frozenlist"] == "frozenlist"  # the pure-Python twin's module name
        assert got["tls_buffer"] == 16 * 1024
        assert got["threshold"] == 10_000
        assert got["frozen"]
    else:  # as Python and the libraries made it
        assert not got["enabled"]
        assert got["tls_buffer"] == 256 * 1024
        assert got["threshold"] == 700
        assert not got["frozen"]
