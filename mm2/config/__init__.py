"""mm2.properties as Apache MirrorMaker 2 reads it: `load(path) -> MirrorMakerConfig`."""

from __future__ import annotations

from mm2.config.loader import load, load_properties
from mm2.config.model import Flow, MirrorMakerConfig
from mm2.config.properties import PropertiesFile, parse_properties, read_properties

__all__ = [
    "Flow",
    "MirrorMakerConfig",
    "PropertiesFile",
    "load",
    "load_properties",
    "parse_properties",
    "read_properties",
]
