"""Process-wide tuning an operator applies, all of it here, behind one switch (issues #26,
#40; measured with ``bench/idle.py`` and ``bench/cachesize.py``, docs/performance.md "Idle
process"): :func:`import_aiohttp` before the runtime is imported (a run command calls it
first), :func:`tune_connections` before the first connection and :func:`settle_heap` once
the controllers are built (:func:`appstack.sdk.operator.run_operator` calls both).

The switch: ``OPERATOR_PROCESS_TUNING=off`` (or ``0``, ``false``; the SDK's, so every
operator built on it has the same) in the operator's environment leaves the process as
Python and the libraries made it — for a bug report ("does it happen without the
tuning?") or a library upgrade that breaks one of them. What each changes, process-wide,
and what it buys:

=====================================  ==================================================
change                                 measured gain
=====================================  ==================================================
aiohttp imported without its default   ≈ 2 MiB RSS (two CA stores never used)
TLS contexts' CA store
frozenlist's pure-Python module        ≈ 1 MiB mapped
asyncio TLS read buffer 16 KiB, not    48 connections: 14.6 → 3.7 MiB
256 KiB (:mod:`appstack.runtime.tlsbuffer`)
linecache cleared after start-up       -0.3 MiB idle
``gc.freeze`` + young-generation       the collector's share of CPU on cache ingest
threshold 10,000 (not 700)             13 % → 2 %, same peak memory
=====================================  ==================================================

Interning (``sys.intern`` of store keys, ``core/resource.py`` and ``runtime/store.py``) is
not process tuning but how the cache stores its keys; it stays on.

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
#: The switch: "off", "0" or "false" turns every tuning of this module off.
SWITCH = "OPERATOR_PROCESS_TUNING"


def enabled() -> bool:
    """Whether the process is tuned (:data:`SWITCH` not set to off)."""
    return os.environ.get(SWITCH, "on").strip().lower() not in ("off", "0", "false", "no")


def import_aiohttp() -> None:
    """Import aiohttp without its default contexts' CA store and frozenlist's C module."""
    if "aiohttp" in sys.modules or not enabled():
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
    if not enabled():
        return
    linecache.clearcache()
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])


def tune_connections() -> None:
    """Before the first connection: asyncio's TLS read buffer 16 KiB instead of 256 KiB
    (:func:`appstack.runtime.limit_tls_read_buffer`)."""
    if enabled():
        from appstack.runtime import limit_tls_read_buffer  # noqa: PLC0415

        limit_tls_read_buffer()
