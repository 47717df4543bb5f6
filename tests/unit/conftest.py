"""Fixtures of the unit tests (tests/unit/<package>/test_<module>.py: one library module at
a time, on real repositories in tmp_path). The shared ones are in tests/conftest.py; a
fixture only these tests use belongs here."""
