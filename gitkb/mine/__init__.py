"""Mining a trace into records: ingest, recon, ladder, partition, packets, distill, score, admit.

Each stage is its own module, deterministic, usable alone.
"""
