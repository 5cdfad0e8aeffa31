"""Unit tests of mm2.log."""
