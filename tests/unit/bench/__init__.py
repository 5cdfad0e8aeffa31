"""Unit tests of bench/, the benchmark harness."""
