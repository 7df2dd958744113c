"""The test bed's way to a Service from the host: its ready endpoints (pure part)."""

from __future__ import annotations

import pytest

from appstack_testbed import serviceproxy


def test_service_targets_are_the_ready_endpoints_on_the_target_port() -> None:
    svc = {
        "metadata": {"name": "e"},
        "spec": {"ports": [{"name": "client", "port": 2379, "targetPort": "client"}]},
    }
    slices = [
        {
            "ports": [{"name": "client", "port": 12379}],
            "endpoints": [
                {"addresses": ["10.130.0.3"], "conditions": {"ready": True}},
                {"addresses": ["10.130.0.2"], "conditions": {"ready": False}},
            ],
        }
    ]
    assert serviceproxy.endpoint_targets(svc, slices, 2379) == [("10.130.0.3", 12379)]
    with pytest.raises(ValueError, match="no port 80"):
        serviceproxy.endpoint_targets(svc, slices, 80)
