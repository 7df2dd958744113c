"""The in-memory API server's server-side apply checked against the real one: the scenarios
of tests/support/ssa_scenarios.py (co-owned values, conflicts, the pod spec's lists of type
map merged by their keys) end here as tests/unit/runtime/test_fake.py asserts they end in
the fake — so what a scaffolded project's unit tests see is what the cluster does."""

from __future__ import annotations

import pytest

from appstack.runtime import Client
from tests.support.ssa_scenarios import SCENARIOS, play


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_server_side_apply_scenarios_end_as_the_fake_says(
    client: Client, namespace: str, name: str
) -> None:
    scenario = SCENARIOS[name]
    assert await play(client, namespace, scenario) == scenario.expected
