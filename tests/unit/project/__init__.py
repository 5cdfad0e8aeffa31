"""Unit tests of the repository's own files: deploy/, docker/, the docs' links, the test harness."""
