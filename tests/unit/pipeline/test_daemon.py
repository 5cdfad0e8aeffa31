"""The Python worker daemon freezes what it imported before it forks a worker."""

from __future__ import annotations

import gc

from mm2.pipeline import daemon


def test_the_imports_are_frozen_before_the_daemon_serves_workers() -> None:
    frozen: list[int] = []
    try:
        daemon.main(lambda: frozen.append(gc.get_freeze_count()))
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 0
