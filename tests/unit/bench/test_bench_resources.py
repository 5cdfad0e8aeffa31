"""The bench's resource sampler on a real process tree: CPU by thread name adds up."""

from __future__ import annotations

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
