"""An external distiller: a command run once per packet (``git kb mine --distiller CMD``).

It reads ``$GITKB_PACKET`` (the packet JSON) and ``$GITKB_BRIEF`` (templates/distill-brief.md),
writes ``$GITKB_OUT/record.json`` (or nothing, to skip) and ``$GITKB_OUT/report.json``
(``{"missing": [...], "skipped": "..."}``). Its record goes through the same gates.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from gitkb.errors import GitkbError
from gitkb.mine.distill import Distilled
from gitkb.mine.score import rank
from gitkb.resources import data_dir
from gitkb.trace.packets import Packet

EXTERNAL_TIMEOUT_S = 600


def brief_text() -> str:
    return (data_dir("templates") / "distill-brief.md").read_text(encoding="utf-8")


def run_external(command: str, packet: Packet) -> Distilled:
    """Run ``command`` for one packet: it reads ``$GITKB_PACKET`` (the packet JSON) and
    ``$GITKB_BRIEF``, writes ``$GITKB_OUT/record.json`` (or nothing, to skip) and
    ``$GITKB_OUT/report.json`` ({"missing": [...], "skipped": "..."})."""
    with tempfile.TemporaryDirectory(prefix="gitkb-distill-") as work:
        folder = Path(work)
        (folder / "packet.json").write_text(json.dumps(packet.as_json(), indent=1))
        (folder / "brief.md").write_text(brief_text())
        out = folder / "out"
        out.mkdir()
        env = dict(
            os.environ,
            GITKB_PACKET=str(folder / "packet.json"),
            GITKB_BRIEF=str(folder / "brief.md"),
            GITKB_OUT=str(out),
        )
        try:
            done = subprocess.run(
                shlex.split(command),
                env=env,
                capture_output=True,
                timeout=EXTERNAL_TIMEOUT_S,
                cwd=work,
            )
        except FileNotFoundError:
            raise GitkbError(f"--distiller: command not found: {command}", 2) from None
        except subprocess.TimeoutExpired:
            return Distilled(
                packet.seg_id, None, skipped="the distiller timed out", distiller=command
            )
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return Distilled(
                packet.seg_id,
                None,
                skipped=f"the distiller exited {done.returncode}: {tail[0][:200]}",
                distiller=command,
            )
        report = _read_json(out / "report.json") or {}
        record = _read_json(out / "record.json")
        if record is not None and not isinstance(record, dict):
            return Distilled(packet.seg_id, None, skipped="record.json is not an object")
        missing = [str(m) for m in report.get("missing", [])] if isinstance(report, dict) else []
        skipped = str(report.get("skipped") or "") if isinstance(report, dict) else ""
        if record is None and not skipped:
            skipped = "the distiller wrote no record"
        if record is not None:
            record.setdefault("worth", {})["rank"] = rank(record)
        return Distilled(packet.seg_id, record, missing, skipped, distiller=command)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
