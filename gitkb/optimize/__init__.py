"""`git kb optimize`: bundle, harness worker, scoring, loop, providers, winner commit, trace."""
