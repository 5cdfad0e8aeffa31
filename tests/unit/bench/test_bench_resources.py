"""The bench's resource sampler on a real process tree: CPU by thread name adds up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from bench.resources import ResourceSampler

# A thread that names itself (prctl PR_SET_NAME, as librdkafka's and the JVM's threads do) and
# spins; the main thread sleeps.
BUSY = textwrap.dedent(
    """
    import ctypes, threading, time
    def spin():
        ctypes.CDLL(None).prctl(15, b"busy7", 0, 0, 0)
        while True:
            pass
    threading.Thread(target=spin, daemon=True).start()
    time.sleep(60)
    """
)


def test_the_cpu_of_a_busy_thread_is_counted_under_its_name_with_digits_as_n() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        sampler = ResourceSampler(child.pid, interval_s=0.1)
        before = sampler.use()
        deadline = time.monotonic() + 60
        while sampler.use().threads_since(before).get("busyN", 0.0) < 0.3:
            assert time.monotonic() < deadline, sampler.use()
            time.sleep(0.1)
            sampler.sample()
        spent = sampler.use().threads_since(before)
        assert next(iter(spent)) == "busyN"  # the largest first
        assert sum(spent.values()) <= sampler.use().cpu_seconds + 0.05
    finally:
        child.kill()
        child.wait()


# A parent that fills 64 MiB, then forks three children that only hold it: each of the four
# maps the same pages, as Spark's forked Python workers share their daemon's imports.
SHARED = textwrap.dedent(
    """
    import os, sys, time
    block = bytearray(64 << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    for _ in range(3):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
    print("forked", flush=True)
    time.sleep(60)
    """
)


def test_pages_shared_by_forked_processes_count_once_in_pss_and_in_each_rss() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SHARED], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "forked"
        sampler = ResourceSampler(child.pid)
        sampler.sample()
        use = sampler.use()
        mib = 1 << 20
        assert use.processes == 4
        assert use.rss_bytes >= 4 * 64 * mib  # the block in each of the four
        assert 64 * mib <= use.pss_bytes < use.rss_bytes / 2  # the block once
        assert use.peak_pss_bytes == use.pss_bytes and use.peak_rss_bytes == use.rss_bytes
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
