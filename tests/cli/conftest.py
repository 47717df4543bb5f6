"""Fixtures of the command-line tests (the real git-kb in a subprocess: help, bad input,
forged caches, the environment it reads). The shared ones are in tests/conftest.py; a
fixture only these tests use belongs here."""
