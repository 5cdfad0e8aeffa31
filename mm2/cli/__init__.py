"""Composition root: command lines turned into configs, runtimes and servers."""
