"""bench.link: the --link flag that puts Toxiproxy between the mirrors and the source (W6)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bench.link import Link, parse_link, reserved_port
from bench.settings import parse_args


def test_a_round_trip_alone_or_with_a_bandwidth_cap() -> None:
    assert parse_link("50") == Link(50, 0)
    assert parse_link("100:100") == Link(100, 100)
    assert str(Link(100, 100)) == "100 ms round trip, 100 Mbit/s each way"
    assert str(Link(50)) == "50 ms round trip"


@pytest.mark.parametrize("text", ["", "fast", "50:", "50:x", "-1", "50:-3"])
def test_anything_else_is_refused_with_the_form_it_takes(text: str) -> None:
    with pytest.raises(ValueError, match="--link takes"):
        parse_link(text)


def test_the_flag_sets_the_link_and_no_flag_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args([]).link is None
    assert parse_args(["--link", "100:100"]).link == Link(100, 100)
    with pytest.raises(SystemExit):
        parse_args(["--link", "far"])
    assert "RTT_MS or RTT_MS:MBIT" in capsys.readouterr().err


def test_the_proxy_port_is_free_and_below_the_ephemeral_range() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    port = reserved_port()
    assert 1024 <= port < low
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free: nothing took it
