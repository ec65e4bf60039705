"""Shared fixtures for the placement tests (none yet; see `placement_testlib` for helpers)."""
