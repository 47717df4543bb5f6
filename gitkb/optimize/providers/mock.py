"""The mock provider: the TLX agent's deterministic stand-in for a model, for CI.

Like TLX's ``--provider mock`` with no canned candidates, it proposes the current
best unchanged ("mock-echo"): the loop refuses each one as a duplicate of an
earlier experiment, so a run exercises the harness, the baseline, the rounds and
the outputs end to end, needs no model, and ends without a winner.
"""

from __future__ import annotations

from gitkb.optimize import providers


class Provider(providers.Provider):
    name = "mock"

    def propose(self, context: providers.ProposalContext) -> providers.Candidate | None:
        return providers.Candidate(source=context.best_source, change="mock-echo")
