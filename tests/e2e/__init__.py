"""End-to-end tests: the commands run as subprocesses."""
