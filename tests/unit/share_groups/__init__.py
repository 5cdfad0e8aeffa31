"""Unit tests of mm2.share_groups."""
