"""Unit tests of mm2.client."""
