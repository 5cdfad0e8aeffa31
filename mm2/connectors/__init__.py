"""The MirrorMaker 2 connectors: MirrorSource, MirrorCheckpoint and MirrorHeartbeat."""
