"""Unit tests of mm2.runtime."""
