"""Unit tests of mm2.records."""
