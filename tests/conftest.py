"""Shared test configuration: the local control plane fixtures (see appstack_testbed)."""

# The fixtures come from the test bed's pytest plugin (appstack_testbed.pytest_plugin), loaded
# through its pytest11 entry point.
