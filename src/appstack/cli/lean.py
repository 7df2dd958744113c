"""What ``appstack run`` does before it imports the operator, so that the process holds less
memory for its whole life (issue #26; measured with ``bench/idle.py``, docs/performance.md
"Idle process"). Used only by :mod:`appstack.cli.run`.

* aiohttp builds two default TLS contexts when ``aiohttp.connector`` is imported, each
  loading the system's CA store (≈ 2 MiB). The operator never uses them: every connection
  it opens carries a context of its own — the cluster's CA (``runtime/transport.py``), an
  etcd cluster's (``controllers/etcdcluster/tlsclient.py``). aiohttp is imported here with
  OpenSSL's default CA locations (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) pointed at
  ``/dev/null``, and the environment restored right after: a context made later with the
  defaults (a kubeconfig without a CA) still loads the system's store.
* frozenlist's compiled module (≈ 1 MiB mapped) is replaced by its pure-Python twin
  (``FROZENLIST_NO_EXTENSIONS``, frozenlist's own switch): it only holds aiohttp's signal
  and trace hook lists, built once per session.

Nothing changes when aiohttp was imported before (the command called in a test's process).
"""

from __future__ import annotations

import os
import sys

_DEFAULT_CA_LOCATIONS = ("SSL_CERT_FILE", "SSL_CERT_DIR")
_PURE_FROZENLIST = "FROZENLIST_NO_EXTENSIONS"


def import_aiohttp() -> None:
    """Import aiohttp without its default contexts' CA store and frozenlist's C module."""
    if "aiohttp" in sys.modules:
        return
    names = (*_DEFAULT_CA_LOCATIONS, _PURE_FROZENLIST)
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(dict.fromkeys(_DEFAULT_CA_LOCATIONS, os.devnull))
    os.environ[_PURE_FROZENLIST] = "1"
    try:
        import aiohttp.connector  # noqa: F401, PLC0415 - imported here, with the above
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
