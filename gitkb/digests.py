"""SHA-1 (git's object ids) and SHA-256 (content signatures) without loading OpenSSL.

``hashlib`` loads OpenSSL's libcrypto on import, which costs a read verb more than all
the hashing it does; CPython's own implementations hash the same bytes to the same
digests. Another interpreter (or a CPython that names them otherwise) gets hashlib's.
"""

from __future__ import annotations

try:
    from _sha1 import sha1  # type: ignore[import-not-found]
except ImportError:
    from hashlib import sha1
try:
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:
    from hashlib import sha256

__all__ = ["sha1", "sha256"]
