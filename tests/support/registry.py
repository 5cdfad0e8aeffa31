"""Two Apicurio Registry servers for the schema tests (a pytest plugin, see tests/conftest.py).

The servers are mm2.localcluster.apicurio's. A registry that does not start fails the test that
needs it (with the end of its log); it is never a skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mm2.localcluster.apicurio import ApicurioRegistry

__all__ = ["ApicurioRegistry", "registries"]


@pytest.fixture(scope="module")
def registries(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ApicurioRegistry, ApicurioRegistry]]:
    """A source and a target registry for the module, started side by side."""
    workdir = tmp_path_factory.mktemp("registries")
    source, target = ApicurioRegistry("source", workdir), ApicurioRegistry("target", workdir)
    try:
        # Both JVMs boot at once, then each is waited for.
        for registry in (source, target):
            registry.launch()
        for registry in (source, target):
            registry.wait_ready()
        yield source, target
    finally:
        target.stop()
        source.stop()
