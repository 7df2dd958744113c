"""Shared test configuration: the local control plane fixtures (see appstack.testing)."""

pytest_plugins = ["appstack.testing.pytest_plugin"]
