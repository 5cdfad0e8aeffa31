"""Unit tests of mm2.pipeline."""
