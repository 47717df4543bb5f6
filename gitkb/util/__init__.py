"""The plumbing no domain owns: the one subprocess runner, logging, atomic file writes,
the shipped data folders, a value's attributes as JSON."""
