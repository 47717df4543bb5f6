"""What gitkb ships to show and test itself. One trace builder: ``trace_builder.Trace``
records an optimizer campaign's commits (the files they hold come from ``trace_files``) and
writes them as one real repository; ``traces`` holds ready-made campaigns; ``trace`` is the
tiny example trace, built with it, and the records a miner may write from it (the trace
gates' valid sample). ``injections`` holds the gates' injection samples, ``demo`` runs the
whole loop on the bundled CPU example. ``synthetic`` makes gate-valid records in any number
for the benches and tests. The hand-written example records live in ``templates/examples/``."""
