"""The stop is bounded: a second signal, or a stop still running after the deadline, exits."""

from __future__ import annotations

import signal
import threading

from mm2.cli.shutdown import StopGuard


def test_first_signal_stops_second_exits_at_once() -> None:
    exits: list[int] = []
    guard = StopGuard(timeout=3600, exit_now=exits.append)
    guard.on_signal(signal.SIGTERM)
    assert guard.stopping.is_set() and exits == []
    guard.on_signal(signal.SIGINT)
    assert exits == [1]


def test_a_stop_that_hangs_is_ended_after_the_deadline() -> None:
    exited = threading.Event()
    codes: list[int] = []

    def exit_now(code: int) -> None:
        codes.append(code)
        exited.set()

    guard = StopGuard(timeout=0.2, exit_now=exit_now)
    guard.on_signal(signal.SIGTERM)
    assert exited.wait(30), "the deadline never fired"
    assert codes == [1]
