"""Each node of a mirror has its own worker id, as Connect's workers do: two nodes
on one host reported the same `vm:mm2`."""

from __future__ import annotations

import os
import socket

from mm2.runtime.rest_config import rest_config


def test_the_worker_id_is_the_advertised_host_and_port_of_the_first_listener() -> None:
    assert rest_config({"listeners": "http://mirror-1:8083"}, {}).worker_id() == "mirror-1:8083"
    advertised = {
        "listeners": "http://:8083",
        "rest.advertised.host.name": "m2.example.com",
        "rest.advertised.port": "18083",
    }
    assert rest_config(advertised, {}).worker_id() == "m2.example.com:18083"
    assert rest_config({}, {}).worker_id() == f"{socket.gethostname()}:8083"  # Connect's default


def test_a_listener_on_any_free_port_is_told_apart_by_the_process() -> None:
    worker = rest_config({"listeners": "http://127.0.0.1:0"}, {}).worker_id()
    assert worker == f"127.0.0.1:pid-{os.getpid()}"
