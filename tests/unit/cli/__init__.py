"""Unit tests of mm2.cli."""
