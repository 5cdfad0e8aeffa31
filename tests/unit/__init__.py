"""Unit tests: no network, no brokers."""
