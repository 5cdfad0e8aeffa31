"""Unit tests of mm2.offsets."""
