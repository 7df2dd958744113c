"""The pieces of ``bench/peers.py`` (the side-by-side benchmark of appstack against the raw
API write floor, a Go controller-runtime peer and a kopf peer): process sampling, metrics
parsing, the waves, the peers' processes and the report. Used only by the benchmark and
its unit tests (``tests/unit/bench/test_peers.py``)."""
