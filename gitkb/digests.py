"""SHA-1 (git's object ids) and SHA-256 (content signatures), without loading OpenSSL for
a reader.

``hashlib`` loads OpenSSL's libcrypto on import, which costs a read verb more than all
the hashing it does; CPython's own implementations hash the same bytes to the same
digests, only slower on large inputs. So these take hashlib's once something has
loaded it (every writer has: the VCS layer's commits and packs), and CPython's own
before that. Another interpreter gets hashlib's.
"""

from __future__ import annotations

import sys

try:
    from _sha1 import sha1 as _own_sha1  # type: ignore[import-not-found]
    from _sha256 import sha256 as _own_sha256  # type: ignore[import-not-found]
except ImportError:
    from hashlib import sha1 as _own_sha1
    from hashlib import sha256 as _own_sha256

TYPE_CHECKING = False  # typing's, without importing typing (mypy reads it alike)
if TYPE_CHECKING:
    from typing import Protocol

    class Digest(Protocol):
        def update(self, data: bytes, /) -> None: ...
        def digest(self) -> bytes: ...
        def hexdigest(self) -> str: ...


def sha1(data: bytes = b"") -> Digest:
    hashlib = sys.modules.get("hashlib")
    return hashlib.sha1(data) if hashlib is not None else _own_sha1(data)


def sha256(data: bytes = b"") -> Digest:
    hashlib = sys.modules.get("hashlib")
    return hashlib.sha256(data) if hashlib is not None else _own_sha256(data)
