"""The running program's name (runtime/program.py): the runtime's default identity on the
API server — a valid field manager and Event source whatever the program is called — and
what the client and the Event recorder are named when the program names them nothing."""

from __future__ import annotations

import re
import socket

import pytest

from appstack.runtime import EventRecorder
from appstack.runtime.program import program_name
from tests.support.scripted_transport import scripted_client

# A Kubernetes qualified name without a prefix: what an Event's reportingController must be.
QUALIFIED = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


@pytest.mark.parametrize(
    ("argv0", "name"),
    [
        ("/usr/local/bin/greeting", "greeting"),
        ("greeting.py", "greeting"),
        ("/src/greeting/__main__.py", "greeting"),  # python -m greeting
        ("", "unknown"),  # an interactive interpreter
        ("-c", "unknown"),  # python -c
        ("/opt/my operator!.py", "my-operator"),
        ("__main__.py", "unknown"),
        ("x" * 100, "x" * 63),
    ],
)
def test_the_program_name_is_a_valid_field_manager_and_event_source(argv0: str, name: str) -> None:
    assert program_name(argv0) == name
    assert QUALIFIED.match(name)


async def test_without_a_name_given_the_runtime_names_the_program() -> None:
    client, _ = scripted_client()
    assert client.field_manager == program_name()
    recorder = EventRecorder(client)
    assert recorder.controller == program_name()
    assert recorder.instance == f"{program_name()}-{socket.gethostname()}"[:128]
    named = EventRecorder(client, controller="example.com/widgets", instance="widgets-0")
    assert (named.controller, named.instance) == ("example.com/widgets", "widgets-0")
