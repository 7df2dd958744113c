"""Process-wide tuning an operator applies, in one place (issue #26; measured with
``bench/idle.py``, docs/performance.md "Idle process"): :func:`import_aiohttp` before the
runtime is imported (a run command calls it first), :func:`settle_heap` once the
controllers are built (:func:`appstack.sdk.operator.run_operator` calls it).

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

import gc
import linecache
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


def settle_heap() -> None:
    """Once the modules are imported and the controllers built: collect what start-up left
    behind, move every surviving object (modules, classes, validators: ~56,000 containers)
    out of the garbage collector's sight — they live as long as the process, and without
    this every full collection walks them again (gc.freeze) — and collect the youngest
    generation after 10,000 net new containers instead of 700: decoding a watch event
    makes hundreds, nearly all freed by reference counting, so the collector ran every few
    events. Objects still die when nothing refers to them; only garbage in reference
    cycles waits longer. Measured on cache ingest (docs/performance.md): the collector's
    share of the CPU 13 % -> 2 %, the same peak memory. First the source lines pydantic
    read to find the models' attribute docstrings are dropped (linecache: 54 files at
    start-up, -0.3 MiB idle); a traceback reads its lines again if it needs them."""
    linecache.clearcache()
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
