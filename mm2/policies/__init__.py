"""Replication policies and filters: pure functions of names, stdlib only."""
