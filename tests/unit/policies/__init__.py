"""Unit tests of mm2.policies."""
