"""The knobs provider: a deterministic sweep of the tunables declared in target.json.

Each candidate changes one tunable of the current best, rewriting its
module-level assignment (``NAME = <literal>``) in place, in declared order:
tunable by tunable, value by value. When a candidate is promoted the sweep
continues from the new best (coordinate descent); sources already proposed, or
already measured by the run (a warm-start candidate), are skipped, and when the
current best has no untried neighbour the sweep is done. With the knowledge base's
strategies in the context, a tunable's values are tried in the direction its kept
changes moved it (``set BLOCK from 64 to 128``: upward), nearest first, instead of
in declared order: a sweep that starts from adopted code does not go back over
settings the store shows are worse. A setting an anti-strategy says failed on this
workload (its lesson names the run's cases, or no case) is not proposed; one that failed
on another workload is tried after every other neighbour.
"""

from __future__ import annotations

import ast

from gitkb.errors import GitkbError
from gitkb.optimize import knowledge, providers
from gitkb.optimize.scoring import source_key


def assignment(source: str, name: str) -> ast.Assign | ast.AnnAssign | None:
    """The last top-level assignment of ``name`` to a literal (the one that wins at import)."""
    found: ast.Assign | ast.AnnAssign | None = None
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target = node.target
        else:
            continue
        if isinstance(target, ast.Name) and target.id == name:
            found = node
    return found


def _assigned(source: str, name: str) -> ast.expr:
    """The value of ``name``'s winning assignment; an error when there is none."""
    node = assignment(source, name)
    if node is None or node.value is None:
        raise GitkbError(
            f"tunable {name} has no top-level assignment in the kernel (target.json tunables)"
        )
    return node.value


def current_value(source: str, name: str) -> object:
    value = _assigned(source, name)
    try:
        return ast.literal_eval(value)
    except ValueError:
        raise GitkbError(
            f"tunable {name} is not assigned a literal in the kernel (target.json tunables)"
        ) from None


def rewrite(source: str, name: str, value: object) -> str:
    """``source`` with the value of ``name``'s assignment replaced by ``repr(value)``."""
    node = _assigned(source, name)
    lines = source.splitlines(keepends=True)
    # ast offsets are UTF-8 byte columns on 1-based lines; a parsed node has its end too.
    end_line = node.end_lineno or node.lineno
    end_col = node.end_col_offset or node.col_offset
    start = sum(len(line.encode()) for line in lines[: node.lineno - 1]) + node.col_offset
    end = sum(len(line.encode()) for line in lines[: end_line - 1]) + end_col
    data = source.encode()
    return (data[:start] + repr(value).encode() + data[end:]).decode()


class Provider(providers.Provider):
    name = "knobs"

    def __init__(self, options: providers.ProviderOptions, tunables: dict[str, list]) -> None:
        super().__init__(options, tunables)
        if not tunables:
            raise GitkbError("the knobs provider needs tunables in target.json (target.json)")
        self._proposed: set[str] = set()

    def _settings(self, source: str) -> dict:
        return {name: current_value(source, name) for name in self.tunables}

    def _order(self, name: str, values: list, current: object, moves: dict[str, int]) -> list:
        """``values`` in the order to try them from ``current``: declared order, unless the
        stored strategies moved this tunable one way (then that way, nearest first)."""
        way = moves.get(name, 0)
        if way == 0 or current not in values:
            return list(values)
        at = values.index(current)
        ahead = values[at + 1 :] if way > 0 else values[:at][::-1]
        behind = values[:at][::-1] if way > 0 else values[at + 1 :]
        return [*ahead, *behind]

    def propose(self, context: providers.ProposalContext) -> providers.Candidate | None:
        self._proposed.add(source_key(context.best_source))
        self._proposed.add(source_key(context.baseline_source))
        current = self._settings(context.best_source)
        baseline = self._settings(context.baseline_source)
        # A setting an anti-strategy says failed on this workload is not proposed; one that
        # failed on another workload is tried last (the optimum can move with the shape).
        cases = [str(c.get("case_id")) for c in context.cases]
        excluded = knowledge.knob_exclusions(context.knowledge, cases)
        moves = knowledge.knob_moves(context.knowledge, self.tunables)
        skipped: list[str] = []
        deferred: list[tuple[str, object, str]] = []
        for name, values in self.tunables.items():
            for value in self._order(name, list(values), current[name], moves):
                if value == current[name]:
                    continue
                found = excluded.get((name, repr(value)))
                if found is not None:
                    record_id, here = found
                    if not here:
                        deferred.append((name, value, record_id))
                    elif record_id not in skipped:
                        skipped.append(record_id)
                    continue
                candidate = self._candidate(context, name, value, current, baseline, skipped)
                if candidate is not None:
                    return candidate
        for name, value, record_id in deferred:
            note = f"; tried last: {record_id} failed it on another workload"
            candidate = self._candidate(context, name, value, current, baseline, skipped, note)
            if candidate is not None:
                return candidate
        return None

    def _candidate(
        self, context: providers.ProposalContext, name: str, value: object, current: dict,
        baseline: dict, skipped: list[str], note: str = "",
    ) -> providers.Candidate | None:  # fmt: skip
        """The best source with ``name`` set to ``value``; None when that code was proposed or
        measured already."""
        source = rewrite(context.best_source, name, value)
        key = source_key(source)
        if key in self._proposed or key in context.seen:
            return None
        self._proposed.add(key)
        changed = dict(current, **{name: value})
        summary = ", ".join(f"{k}={v!r}" for k, v in changed.items() if v != baseline[k])
        evidence = f"declared tunable {name} in target.json{note}"
        if skipped:
            evidence += f"; settings skipped per knowledge-base records {', '.join(skipped)}"
        return providers.Candidate(
            excluded_by=list(skipped),
            source=source,
            hypothesis=f"{name}={value!r} suits the cases better than {current[name]!r}",
            change=f"set {name} from {current[name]!r} to {value!r}",
            evidence=evidence,
            expected_effect="lower median latency",
            risk="none beyond the declared range",
            commit_title=f"Tune {summary}" if summary else f"Tune {name}",
            commit_summary=f"Set the tunables {summary} (knob sweep)."
            if summary
            else f"Set {name} to {value!r} (knob sweep).",
        )
