"""mm2's tests: unit (no network), integration (real brokers), e2e (the commands as
subprocesses), and the support they share."""
