"""Unit tests of mm2.localcluster."""
