"""A check's verdict (``gitkb.server.check``) in each reporting format a forge reads:
plain text (the hook's own lines), JSON, GitHub workflow commands and a job summary,
a GitLab Code Quality report, SARIF 2.1.0."""

from __future__ import annotations

import hashlib
import json

from gitkb import __version__, layout
from gitkb.server.check import Verdict

FORMATS = ("text", "json", "github", "gitlab", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render(verdict: Verdict, fmt: str) -> str:
    """The verdict in ``fmt`` (one of ``FORMATS``), as printed on stdout."""
    renderers = {"text": text, "json": as_json, "github": github, "gitlab": gitlab}
    return renderers.get(fmt, sarif)(verdict)


def _findings(verdict: Verdict) -> list[tuple[str, str, str, str]]:
    """(rule, title, message, path) of every refusal and missing trace."""
    out = [(r.rule or "refused", _title(r.rule), r.line, r.path) for r in verdict.refusals]
    for m in verdict.missing:
        out.append(("trace-refs", f"missing trace {m.what}", m.line(), m.path))
    return out


def _title(rule: str) -> str:
    return f"gitkb {rule}" if rule else "gitkb"


def _summary_line(verdict: Verdict) -> str:
    return (
        f"{verdict.base[:12]}..{verdict.head[:12]}: {verdict.outcome} "
        f"({len(verdict.refusals)} refusals, {len(verdict.missing)} missing traces)"
    )


def text(verdict: Verdict) -> str:
    lines = [f"gitkb: {r.line}" for r in verdict.refusals]
    lines += [f"gitkb: {m.line()}" for m in verdict.missing]
    return "\n".join([*lines, _summary_line(verdict)])


def as_json(verdict: Verdict) -> str:
    return json.dumps(verdict.as_json(), indent=1, ensure_ascii=False)


# --------------------------------------------------------------------------- GitHub


def _escape_data(value: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped, as the runner reads it."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    """A workflow command's property value: also ``:`` and ``,``, which end one."""
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(verdict: Verdict) -> str:
    """One ``::error`` annotation per finding, on its file where there is one."""
    lines = []
    for _rule, title, message, path in _findings(verdict):
        props = [f"file={_escape_property(path)}"] if path else []
        props.append(f"title={_escape_property(title)}")
        lines.append(f"::error {','.join(props)}::{_escape_data(message)}")
    if verdict.exit_code == 0:
        lines.append(f"::notice title=gitkb check::{_escape_data(_summary_line(verdict))}")
    return "\n".join(lines)


def github_summary(verdict: Verdict) -> str:
    """The Markdown job summary (``$GITHUB_STEP_SUMMARY``)."""
    mark = {0: "passed", 1: "refused", 2: "waits on missing traces"}[verdict.exit_code]
    out = [
        f"## gitkb check: {mark}",
        "",
        f"`{verdict.base[:12]}..{verdict.head[:12]}`: {len(verdict.refusals)} refusals, "
        f"{len(verdict.missing)} missing traces.",
    ]
    findings = _findings(verdict)
    if findings:
        out += ["", "| rule | file | what |", "|---|---|---|"]
        for rule, _title_text, message, path in findings:
            cell = message.replace("|", "\\|").replace("\n", " ")
            out.append(f"| {rule} | {f'`{path}`' if path else '-'} | {cell} |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- GitLab


def gitlab(verdict: Verdict) -> str:
    """A Code Quality report: one issue per finding. A finding about no one file is
    placed on ``gitkb.toml``, the file that makes the repository a store."""
    issues = [
        {
            "description": message,
            "check_name": f"gitkb-{rule}",
            "fingerprint": hashlib.sha256(f"{rule}\0{path}\0{message}".encode()).hexdigest(),
            "severity": "blocker",
            "location": {"path": path or layout.CONFIG_PATH, "lines": {"begin": 1}},
        }
        for rule, _title_text, message, path in _findings(verdict)
    ]
    return json.dumps(issues, indent=1, ensure_ascii=False)


# --------------------------------------------------------------------------- SARIF


def sarif(verdict: Verdict) -> str:
    findings = _findings(verdict)
    rules = sorted({rule for rule, *_ in findings})
    results = []
    for rule, _title_text, message, path in findings:
        result: dict = {
            "ruleId": rule,
            "ruleIndex": rules.index(rule),
            "level": "error",
            "message": {"text": message},
        }
        if path:
            location = {"artifactLocation": {"uri": path}}
            result["locations"] = [{"physicalLocation": location}]
        results.append(result)
    run = {
        "tool": {
            "driver": {
                "name": "gitkb",
                "version": __version__,
                "rules": [{"id": rule, "name": rule} for rule in rules],
            }
        },
        "results": results,
    }
    return json.dumps(
        {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=1, ensure_ascii=False
    )
