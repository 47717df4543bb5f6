"""gitkb.digests: the same SHA-1 and SHA-256 digests as hashlib's, before hashlib is loaded
(CPython's own implementations, for a reader) and after (hashlib's, for a writer)."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from gitkb import digests

DATA = [b"", b"blob 3\0abc", bytes(range(256)) * 8]


def test_digests_are_hashlibs_once_hashlib_is_loaded():
    for data in DATA:
        assert digests.sha1(data).hexdigest() == hashlib.sha1(data).hexdigest()
        assert digests.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        grown = digests.sha1()
        grown.update(data)
        assert grown.digest() == hashlib.sha1(data).digest()


def test_a_reader_gets_the_same_digests_without_loading_hashlib():
    code = (
        "import sys\nfrom gitkb import digests\n"
        f"out = [(digests.sha1(d).hexdigest(), digests.sha256(d).hexdigest()) for d in {DATA!r}]\n"
        "print('hashlib' in sys.modules)\nprint(out)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, found = done.stdout.splitlines()
    assert loaded == "False"
    assert found == str(
        [(hashlib.sha1(d).hexdigest(), hashlib.sha256(d).hexdigest()) for d in DATA]
    )
