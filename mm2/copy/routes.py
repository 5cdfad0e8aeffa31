"""Routes: which source topics the control plane has made ready, and their target names.

A topic is routed only once its remote topic exists on the target, so a copy task never
produces to a topic that is not there yet.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Route"]


@dataclass(frozen=True)
class Route:
    """Source topic -> remote topic on the target, with the partitions both sides have."""

    topic: str
    target_topic: str
    partitions: int
    # The source topic's id ("" when unknown): a topic deleted and re-created under the same
    # name gets a new one, and the positions stored for the old one no longer apply.
    topic_id: str = ""
