"""Offset syncs and checkpoints without a broker: when to sync, how to translate, what to write."""
