"""The operator image's provenance labels (OCI annotations): where its source is
(``org.opencontainers.image.source``), which commit (``.revision``) and when it was built
(``.created``, RFC 3339 UTC); ``.version`` and the rest are constant
(:data:`appstack_testbed.image.CONFIG`).

The same values the Makefile passes to ``docker build`` as build arguments (``SOURCE``,
``REVISION``, ``CREATED``). The source is the checkout's ``origin`` remote as an https URL
(``git@github.com:o/r.git`` → ``https://github.com/o/r``), or ``$APPSTACK_IMAGE_SOURCE``;
with neither, the label is left out rather than guessed. The revision is ``git rev-parse
HEAD``, with ``-dirty`` when the image's sources differ from that commit. Used by
:func:`appstack_testbed.image.build_image`.
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
from pathlib import Path

PREFIX = "org.opencontainers.image."
SOURCE_ENV = "APPSTACK_IMAGE_SOURCE"


def _git(project: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(project), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:  # no git: not a checkout we can tell anything about
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def https_url(remote: str) -> str | None:
    """A git remote as the https URL a browser opens (scp-like and ssh forms too); None for
    a remote that is no network address (a local path, ``file://``: a clone of a clone)."""
    url = remote.strip()
    scp = re.fullmatch(r"(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)", url)
    if scp:
        url = f"https://{scp.group(1)}/{scp.group(2)}"
    url = re.sub(r"^(ssh|git)://(?:[\w.-]+@)?", "https://", url)
    url = re.sub(r"^https?://[^/@]+@", "https://", url)  # no credentials in a label
    url = re.sub(r"^http://", "https://", url)
    if not url.startswith("https://"):
        return None
    return url.removesuffix("/").removesuffix(".git")


def source(project: Path) -> str | None:
    remote = _git(project, "remote", "get-url", "origin")
    url = https_url(remote) if remote else None
    return url or os.environ.get(SOURCE_ENV) or None


def revision(project: Path, sources: list[str]) -> str | None:
    """HEAD's commit, ``-dirty`` if ``sources`` (paths relative to the checkout) differ."""
    head = _git(project, "rev-parse", "HEAD")
    if head is None:
        return None
    status = _git(project, "status", "--porcelain", "--", *sources)
    return f"{head}-dirty" if status else head


def created(now: datetime.datetime | None = None) -> str:
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance(project: Path, sources: list[str]) -> dict[str, str]:
    """What is known of source and revision (the image's cache key includes them)."""
    known = {"source": source(project), "revision": revision(project, sources)}
    return {PREFIX + key: value for key, value in known.items() if value}
