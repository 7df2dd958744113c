"""A griffe extension for the API reference pages (docs/sdk-api.md, docs/runtime-api.md,
rendered by mkdocstrings when the site is built: ``make docs-site``): the docstrings'
Sphinx cross-references (``:class:`Client```, ``:meth:`~appstack.runtime.Cache.get```,
``:func:`title <target>```) shown as inline code of the name they show, as Sphinx shows
them — Markdown has no roles, and mkdocstrings would print them raw. Loaded by mkdocs.yml's
mkdocstrings handler (``extensions``); tests/unit/test_api_reference.py tests it. Not part
of the appstack package (griffe is a development dependency)."""

from __future__ import annotations

import re
from typing import Any

import griffe

#: A Sphinx cross-reference in a docstring: ``:meth:`~appstack.runtime.Cache.get```,
#: ``:class:`Client```, ``:py:func:`title <target>```.
ROLE = re.compile(r":(?:py:)?(?:meth|class|func|data|attr|mod|exc|obj|const):`([^`]+)`")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.DOTALL)


def _reference(match: re.Match[str]) -> str:
    """A role as Sphinx shows it, as inline code: its explicit title (``title <target>``),
    the last component of a ``~target``, else the target as written (``!`` and a leading
    ``.`` dropped)."""
    text = " ".join(match.group(1).split())
    titled = _TITLED.match(text)
    if titled and titled.group(1):
        return f"`{titled.group(1)}`"
    target = "".join(text.split()).lstrip("!")  # a name wrapped over two lines is one name
    if target.startswith("~"):
        target = target.lstrip("~").rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def markdown(text: str) -> str:
    """A docstring's Sphinx roles (``:meth:``, ``:class:``, ``:func:``, ``:data:``,
    ``:attr:``, ``:mod:``, ``:exc:``...) as Markdown inline code of the name they show."""
    return ROLE.sub(_reference, text)


class SphinxRoles(griffe.Extension):
    """Every docstring griffe reads, its roles made inline code (:func:`markdown`)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
