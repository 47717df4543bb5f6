"""The gates where git runs them: ``local`` (the pre-commit and commit-msg hooks of a
store's work tree), ``pre_receive`` (the server's check of a push) and ``install``
(putting both in place)."""
