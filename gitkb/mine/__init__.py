"""Mining a trace into records: recon, long-horizon recon, distill, score, reports, and the
pipeline that admits them through the store's one write path. Reading the trace itself
(ingest, ladder, partition, packets, scrub) lives in ``gitkb.trace``, below both this
package and the gates.
"""
