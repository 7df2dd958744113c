"""Build our Go re-implementation of the seed's controller
(``bench/peers/go-seed-reimplementation``; not the seed: that one is built from its own
repository, :mod:`peerbench.seed`) once, from the Go module proxy, into the cache.

The binary lands in ``$APPSTACK_CACHE/peers/go-seed-<hash>/go-seed`` (default
``~/.cache/appstack``), where ``<hash>`` covers the peer's sources, go.mod, go.sum and the
Go version, so an edit or a new toolchain rebuilds it and a warm call returns at once. A
cold build takes minutes on 2 cores; it prints the packages compiled so far every 15 s.
Used by :mod:`peerbench.operators`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from appstack_testbed.versions import cache_root

GO_FALLBACKS = ("/usr/local/go/bin/go",)
SOURCE = Path(__file__).resolve().parents[1] / "peers" / "go-seed-reimplementation"


def _say(message: str) -> None:
    print(f"[peers] {message}", file=sys.stderr, flush=True)


def _fingerprint(go: str) -> str:
    digest = hashlib.sha256()
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True)
    digest.update(version.stdout.encode())
    for path in sorted(SOURCE.iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def ensure_go_seed() -> Path:
    """The path of the built re-implementation, building it first when the cache has none."""
    go = shutil.which("go") or next((p for p in GO_FALLBACKS if Path(p).is_file()), None)
    if go is None:
        raise RuntimeError("the Go re-implementation needs Go (go is not on PATH)")
    out_dir = cache_root() / "peers" / f"go-seed-{_fingerprint(go)}"
    binary = out_dir / "go-seed"
    if binary.is_file():
        return binary
    out_dir.mkdir(parents=True, exist_ok=True)
    _say(f"building our Go re-implementation of the seed into {out_dir} (minutes when cold)")
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
    started = time.monotonic()
    compiled = [0]
    tmp = out_dir / "go-seed.tmp"
    cmd = [go, "build", "-v", "-trimpath", "-ldflags=-s -w", "-o", str(tmp), "."]
    proc = subprocess.Popen(
        cmd, cwd=SOURCE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    done = threading.Event()

    def tick() -> None:
        while not done.wait(15):
            _say(f"  go build: {compiled[0]} packages, {time.monotonic() - started:.0f} s")

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    tail: list[str] = []
    assert proc.stdout is not None  # noqa: S101 - stdout=PIPE
    for line in proc.stdout:
        compiled[0] += 1
        tail = [*tail[-30:], line]
    rc = proc.wait()
    done.set()
    ticker.join()
    if rc != 0:
        raise RuntimeError(f"building the Go re-implementation failed:\n{''.join(tail)}")
    os.replace(tmp, binary)
    _say(f"Go re-implementation built in {time.monotonic() - started:.0f} s -> {binary}")
    return binary
