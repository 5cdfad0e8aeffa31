"""Fixtures shared by the unit tests."""

from __future__ import annotations

from tests.support.apache_oracle import apache

__all__ = ["apache"]
