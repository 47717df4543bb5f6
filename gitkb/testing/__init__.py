"""What gitkb ships to show and test itself: ``trace`` writes a tiny real example trace
and the records a miner may write from it (the trace gates' valid sample), and
``synthetic`` makes gate-valid records in any number for the benches and tests,
``injections`` holds the gates' injection samples, and ``demo`` runs the whole loop on
the bundled CPU example. The hand-written example records live in
``templates/examples/``."""
