"""The URL of a third-party service (``external.url`` of AppStack middleware): the rules,
written once in CEL for admission and the models (client-side, :mod:`appstack.sdk.cel`),
and what only Python's URL parser finds (pure). Used by
:mod:`appstack.api.appstack_middleware`.

A URL is absolute (``scheme://host[:port][/path][?query]``), carries no credentials (those
go in a Secret, ``secretRef``) and, when it names a port, a port in 1..65535.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

EXAMPLE = "e.g. https://uuc.example.com:8443/uuc"
ABSOLUTE = r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#\s]+([/?#]\S*)?$"
_USERINFO = r"^[^:/?#]+://[^/?#]*@"
# A port: whatever follows the authority's last ':' outside an IPv6 literal's brackets and
# the userinfo (_PORT), which must be a number in 1..65535, leading zeros allowed
# (_GOOD_PORT). Plain regular expressions of RE2 (CEL).
_PORT = r"^[^:/?#]+://[^/?#]*:[^/?#\]@]*([/?#]|$)"
_NUMBER = (
    r"0*(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
)
_GOOD_PORT = rf"^[^:/?#]+://[^/?#]*:{_NUMBER}([/?#]|$)"

ABSOLUTE_MESSAGE = f"url must be absolute, scheme://host[:port][/path], {EXAMPLE}"
INLINE_MESSAGE = "credentials are never inline in url: use secretRef"
PORT_MESSAGE = "url: the port must be in 1..65535"

URL_RULES: list[Any] = [
    {"rule": f"self.matches(r'{ABSOLUTE}')", "message": ABSOLUTE_MESSAGE},
    {"rule": f"!self.matches(r'{_USERINFO}')", "message": INLINE_MESSAGE},
    {
        "rule": f"!self.matches(r'{_PORT}') || self.matches(r'{_GOOD_PORT}')",
        "message": PORT_MESSAGE,
    },
]


def url_problem(url: str) -> str | None:
    """What :data:`URL_RULES` cannot see, in Python (None: nothing): a URL Python's own
    parser cannot split (an unbalanced IPv6 bracket), which the operator's client would
    refuse when it connects. (A port out of range is :data:`URL_RULES`'.)"""
    try:
        urlsplit(url)
    except ValueError as error:
        return str(error)
    return None
