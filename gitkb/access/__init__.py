"""Who may change a store: its signers (``access/allowed_signers``, OpenSSH's
allowed-signers format, ``signers``) and their roles (``gitkb.toml [access]``,
``policy``), read and written exactly as gitkb renders them. The server checks a
push against them (``gitkb.server.access``); the verbs that edit them are in
``gitkb.store.access``."""
