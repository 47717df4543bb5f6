"""External distillers (issue 12 items 5, 6 and 8): packets run in parallel (--jobs), a
refused record's findings come back for one more try, a distiller that drops
evidence_extra from a record of a long-horizon promotion gets nothing past
journal-provenance, and --stage-only keeps each refused record with every finding."""

from __future__ import annotations

import json
import sys

import pytest
from helpers import ROOT, kb

from gitkb.mine.pipeline import mine
from gitkb.testing.traces import legacy_trace, long_horizon_trace

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

# A real distiller process: it rebuilds the Packet from the JSON it is handed and copies
# what gitkb's own distiller would write, then misbehaves as its mode says.
DISTILLER = f"""
import json, os, sys, time
sys.path.insert(0, {str(ROOT)!r})
from gitkb.mine.distill.builtin import distill
from gitkb.trace.packets import Packet

document = json.load(open(os.environ["GITKB_PACKET"]))
mode, log = sys.argv[1], sys.argv[2]
start = time.time()
time.sleep(0.5)
with open(log, "a") as fh:
    fh.write(json.dumps({{"seg": document["seg_id"], "start": start, "end": time.time(),
                         "retry": "previous_attempt" in document}}) + "\\n")
fields = ("seg_id", "record_type", "seg_kind", "target", "agent_facing", "provenance",
          "diff", "kernel", "evidence_extra")
packet = Packet(**{{k: document[k] for k in fields}})
packet.usable_captures = list(packet.provenance["ncu_dirs"])
record = distill(packet).record
out = os.environ["GITKB_OUT"]
if record is None:
    json.dump({{"skipped": "nothing to write"}}, open(os.path.join(out, "report.json"), "w"))
    sys.exit(0)
learned = "previous_attempt" in document and os.environ.get("GITKB_FINDINGS")
if mode == "drop-extra" or (mode == "learn" and not learned):
    record["evidence"]["raw"].pop("evidence_extra", None)
if mode == "invent":
    record["worth"]["gain"]["pct"] = 87.6543
    record["payload"]["goal"] += " Saves 31337 cycles."
json.dump(record, open(os.path.join(out, "record.json"), "w"))
"""


def distiller(tmp_path, mode: str) -> tuple[str, object]:
    script = tmp_path / "distiller.py"
    script.write_text(DISTILLER)
    log = tmp_path / f"{mode}.log"
    return f"{sys.executable} {script} {mode} {log}", log


def runs(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_distiller_that_drops_evidence_extra_gets_nothing_past_journal_provenance(
    tmp_path, store
):
    trace = long_horizon_trace(tmp_path / "kernel_opt_002_softmax")
    command, log = distiller(tmp_path, "drop-extra")
    result = mine(trace, store=store, distiller=command, jobs=3)
    by_seg = {o.seg_id: o for o in result.outcomes}
    for seg_id in ("strategy-v2", "strategy-v4", "anti-v3-01", "refk-final"):
        outcome = by_seg[seg_id]
        assert outcome.action == "skip" and outcome.retried, seg_id
        assert any("journal-provenance" in f and "no journal" in f for f in outcome.findings)
    assert by_seg["strategy-v1"].action == "insert"  # a legacy-style commit needs no journal
    admitted = [store.read_record(e["id"]).data for e in store.view().entries()]
    assert admitted and all(
        "evidence_extra" not in r["evidence"]["raw"] for r in admitted
    )  # and none of them cites a promotion
    retries = [r["seg"] for r in runs(log) if r["retry"]]
    assert sorted(retries) == ["anti-v3-01", "refk-final", "strategy-v2", "strategy-v4"]


def test_findings_come_back_for_one_more_try_and_packets_run_in_parallel(tmp_path, store):
    trace = long_horizon_trace(tmp_path / "kernel_opt_002_softmax")
    command, log = distiller(tmp_path, "learn")
    result = mine(trace, store=store, distiller=command, jobs=4)
    assert {o.action for o in result.outcomes} == {"insert"}
    assert {o.seg_id for o in result.outcomes if o.retried} == {
        "strategy-v2",
        "strategy-v4",
        "anti-v3-01",
        "refk-final",
    }
    first = [r for r in runs(log) if not r["retry"]]
    # Five packets, four at a time: some ran while another was still sleeping.
    overlapping = sum(
        1 for a in first for b in first if a is not b and a["start"] < b["start"] < a["end"]
    )
    assert len(first) == 5 and overlapping >= 1
    check = kb("validate", str(store.location))
    assert check.returncode == 0, check.stdout.decode()


def test_stage_only_keeps_refused_records_with_every_finding(tmp_path):
    trace = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    command, _ = distiller(tmp_path, "invent")
    stage = tmp_path / "stage"
    done = kb("mine", str(trace), "--stage-only", str(stage), "--distiller", command,
              "--jobs", "2", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    summary = json.loads(done.stdout)
    refused = [o for o in summary["outcomes"] if o["findings"]]
    assert refused and all(o["action"] == "skip" and o["retried"] for o in refused)
    first = refused[0]
    kept = json.loads((stage / "refused" / trace.name / f"{first['seg_id']}.json").read_text())
    assert kept["record"]["id"] == first["record_id"]
    lines = {f"{f['record']}: {f['gate']}: {f['field']}: {f['message']}" for f in kept["findings"]}
    assert lines == set(first["findings"]) and len(lines) >= 2
    assert {f["gate"] for f in kept["findings"]} >= {"no-fabrication", "self-contained"}
    assert "(+" in first["note"]
    report = (stage / "reports" / trace.name / "mine.json").read_text()
    assert "31337 is not stated" in report
    staged = [p for p in (stage / "records").rglob("*.json") if p.name != "index.json"]
    assert staged == []  # every record invented a number: none is staged as if it passed
