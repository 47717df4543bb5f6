"""Reading a GEAK experience store: ``<root>/<gfx>/<kernel_class>/<slug>/<exp_id>/``.

Each entry folder holds ``meta.yaml`` (or ``meta.json``), ``patch.diff`` (a patch
entry), ``report.md`` and, for a tuned table, ``artifact/<name>``. ``read_entry``
gives an ``Entry`` keyed as GEAK's resolve keys it: the ``<gfx>`` folder (GEAK's
``gfx<digits>`` key: gfx90a files as ``gfx90``), the slug's kernel name and
language, the exp id folder whatever its format. GEAK's resolve reads every such
entry whatever its speedup (its write gate's rules are the write gate's), so the
import keeps sub-unity entries and backlog exp ids; it skips, with the reason,
what cannot become a record: a folder GEAK never reads, no finite positive
speedup, an unknown carrier, an empty diff or no artifact. An entry that states
it was measured on another gfx than its folder (``metric.gpu_arch``) is
*mislabeled*: GEAK serves it on neither page, and so does gitkb.

Symlinks are never followed: a symlinked folder or file in the tree is skipped
with a reason, so nothing outside the tree is copied into a record.

``meta.yaml`` nests maps and lists, so it is read with PyYAML's safe loader (the
C one where present). Numbers are read as GEAK reads them: ``"1.45"`` is 1.45.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gitkb import targets
from gitkb.record.values import number_or_numeric_string
from gitkb.warmstart import geak
from gitkb.warmstart.curate import canonical_kernel

EXP_ID = re.compile(r"(\d{8})_(\d{6})_([0-9a-f]{6})")
META_NAMES = ("meta.yaml", "meta.json")  # GEAK's resolve reads these two, in this order
CARRIERS = ("patch", "tuned_artifact")
ARTIFACT_DIR = "artifact"
# A tuned table rides in its record (payload.config); beyond this it would need a store of
# its own for artifact files.
ARTIFACT_LIMIT = 256 * 1024


class Skip(Exception):
    """An entry that cannot become a record; the message is the reason."""


@dataclass
class Entry:
    """One GEAK entry, read as GEAK's resolve reads it."""

    where: str  # the entry's folder, relative to the root
    meta: dict
    exp_id: str
    gfx_key: str  # GEAK's key of the <gfx> folder (gfx90 for gfx90a)
    gfx: str  # gitkb's page of that folder (gfx90a for gfx90)
    measured_gfx: str  # the page the entry states it was measured on (metric.gpu_arch)
    hardware: targets.Hardware
    kernel: str  # canonical kernel name (the slug's, as GEAK matches pages)
    kernel_name: str  # the raw kernel_name GEAK's service key uses
    slug: str
    kernel_class: str
    language: str
    speedup: float
    carrier: str
    diff: str = ""
    report: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> text (tuned_artifact)
    digest: str = ""  # of the entry's files, as imported

    @property
    def metric(self) -> dict:
        return mapping(self.meta.get("metric"))

    @property
    def mislabeled(self) -> bool:
        return self.measured_gfx != self.gfx

    @property
    def stamp(self) -> str:
        return stamp_of(self.exp_id)


@dataclass(frozen=True)
class Location:
    """What an entry's path says: its page, kernel and language, its exp id. Read before
    its files, so a re-import finds the entry's record without parsing meta.yaml."""

    where: str
    gfx_key: str
    hardware: targets.Hardware
    slug: str
    kernel: str
    language: str
    kernel_class: str
    exp_id: str


def stamp_of(exp_id: str) -> str:
    """The exp id as an id part: ``YYYYmmdd-HHMMSS-xxxxxx``, or the folder name slugged
    (a backlog exp id of another format)."""
    found = EXP_ID.fullmatch(exp_id)
    if found:
        return "-".join(found.groups())
    return re.sub(r"[^a-z0-9]+", "-", exp_id.lower()).strip("-")[:40] or "x"


def locate(folder: Path, root: Path) -> Location:
    """The entry's ``Location``; a ``Skip`` when GEAK's resolve would never read it there."""
    where = folder.relative_to(root).as_posix()
    gfx_dir, kernel_class_dir, slug, exp_id = folder.relative_to(root).parts[-4:]
    key = geak.gfx_key(gfx_dir)
    if key != gfx_dir:
        raise Skip(
            f"folder {gfx_dir!r} is not a GEAK page: GEAK reads <root>/{key or 'gfx<digits>'} "
            "only (it files gfx90a as gfx90)"
        )
    # The slug splits from the right (kernel names may contain '__'); GEAK matches pages
    # on the slug's name and language, not on meta.
    parts = slug.rsplit("__", 2)
    if len(parts) != 3:
        raise Skip(f"slug {slug!r} is not <kernel>__<language>__<gfx>")
    kernel = canonical_kernel(parts[0])
    if not re.sub(r"[^a-z0-9]+", "", kernel):
        raise Skip("no kernel name")
    language = parts[1].strip().lower() or "unknown"
    hardware = geak.page_for_gfx(key)
    return Location(where, key, hardware, slug, kernel, language, kernel_class_dir, exp_id)


def digest(folder: Path) -> str:
    """A digest of the entry's files (names and bytes): equal digests, same entry."""
    found = hashlib.sha256()
    files = []
    for top, _, names in os.walk(folder):
        files += [os.path.join(top, n) for n in names if not os.path.islink(os.path.join(top, n))]
    for path in sorted(files):
        with open(path, "rb") as handle:
            found.update(os.path.relpath(path, folder).encode() + b"\0" + handle.read() + b"\0")
    return "sha256:" + found.hexdigest()[:32]


def mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def count(value: object, default: int = 0) -> int:
    """A count as GEAK reads one: an int, also from a numeric string; ``default`` otherwise."""
    found = number_or_numeric_string(value)
    return int(found) if found is not None and found >= 0 else default


def entries(root: Path) -> tuple[list[Path], list[dict]]:
    """Entry folders (four levels below the root, holding a meta file) and the skips of
    symlinks met on the way: a symlinked folder or meta file is never followed."""
    found, skipped = [], []

    def walk(folder: Path, depth: int) -> None:
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append({"entry": _rel(folder, root), "reason": f"unreadable ({exc.strerror})"})
            return
        if depth == 4:
            metas = [c for c in children if c.name in META_NAMES]
            if not metas:
                return
            linked = [c.name for c in metas if c.is_symlink()]
            if linked:
                skipped.append({"entry": _rel(folder, root), "reason": _linked(linked[0])})
                return
            found.append(folder)
            return
        for child in children:
            if child.is_symlink():
                skipped.append({"entry": _rel(Path(child.path), root), "reason": _linked("")})
            elif child.is_dir(follow_symlinks=False):
                walk(Path(child.path), depth + 1)

    walk(root, 0)
    return found, skipped


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _linked(name: str) -> str:
    what = f"{name} is" if name else "it is"
    return f"{what} a symlink; an import never follows one"


def store_root(folder: str | os.PathLike) -> Path:
    """The tree's root: ``folder``, or its ``kb_artifacts`` folder when it has one."""
    root = Path(folder)
    return root / "kb_artifacts" if (root / "kb_artifacts").is_dir() else root


def load_yaml(text: str) -> object:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def read_meta(folder: Path) -> dict:
    for name in META_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = json.loads(text) if name == "meta.json" else load_yaml(text)
        except Exception as exc:  # noqa: BLE001 - any parser failure is this entry's skip reason
            raise Skip(f"{name} is unreadable ({type(exc).__name__})") from None
        if not isinstance(data, dict):
            raise Skip(f"{name} is not a mapping")
        return data
    raise Skip("no meta.yaml or meta.json")


def _read_text(folder: Path, name: str) -> str:
    path = folder / name
    if path.is_symlink():
        raise Skip(_linked(name))
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def read_entry(folder: Path, root: Path, location: Location | None = None) -> Entry:
    """One entry folder as an ``Entry``; a ``Skip`` naming the reason when it cannot become
    a record (or GEAK's resolve never reads it)."""
    place = location or locate(folder, root)
    key, hardware = place.gfx_key, place.hardware
    meta = read_meta(folder)
    metric = mapping(meta.get("metric"))
    # GEAK's own check of a mislabeled entry: what it states it was measured on, else its gfx.
    stated = geak.gfx_key(str(metric.get("gpu_arch") or meta.get("gfx") or key)) or key
    measured = hardware if stated == key else geak.page_for_gfx(stated)
    speedup = number_or_numeric_string(metric.get("speedup"))
    if speedup is None or speedup <= 0:
        raise Skip(f"speedup {metric.get('speedup')!r} is not a finite positive number")
    carrier = meta.get("carrier") or "patch"
    if carrier not in CARRIERS:
        raise Skip(f"unknown carrier {carrier!r}")
    entry = Entry(
        where=place.where,
        meta=meta,
        exp_id=place.exp_id,
        gfx_key=key,
        gfx=hardware.page,
        measured_gfx=measured.page,
        hardware=hardware,
        kernel=place.kernel,
        kernel_name=str(meta.get("kernel_name") or place.slug.rsplit("__", 2)[0]),
        slug=place.slug,
        kernel_class=str(meta.get("kernel_class") or place.kernel_class or "unknown"),
        language=place.language,
        speedup=speedup,
        carrier=carrier,
        report=_read_text(folder, "report.md"),
        digest=digest(folder),
    )
    if carrier == "patch":
        entry.diff = _read_text(folder, "patch.diff")
        if not entry.diff.strip():
            raise Skip("empty diff (no patch.diff)")
    else:
        entry.artifacts = read_artifacts(folder, meta)
    return entry


def read_artifacts(folder: Path, meta: dict) -> dict[str, str]:
    """A tuned_artifact entry's tables (``artifact/<name>``, those ``artifact_files`` or
    ``artifact_names`` list, else every file there), as text."""
    listed = meta.get("artifact_files") or meta.get("artifact_names") or []
    listed = listed if isinstance(listed, list) else []
    names = [Path(str(n)).name for n in listed if str(n).strip()]
    base = folder / ARTIFACT_DIR
    if base.is_symlink():
        raise Skip(_linked(ARTIFACT_DIR))
    if not names and base.is_dir():
        names = sorted(p.name for p in base.iterdir() if p.is_file() or p.is_symlink())
    if not names:
        raise Skip("tuned_artifact carrier with no artifact (artifact/<name>)")
    artifacts, size = {}, 0
    for name in names:
        path = base / name
        if path.is_symlink():
            raise Skip(_linked(f"{ARTIFACT_DIR}/{name}"))
        try:
            raw = path.read_bytes()
            artifacts[name] = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = "missing" if isinstance(exc, FileNotFoundError) else "not UTF-8 text"
            raise Skip(f"artifact {ARTIFACT_DIR}/{name} is unreadable ({why})") from None
        size += len(raw)
    if size > ARTIFACT_LIMIT:
        raise Skip(
            f"tuned_artifact carrier: the tables are {size} bytes; a record carries at most "
            f"{ARTIFACT_LIMIT} (a larger table needs a store for artifact files beside the record)"
        )
    return artifacts
