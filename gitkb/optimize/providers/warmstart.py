"""The warm-start provider: candidates from a knowledge base (``--warm-start``, ``--kb STORE``).

``offer`` resolves the kernel against the store once, through
``gitkb.warmstart.resolve`` (the kernel's product page and language only,
curated, top N), writing the audit folder (``candidates/NN/``,
``kb_references/``) before any verdict. ``propose`` then hands out the offered
ranks in order: a reference kernel as it is, a strategy's diff applied to the
run's baseline (a diff that does not apply is reference only, never offered;
one whose code is unreadable comes back without source, ``inapplicable``). The loop
judges each through the same gate as a round candidate and calls ``attest``
with the outcome, which lands in the record's ledger as an ``attest`` commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gitkb.errors import GitkbError, NotAStore
from gitkb.optimize import providers
from gitkb.store import Store
from gitkb.store.cache.index_cache import CacheError
from gitkb.trace.naming import sniff_dsl
from gitkb.warmstart.attest import attest
from gitkb.warmstart.resolve import resolve

MODES = ("on", "reference", "off")


@dataclass
class Offered(providers.Candidate):
    """A candidate that came from a store record."""

    record_id: str = ""
    rank: int = 0
    record_speedup: float | None = None


class Provider(providers.Provider):
    name = "warm-start"

    def __init__(self, options: providers.ProviderOptions, tunables: dict[str, list]) -> None:
        super().__init__(options, tunables)
        if not options.kb:
            raise GitkbError("--warm-start on|reference needs --kb STORE (the knowledge base)")
        self.store, self.unreadable = open_kb(options.kb)
        self.answer: dict | None = None
        self._queue: list[dict] = []

    def offer(
        self, kernel_name: str, hardware: str, baseline_source: str, out: Path,
        workload: str | None = None,
    ) -> dict:  # fmt: skip
        """Resolve the kernel on ``hardware`` (a token of the target table: its product's
        page, or its family) in the kernel's language into ``out``; return the answer.
        ``workload``: the run's own bench key, whose offers are judged first."""

        # resolve names the kernel by a file's stem and applies strategy diffs to that file.
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", kernel_name).strip(".-") or "kernel"
        kernel_file = out / "baseline" / f"{stem}.py"
        kernel_file.parent.mkdir(parents=True, exist_ok=True)
        kernel_file.write_text(baseline_source, encoding="utf-8")
        if self.store is None:
            self.answer = cold_start(self.unreadable, kernel_name)
            return self.answer
        try:
            self.answer = resolve(
                self.store,
                str(kernel_file),
                product=hardware,
                dsl=sniff_dsl(baseline_source),
                out=str(out),
            )
        except GitkbError as exc:
            if exc.exit_code == 2:  # a usage error (an unknown hardware token): setup
                raise GitkbError(f"warm start: {exc.message} (--kb {self.options.kb})") from None
            self.answer = cold_start(exc.message, kernel_name)
        except (OSError, CacheError, KeyError, ValueError) as exc:
            # A store that exists but cannot be read whole (a damaged repository, a broken
            # cache that could not be rebuilt): the run goes on cold, saying why.
            self.answer = cold_start(f"{type(exc).__name__}: {exc}", kernel_name)
        self._queue = offer_order(self.answer["ranks"], workload)
        return self.answer

    def propose(self, context: providers.ProposalContext) -> Offered | None:
        if not self._queue:
            return None
        rank = self._queue.pop(0)
        kind = "reference kernel" if rank["type"] == "reference-kernel" else "strategy"
        offered = Offered(
            source=None,
            provider="warm_start",
            record_id=rank["id"],
            rank=rank["rank"],
            record_speedup=rank["speedup"],
            hypothesis=(
                f"the knowledge base's rank-{rank['rank']} {kind} measured "
                f"{rank['speedup']}x on this hardware and should hold here"
            ),
            change=f"warm start from a {kind} in the knowledge base",
            evidence=f"store record {rank['id']} (bench key {rank['bench_key']})",
            expected_effect=f"about {rank['speedup']}x over the baseline",
            risk="measured on other inputs or another box; verified before it is adopted",
            commit_title=f"Warm start from the knowledge base's {kind}",
            commit_summary=f"Adopt the {kind} of store record {rank['id']}, verified here.",
        )
        if rank.get("applies") is False:
            offered.error = "inapplicable: the strategy's diff does not apply to this kernel"
            return offered
        try:
            offered.source = Path(rank["code_path"]).read_text(encoding="utf-8")
        except (OSError, TypeError, UnicodeDecodeError) as exc:
            offered.error = f"inapplicable: the offered code is unreadable ({exc})"
        return offered

    def attest(self, offered: Offered, outcome: str, evidence: dict[str, str]) -> str | None:
        """Record ``outcome`` in the record's ledger; return the attest commit's sha."""
        return self.attest_record(offered.record_id, outcome, evidence)

    def attest_record(self, record_id: str, outcome: str, evidence: dict[str, str]) -> str | None:
        if self.store is None:  # a cold start offers nothing, so it has nothing to attest
            raise GitkbError(f"the knowledge base could not be read: {self.unreadable}")
        return attest(self.store, record_id, outcome, evidence=evidence).commit


def offer_order(ranks: list[dict], workload: str | None) -> list[dict]:
    """The offers in the order to judge them: each rank, then its alternates (the runners-up
    of its direction: another shape's best kernel is one), with the code measured on this
    very workload (its bench key is the run's) ahead of the rest. Of that code the reference
    kernels come first, fastest first: each is the whole code a run ended with, its speedup
    against that run's original baseline on this workload, so the best code anyone measured
    here is judged first; a strategy's gain is over its own parent. The rest in rank order."""
    offers = []
    for rank in ranks:
        offers.append(rank)
        offers += [dict(alt, type=rank["type"], rank=rank["rank"]) for alt in rank["alternates"]]
    same = [o for o in offers if workload is not None and o.get("bench_key") == workload]
    kernels = [o for o in same if o["type"] == "reference-kernel"]
    kernels.sort(key=lambda o: -(o.get("speedup") or 0.0))
    first = kernels + [o for o in same if o not in kernels]
    return first + [o for o in offers if o not in same]


def cold_start(reason: str, kernel_name: str) -> dict:
    """The answer of a warm start that could not read the store: nothing offered."""
    return {
        "read_reason": "read_failed",
        "read_error": reason,
        "commit": None,
        "kernel": {"query": kernel_name},
        "ranks": [],
    }


def open_kb(path: str) -> tuple[Store | None, str]:
    """The ``--kb`` store and, when it exists but cannot be read, why (then the store is
    None and the run starts cold; empty when it reads). A path that is not a store is a
    setup error, never a cold start: a typo must not quietly lose the warm start."""
    try:
        return Store.open(path), ""
    except NotAStore as exc:
        raise GitkbError(f"--kb: {exc.message} ({path})") from None
    except GitkbError as exc:
        return None, exc.message


def outcome_of(experiment: dict, offered: Offered) -> str:
    """The attestation outcome of a judged warm-start experiment (docs/warm-start.md,
    "Outcomes")."""
    status = experiment["status"]
    if status == "promoted":
        return "validated"  # adopted: correct and faster here
    if offered.source is None or any(
        d.startswith("pre-evaluation:") for d in experiment["diagnostics"]
    ):
        return "inapplicable"  # did not fit the workspace
    if experiment.get("aggregate_speedup") is None and not experiment.get("cases"):
        return "not_reproduced"  # would not build or run here
    return "failed"  # incorrect, or correct and not faster
