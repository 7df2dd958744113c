"""The URL of a third-party service (``external.url`` of AppStack middleware): the rules
as CEL for admission and the same rules in Python for the models (pure). Used by
:mod:`appstack.api.appstack_middleware`.

A URL is absolute (``scheme://host[:port][/path][?query]``), carries no credentials (those
go in a Secret, ``secretRef``) and, when it names a port, a port in 1..65535.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

EXAMPLE = "e.g. https://uuc.example.com:8443/uuc"
ABSOLUTE = r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#\s]+([/?#]\S*)?$"
_USERINFO = r"^[^:/?#]+://[^/?#]*@"
_PORT = r"^[^:/?#]+://[^/?#]*:([0-9]+)([/?#]|$)"

ABSOLUTE_MESSAGE = f"url must be absolute, scheme://host[:port][/path], {EXAMPLE}"
INLINE_MESSAGE = "credentials are never inline in url: use secretRef"
PORT_MESSAGE = "url: the port must be in 1..65535"

URL_RULES: list[Any] = [
    {"rule": f"self.matches(r'{ABSOLUTE}')", "message": ABSOLUTE_MESSAGE},
    {"rule": f"!self.matches(r'{_USERINFO}')", "message": INLINE_MESSAGE},
    {
        "rule": f"!self.matches(r'{_PORT}') || "
        "(isURL(self) && url(self).getPort() != '' && int(url(self).getPort()) >= 1 && "
        "int(url(self).getPort()) <= 65535)",
        "message": PORT_MESSAGE,
    },
]


def url_problem(url: str) -> str | None:
    """:data:`URL_RULES` in Python: the first one ``url`` breaks (None: a good URL)."""
    if not re.match(ABSOLUTE, url):
        return ABSOLUTE_MESSAGE
    if re.match(_USERINFO, url):
        return INLINE_MESSAGE
    port = re.match(_PORT, url)
    if port and not 1 <= int(port.group(1)) <= 65535:
        return PORT_MESSAGE
    try:
        urlsplit(url).port  # noqa: B018 - parsing is the check
    except ValueError as error:
        return f"url: {error}"
    return None
