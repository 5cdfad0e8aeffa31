#!/usr/bin/env bash
# A confluent-kafka that speaks Kerberos: the wheels on PyPI are built without SASL GSSAPI, so
# this builds librdkafka from its sources with Cyrus libsasl2 (GSSAPI), OpenSSL, zstd, lz4 and
# curl, links it statically into confluent-kafka's extension, and caches the wheel (once: 1 to 3
# minutes on two cores). The wheel then only needs Debian's shared libraries (libsasl2-2
# with libsasl2-modules-gssapi-mit, libssl3, libzstd1, liblz4-1, libcurl4) and kinit (krb5-user).
#
# Usage: scripts/build-gssapi-client.sh PYTHON [TARGET_DIR]
#   PYTHON      the interpreter the wheel is for (mm2's virtualenv python)
#   TARGET_DIR  if given, the wheel is installed there (`pip install --target`); put it first on
#               PYTHONPATH, or instead `pip install --no-deps --force-reinstall WHEEL` into mm2's
#               environment. The wheel's path is the last line printed.
# Build needs: gcc, make, pkg-config, npm, and the -dev packages the Makefile installs.
# The cache lives in ${MM2_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/mm2}/gssapi-client.
set -euo pipefail

CONFLUENT_KAFKA_VERSION=2.15.1
# librdkafka's sources as a registry package: Confluent's JavaScript client on npm carries them
# (deps/librdkafka). Its 1.10.1 carries librdkafka 2.15.1, the release confluent-kafka 2.15.1
# is built for (no npm package carries 2.16 yet, which the newest confluent-kafka needs).
LIBRDKAFKA_NPM=@confluentinc/kafka-javascript@1.10.1
LIBRDKAFKA_VERSION=2.15.1
# What the built client must offer (librdkafka's builtin.features names).
FEATURES=sasl_gssapi,sasl_scram,sasl_plain,sasl_oauthbearer,ssl,oidc,zstd,lz4

python=${1:?usage: $0 PYTHON [TARGET_DIR]}
target=${2:-}
fail() {
    echo "error: build-gssapi-client: $*" >&2
    exit 1
}
for tool in gcc make pkg-config npm; do
    command -v "$tool" >/dev/null || fail "$tool is not on PATH (needed to build librdkafka)"
done
python=$("$python" -c 'import sys; print(sys.executable)' 2>/dev/null) ||
    fail "$1 is not a Python interpreter"
[[ -z $target ]] || target=$(realpath -m "$target")

tag=$("$python" -c 'import platform, sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}-{platform.machine()}")')
recipe=$(sha256sum "$0" | cut -c1-12) # a change to this script builds anew
cache_root=${MM2_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mm2}/gssapi-client
cache="$cache_root/confluent-kafka-$CONFLUENT_KAFKA_VERSION-librdkafka-$LIBRDKAFKA_VERSION-$tag-$recipe"
wheel=$(ls "$cache"/confluent_kafka-*.whl 2>/dev/null | head -n 1 || true)

# Installs wheel $1 into directory $2 and checks that it loads and has every feature.
verify() {
    "$python" -m pip install --quiet --no-deps --no-index --target "$2" "$1"
    PYTHONPATH="$2" "$python" -c "from confluent_kafka import Producer
Producer({'builtin.features': '$FEATURES', 'log_level': 0})" ||
        fail "the client built in $1 does not load or lacks one of $FEATURES"
}

if [[ -z $wheel ]]; then
    mkdir -p "$cache_root"
    work=$(mktemp -d "$cache_root/build.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    log="$work/build.log"
    run() { # a build step whose output goes to the log, shown only when it fails
        if ! "$@" >>"$log" 2>&1; then
            tail -n 40 "$log" >&2
            fail "step failed: $* (log above)"
        fi
    }
    started=$SECONDS
    echo "building a GSSAPI-capable confluent-kafka $CONFLUENT_KAFKA_VERSION" \
        "(librdkafka $LIBRDKAFKA_VERSION with libsasl2); cached in $cache"

    (cd "$work" && run npm pack --silent "$LIBRDKAFKA_NPM")
    run tar -xzf "$work"/*.tgz -C "$work" package/deps/librdkafka
    src="$work/package/deps/librdkafka"
    grep -q "RD_KAFKA_VERSION 0x$(printf '%02x%02x%02x' ${LIBRDKAFKA_VERSION//./ })ff" \
        "$src/src/rdkafka.h" || fail "$LIBRDKAFKA_NPM does not carry librdkafka $LIBRDKAFKA_VERSION"
    run "$python" -m pip download --quiet --no-deps --no-binary :all: \
        "confluent-kafka==$CONFLUENT_KAFKA_VERSION" -d "$work"
    run tar -xzf "$work/confluent_kafka-$CONFLUENT_KAFKA_VERSION.tar.gz" -C "$work"

    # --enable-X makes X required: a missing -dev package fails here, not at run time.
    (cd "$src" && run ./configure --no-download --disable-debug-symbols \
        --enable-gssapi --enable-ssl --enable-zlib --enable-zstd --enable-curl)
    run make -C "$src/src" -j"$(nproc)" librdkafka.a
    mkdir -p "$work/static/lib" "$work/static/include/librdkafka"
    cp "$src/src/librdkafka.a" "$work/static/lib/"
    cp "$src/src/rdkafka.h" "$src/src/rdkafka_mock.h" "$work/static/include/librdkafka/"
    # The libraries librdkafka was configured against, linked after its static archive.
    libs=$(sed -n 's/^MKL_DYNAMIC_LIBS=[[:space:]]*//p' "$src/Makefile.config")
    [[ $libs == *-lsasl2* ]] || fail "librdkafka was not configured with libsasl2 ($libs)"
    (cd "$work/confluent_kafka-$CONFLUENT_KAFKA_VERSION" &&
        CFLAGS="-I$work/static/include" \
            LDFLAGS="-L$work/static/lib -Wl,--no-as-needed $libs" \
            run "$python" -m pip wheel --quiet --no-deps -w "$work/wheel" .)
    built=$(ls "$work"/wheel/confluent_kafka-*.whl)
    verify "$built" "$work/verify"
    mkdir -p "$cache"
    cp "$built" "$cache/.partial.whl"
    mv "$cache/.partial.whl" "$cache/$(basename "$built")" # whole or absent, for a parallel run
    wheel="$cache/$(basename "$built")"
    # Builds of earlier versions or recipes for this Python are not needed any more.
    find "$cache_root" -mindepth 1 -maxdepth 1 -name "confluent-kafka-*-$tag-*" ! -path "$cache" \
        -exec rm -rf {} +
    echo "built in $((SECONDS - started)) s"
fi

if [[ -n $target ]]; then
    rm -rf "$target.new"
    verify "$wheel" "$target.new"
    rm -rf "$target"
    mv "$target.new" "$target"
    touch "$target/.built"
fi
echo "$wheel"
