"""What a push may change and who may make it: the history rules, the control files, and
the receive checks the server hooks run."""
