"""The opt-trace-1.0 profile: clean-1.3 narrowed by a declared list of patches.

``PATCHES`` says each narrowing edit and why; ``build_profile`` applies them;
``profile_differences`` compares the committed profile with a fresh build by content,
so there is no hash stamp to go stale.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitkb.schema import BASE, PROFILE, SchemaError, forget, load, schema_path
from gitkb.util.files import atomic_write


@dataclass(frozen=True)
class Patch:
    """One narrowing edit of clean-1.3.

    ``target`` is a dotted path into the schema document (digits index arrays).
    ``set`` replaces an enum with a subset of itself; ``require`` replaces the target
    object's ``required`` list with a superset; ``restrict`` keeps only the named
    property definitions and closes the object.
    """

    index: int
    target: str
    operation: str
    value: tuple
    reason: str


PATCHES: tuple[Patch, ...] = (
    Patch(
        0,
        "properties.level.enum",
        "set",
        ("operator", "cross-operator"),
        "a trace measures one kernel; 'generic' would promote a single measurement "
        "to a claim about every architecture",
    ),
    Patch(
        1,
        "properties.type.enum",
        "set",
        ("strategy", "anti-strategy", "reference-kernel"),
        "one trace cannot back corpus-wide cards, unmeasured docs, or rules meant to hold "
        "beyond the operator it measured",
    ),
    Patch(
        2,
        "properties.evidence.properties.raw",
        "require",
        ("source_repo", "version", "git_commit"),
        "once the packets are gone, the trace and its commit are the only way to audit "
        "the record again",
    ),
    Patch(
        3,
        "properties.evidence.properties.raw",
        "restrict",
        (
            "source_repo",
            "version",
            "git_commit",
            "effect",
            "file_paths",
            "hunk_index",
            "evidence_extra",
        ),
        "closing raw keeps page pointers, absolute checkout paths and made-up keys "
        "out of mined records",
    ),
    Patch(
        4,
        "properties.evidence.properties.summary",
        "require",
        ("confidence", "measured_on"),
        "a trace's numbers come from a known harness on a known GPU, and the agent "
        "reading them must be told which",
    ),
    Patch(
        5,
        "$defs.gain",
        "require",
        ("basis", "kind"),
        "a trace always knows what kind of benefit it saw ('none' for a failure); "
        "without kind a failed attempt reads like a strategy missing its number",
    ),
    Patch(
        6,
        "allOf.1.then.properties.payload",
        "require",
        ("goal", "problem", "attempted", "verdict", "lesson", "established_fact"),
        "refuse an anti-strategy without an established fact at schema time rather "
        "than waiting for the store gate",
    ),
)


def _locate(document: Any, target: str) -> tuple[Any, str]:
    """The container holding the last component of ``target``, and that component."""
    *parents, last = target.split(".")
    node = document
    for part in parents:
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise SchemaError(f"patch target {target!r}: no {part!r} in the base schema") from None
    return node, last


def _apply(schema: dict, patch: Patch) -> None:
    container, key = _locate(schema, patch.target)
    where = f"patch #{patch.index} ({patch.operation} {patch.target})"
    if not isinstance(container, dict) or key not in container:
        raise SchemaError(f"{where}: target does not exist in the base schema")
    value = list(patch.value)
    if patch.operation == "set":
        current = container[key]
        if not isinstance(current, list):
            raise SchemaError(f"{where}: 'set' only narrows a list such as an enum")
        added = [item for item in value if item not in current]
        if added or not value:
            raise SchemaError(f"{where}: widens the list (adds {added} or empties it)")
        container[key] = value
        return
    node = container[key]
    if not isinstance(node, dict) or not isinstance(node.get("properties"), dict):
        raise SchemaError(f"{where}: target is not an object schema with properties")
    properties = node["properties"]
    unknown = [name for name in value if name not in properties]
    if unknown:
        # Requiring or allowing a property the base does not define would add one.
        raise SchemaError(f"{where}: names properties the base lacks: {unknown}")
    if patch.operation == "require":
        dropped = [name for name in node.get("required", []) if name not in value]
        if dropped:
            raise SchemaError(f"{where}: widens by no longer requiring {dropped}")
        node["required"] = value
    elif patch.operation == "restrict":
        cut_required = [name for name in node.get("required", []) if name not in value]
        if cut_required:
            raise SchemaError(f"{where}: would forbid required properties {cut_required}")
        node["properties"] = {name: properties[name] for name in value}
        node["additionalProperties"] = False
    else:
        raise SchemaError(f"{where}: unknown operation {patch.operation!r}")


def build_profile(patches: tuple[Patch, ...] | None = None) -> dict:
    """opt-trace-1.0: clean-1.3 with ``patches`` (default ``PATCHES``) applied."""
    patches = PATCHES if patches is None else patches
    profile = copy.deepcopy(load(BASE))
    for patch in patches:
        _apply(profile, patch)
    if profile.get("properties", {}).get("schema", {}).get("const") != BASE:
        raise SchemaError(f"the profile must still pin schema to {BASE!r}")
    profile["$id"] = f"{PROFILE}.schema.json"
    profile["title"] = f"Mined GPU-kernel record ({PROFILE} profile of {BASE})"
    profile["description"] = (
        f"The {BASE} record, narrowed for records mined from one optimization trace: "
        "operator or cross-operator level, strategy / anti-strategy / reference-kernel "
        "only, closed provenance in evidence.raw, measured_on and gain.kind required, "
        "anti-strategies must state an established fact. Generated; edit the patches "
        "in gitkb/schema/profile.py, not this file."
    )
    profile["x-profile-of"] = {
        "base": BASE,
        "base_file": f"{BASE}.schema.json",
        "n_patches": len(patches),
        "generated_by": "gitkb schema --write",
    }
    return profile


def _diff(committed: Any, built: Any, path: str, lines: list[str]) -> None:
    if isinstance(committed, dict) and isinstance(built, dict):
        for key in sorted(committed.keys() | built.keys()):
            where = f"{path}.{key}" if path else key
            if key not in built:
                lines.append(f"{where}: in the committed file but not in a fresh build")
            elif key not in committed:
                lines.append(f"{where}: missing from the committed file")
            else:
                _diff(committed[key], built[key], where, lines)
    elif committed != built:
        shown = json.dumps(committed, ensure_ascii=False)[:80]
        wanted = json.dumps(built, ensure_ascii=False)[:80]
        lines.append(f"{path or '(root)'}: committed {shown}, a fresh build gives {wanted}")


def profile_differences(path: Path | None = None) -> list[str]:
    """How the committed profile differs from ``build_profile()``; empty when current."""
    path = schema_path(PROFILE) if path is None else path
    try:
        committed = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [f"{path.name} is missing; run `git kb schema --write`"]
    except json.JSONDecodeError as exc:
        return [f"{path.name} is not valid JSON: {exc}"]
    lines: list[str] = []
    _diff(committed, build_profile(), "", lines)
    return lines


def write_profile(path: Path | None = None) -> Path:
    """Write ``build_profile()`` to the profile file atomically; return its path."""
    path = schema_path(PROFILE) if path is None else path
    text = json.dumps(build_profile(), indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, text.encode("utf-8"))
    forget()  # a check compiled from the old file must not outlive it
    return path


def describe_patches() -> list[str]:
    """One line per patch: index, operation, target, value and why."""
    return [
        f"#{p.index} {p.operation} {p.target} = {json.dumps(list(p.value))}: {p.reason}"
        for p in PATCHES
    ]
