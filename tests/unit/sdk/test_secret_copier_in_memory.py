"""docs/any-kind.md's Secret-copier, unchanged, in memory (sdk/testing.py): the operator of
a built-in kind with a server-side selector, a finalizer and a watch of namespaces, against
the in-memory API server — copies made into enabled namespaces, a namespace enabled later
served, a namesake that is not a copy left alone, the copies removed when the source leaves
the selection, the source let go."""

from __future__ import annotations

import types
from typing import Any

from appstack.runtime import NAMESPACE, SECRET
from appstack.sdk import InMemoryOperator
from tests.e2e.test_tutorial import DOCS, tutorial_files


def _copier() -> types.ModuleType:
    module = types.ModuleType("secret_copier")
    code = tutorial_files((DOCS / "any-kind.md").read_text())["secret_copier.py"]
    exec(compile(code, "docs/any-kind.md", "exec"), module.__dict__)  # noqa: S102 - the page's code
    return module


async def test_the_pages_copier_runs_in_memory() -> None:
    copier = _copier()
    source: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "src", "labels": {copier.REPLICATE: "true"}},
        "data": {"password": "czNjcmV0"},
    }
    theirs = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "taken"},
        "data": {"mine": "eWVz"},
    }
    async with InMemoryOperator(
        [copier.CONTROLLER], copier.IDENTITY, namespaces=("src", "b", "taken")
    ) as running:
        await running.client.create(NAMESPACE, {"metadata": {"name": "later"}})
        await running.client.create(SECRET, theirs)  # a namesake that is not a copy
        await running.client.create(SECRET, source)
        copy = await running.until(lambda: running.get(SECRET, "db", "b"))
        assert copy["data"] == source["data"]
        assert copy["metadata"]["labels"][copier.COPY_OF] == "src"
        assert await running.get(SECRET, "db", "later") is None  # not enabled
        kept = await running.get(SECRET, "db", "taken")
        assert kept is not None
        assert kept["data"] == theirs["data"]  # left alone
        assert kept["metadata"].get("labels") in (None, {})

        enable = {"metadata": {"labels": {copier.IDENTITY.enabled_label: "true"}}}
        await running.client.patch(NAMESPACE, "later", enable)
        await running.until(lambda: running.get(SECRET, "db", "later"))

        unlabel = {"metadata": {"labels": {copier.REPLICATE: None}}}
        await running.client.patch(SECRET, "db", unlabel, namespace="src")

        async def copies_gone_and_source_released() -> bool:
            held = await running.get(SECRET, "db", "src")
            return (
                await running.get(SECRET, "db", "b") is None
                and await running.get(SECRET, "db", "later") is None
                and held is not None
                and not held["metadata"].get("finalizers")
            )

        await running.until(copies_gone_and_source_released)
