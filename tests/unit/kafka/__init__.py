"""Unit tests of mm2.kafka."""
