#!/bin/sh
# The runs behind /tmp/hanging-results.md, one after another (one broker at a time), ~65 min in all.
cd /work/main
PY=.venv/bin/python; H=scripts/hanging_transactions/harness.py
$PY $H --name c1-rdkafka-tv2 --producer rdkafka --tv 2 --restarts 3 --outage 60 --after 90
$PY $H --name c2-java-tv2    --producer java    --tv 2 --restarts 3 --outage 60 --after 90
$PY $H --name c3-rdkafka-tv1-p3 --producer rdkafka --tv 1 --producers 3 --restarts 3 --outage 60 --after 90
$PY $H --name c4-java-tv1-p2    --producer java    --tv 1 --producers 2 --restarts 3 --outage 60 --after 90
$PY $H --name c5-rdkafka-tv2-p3-o20 --producer rdkafka --tv 2 --producers 3 --restarts 4 --outage 20 --after 70
$PY $H --name c6-rdkafka-tv2-p3-recreate --producer rdkafka --tv 2 --producers 3 --recreate-on-error --restarts 2 --outage 60 --after 90
$PY $H --name c7-rdkafka-tv2-p3-kill9 --producer rdkafka --tv 2 --producers 3 --grace 0 --restarts 2 --outage 20 --after 70
$PY $H --name c8-rdkafka-tv2-p5-o20 --producer rdkafka --tv 2 --producers 5 --restarts 4 --outage 20 --after 65
$PY scripts/hanging_transactions/summarize.py
