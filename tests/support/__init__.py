"""Helpers shared by every kind of test (unit, integration, e2e); see tests/README.md."""
