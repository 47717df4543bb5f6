"""Fixtures of the whole-run tests (the demo, the flywheel, optimize loops, the GPU check's
dry run, a wheel installed on its own). The shared ones are in tests/conftest.py; a
fixture only these tests use belongs here."""
