# Every command of the project lives here; CI (.ci/run) and the README call these targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help install kafka-jars system-packages gssapi-client lint typecheck unit integration test demo bench clean

# Debian packages the tests need: an MIT KDC (krb5-kdc, kadmin.local) and kinit, Cyrus SASL's
# GSSAPI plugin, what builds a Kerberos-capable librdkafka (scripts/build-gssapi-client.sh), and
# the headless Chromium that loads the /ui page (tests/integration/test_ui_browser.py).
DEBIAN_PACKAGES := krb5-kdc krb5-admin-server krb5-user libsasl2-modules-gssapi-mit \
	libsasl2-dev libssl-dev zlib1g-dev libzstd-dev liblz4-dev libcurl4-openssl-dev pkg-config \
	chromium
# A confluent-kafka with GSSAPI, installed beside the venv's (tests/integration/test_security_e2e.py
# puts it on the mirror's PYTHONPATH); the wheel is cached under ~/.cache/mm2/gssapi-client.
GSSAPI_CLIENT := $(VENV)/gssapi-client

help:
	@echo "make demo   - start two local Kafka clusters and mirror primary -> backup"
	@echo "make test   - install, lint, type-check and run every test (real brokers included)"
	@echo "make bench  - this mirror and Apache MirrorMaker 2 side by side"

$(STAMP): pyproject.toml
	@command -v java >/dev/null || { echo "error: java (17+) is not on PATH; install a JDK 17, e.g. apt-get install openjdk-17-jdk-headless" >&2; exit 1; }
	@command -v mvn >/dev/null || { echo "error: mvn is not on PATH; install Maven, e.g. apt-get install maven" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

install: $(STAMP)

kafka-jars: $(STAMP)
	$(BIN)/mm2 local-cluster fetch

system-packages:
	@scripts/debian-packages.sh $(DEBIAN_PACKAGES)

$(GSSAPI_CLIENT)/.built: $(STAMP) scripts/build-gssapi-client.sh | system-packages
	scripts/build-gssapi-client.sh $(BIN)/python $(GSSAPI_CLIENT)

gssapi-client: system-packages $(GSSAPI_CLIENT)/.built

# promtool, from Debian's prometheus package, checks deploy/prometheus/ (tests/unit/test_deploy.py):
# installed when missing (as root), a no-op when present.
.PHONY: promtool
promtool:
	@command -v promtool >/dev/null || { \
		[ "$$(id -u)" = 0 ] || { echo "error: promtool is missing; as root: apt-get install prometheus" >&2; exit 1; }; \
		echo "installing Debian's prometheus package (for promtool)"; \
		apt-get -q -o DPkg::Lock::Timeout=300 update >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 install -y \
			--no-install-recommends prometheus >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) promtool
	$(BIN)/pytest tests/unit

integration: kafka-jars gssapi-client
	$(BIN)/pytest tests/integration tests/e2e

test: lint typecheck kafka-jars gssapi-client promtool
	$(BIN)/pytest

demo: kafka-jars
	$(BIN)/python -m mm2.cli.demo

bench: kafka-jars
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache demo-work
