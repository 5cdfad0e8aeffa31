"""Client-side tools: MirrorClient (Apache's RemoteClusterUtils) and consumer-group failover."""

from mm2.client.mirror_client import MirrorClient

__all__ = ["MirrorClient"]
