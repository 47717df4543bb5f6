"""What changes while a run goes: the best so far, what was seen and rejected, the counters,
the experiments recorded and the warm start's findings.

The fixed setup of a run (paths, config, bundle, budget, the opened store) is
``setup.RunSetup``; everything here starts empty after it and is written by the loop
(``loop._Loop``), the bundle validation and the warm start, each field by one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gitkb.optimize.providers import Candidate
from gitkb.optimize.providers.warmstart import Provider as WarmProvider
from gitkb.optimize.scoring import Score


@dataclass(frozen=True)
class BestSoFar:
    """The code the next proposals start from: the baseline, the adopted warm start or the
    last promoted candidate, with what it measured."""

    id: str  # the experiment id ("baseline", "ws-01", "r001-c002")
    source: str
    score: Score
    aggregate: float  # its aggregate speedup over the baseline
    version: int | None  # its trace version (0: the trace's start; None: never traced)
    experiment: dict  # the experiment as recorded (experiments/<id>/result.json)
    profiles: dict  # case id -> profile


@dataclass(frozen=True)
class Judgement:
    """One candidate's verdict: its status (promoted, rejected, failed), the experiment as
    recorded, and the new best when it was promoted."""

    status: str
    experiment: dict
    best: BestSoFar | None = None

    @property
    def promoted(self) -> bool:
        return self.status == "promoted"


@dataclass
class WarmStart:
    """The warm start's findings (``--warm-start``): ``report`` is ``result.json``'s
    ``warm_start`` block (offers, the candidates judged, the adopted one);
    ``adopted_source`` the adopted code, to tell a final kernel that is only the store's."""

    report: dict
    references: Path  # the audit folder's prose for the round providers
    provider: WarmProvider  # the store it offers from and attests to
    adopted_source: str | None = None

    @property
    def adopted(self) -> dict | None:
        """The report's entry for the adopted record (experiment, record, speedup)."""
        return self.report["adopted"]


@dataclass
class RunState:
    """The run's changing state; see the module docstring."""

    best: BestSoFar | None = None  # None only before the baseline is recorded
    seen: set[str] = field(default_factory=set)  # source keys of the code measured
    exclusions: list[dict] = field(default_factory=list)  # rejections, for the next prompts
    version: int = 0  # the trace's last version number
    warm_slots_spent: int = 0  # candidate slots the warm start used (they count against the budget)
    experiments: list[dict] = field(default_factory=list)  # every experiment recorded, in order
    validation: dict | None = None  # what the bundle validation found
    warm: WarmStart | None = None
    # every correct measurement (warm-start offers too), for the final runoff:
    # (aggregate, experiment id, candidate, its source)
    measured: list[tuple[float, str, Candidate, str]] = field(default_factory=list)

    @property
    def adopted(self) -> dict | None:
        """The warm start's adopted record (its report entry), or None."""
        return self.warm.adopted if self.warm is not None else None
