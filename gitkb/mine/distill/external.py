"""An external distiller: a command run once per packet (``git kb mine --distiller CMD``).

It reads ``$GITKB_PACKET`` (the packet JSON) and ``$GITKB_BRIEF`` (templates/distill-brief.md),
writes ``$GITKB_OUT/record.json`` (or nothing, to skip) and ``$GITKB_OUT/report.json``
(``{"missing": [...], "skipped": "..."}``). Its record goes through the same gates; a
refused record's findings come back to it once (``previous_attempt`` in the packet, and
``$GITKB_FINDINGS``) for one more try. Packets run ``jobs`` at a time.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gitkb.errors import GitkbError
from gitkb.mine.distill.distilled import Distilled
from gitkb.record.worth import rank
from gitkb.trace.packets import Packet
from gitkb.util import runner
from gitkb.util.resources import data_dir

EXTERNAL_TIMEOUT_S = 600


def brief_text() -> str:
    return (data_dir("templates") / "distill-brief.md").read_text(encoding="utf-8")


def run_all(
    command: str,
    packets: list[Packet],
    jobs: int = 1,
    feedback: list | None = None,
    done: Callable[[], None] | None = None,
) -> list[Distilled]:
    """``run_external`` for each packet, ``jobs`` at a time, results in packet order;
    ``feedback[i]`` is packet i's previous attempt (None: a first try); ``done()`` is called
    as each finishes."""
    feedback = feedback or [None] * len(packets)

    def one(i: int) -> Distilled:
        result = run_external(command, packets[i], feedback[i])
        if done is not None:
            done()
        return result

    if jobs <= 1 or len(packets) <= 1:
        return [one(i) for i in range(len(packets))]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, range(len(packets))))


def run_external(command: str, packet: Packet, feedback: dict | None = None) -> Distilled:
    """Run ``command`` for one packet: it reads ``$GITKB_PACKET`` (the packet JSON) and
    ``$GITKB_BRIEF``, writes ``$GITKB_OUT/record.json`` (or nothing, to skip) and
    ``$GITKB_OUT/report.json`` ({"missing": [...], "skipped": "..."}). ``feedback``
    (``{"record": ..., "findings": [...]}``) is its refused first try, shown to it as the
    packet's ``previous_attempt`` and in ``$GITKB_FINDINGS``."""
    with tempfile.TemporaryDirectory(prefix="gitkb-distill-") as work:
        folder = Path(work)
        document = packet.as_json()
        if feedback is not None:
            document["previous_attempt"] = feedback
            (folder / "findings.json").write_text(json.dumps(feedback["findings"], indent=1))
        (folder / "packet.json").write_text(json.dumps(document, indent=1))
        (folder / "brief.md").write_text(brief_text())
        out = folder / "out"
        out.mkdir()
        env = dict(
            os.environ,
            GITKB_PACKET=str(folder / "packet.json"),
            GITKB_BRIEF=str(folder / "brief.md"),
            GITKB_OUT=str(out),
        )
        if feedback is not None:
            env["GITKB_FINDINGS"] = str(folder / "findings.json")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise GitkbError(f"--distiller is not a command line: {exc}") from None
        found = shutil.which(argv[0]) if argv else None
        if found is None:
            raise GitkbError(f"--distiller: command not found: {command}", 2)
        argv[0] = os.path.abspath(found)
        # The one runner: a timeout, and every process the distiller starts dies with it.
        done = runner.run(argv, timeout_s=EXTERNAL_TIMEOUT_S, cwd=work, env=env, capture=True)
        if done.timed_out:
            return Distilled(
                packet.seg_id, None, skipped="the distiller timed out", distiller=command
            )
        if not done.ok:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return Distilled(
                packet.seg_id,
                None,
                skipped=f"the distiller {done.describe()}: {tail[0][:200]}",
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


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
