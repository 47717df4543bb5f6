"""The store: a git repository whose ``main`` commits are record admissions.

Every write is one commit made without a work tree, under the store's writer
lock, moved onto ``refs/heads/main`` by compare-and-swap: an admission is
either wholly there (record, index entry, commit) or not there at all.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from gitkb import record as rec
from gitkb.errors import (
    AdmissionRefused,
    GitkbError,
    NotARepository,
    NotAStore,
    RecordError,
    RefMoved,
    os_reason,
    writing,
)
from gitkb.gates import GateContext, GateResult, run_gates
from gitkb.record import INDEX_PATH, Index, RecordFile
from gitkb.resources import data_dir
from gitkb.vcs.repository import Repository
from gitkb.vcs.trailers import format_message

BRANCH = "refs/heads/main"
CONFIG_PATH = "gitkb.toml"
CONFLICTS_DIR = "conflicts"
TRACE_REFS = "refs/kb/traces/"
ACTIONS = ("insert", "confirm", "conflict")
_CAS_ATTEMPTS = 3
_BATCH = 200  # admissions per pack and per move of main

_CONFLICT_HINTS = [
    "the two measurements cover different shape sets",
    "the preconditions or the builds_on approach differ",
    "the hardware batch, driver or toolchain differs",
    "one side was mismeasured",
]


@dataclass
class Admission:
    """What one admission did; ``commit`` is None when nothing needed writing."""

    action: str
    record_id: str
    path: str | None
    commit: str | None
    note: str = ""
    gates: str = ""

    def as_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class AdmitRequest:
    """One record file to admit, with the admission's action and provenance."""

    raw: bytes
    action: str = "insert"
    target: str | None = None
    source: str = "<record>"
    trace: str | None = None
    trace_commit: str | None = None
    body: str = ""


@dataclass
class _Change:
    """One commit's worth of store edits, built on the current tip under the lock."""

    action: str
    record_id: str
    edits: dict[str, bytes | None]
    path: str | None = None
    body: str = ""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    note: str = ""
    index: Index | None = None  # the index the new commit holds, when the change rewrites it
    gates: str = ""


class Store:
    def __init__(self, repo: Repository, location: Path) -> None:
        self.repo = repo
        self.location = location
        self._index_cache: tuple[str, Index] | None = None
        self._signature_cache: tuple[Index, int, dict[str, list[str]]] | None = None

    # ----------------------------------------------------------------- opening

    @classmethod
    def open(cls, path: str | os.PathLike = ".") -> Store:
        location = Path(path)
        try:
            repo = Repository.open(location)
        except NotARepository as exc:
            raise NotAStore(f"{location} is not a gitkb store: {exc.message}") from None
        tip = repo.resolve(BRANCH)
        if tip is None:
            raise NotAStore(f"{location} is not a gitkb store: it has no main branch")
        if repo.blob_sha(tip, CONFIG_PATH) is None:
            raise NotAStore(f"{location} is not a gitkb store: no {CONFIG_PATH} on main")
        store = cls(repo, location)
        if not isinstance(store.config(tip).get("store"), dict):
            raise NotAStore(f"{location} is not a gitkb store: {CONFIG_PATH} has no [store] table")
        return store

    @classmethod
    def init(cls, path: str | os.PathLike, bare: bool = False, name: str | None = None) -> Store:
        location = Path(path)
        if location.is_dir() and any(location.iterdir()):
            what = "a git repository" if (location / ".git").exists() else "files"
            raise GitkbError(f"{location} already holds {what}; a store starts in a new folder")
        if location.exists() and not location.is_dir():
            raise GitkbError(f"{location} is a file; a store starts in a new folder")
        store_name = name or location.resolve().name
        if "\n" in store_name or not store_name.strip():
            raise GitkbError(f"store name {store_name!r} must be one non-empty line", 2)
        with writing(location):
            return cls._create(location, bare, store_name)

    @classmethod
    def _create(cls, location: Path, bare: bool, store_name: str) -> Store:
        repo = Repository.init(location, bare=bare)
        # Each admission rewrites records/index.json; fast compression keeps that
        # cheap, and `git gc` deltas the many index versions later anyway.
        repo.set_config("core", "compression", "1")
        repo = Repository.open(location)  # an object store that has read that setting
        config = {"store": {"name": store_name, "format": "gitkb-1", "schema": rec.SCHEMA_NAME}}
        skeleton = data_dir("templates") / "store"
        files: dict[str, bytes | None] = {
            CONFIG_PATH: tomli_w.dumps(config).encode(),
            INDEX_PATH: Index().dumps(),
            ".pre-commit-config.yaml": (skeleton / "pre-commit-config.yaml").read_bytes(),
            ".gitattributes": (skeleton / "gitattributes").read_bytes(),
            "README.md": (skeleton / "README.md").read_text().format(name=store_name).encode(),
        }
        message = format_message(
            f"kb init {store_name}",
            "A new gitkb store.",
            [("KB-Action", "init"), ("KB-Store-Format", "gitkb-1")],
        )
        commit = repo.write_commit(None, files, message)
        repo.update_ref(BRANCH, None, commit, reason="gitkb: init")
        repo.sync_work_tree(BRANCH, commit, list(files))
        return cls(repo, location)

    # ----------------------------------------------------------------- reading

    @property
    def tip(self) -> str:
        tip = self.repo.resolve(BRANCH)
        if tip is None:
            raise NotAStore(f"{self.location}: the main branch disappeared")
        return tip

    def config(self, commit: str | None = None) -> dict:
        raw = self.repo.read(commit or self.tip, CONFIG_PATH)
        try:
            return tomllib.loads((raw or b"").decode())
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise GitkbError(
                f"{self.location}: {CONFIG_PATH} on main is not valid TOML ({exc}); "
                "fix it with a commit"
            ) from None

    def index(self, commit: str | None = None) -> Index:
        commit = commit or self.tip
        if self._index_cache and self._index_cache[0] == commit:
            return self._index_cache[1]
        index = Index.parse(self.repo.read(commit, INDEX_PATH), f"{self.location}/{INDEX_PATH}")
        self._index_cache = (commit, index)
        return index

    def record_files(self, commit: str | None = None) -> Iterator[RecordFile]:
        commit = commit or self.tip
        for path, sha in self.repo.list_tree(commit, rec.RECORDS_DIR):
            if rec.is_record_path(path):
                yield rec.load(path, self.repo.blob(sha))

    def read_record(self, record_id: str, commit: str | None = None) -> RecordFile:
        entry = self.index(commit).entry(record_id)
        if entry is None:
            raise GitkbError(f"no record {record_id} in {self.location}")
        raw = self.repo.read(commit or self.tip, entry["path"])
        if raw is None:
            raise GitkbError(
                f"{record_id}: the index names {entry['path']}, which is missing; "
                "run git kb reindex"
            )
        return rec.load(entry["path"], raw)

    def gate_context(self, full: bool = False, commit: str | None = None) -> GateContext:
        commit = commit or self.tip
        return GateContext(
            records=list(self.record_files(commit)),
            index_raw=self.repo.read(commit, INDEX_PATH),
            full=full,
            store=self,
        )

    def list(self, **filters: str | None) -> list[dict]:
        """Index entries whose type/vendor/arch/dsl/operator_family equal the given filters."""
        wanted = {k: v for k, v in filters.items() if v}
        out = []
        for entry in self.index().entries():
            scope = rec.scope_of(entry)
            values = {
                "type": entry.get("type"),
                "vendor": scope.get("vendor"),
                "arch": scope.get("arch"),
                "dsl": scope.get("dsl"),
                "operator": scope.get("operator_family"),
            }
            if all(values.get(k) == v for k, v in wanted.items()):
                out.append(entry)
        return out

    def log(self, record_id: str | None = None) -> list[dict]:
        """The admission history, newest first, read from commit trailers."""
        out = []
        for info in self.repo.walk(self.tip):
            trailers: dict[str, str] = {}
            for key, value in info.trailers:
                trailers.setdefault(key, value)
            if "KB-Action" not in trailers:
                continue
            names = {
                trailers.get("KB-Record"),
                trailers.get("KB-Target"),
                trailers.get("KB-Confirmed-By"),
            }
            if record_id and record_id not in names:
                continue
            out.append(
                {
                    "commit": info.sha,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(info.commit_time)),
                    "subject": info.subject,
                    "action": trailers["KB-Action"],
                    "trailers": trailers,
                }
            )
        return out

    # ----------------------------------------------------------------- matching

    def match(self, record: dict) -> dict:
        """Every same-scope candidate and every exact episode_key match; decides nothing."""
        scope = rec.scope_of(record)
        candidates = []
        for entry in self.index().entries():
            other = rec.scope_of(entry)
            if scope.get("vendor") and other.get("vendor") != scope["vendor"]:
                continue
            if scope.get("arch") and other.get("arch") != scope["arch"]:
                continue
            dsl = scope.get("dsl")
            if dsl and dsl != "any" and other.get("dsl") not in (dsl, "any"):
                continue
            family = scope.get("operator_family")
            if family and other.get("operator_family") != family:
                continue
            raw = self.repo.read(self.tip, entry.get("path") or "")
            loaded = rec.load(entry.get("path") or "", raw) if raw is not None else None
            if loaded and loaded.data is not None:
                candidates.append(_summary(loaded.data))
        key = record.get("episode_key")
        return {
            "status": "ok",
            "incoming": _summary(record),
            "candidates_count": len(candidates),
            "episode_key_matches": [c["id"] for c in candidates if key and c["episode_key"] == key],
            "candidates": candidates,
        }

    # ----------------------------------------------------------------- admitting

    def check_record(self, record: dict, path: str, action: str = "insert") -> tuple[str, list]:
        """Run the record-level gates on one record about to be admitted as ``action``;
        return the KB-Gates figure and failures."""
        from gitkb.gates.registry import record_level

        ctx = GateContext(
            records=[RecordFile(path, rec.dumps(record), record)],
            store=self,
            extra={"admission": action},
        )
        results = run_gates(ctx, record_level())
        return _gates_figure(results), [f for r in results for f in r.findings]

    def admit(
        self,
        raw: bytes,
        action: str,
        target: str | None = None,
        source: str = "<record>",
        trace: str | None = None,
        trace_commit: str | None = None,
        body: str = "",
    ) -> Admission:
        """Admit one record file's bytes as ``insert``, ``confirm`` or ``conflict``: one commit."""
        request = AdmitRequest(raw, action, target, source, trace, trace_commit, body)
        return self.admit_many([request])[0]

    def admit_many(self, requests: list[AdmitRequest]) -> list[Admission]:
        """Admit records in order, one commit each, exactly as one ``admit`` after another
        would: a refusal stops the run and everything before it stays admitted (the
        refusal's ``admitted`` lists those). Commits are written in packs of up to
        ``_BATCH`` and main moves once per pack."""
        builds = []
        try:
            for request in requests:
                builds.append(self._prepare(request))
        except GitkbError as exc:
            exc.admitted = self._write_all(builds)
            raise
        return self._write_all(builds)

    def _prepare(self, request: AdmitRequest) -> Callable[[str, Index], _Change]:
        """Parse and gate one request (no store state needed); return its change builder."""
        action, target = request.action, request.target
        if action not in ACTIONS:
            raise GitkbError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}", 2)
        if action != "insert" and not target:
            raise GitkbError(f"--target ID is required for {action}", 2)
        record = rec.parse(request.raw, request.source)
        path = rec.path_for(record)
        gates, findings = self.check_record(record, path, action)
        if findings:
            lines = "\n".join(f.line() for f in findings[:20])
            raise AdmissionRefused(f"{request.source}: refused by the gates:\n{lines}", findings)
        provenance = [
            ("KB-Trace", request.trace),
            ("KB-Trace-Commit", request.trace_commit),
            ("KB-Gates", gates),
        ]
        provenance = [(k, v) for k, v in provenance if v]

        def build(tip: str, index: Index) -> _Change:
            if action == "insert":
                change = self._insert(
                    tip, index, request.raw, record, path, request.body, provenance
                )
            elif target not in index:
                raise AdmissionRefused(f"{action} target {target} is not in the store")
            elif action == "confirm":
                change = self._confirm(tip, index, record, target, provenance)
            else:
                change = self._conflict(tip, index, record, target, provenance)
            change.gates = gates
            return change

        return build

    def _insert(self, tip, index, raw, record, path, body, provenance) -> _Change:
        record_id = record["id"]
        if record_id in index:
            existing = index.entry(record_id).get("path")
            raise AdmissionRefused(f"insert refused: {record_id} already exists ({existing})")
        if self.repo.blob_sha(tip, path) is not None:
            raise AdmissionRefused(f"insert refused: {path} already exists")
        twin = self.reproduction_of(index, record)
        if twin is not None:
            return self._reproduce(tip, index, record, twin, provenance)
        index.put(rec.index_entry(record, path))
        self._note_signature(index, record)
        return _Change(
            "insert",
            record_id,
            {path: raw, INDEX_PATH: index.dumps()},
            path=path,
            body=body,
            trailers=provenance,
            index=index,
        )

    def reproduction_of(self, index: Index, record: dict) -> str | None:
        """The record on ``record``'s page that holds the same code (content signature).

        Same signature and episode key (page and technique): that record. Failing
        that, a retracted record with the same signature in the same scope claims
        the code too, so taken-back code cannot come back under another name.
        """
        from gitkb.warmstart.signature import content_signature

        signature = content_signature(record)
        if signature is None:
            return None
        retracted = None
        for other_id in self._signature_ids(index).get(signature, ()):
            entry = index.entry(other_id)
            if entry is None or entry.get("type") != record.get("type"):
                continue
            if entry.get("episode_key") == record.get("episode_key"):
                return other_id
            if entry.get("status") == "deprecated" and _scope_key(entry.get("retrieval")) == (
                _scope_key(record.get("retrieval"))
            ):
                retracted = retracted or other_id
        return retracted

    def _signature_ids(self, index: Index) -> dict[str, list[str]]:
        """content signature -> ids, read from the index lines without parsing them."""
        cached = self._signature_cache
        if cached is not None and cached[0] is index and cached[1] == len(index):
            return cached[2]
        ids: dict[str, list[str]] = {}
        for record_id, line in index.lines.items():
            found = _SIGNATURE_FIELD.search(line)
            if found:
                ids.setdefault(found.group(1).decode(), []).append(record_id)
        self._signature_cache = (index, len(index), ids)
        return ids

    def _note_signature(self, index: Index, record: dict) -> None:
        """Keep the signature map current after an insert put ``record`` into ``index``."""
        from gitkb.warmstart.signature import content_signature

        cached = self._signature_cache
        if cached is None or cached[0] is not index:
            return
        signature = content_signature(record)
        if signature is not None:
            cached[2].setdefault(signature, []).append(record["id"])
        self._signature_cache = (index, len(index), cached[2])

    def _reproduce(self, tip, index, record, twin, provenance) -> _Change:
        """An insert of code the store holds: confirm the holder; a retracted one stays so."""
        from gitkb.warmstart.signature import content_signature

        change = self._confirm(tip, index, record, twin, provenance)
        if not change.edits:
            return change  # this reproduction was already counted
        signature = content_signature(record)
        retracted = (index.entry(twin) or {}).get("status") == "deprecated"
        stays = " It stays retracted; only git kb unretract lifts that." if retracted else ""
        change.body = f"Reproduction: {record['id']} holds the same code ({signature}).{stays}"
        change.trailers = [("KB-Reproduction", signature), *change.trailers]
        change.note = f"reproduction of {twin}" + (" (retracted; not revived)" if retracted else "")
        return change

    def _confirm(self, tip, index, record, target, provenance) -> _Change:
        target_file = self.read_record(target, tip)
        if target_file.data is None:
            raise AdmissionRefused(f"confirm target {target} is unreadable: {target_file.error}")
        existing = target_file.data
        count = count_confirmation(existing, record["id"])
        if count is None:
            return _Change(
                "confirm", target, {}, path=target_file.path, note="already counted, skipped"
            )
        index.put(rec.index_entry(existing, target_file.path))
        return _Change(
            "confirm",
            target,
            {target_file.path: rec.dumps(existing), INDEX_PATH: index.dumps()},
            path=target_file.path,
            body=f"Confirmed by {record['id']}.",
            trailers=[("KB-Confirmed-By", record["id"]), *provenance],
            note=f"verified_effective is now {count}",
            index=index,
        )

    def _conflict(self, tip, index, record, target, provenance) -> _Change:
        existing = self.read_record(target, tip).data or {}
        taken = {p for p, _ in self.repo.list_tree(tip, CONFLICTS_DIR)}
        n = 1
        while f"{CONFLICTS_DIR}/{record['id']}.{n}.json" in taken:
            n += 1
        path = f"{CONFLICTS_DIR}/{record['id']}.{n}.json"
        queued = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "existing_record_id": target,
            "incoming_record": record,
            "match_confidence": _match_confidence(existing, record),
            "conflict_reason": (
                f"incoming {record.get('type')} (gain.pct {_pct(record)}) contradicts "
                f"existing {existing.get('type')} (gain.pct {_pct(existing)})"
            ),
            "context": {
                f"{side}_{key}": ((doc.get("payload") or {}).get("problem") or {}).get(key)
                for side, doc in (("existing", existing), ("incoming", record))
                for key in ("shape_contract", "bottleneck", "observed_symptom")
            }
            | {"possible_explanations": _CONFLICT_HINTS},
            "resolution": None,
        }
        return _Change(
            "conflict",
            record["id"],
            {path: rec.dumps(queued)},
            path=path,
            body=f"Queued for a human: contradicts {target}.",
            trailers=[("KB-Target", target), *provenance],
        )

    def _write(self, build: Callable[[str, Index], _Change]) -> Admission:
        return self._write_all([build])[0]

    def _write_all(self, builds: list[Callable[[str, Index], _Change]]) -> list[Admission]:
        """Apply change builders in order, one commit each, under the writer lock.

        Each chunk of builders becomes a chain of commits on the current tip,
        stored as one pack, then main moves onto the chain's end by
        compare-and-swap; if main moved meanwhile, the chunk is rebuilt on the
        new tip. A builder's refusal lands the commits before it, then raises.
        """
        admissions: list[Admission] = []
        if not builds:
            return admissions
        try:
            with self.repo.writer_lock() as recovered:
                if recovered:
                    self.repo.repair_work_tree(BRANCH)
                for start in range(0, len(builds), _BATCH):
                    chunk = builds[start : start + _BATCH]
                    try:
                        admissions += self._write_chunk(chunk)
                    except GitkbError as exc:
                        exc.admitted = admissions + getattr(exc, "admitted", [])
                        raise
        except OSError as exc:
            # A read-only store, a full disk: main has not moved past ``admissions``.
            error = GitkbError(f"{self.location}: cannot write to the store ({os_reason(exc)})")
            error.admitted = admissions
            raise error from None
        return admissions

    def _write_chunk(self, chunk: list[Callable[[str, Index], _Change]]) -> list[Admission]:
        for attempt in range(_CAS_ATTEMPTS):
            start_tip = tip = self.tip
            index = self.index(tip)
            self._index_cache = None  # the builders edit the index in place
            done: list[Admission] = []
            touched: set[str] = set()
            refusal: GitkbError | None = None
            with self.repo.batch() if len(chunk) > 1 else contextlib.nullcontext():
                for build in chunk:
                    try:
                        change = build(tip, index)
                    except GitkbError as exc:
                        refusal = exc
                        break
                    if change.index is not None:
                        index = change.index
                    if not change.edits:
                        done.append(
                            Admission(
                                change.action,
                                change.record_id,
                                change.path,
                                None,
                                change.note,
                                change.gates,
                            )
                        )
                        continue
                    message = format_message(
                        f"kb {change.action} {change.record_id}",
                        change.body,
                        [
                            ("KB-Action", change.action),
                            ("KB-Record", change.record_id),
                            *change.trailers,
                        ],
                    )
                    tip = self.repo.write_commit(tip, change.edits, message)
                    touched.update(change.edits)
                    done.append(
                        Admission(
                            change.action,
                            change.record_id,
                            change.path,
                            tip,
                            change.note,
                            change.gates,
                        )
                    )
            if tip != start_tip:
                try:
                    self.repo.update_ref(BRANCH, start_tip, tip, reason="gitkb: admit")
                except RefMoved:
                    if attempt + 1 == _CAS_ATTEMPTS:
                        raise
                    continue
                try:
                    self.repo.sync_work_tree(BRANCH, tip, sorted(touched))
                except OSError as exc:
                    error = GitkbError(
                        f"{self.location}: main is at {tip[:12]}, but the work tree could not "
                        f"follow ({os_reason(exc)}); once writable, `git checkout HEAD -- .` "
                        "brings it up to date"
                    )
                    error.admitted = done
                    raise error from None
            self._index_cache = (tip, index)
            if refusal is not None:
                refusal.admitted = done
                raise refusal
            return done
        raise AssertionError("unreachable")

    # ----------------------------------------------------------------- bulk

    def import_gpu_wiki(self, folder: str | os.PathLike) -> Admission:
        """Admit a GPU-wiki records tree in one ``import`` commit; records keep paths and bytes."""
        from gitkb.gates.registry import record_level

        files = read_folder(folder)
        if not files:
            raise RecordError(f"{folder}: no record files under records/")
        ctx = GateContext(records=files, store=self)
        results = run_gates(ctx, record_level())
        findings = [f for r in results for f in r.findings]
        if findings:
            lines = "\n".join(f.line() for f in findings[:20])
            more = f"\n... and {len(findings) - 20} more" if len(findings) > 20 else ""
            raise AdmissionRefused(
                f"{folder}: import refused by the gates:\n{lines}{more}", findings
            )
        name = Path(folder).resolve().name

        def build(tip: str, index: Index) -> _Change:
            clashes = [f.id for f in files if f.id in index]
            if clashes:
                raise AdmissionRefused(
                    f"import refused: {len(clashes)} ids already in the store, e.g. {clashes[0]}"
                )
            for record_file in files:
                index.put(rec.index_entry(record_file.data, record_file.path))
            edits: dict[str, bytes | None] = {f.path: f.raw for f in files}
            edits[INDEX_PATH] = index.dumps()
            return _Change(
                "import",
                f"gpu-wiki:{name}",
                edits,
                body=f"Imported {len(files)} GPU-wiki records.",
                trailers=[
                    ("KB-Source", "gpu-wiki"),
                    ("KB-Records", str(len(files))),
                    ("KB-Gates", _gates_figure(results)),
                ],
                index=index,
            )

        return self._write(build)

    def export_gpu_wiki(self, folder: str | os.PathLike) -> int:
        """Write every record, byte for byte at its path, and the index under ``folder``."""
        from gitkb.fs import atomic_write

        out = Path(folder)
        if (out / rec.RECORDS_DIR).exists() and any((out / rec.RECORDS_DIR).iterdir()):
            raise GitkbError(
                f"{out / rec.RECORDS_DIR} exists and is not empty; export into a new folder"
            )
        tip = self.tip
        count = 0
        with writing(out):
            for record_file in self.record_files(tip):
                atomic_write(out / record_file.path, record_file.raw)
                count += 1
            atomic_write(out / INDEX_PATH, self.repo.read(tip, INDEX_PATH) or Index().dumps())
        return count

    def reindex(self) -> Admission:
        """Rebuild records/index.json from the records; a commit only when it changed."""

        def build(tip: str, index: Index) -> _Change:
            fresh = Index()
            unindexed = []
            for record_file in self.record_files(tip):
                # An unreadable file, or a record without a string id, cannot be indexed;
                # it is named here and git kb validate reports why.
                if record_file.data is not None and isinstance(record_file.data.get("id"), str):
                    fresh.put(rec.index_entry(record_file.data, record_file.path))
                else:
                    unindexed.append(record_file.path)
            data = fresh.dumps()
            skipped = (
                f"; not indexed (run git kb validate): {', '.join(unindexed[:5])}"
                + (f" and {len(unindexed) - 5} more" if len(unindexed) > 5 else "")
                if unindexed
                else ""
            )
            if self.repo.read(tip, INDEX_PATH) == data:
                return _Change(
                    "reindex", "index", {}, path=INDEX_PATH, note="index already current" + skipped
                )
            return _Change(
                "reindex",
                "index",
                {INDEX_PATH: data},
                path=INDEX_PATH,
                body=f"Rebuilt the index from {len(fresh)} records.",
                trailers=[("KB-Records", str(len(fresh)))],
                note=skipped.removeprefix("; "),
                index=fresh,
            )

        return self._write(build)


_SIGNATURE_FIELD = re.compile(rb'"content_signature": "([^"]+)"')


def _scope_key(retrieval: object) -> tuple:
    scope = (retrieval or {}).get("scope") if isinstance(retrieval, dict) else None
    scope = scope if isinstance(scope, dict) else {}
    return tuple(scope.get(k) for k in ("vendor", "arch", "dsl", "operator_family"))


def count_confirmation(existing: dict, incoming_id: str) -> int | None:
    """Count one confirmation of ``existing`` by ``incoming_id`` in place, once per pair
    (the ``confirm_keys``); return the new ``verified_effective``, None if already counted."""
    key = f"{existing['id']}:{incoming_id}"
    source = f"confirm target {existing['id']}"
    track = rec.object_at(existing, source, "worth", "track")
    keys = track.setdefault("confirm_keys", [])
    if not isinstance(keys, list):
        raise RecordError(
            f"{source}: worth.track.confirm_keys is {rec.json_type(keys)}, not an array"
        )
    if key in keys:
        return None
    counters = rec.object_at(existing, source, "worth", "track", "counters")
    for name in rec.COUNTERS:
        counters.setdefault(name, 0)
    if not isinstance(counters["verified_effective"], int):
        raise RecordError(f"{source}: worth.track.counters.verified_effective is not a number")
    track.setdefault("prior", {})
    counters["verified_effective"] += 1
    keys.append(key)
    return counters["verified_effective"]


def read_folder(folder: str | os.PathLike) -> list[RecordFile]:
    """Record files of a folder laid out like a store (``<folder>/records/...``)."""
    root = Path(folder)
    records_dir = root / rec.RECORDS_DIR
    if not records_dir.is_dir():
        raise RecordError(f"{root}: no records/ folder there")
    files = []
    for path in sorted(records_dir.rglob("*.json")):
        relative = path.relative_to(root).as_posix()
        if rec.is_record_path(relative) and path.is_file() and not path.is_symlink():
            files.append(rec.load(relative, path.read_bytes()))
    return files


def folder_context(folder: str | os.PathLike, full: bool = False) -> GateContext:
    """The gate context of a folder laid out like a store (a staging area, a GPU-wiki export)."""
    index_path = Path(folder) / INDEX_PATH
    return GateContext(
        records=read_folder(folder),
        index_raw=index_path.read_bytes() if index_path.is_file() else None,
        full=full,
    )


def _gates_figure(results: list[GateResult]) -> str:
    ran = [r for r in results if r.status != "SKIP"]
    return f"{sum(r.status == 'PASS' for r in ran)}/{len(ran)}"


def _pct(record: dict) -> str:
    pct = rec.dig(record, "worth", "gain", "pct")
    return "?" if pct is None else str(pct)


def _match_confidence(existing: dict, incoming: dict) -> float:
    """Share of the merge handle the two records agree on: scope fields and episode key."""
    a = rec.scope_of(existing)
    b = rec.scope_of(incoming)
    pairs = [(a.get(k), b.get(k)) for k in ("vendor", "arch", "dsl", "operator_family")]
    pairs.append((existing.get("episode_key"), incoming.get("episode_key")))
    return round(sum(x == y for x, y in pairs) / len(pairs), 2)


def _summary(record: dict) -> dict:
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    problem = payload.get("problem") if isinstance(payload.get("problem"), dict) else {}
    gain = rec.dig(record, "worth", "gain")
    gain = gain if isinstance(gain, dict) else {}
    pct = gain.get("pct")
    if record.get("type") == "anti-strategy":
        direction = "negative"
    elif isinstance(pct, (int, float)) and not isinstance(pct, bool):
        direction = "positive" if pct > 0 else "negative"
    elif record.get("type") == "strategy":
        direction = "positive"
    else:
        direction = "unknown"
    return {
        "id": record.get("id"),
        "type": record.get("type"),
        "episode_key": record.get("episode_key"),
        "change": payload.get("change"),
        "mechanism": payload.get("mechanism"),
        "goal": payload.get("goal"),
        "observed_symptom": problem.get("observed_symptom"),
        "operator": problem.get("operator"),
        "bottleneck": problem.get("bottleneck"),
        "shape_contract": problem.get("shape_contract"),
        "gain_direction": direction,
        "gain_pct": pct,
        "gain_basis": gain.get("basis"),
    }
