"""Reading a GEAK experience store: ``<root>/<gfx>/<kernel_class>/<slug>/<exp_id>/``.

Each entry folder holds ``meta.yaml`` (or ``meta.json``), ``patch.diff`` (a patch
entry), ``report.md`` and, for a tuned table, ``artifact/<name>``. ``read_entry``
gives an ``Entry``: the entry's page as GEAK keys it (the gfx it was measured on,
the kernel, the language) and what GEAK's own write gate checks, in its order:
missing arch, a speedup that is not a finite number above 1.0, an unknown
carrier, an empty diff or no artifact, an unreadable artifact. An entry that
fails is a ``Skip`` whose message is the reason.

``meta.yaml`` nests maps and lists (metric, attestations.history, upstream,
dead_ends), so it is read with PyYAML's safe loader. Numbers are read as GEAK
reads them: ``"1.45"`` is 1.45.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from gitkb import targets
from gitkb.warmstart.curate import canonical_kernel, number

EXP_ID = re.compile(r"(\d{8})_(\d{6})_([0-9a-f]{6})")
META_NAMES = ("meta.yaml", "meta.yml", "meta.json")
CARRIERS = ("patch", "tuned_artifact")
ARTIFACT_DIR = "artifact"
# A tuned table rides in its record (payload.config); beyond this it would need a store of
# its own for artifact files.
ARTIFACT_LIMIT = 256 * 1024


class Skip(Exception):
    """An entry that cannot become a record; the message is the reason."""


@dataclass
class Entry:
    """One GEAK entry, read and past GEAK's write gate."""

    where: str  # the entry's folder, relative to the root
    meta: dict
    exp_id: str
    filed_gfx: str  # the <gfx> folder it is filed under
    gfx: str  # the gfx id it was measured on (metric.gpu_arch wins over the folder)
    hardware: targets.Hardware
    kernel: str  # canonical kernel name
    kernel_class: str
    language: str
    speedup: float
    carrier: str
    diff: str = ""
    report: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> text (tuned_artifact)

    @property
    def metric(self) -> dict:
        return mapping(self.meta.get("metric"))

    @property
    def stamp(self) -> tuple[str, str]:
        """(date, hex id) of the exp id."""
        date, _, hexid = EXP_ID.fullmatch(self.exp_id).groups()
        return date, hexid


def mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def count(value: object, default: int = 0) -> int:
    """A count as GEAK reads one: an int, also from a numeric string; ``default`` otherwise."""
    found = number(value)
    return int(found) if found is not None and found >= 0 else default


def entries(root: Path) -> list[Path]:
    """Entry folders: four levels below the root, holding a meta file."""
    found = set()
    for name in META_NAMES:
        for meta in root.glob(f"*/*/*/*/{name}"):
            found.add(meta.parent)
    return sorted(found)


def store_root(folder) -> Path:
    """The tree's root: ``folder``, or its ``kb_artifacts`` folder when it has one."""
    root = Path(folder)
    return root / "kb_artifacts" if (root / "kb_artifacts").is_dir() else root


def read_meta(folder: Path) -> dict:
    for name in META_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            if name == "meta.json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
        except Exception as exc:  # noqa: BLE001 - any parser failure is this entry's skip reason
            raise Skip(f"{name} is unreadable ({type(exc).__name__})") from None
        if not isinstance(data, dict):
            raise Skip(f"{name} is not a mapping")
        return data
    raise Skip("no meta.yaml or meta.json")


def _text(folder: Path, name: str) -> str:
    path = folder / name
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def read_entry(folder: Path, root: Path) -> Entry:
    """One entry folder as an ``Entry``; a ``Skip`` naming the reason when GEAK's write gate
    (or the tree's layout) refuses it."""
    where = folder.relative_to(root).as_posix()
    gfx_dir, kernel_class_dir, slug, exp_id = folder.relative_to(root).parts[-4:]
    meta = read_meta(folder)
    metric = mapping(meta.get("metric"))
    filed = targets.gfx_of(gfx_dir) or targets.gfx_of(meta.get("gfx"))
    # What the entry states it was measured on decides its page, as GEAK's resolve checks it.
    measured = metric.get("gpu_arch") or meta.get("gfx") or gfx_dir
    hardware = targets.identify(str(measured)) if measured else None
    if hardware is None or not hardware.page:
        hardware = targets.identify(filed) if filed else None
    if hardware is None or not hardware.page:
        raise Skip("missing arch (no gfx token in meta or path)")
    if not EXP_ID.fullmatch(exp_id):
        raise Skip(f"exp id {exp_id!r} is not YYYYmmdd_HHMMSS_ plus 6 hex digits")
    # The slug splits from the right: kernel names may contain '__'.
    parts = slug.rsplit("__", 2)
    kernel = canonical_kernel(str(meta.get("kernel_name") or parts[0]))
    if not re.sub(r"[^a-z0-9]+", "", kernel):
        raise Skip("no kernel name")
    language = str(meta.get("language") or (parts[1] if len(parts) == 3 else "")).strip().lower()
    speedup = number(metric.get("speedup"))
    if speedup is None:
        raise Skip(f"speedup {metric.get('speedup')!r} is not a finite number")
    if speedup <= 1.0:
        raise Skip(f"speedup {speedup:g} is not above 1.0")
    carrier = meta.get("carrier") or "patch"
    if carrier not in CARRIERS:
        raise Skip(f"unknown carrier {carrier!r}")
    entry = Entry(
        where=where,
        meta=meta,
        exp_id=exp_id,
        filed_gfx=filed or hardware.page,
        gfx=hardware.page,
        hardware=hardware,
        kernel=kernel,
        kernel_class=str(meta.get("kernel_class") or kernel_class_dir or "unknown"),
        language=language or "unknown",
        speedup=speedup,
        carrier=carrier,
        report=_text(folder, "report.md"),
    )
    if carrier == "patch":
        entry.diff = _text(folder, "patch.diff")
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
    if not names and base.is_dir():
        names = sorted(p.name for p in base.iterdir() if p.is_file())
    if not names:
        raise Skip("tuned_artifact carrier with no artifact (artifact/<name>)")
    artifacts, size = {}, 0
    for name in names:
        path = base / name
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
