"""Unit tests of mm2.api."""
