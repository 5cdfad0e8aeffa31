"""Where a flow's offset syncs go, made ready for the copy tasks (which emit them)."""

from __future__ import annotations

from mm2.client.syncs import syncs_location
from mm2.config.model import Flow

__all__ = ["offset_syncs_target"]


def offset_syncs_target(flow: Flow) -> tuple[str, dict[str, str] | None]:
    """(topic, producer config) for the flow's offset syncs, the topic created if missing;
    the config is None when emit.offset-syncs.enabled is false."""
    location = syncs_location(flow)
    settings = flow.settings.source
    if not settings.emit_offset_syncs_enabled:
        return location.topic, None
    location.create_topic(settings.offset_syncs_topic_replication_factor)
    return location.topic, dict(location.producer_config)
