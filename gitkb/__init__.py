"""gitkb: a git-native knowledge base of GPU-kernel optimization experience."""

__version__ = "0.1.0"
