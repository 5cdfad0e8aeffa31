"""Unit tests of mm2.connectors."""
