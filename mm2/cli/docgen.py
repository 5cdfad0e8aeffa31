"""docs/configuration-reference.md and docs/rest-reference.md, generated from the code.

    python -m mm2.cli.docgen            # write both (`make docs`)
    python -m mm2.cli.docgen --check    # exit 1, naming the file, when one is out of date

The configuration page reads the definitions that check and read the keys (mm2.config.names,
.keys, .client_defs, .settings, .catalog, mm2.policies.filter, the librdkafka translation); the
REST page reads the OpenAPI document the app serves (mm2.api.app.openapi_document). It lives in
mm2.cli because that is the one layer that may import both mm2.config and mm2.api (the import
contracts in pyproject.toml); it is no console script of the wheel.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from mm2.cli.docgen_rest import rest_reference
from mm2.cli.markdown import HEADER, table
from mm2.config.catalog import CATALOG, KeyDoc, Where
from mm2.config.client_defs import CLIENT_DEFS, Def
from mm2.config.keys import TOP_LEVEL
from mm2.config.librdkafka import ClientRole, translate_client_config
from mm2.config.names import CLIENT_CONFIG_NAMES
from mm2.config.settings import (
    APACHE_INTERVALS_S,
    DEFAULT_INTERVALS_S,
    DEFAULT_OFF,
    flow_settings,
    mirror_maker_settings,
)
from mm2.config.value_types import BOUNDS, TYPES, ValueType
from mm2.policies import filter as filters
from mm2.policies.replication import DEFAULT_POLICY_CLASS, DefaultReplicationPolicy
from mm2.runtime.rest_config import DEFAULT_LISTENERS

__all__ = ["DOCS", "config_reference", "main", "rest_reference", "settings_defaults"]

CONFIG_PAGE = "docs/configuration-reference.md"
REST_PAGE = "docs/rest-reference.md"
# The flow and process keys a settings object holds: key -> (group, field). Intervals and
# their `*.enabled` keys come from DEFAULT_INTERVALS_S; test_docgen checks that every field
# of the settings objects is here or an interval.
FLOW_FIELDS: dict[str, tuple[str, str]] = {
    "tasks.max": ("source", "tasks_max"),
    "offset.lag.max": ("source", "offset_lag_max"),
    "replication.factor": ("source", "replication_factor"),
    "heartbeats.replication.enabled": ("source", "heartbeats_replication_enabled"),
    "emit.offset-syncs.enabled": ("source", "emit_offset_syncs_enabled"),
    "offset-syncs.topic.replication.factor": ("source", "offset_syncs_topic_replication_factor"),
    "offset-syncs.topic.location": ("source", "offset_syncs_topic_location"),
    "exactly.once.support": ("source", "exactly_once_support"),
    "transaction.boundary.interval.ms": ("source", "transaction_boundary_interval_ms"),
    "skip.oversized.records": ("source", "skip_oversized_records"),
    "progress.group.id": ("source", "progress_group_id"),
    "progress.group.commit.interval.ms": ("source", "progress_group_commit_interval_ms"),
    "checkpoints.topic.replication.factor": ("checkpoint", "checkpoints_topic_replication_factor"),
    "heartbeats.topic.replication.factor": ("heartbeat", "heartbeats_topic_replication_factor"),
    "offset.storage.topic": ("worker", "offset_storage_topic"),
    "offset.storage.partitions": ("worker", "offset_storage_partitions"),
    "offset.storage.replication.factor": ("worker", "offset_storage_replication_factor"),
    "config.storage.replication.factor": ("worker", "config_storage_replication_factor"),
    "exactly.once.source.support": ("worker", "exactly_once_source_support"),
    "schema.ids.keys": ("schema", "ids_keys"),
    "schema.ids.values": ("schema", "ids_values"),
    "schema.ids.wait.ms": ("schema", "ids_wait_ms"),
    "key.subject.name.strategy": ("schema", "key_strategy"),
    "value.subject.name.strategy": ("schema", "value_strategy"),
}
PROCESS_FIELDS: dict[str, str] = {
    "mm2.state.dir": "mm2_state_dir",
    "mm2.configs.topic": "mm2_configs_topic",
    "mm2.configs.cluster": "mm2_configs_cluster",
    "mm2.leader.session.timeout.ms": "mm2_leader_session_timeout_ms",
}


def _shown(value: object) -> str:
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def settings_defaults() -> dict[str, object]:
    """What mm2 reads for each key when the file does not set it (the source alias shown as
    `<source>`)."""
    flow = flow_settings("<source>", {}, {}, {}, {})
    found: dict[str, object] = {}
    for key, (group, field) in FLOW_FIELDS.items():
        found[key] = getattr(getattr(flow, group), field)
    process = mirror_maker_settings({})
    for key, field in PROCESS_FIELDS.items():
        found[key] = getattr(process, field)
    for name, seconds in DEFAULT_INTERVALS_S.items():
        found[f"{name}.enabled"] = name not in DEFAULT_OFF
        found[f"{name}.interval.seconds"] = seconds
    return found


def _defaults() -> dict[str, str]:
    shown = {key: _shown(value) for key, value in settings_defaults().items()}
    shown.update(
        {
            "topics": _shown(filters.TOPICS_DEFAULT),
            "topics.exclude": _shown(filters.TOPICS_EXCLUDE_DEFAULT),
            "groups": _shown(filters.GROUPS_DEFAULT),
            "groups.exclude": _shown(filters.GROUPS_EXCLUDE_DEFAULT),
            "config.properties.exclude": _shown(filters.CONFIG_PROPERTIES_EXCLUDE_DEFAULT),
            "replication.policy.class": _shown(DEFAULT_POLICY_CLASS),
            "replication.policy.separator": _shown(DefaultReplicationPolicy().separator),
            "listeners": _shown(DEFAULT_LISTENERS),
        }
    )
    return shown


def _apache(key: str, doc: KeyDoc, mm2_default: str) -> str:
    name = key.removesuffix(".interval.seconds")
    if name != key and name in APACHE_INTERVALS_S:
        apache = _shown(APACHE_INTERVALS_S[name])
        return apache if apache != mm2_default else ""
    return doc.apache


def _kind(kind: ValueType) -> str:
    if isinstance(kind, tuple):
        return "one of " + ", ".join(f"`{c}`" for c in kind)
    return kind


def _number(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" {_number(low)} to {_number(high)}"
    if low is not None:
        return f", at least {_number(low)}"
    return "" if high is None else f", at most {_number(high)}"


def key_type(key: str) -> str:
    """The type the code checks a key's value as; `string` where it checks none."""
    if key in TOP_LEVEL:
        d = TOP_LEVEL[key]
        return _kind(d.kind) + _bounds(d.low, d.high)
    if key in TYPES:
        return _kind(TYPES[key]) + _bounds(*BOUNDS.get(key, (None, None)))
    for role in ("consumer", "producer", "admin"):
        if key in CLIENT_DEFS[role]:
            return _client_type(CLIENT_DEFS[role][key])
    return "string"


def _client_type(d: Def) -> str:
    return _kind(d.kind) + _bounds(d.low, d.high)


_SECTIONS: tuple[tuple[Where, str, str], ...] = (
    ("process", "The process (top level only)", "Set once at the top of the file."),
    ("rest", "The REST listener (top level only)", "Where and how the REST API listens."),
    (
        "cluster",
        "Per cluster",
        "Set as `<alias>.<key>`, e.g. `primary.bootstrap.servers`. The SSL and SASL keys of the "
        "[client settings](#client-settings) are cluster keys too: `<alias>.ssl.truststore."
        "location` reaches every client of that cluster.",
    ),
    (
        "flow",
        "Per flow",
        "Set as `<source>-><target>.<key>` for one flow, or at the top level for every flow "
        "(the flow's own setting wins).",
    ),
    (
        "worker",
        "Connect worker",
        "Apache reads these as `<target>.<key>` or at the top level; mm2 also as "
        "`<source>-><target>.<key>`.",
    ),
)
_SET = {
    "process": "top level",
    "rest": "top level",
    "cluster": "`<alias>.`",
    "flow": "per flow or top level",
    "worker": "`<target>.`, top level or per flow",
}


# Sample values where a type's sample would not do: every login module the translation knows,
# an assignor with a librdkafka twin.
_PROBES: dict[str, tuple[str, ...]] = {
    "sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="p";',
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
        'keyTab="/k" principal="p@R" serviceName="kafka";',
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'clientId="c" clientSecret="s" scope="x";',
    ),
    "partition.assignment.strategy": ("RangeAssignor",),
}


def _probe_values(role: ClientRole, key: str) -> tuple[str, ...]:
    if key in _PROBES:
        return _PROBES[key]
    d = CLIENT_DEFS[role][key]
    if isinstance(d.kind, tuple):
        return (d.kind[0],)
    samples = {"boolean": "true", "list": "a", "class": "a", "string": "a", "password": "a"}
    return (samples.get(str(d.kind), str(int(max(d.low or 0, 1024)))),)


def librdkafka_names(role: ClientRole, key: str) -> str:
    """What the translation makes of `key` for a client of `role`, asked with sample values."""
    base: Mapping[str, str] = {}
    if key.startswith(("ssl.keystore.", "ssl.truststore.", "ssl.key.")):
        # Stores are read with their type and password; PEM files map over by location.
        base = {"ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM"}
    before = translate_client_config(base, role, read_stores=False).config
    made: set[str] = set()
    for value in _probe_values(role, key):
        result = translate_client_config({**base, key: value}, role, read_stores=False)
        if key in result.unsupported:
            return "none: warned at load"
        made |= {k for k in result.config if k not in before or key in base}
    if not made:
        return "read with the key store" if base else "ignored: mm2 fixes it or Java needs it"
    return ", ".join(f"`{k}`" for k in sorted(made))


def _client_rows() -> list[list[str]]:
    roles: tuple[ClientRole, ...] = ("producer", "consumer", "admin")
    rows = []
    for key in sorted(set().union(*(CLIENT_DEFS[r] for r in roles))):
        having = [r for r in roles if key in CLIENT_DEFS[r]]
        types = {_client_type(CLIENT_DEFS[r][key]) for r in having}
        names = {r: librdkafka_names(r, key) for r in having}
        if len(set(names.values())) == 1:
            librdkafka = names[having[0]]
        else:
            librdkafka = "; ".join(f"{r}: {n}" for r, n in names.items())
        clients = "all" if len(having) == len(roles) else ", ".join(having)
        cluster = " (cluster key)" if key in CLIENT_CONFIG_NAMES else ""
        rows.append([f"`{key}`{cluster}", clients, " or ".join(sorted(types)), librdkafka])
    return rows


def config_reference(catalog: Mapping[str, KeyDoc] = CATALOG) -> str:
    """The configuration reference page."""
    defaults = _defaults()
    out = [
        HEADER.format(
            source="mm2/config (catalog.py, names.py, keys.py, client_defs.py, settings.py)"
        ),
        "# Configuration reference\n\n",
        "Every key mm2 reads from `mm2.properties`, grouped by where it is set: its type as mm2 "
        "checks it, mm2's default, Apache MirrorMaker 2's default where it differs, and what it "
        "does. How to use them: [configuration.md](configuration.md). A key whose type the "
        "code does not check is read as a `string`; `unset` means mm2 uses nothing or works "
        "the value out (the meaning says how).\n\n",
    ]
    for where, title, intro in _SECTIONS:
        rows = [
            [
                f"`{key}`",
                key_type(key),
                defaults.get(key, "unset"),
                _apache(key, doc, defaults.get(key, "unset")),
                doc.meaning,
            ]
            for key, doc in sorted(catalog.items())
            if doc.where == where and not doc.ours
        ]
        out += [f"## {title}\n\n{intro}\n\n"]
        out += [table(["key", "type", "mm2", "Apache MM2", "meaning"], rows), "\n"]
    ours = [
        [f"`{key}`", _SET[doc.where], key_type(key), defaults.get(key, "unset"), doc.meaning]
        for key, doc in sorted(catalog.items())
        if doc.ours
    ]
    out += [
        "## mm2's own keys\n\nKeys Apache MirrorMaker 2 does not read.\n\n",
        table(["key", "set", "type", "mm2", "meaning"], ours),
        "\n## Client settings\n\n",
        "The Java clients' keys, as `<alias>.<role>.<key>` (`primary.consumer.fetch.min.bytes`), "
        "`<source>-><target>.<side>.<role>.<key>` (side `source` or `target`), `<role>.<key>` "
        "at the top level, or, for a cluster key, `<alias>.<key>` for every client of the "
        "cluster. Each is checked as Apache's client checks it and translated to librdkafka's "
        "settings (mm2/config/librdkafka.py); the last column is what it becomes.\n\n",
        table(["key", "clients", "type", "librdkafka"], _client_rows()),
    ]
    return "".join(out)


DOCS: dict[str, Callable[[], str]] = {CONFIG_PAGE: config_reference, REST_PAGE: rest_reference}


def stale(root: Path) -> list[str]:
    """The generated pages under `root` that differ from what the code makes now."""
    return [
        page
        for page, make in DOCS.items()
        if not (root / page).is_file() or (root / page).read_text(encoding="utf-8") != make()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mm2.cli.docgen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is stale")
    parser.add_argument("--root", type=Path, default=Path(), help="the repository (default: .)")
    args = parser.parse_args(argv)
    if args.check:
        old = stale(args.root)
        for page in old:
            print(f"{page} is out of date: run `make docs`", file=sys.stderr)
        return 1 if old else 0
    for page, make in DOCS.items():
        (args.root / page).write_text(make(), encoding="utf-8")
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
