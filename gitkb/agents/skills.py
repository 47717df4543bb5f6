"""gitkb's Agent Skills: one folder per job under ``templates/skills/<name>/SKILL.md``, written
where each agent looks for a project's skills.

A skill is a ``SKILL.md`` with YAML frontmatter (``name``, equal to its folder's name, and
``description``) and a markdown body. The shipped ones are data, read through
``gitkb.util.resources``; ``export`` copies them, byte for byte, under the folder an agent
reads: Claude Code ``.claude/skills/``, Codex ``.agents/skills/``, or the folder itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gitkb.errors import GitkbError, writing
from gitkb.util.files import atomic_write
from gitkb.util.resources import data_dir

SKILL_FILE = "SKILL.md"
# agent -> where, under a project's root, it looks for project skills
AGENT_FOLDERS = {"claude": ".claude/skills", "codex": ".agents/skills", "generic": ""}
_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)


@dataclass(slots=True, frozen=True)
class Skill:
    """One shipped skill: its name, its one-paragraph description, its file's bytes."""

    name: str
    description: str
    text: bytes


@dataclass(slots=True, frozen=True)
class Exported:
    """One skill as ``export`` left it: where, and whether it was written or already so."""

    name: str
    path: str
    written: bool


def skills_dir() -> Path:
    return data_dir("templates") / "skills"


def frontmatter(text: str) -> dict[str, str]:
    """The ``key: value`` lines of a skill's frontmatter (the shipped skills use no nesting);
    an error when it has none."""
    found = _FRONTMATTER.match(text)
    if found is None:
        raise GitkbError("a skill starts with a frontmatter block between two '---' lines")
    fields = {}
    for line in found.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip()] = value.strip()
    return fields


def shipped() -> list[Skill]:
    """Every shipped skill, by name; a folder whose SKILL.md does not name it is an error."""
    out = []
    for folder in sorted(p for p in skills_dir().iterdir() if p.is_dir()):
        raw = (folder / SKILL_FILE).read_bytes()
        fields = frontmatter(raw.decode("utf-8"))
        name = fields.get("name", "")
        if name != folder.name or not _NAME.fullmatch(name):
            raise GitkbError(f"skill folder {folder.name}: its SKILL.md names {name!r}")
        out.append(Skill(name, fields.get("description", ""), raw))
    return out


def target_dir(root: Path, agent: str) -> Path:
    """The folder under ``root`` that ``agent`` reads project skills from."""
    if agent not in AGENT_FOLDERS:
        raise GitkbError(f"unknown agent {agent!r}; use one of {', '.join(AGENT_FOLDERS)}", 2)
    return root / AGENT_FOLDERS[agent] if AGENT_FOLDERS[agent] else root


def export(root: Path, agent: str = "generic", force: bool = False) -> list[Exported]:
    """Write every shipped skill as ``<target>/<name>/SKILL.md``. A SKILL.md already there
    with other bytes is someone's edit: refused, every skill unwritten, unless ``force``."""
    if root.exists() and not root.is_dir():
        raise GitkbError(f"{root} is not a folder", 2)
    target = target_dir(root, agent)
    skills = shipped()
    planned = [(skill, target / skill.name / SKILL_FILE) for skill in skills]
    edited = [path for skill, path in planned if path.is_file() and path.read_bytes() != skill.text]
    if edited and not force:
        raise GitkbError(
            f"{edited[0]} exists with other content; pass --force to replace "
            f"{'it' if len(edited) == 1 else f'these {len(edited)} files'}",
            1,
        )
    done = []
    with writing(target):
        for skill, path in planned:
            same = path.is_file() and path.read_bytes() == skill.text
            if not same:
                atomic_write(path, skill.text)
            done.append(Exported(skill.name, str(path), not same))
    return done
