"""SchemaSync: a pass copies what is new in a source registry to a target registry.

What a pass copies, for every subject the filter accepts: each version (its text, type and
references, referenced versions first and their subjects renamed as the referencing one is),
the subject's compatibility level and the global one, and soft deletes (of a version or of a
whole subject). Hard deletes are not copied. Content is compared by the target itself (a
lookup under the subject), so a pass that finds everything in place writes nothing; what is
known to be in place is remembered, so a pass over an unchanged registry only lists.

IDs: a record carries its schema's ID, so the target must answer that ID with the same schema.
A target in IMPORT mode is given the source's ID and version with each registration and keeps
them: the flow *keeps* IDs, as long as each answer's ID is the source's. Any other target
(Apicurio 3.0 has no modes and assigns its own IDs; a Confluent registry in READWRITE) numbers
schemas its own way: the flow *translates* IDs, and copy tasks rewrite them in flight. Either
way every source ID (and GUID, where both registries give them) is handed to the sink with its
target ID once its schema is on the target: the copy side copies a record only once its ID is
mapped. Each SchemaSync hands every mapping once, known or not (the known ones its first pass
did not meet right after that pass), so that a new one (a restart of its task) writes the whole
map again, into an offsets topic that may have been lost.

Subjects: once every version of a subject is placed, the subject's source IDs and GUIDs are
handed to `described` (again whenever they change, and once per SchemaSync): the copy side
rewrites a record's ID only where it is one of the IDs of a subject that names the record's
topic, and copies every other record byte for byte.

The sync remembers what it placed; a target changed behind its back is seen again only by a
new SchemaSync (a restart of its task).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from mm2.errors import MM2Error
from mm2.records.schema_ids import SchemaIdMapping, SchemaSubject
from mm2.schemas.client import (
    Registered,
    RegistryClient,
    Schema,
    SchemaReference,
    SchemaRegistryError,
    SchemaVersion,
)
from mm2.schemas.subjects import SubjectFilter, SubjectNaming

__all__ = ["IdMode", "MappingSink", "PassReport", "SchemaSync", "SchemaSyncError"]

log = logging.getLogger(__name__)

IdMode = Literal["kept", "translated"]
MappingSink = Callable[[SchemaIdMapping], None]
SubjectSink = Callable[[SchemaSubject], None]
_UNKNOWN = object()


class SchemaSyncError(MM2Error):
    """Subjects a pass could not copy: the first one's error and how many others failed.
    Retriable when every failure was (the task polls again; the others were copied)."""

    kind = "schema-sync"

    def __init__(self, failures: Mapping[str, MM2Error]) -> None:
        (subject, first), *others = failures.items()
        more = f"; {len(others)} other subject(s) failed too: " if others else ""
        more += ", ".join(s for s, _ in others[:5]) + (", ..." if len(others) > 5 else "")
        super().__init__(f"subject {subject}: {first}{more}")
        self.failures = dict(failures)
        self.retriable = all(e.retriable for e in failures.values())


@dataclass
class PassReport:
    """What one pass wrote: to the target registry (`writes`) and to the sink (`mappings`)."""

    registered: int = 0
    deleted: int = 0
    configs: int = 0
    mappings: int = 0

    @property
    def writes(self) -> int:
        return self.registered + self.deleted + self.configs


@dataclass(frozen=True)
class _Placed:
    """Where a source version is on the target."""

    subject: str
    version: int
    id: int
    guid: str | None
    source_id: int  # the version's ID and GUID in the source registry
    source_guid: str | None


class SchemaSync:
    """Copies `source` to `target` for the flow of `source_alias`, a pass at a time
    (`run_pass`); `sink` is given every ID mapping not in `known`."""

    def __init__(
        self,
        source: RegistryClient,
        target: RegistryClient,
        *,
        source_alias: str,
        naming: SubjectNaming,
        subjects: SubjectFilter,
        sink: MappingSink,
        known: Mapping[int | str, int | str] | None = None,
        flow: str = "",
        described: SubjectSink | None = None,
    ) -> None:
        self._source, self._target = source, target
        self._alias, self._naming, self._filter, self._sink = source_alias, naming, subjects, sink
        self._described = described
        self._subject_ids: dict[str, SchemaSubject] = {}  # as last handed to `described`
        self._flow = flow or f"{source_alias}->?"
        self._ids: dict[int | str, int | str] = dict(known or {})
        self._known = dict(known or {})  # handed again after the first pass, if not met
        self._translating = any(isinstance(k, int) and k != v for k, v in self._ids.items())
        self._id_mode: IdMode | None = None
        self.id_mode_reason = ""
        self._target_mode: str | None = None
        self._placed: dict[tuple[str, int], _Placed] = {}
        self._hidden: set[tuple[str, int]] = set()  # versions the source does not show
        self._visiting: set[tuple[str, int]] = set()
        self._decided: set[int | str] = set()
        self._listings: dict[str, tuple[tuple[int, ...], frozenset[int]]] = {}
        self._levels: dict[str | None, object] = {}  # compatibility the target has, as known
        self._names: dict[str, str | None] = {}  # a subject's name decided once: it stays
        self._report = PassReport()

    @property
    def id_mode(self) -> IdMode | None:
        """Whether the flow keeps or translates IDs; None before the first pass."""
        return self._id_mode

    def run_pass(self) -> PassReport:
        """Copy what changed since the last pass. Raises SchemaSyncError after the pass for
        the subjects it could not copy (the others are copied); a registry that refuses our
        credentials stops the pass at once."""
        self._report = PassReport()
        self._target_mode = self._target.mode()
        self._decide_mode()
        self._copy_level(self._source.compatibility(), None)
        live = set(self._source.subjects())
        failures: dict[str, MM2Error] = {}
        for subject in sorted(set(self._source.subjects(deleted=True)) | live):
            if not self._filter.accepts(subject):
                continue
            target = self._target_name(subject)
            if target is None:
                continue  # its topic came from the target: never copied back
            try:
                self._sync_subject(subject, target, live=subject in live)
            except (SchemaRegistryError, SchemaSyncError) as exc:
                if exc.operator:
                    raise
                failures[subject] = exc
        if failures:
            raise SchemaSyncError(failures)
        # Known mappings this sync did not meet (a version the source no longer shows): handed
        # once too, so that a new offsets topic gets the whole map.
        for source_id, target_id in list(self._known.items()):
            if source_id not in self._decided:
                self._emit(source_id, target_id)
        self._known = {}
        return self._report

    # -- IDs kept or translated --
    def _decide_mode(self) -> None:
        if self._translating:
            self._set_mode("translated", self.id_mode_reason or "source and target IDs differ")
        elif self._target_mode == "IMPORT":
            self._set_mode("kept", f"{self._target.url} is in IMPORT mode")
        elif self._target_mode is None:
            self._set_mode("translated", f"{self._target.url} has no modes: it assigns its own IDs")
        else:
            self._set_mode(
                "translated", f"{self._target.url} is in {self._target_mode} mode, not IMPORT"
            )

    def _set_mode(self, mode: IdMode, reason: str) -> None:
        if mode == self._id_mode:
            return
        switch = self._id_mode is not None
        self._id_mode, self.id_mode_reason = mode, reason
        says = "keeps schema IDs" if mode == "kept" else "translates schema IDs in flight"
        level = logging.WARNING if switch else logging.INFO
        log.log(level, "%s: %s%s (%s)", self._flow, "now " if switch else "", says, reason)

    def _emit(self, source: int | str, target: int | str) -> None:
        """Hand the mapping to the sink unless known; the first version seen of an ID
        decides (one content may sit under several subjects, each copy decodes the same)."""
        if source in self._decided:
            return
        if isinstance(source, int) and source != target and not self._translating:
            self._translating = True
            self._set_mode("translated", f"source ID {source} is {target} on the target")
        self._sink(SchemaIdMapping(self._alias, source, target))
        self._ids[source] = target
        self._report.mappings += 1
        self._decided.add(source)

    # -- subjects --
    def _target_name(self, subject: str) -> str | None:
        """The subject's name on the target, decided the first time it is seen (whether its
        prefix is a topic of the source may change later; its copy's name must not)."""
        if subject not in self._names:
            self._names[subject] = self._naming.target_subject(subject)
        return self._names[subject]

    def _sync_subject(self, subject: str, target: str, *, live: bool) -> None:
        every = self._source.versions(subject, deleted=True)
        alive = frozenset(self._source.versions(subject)) if live else frozenset()
        listing = (tuple(every), alive)
        if self._listings.get(subject) != listing:
            for version in every:
                self._place(subject, version, live=version in alive)
            self._copy_deletes(subject, target, every, alive, live=live)
            self._describe(subject, every)
            self._listings[subject] = listing
        if live:
            self._copy_level(self._source.compatibility(subject), target)

    def _describe(self, subject: str, versions: list[int]) -> None:
        """Hand the subject's source IDs and GUIDs on, if they changed (every version placed)."""
        if self._described is None:
            return
        placed = [p for v in versions if (p := self._placed.get((subject, v))) is not None]
        found = SchemaSubject(
            self._alias,
            subject,
            frozenset(p.source_id for p in placed),
            frozenset(p.source_guid for p in placed if p.source_guid is not None),
        )
        if found.ids and self._subject_ids.get(subject) != found:
            self._described(found)
            self._subject_ids[subject] = found

    def _copy_level(self, level: str | None, subject: str | None) -> None:
        """The compatibility level the source sets (globally: subject None), on the target.
        None set on the source: the target's stays, but for a subject's NONE, the one level
        mm2 sets of its own (for one registration, _register_past_compatibility): a process
        that died before it put the level back left it, and the subject follows the global
        level again."""
        if level is None:
            if subject is not None:
                self._drop_none(subject)
            return
        known = self._levels.get(subject, _UNKNOWN)
        if known is _UNKNOWN:
            known = self._target.compatibility(subject)
        if known != level:
            self._target.set_compatibility(level, subject)
            self._report.configs += 1
        self._levels[subject] = level

    def _drop_none(self, subject: str) -> None:
        known = self._levels.get(subject, _UNKNOWN)
        if known is _UNKNOWN:
            known = self._target.compatibility(subject)
        if known == "NONE":
            self._target.delete_compatibility(subject)
            self._report.configs += 1
            log.info(
                "%s: %s: compatibility NONE on %s, which the source does not set: "
                "removed (left by a registration past compatibility that did not end)",
                self._flow,
                subject,
                self._target.url,
            )
        self._levels[subject] = None

    def _copy_deletes(
        self, subject: str, target: str, every: list[int], alive: frozenset[int], *, live: bool
    ) -> None:
        gone = [v for v in every if v not in alive]
        if not gone:
            return
        if not live:  # the whole subject was soft-deleted
            if self._target.versions(target):
                self._target.delete_subject(target)
                self._report.deleted += 1
            return
        on_target = set(self._target.versions(target))
        for version in gone:
            placed = self._placed.get((subject, version))
            if placed is not None and placed.subject == target and placed.version in on_target:
                self._target.delete_version(target, placed.version)
                self._report.deleted += 1

    # -- versions --
    def _place(self, subject: str, version: int, *, live: bool = False) -> _Placed | None:
        """The version on the target, registered there first if it is not (its references
        before it); None when the source does not show it (said once)."""
        key = (subject, version)
        if key in self._placed:
            return self._placed[key]
        if key in self._hidden:
            return None
        if key in self._visiting:
            raise SchemaRegistryError(
                self._source.url,
                f"GET /subjects/{subject}/versions/{version}",
                "its references lead back to it (a cycle no registry should hold)",
            )
        found = self._source.version(subject, version, deleted=True)
        if found is None:
            self._hidden.add(key)
            log.info(
                "%s: %s version %d is not shown by %s (a soft-deleted subject there): not copied",
                self._flow,
                subject,
                version,
                self._source.url,
            )
            return None
        self._visiting.add(key)
        try:
            content = self._content_on_target(found)
        finally:
            self._visiting.discard(key)
        target = self._target_name(subject) or subject
        registered = self._target.lookup(target, content, deleted=not live)
        if registered is None:
            registered = self._register(target, content, found)
        if registered.version is None:  # an answer without the version: ask for it
            registered = self._target.lookup(target, content) or registered
        if registered.version is None:
            raise SchemaRegistryError(
                self._target.url,
                f"POST /subjects/{target}",
                f"registered as ID {registered.id} but not found under the subject after",
            )
        placed = _Placed(
            target, registered.version, registered.id, registered.guid, found.id, found.guid
        )
        self._emit(found.id, placed.id)
        if found.guid is not None and placed.guid is not None:
            self._emit(found.guid, placed.guid)
        self._placed[key] = placed  # only once the sink took its mappings
        return placed

    def _content_on_target(self, found: SchemaVersion) -> Schema:
        """The version's content with its references pointing at their copies."""
        references = []
        for ref in found.content.references:
            placed = self._place(ref.subject, ref.version)
            if placed is None:
                raise SchemaRegistryError(
                    self._source.url,
                    f"GET /subjects/{ref.subject}/versions/{ref.version}",
                    f"{found.subject} version {found.version} references it, and it is not shown",
                )
            references.append(SchemaReference(ref.name, placed.subject, placed.version))
        return Schema(found.content.schema, found.content.schema_type, tuple(references))

    def _register(self, target: str, content: Schema, found: SchemaVersion) -> Registered:
        self._report.registered += 1
        if self._target_mode == "IMPORT":
            return self._target.register(target, content, schema_id=found.id, version=found.version)
        try:
            return self._target.register(target, content)
        except SchemaRegistryError as exc:
            if exc.status != 409:
                raise
        return self._register_past_compatibility(target, content)

    def _register_past_compatibility(self, target: str, content: Schema) -> Registered:
        """A version the source holds but the target refuses as incompatible (its level was
        stricter when the version came, or the source's level changed since): registered with
        the subject's level at NONE for that one call, then the level is put back."""
        log.info(
            "%s: %s refuses a version of %s as incompatible; registering it as the source "
            "holds it (compatibility NONE for that registration)",
            self._flow,
            self._target.url,
            target,
        )
        before = self._target.compatibility(target)
        self._target.set_compatibility("NONE", target)
        try:
            return self._target.register(target, content)
        finally:
            if before is None:
                self._target.delete_compatibility(target)
            else:
                self._target.set_compatibility(before, target)
            self._levels.pop(target, None)
