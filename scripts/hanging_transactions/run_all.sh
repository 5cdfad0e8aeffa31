#!/bin/sh
# Runs the combinations one after another (one broker at a time). Usage: sh run_all.sh [outage] [restarts]
cd /work/main
O=${1:-60}; R=${2:-3}
PY=.venv/bin/python; H=scripts/hanging_transactions/harness.py
$PY $H --name c1-rdkafka-tv2 --producer rdkafka --tv 2 --restarts $R --outage $O --after 90
$PY $H --name c2-java-tv2    --producer java    --tv 2 --restarts $R --outage $O --after 90
$PY $H --name c3-rdkafka-tv1 --producer rdkafka --tv 1 --restarts $R --outage $O --after 90
$PY $H --name c4-java-tv1    --producer java    --tv 1 --restarts $R --outage $O --after 90
$PY $H --name c6-rdkafka-tv2-recreate --producer rdkafka --tv 2 --recreate-on-error --restarts $R --outage $O --after 90
