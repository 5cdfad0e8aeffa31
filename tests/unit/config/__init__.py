"""Unit tests of mm2.config."""
