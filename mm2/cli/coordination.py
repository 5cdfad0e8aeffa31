"""The coordinator of a connect-mirror-maker process: config topics and elections on the target
clusters of its flows (mm2.runtime.standby), built from mm2.properties.

Keys (top level only):
- `mm2.configs.topic` (default `mm2-configs.internal`): the config topic on each target;
- `mm2.configs.cluster` (default: the target of the file's first flow): where REST changes live;
- `mm2.rest.secrets.key`: seals secrets given over REST (mm2.runtime.secrets);
- `mm2.leader.session.timeout.ms` (default 10000): how long a killed leader keeps its flows.
"""

from __future__ import annotations

from collections.abc import Callable

from mm2.config.model import SOURCE, Flow, MirrorMakerConfig
from mm2.config.providers import ProviderProblem, Providers
from mm2.errors import ConfigError
from mm2.kafka.config_topic import ConfigTopic
from mm2.kafka.election import LeaderElection
from mm2.runtime.leader_probe import LeaderProbe
from mm2.runtime.secrets import SECRETS_KEY, SecretBox
from mm2.runtime.standby import Coordinator, Election

__all__ = ["build_coordinator", "secret_box"]


def secret_box(config: MirrorMakerConfig) -> SecretBox:
    """The box for `mm2.rest.secrets.key`, given as it is or through a config provider."""
    given = config.raw.get(SECRETS_KEY)
    try:
        key = Providers.from_settings(config.raw).resolve(given) if given else None
    except ProviderProblem as exc:
        raise ConfigError(str(exc), file=config.path, key=SECRETS_KEY) from None
    return SecretBox(key or None)


def _home(config: MirrorMakerConfig) -> str | None:
    chosen = config.settings.mm2_configs_cluster
    if chosen:
        if chosen not in config.clusters:
            raise ConfigError(
                f"{chosen!r} is not one of the clusters ({', '.join(config.clusters)})",
                file=config.path,
                key="mm2.configs.cluster",
            )
        return chosen
    return config.flows[0].target if config.flows else None


def build_coordinator(config: MirrorMakerConfig, worker_id: str) -> Coordinator | None:
    """None when the file has no flow (nothing to lead, nowhere to keep changes)."""
    home = _home(config)
    if home is None:
        return None
    topic = config.settings.mm2_configs_topic
    session_ms = config.settings.mm2_leader_session_timeout_ms
    logs: dict[str, ConfigTopic] = {}

    def config_log(flow: Flow) -> ConfigTopic:
        made = logs[flow.target] = ConfigTopic(
            flow.target,
            topic,
            admin_config=flow.target_admin_config(label="configs-admin"),
            consumer_config=flow.target_consumer_config(SOURCE, "configs-consumer"),
            producer_config=flow.target_producer_config(label="configs-producer"),
            replication_factor=flow.settings.worker.config_storage_replication_factor,
        )
        return made

    def elect(alias: str, on_change: Callable[[bool], None]) -> Election:
        made = logs[alias]
        return LeaderElection(
            alias,
            topic,
            made.consumer_config,
            on_change,
            ready=made.ensure_until,
            session_timeout_ms=session_ms,
        )

    return Coordinator(
        worker_id=worker_id,
        url="",
        home=home,
        logs=config_log,
        elect=elect,
        box=secret_box(config),
        probe=LeaderProbe(),
    )
