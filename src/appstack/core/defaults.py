"""Defaults of ``appstack run`` that the install manifests and the Helm chart repeat, written
once: the CLI (:mod:`appstack.cli.run`) and :mod:`appstack.manifests` read them here."""

from __future__ import annotations

#: Concurrent reconciles per controller (``--concurrency``).
CONCURRENCY = 32
#: ``--log-level``.
LOG_LEVEL = "info"
#: ``--graceful-shutdown-timeout``: on SIGTERM, how long in-flight reconciles (a sharded
#: replica's hand-back) may take; below the pod's ``terminationGracePeriodSeconds`` (30).
SHUTDOWN_TIMEOUT = "20s"
