"""The driver JVM's class-data archive (HotSpot's AppCDS): Spark's classes mapped at start.

The driver JVM loads about 7,400 classes from Spark's 250 jars before the context is ready;
read from a class-data archive instead, the context was ready 2 s sooner on two cores (about a
third of its start, docs/architecture.md, "Starting a flow").

- The first start, the JVM writes the name of each class it loads to a list
  (`-XX:DumpLoadedClassList`). A minute after Spark is ready (the first copy tasks' classes are
  in the list by then), a process of its own (which finishes even if the mirror stops) runs
  `java -Xshare:dump` at low priority: the archive, in the cache directory ($XDG_CACHE_HOME/mm2
  or ~/.cache/mm2, `spark-cds/`), beside a manifest of what it was made for: the JVM, the
  classpath and each jar's size and time.
- Later starts map the archive (`-XX:SharedArchiveFile`) when the manifest still holds for the
  JVM on PATH (or JAVA_HOME's) and Spark's jars; otherwise they start as the first did.
- An operator's own `-Xshare`, `SharedArchiveFile` or `DumpLoadedClassList` option in
  `spark.driver.extraJavaOptions` leaves all of this alone (`-Xshare:off` turns it off).

Making the archive costs about 15 s of CPU once per JVM and Spark install; a failure changes
nothing else (the next first start tries again), and files a process left half-made are removed
by the next start.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ClassArchive"]

log = logging.getLogger(__name__)

_OPERATOR_OPTIONS = ("-Xshare", "SharedArchiveFile", "DumpLoadedClassList", "SharedClassList")
_ARCHIVE = "spark.jsa"
_MANIFEST = "manifest.json"
# classes-<pid>.lst / .taken, spark.jsa.<pid>, manifest.json.<pid>: files of one process.
_OWNED = re.compile(r"classes-(\d+)\.\w+|(?:spark\.jsa|manifest\.json)\.(\d+)")
# How long after Spark is ready the class list is taken (the first copy epoch has run by then).
_SETTLE_S = 60.0


def _cache_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mm2" / "spark-cds"


def _java_home(env: Mapping[str, str]) -> Path | None:
    """The JVM PySpark starts: JAVA_HOME's, else the `java` on PATH (links resolved)."""
    if env.get("JAVA_HOME"):
        return Path(env["JAVA_HOME"]).resolve()
    java = shutil.which("java")
    return None if java is None else Path(java).resolve().parent.parent


def _jars(classpath: Sequence[str]) -> dict[str, list[int]]:
    """Each classpath entry's size and modification time (a missing one: [-1, -1])."""
    out: dict[str, list[int]] = {}
    for entry in classpath:
        try:
            st = Path(entry).stat()
        except OSError:
            out[entry] = [-1, -1]
        else:
            out[entry] = [st.st_size, st.st_mtime_ns]
    return out


def _release(java_home: Path) -> str:
    try:
        return (java_home / "release").read_text(encoding="utf-8")
    except OSError:
        return ""


class ClassArchive:
    """One driver JVM start's part in the archive: its java options, then, on a first start,
    the archive made from what it loaded."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(os.environ if env is None else env)
        self.directory = _cache_dir(self._env)
        self._class_list: Path | None = None

    @property
    def archive(self) -> Path:
        return self.directory / _ARCHIVE

    def java_options(self, operator_options: str) -> str:
        """The options this start adds to the driver JVM's (empty: none)."""
        if any(o in operator_options for o in _OPERATOR_OPTIONS):
            return ""
        if self.usable():
            return f"-XX:SharedArchiveFile={self.archive}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._drop_stale_lists()
        except OSError as exc:
            log.debug("no class-data archive: %s", exc)
            return ""
        self._class_list = self.directory / f"classes-{os.getpid()}.lst"
        return f"-XX:DumpLoadedClassList={self._class_list}"

    def _drop_stale_lists(self) -> None:
        """Class lists and half-made files of processes that ended before they were done (each
        file is named after its process's id)."""
        for path in self.directory.iterdir():
            owner = _OWNED.fullmatch(path.name)
            pid = owner and (owner.group(1) or owner.group(2))
            if pid and not Path(f"/proc/{pid}").exists():
                path.unlink(missing_ok=True)

    def usable(self) -> bool:
        """The archive exists and the manifest holds for the JVM and the jars there now."""
        try:
            manifest = json.loads((self.directory / _MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        java_home = _java_home(self._env)
        return (
            isinstance(manifest, dict)
            and self.archive.exists()
            and java_home is not None
            and manifest.get("java_home") == str(java_home)
            and manifest.get("release") == _release(java_home)
            and manifest.get("spark_home") == self._env.get("SPARK_HOME", "")
            and isinstance(manifest.get("classpath"), list)
            and manifest.get("jars") == _jars(manifest["classpath"])
        )

    def make_later(self, java_home: str, classpath: str) -> None:
        """On a first start (the class list being written), make the archive once Spark has
        settled, in a process of its own that outlives this one if it must (a mirror stopped
        during the dump leaves no half-made archive behind); `java_home` and `classpath` are the
        running driver JVM's."""
        if self._class_list is None:
            return
        spec = {"list": str(self._class_list), "java_home": java_home, "classpath": classpath}
        thread = threading.Thread(
            target=self._spawn_after,
            args=(_SETTLE_S, spec),
            name="spark-class-archive",
            daemon=True,
        )
        thread.start()

    def _spawn_after(self, delay: float, spec: dict[str, str]) -> None:
        time.sleep(delay)
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", __name__, json.dumps(spec)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=self._env,
                start_new_session=True,
            )
        except OSError as exc:
            log.info("Spark's class-data archive not made (starts stay as they are): %s", exc)
            return
        log.info("making Spark's class-data archive in %s (process %d)", self.directory, child.pid)

    def make(self, java_home: Path, classpath: list[str], listed: Path | None = None) -> None:
        """The archive from the class list (`listed`, else this start's), written beside its
        manifest (each atomically); nothing when another process made it meanwhile."""
        listed = listed or self._class_list
        if listed is None:
            return
        with (self.directory / "making.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one process makes it; the others find it made
            if not self.usable():
                self._make(java_home, classpath, listed)
        listed.unlink(missing_ok=True)

    def _make(self, java_home: Path, classpath: list[str], listed: Path) -> None:
        taken = self.directory / f"classes-{os.getpid()}.taken"
        # The JVM may be writing its last line: keep whole lines only.
        text = listed.read_text(encoding="utf-8", errors="replace")
        taken.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")
        partial = self.directory / f"{_ARCHIVE}.{os.getpid()}"
        try:
            done = subprocess.run(
                [
                    str(java_home / "bin" / "java"),
                    "-Xshare:dump",
                    f"-XX:SharedClassListFile={taken}",
                    f"-XX:SharedArchiveFile={partial}",
                    "-Xlog:cds=off",
                    "-Xlog:cds+heap=off",
                    "-cp",
                    os.pathsep.join(classpath),
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not partial.exists():
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
                raise subprocess.SubprocessError(
                    f"java -Xshare:dump exited {done.returncode}: {tail[0]}"
                )
            manifest = {
                "java_home": str(java_home.resolve()),
                "release": _release(java_home),
                "spark_home": self._env.get("SPARK_HOME", ""),
                "classpath": classpath,
                "jars": _jars(classpath),
            }
            partial.replace(self.archive)
            written = self.directory / f"{_MANIFEST}.{os.getpid()}"
            written.write_text(json.dumps(manifest), encoding="utf-8")
            written.replace(self.directory / _MANIFEST)
        finally:
            for path in (taken, partial):
                path.unlink(missing_ok=True)


def _main(argv: list[str]) -> int:
    """`python -m mm2.pipeline.class_archive SPEC`: the process make_later starts, at low
    priority (the JVM it runs for the dump inherits it)."""
    spec = json.loads(argv[1])
    os.nice(10)
    try:
        ClassArchive().make(
            Path(spec["java_home"]), spec["classpath"].split(os.pathsep), Path(spec["list"])
        )
    except (OSError, subprocess.SubprocessError):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
