"""gitkb.toml read once into a typed StoreConfig: known keys typed, unknown keys refused."""

from __future__ import annotations

import pytest
from helpers import git, kb

from gitkb.errors import GitkbError
from gitkb.store import config as store_config
from gitkb.testing.trace_builder import Trace

BASE = {"store": {"name": "kb", "format": "gitkb-2", "schema": "clean-1.3"}}


def test_a_new_store_reads_as_its_defaults(store):
    config = store_config.parse(store.config(), str(store.location))
    assert (config.format, config.schema) == ("gitkb-2", "clean-1.3")
    assert config.max_record_bytes == 1 << 20
    assert config.allowed_refs == () and config.non_target_kernels == ()
    assert config.bounds == store_config.ServerBounds()


def test_known_keys_are_typed():
    config = store_config.parse(
        {
            "store": {**BASE["store"], "max_record_bytes": 4096},
            "refs": {"allow": ["refs/heads/x"]},
            "mine": {"non_target_kernels": ["softmax_kernel"]},
            "server": {"max_push_bytes": 1000, "max_push_commits": 3, "hook_seconds": 1},
        },
        "kb",
    )
    assert config.max_record_bytes == 4096
    assert config.allowed_refs == ("refs/heads/x",)
    assert config.non_target_kernels == ("softmax_kernel",)
    assert config.bounds == store_config.ServerBounds(1000, 3, 20_000, 1.0)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"store": {**BASE["store"], "colour": "red"}}, "unknown key [store] colour"),
        ({**BASE, "mining": {}}, "unknown table [mining]"),
        ({**BASE, "mine": {"non_target_kernel": []}}, "unknown key [mine] non_target_kernel"),
        (
            {**BASE, "mine": {"non_target_kernels": "k"}},
            "[mine] non_target_kernels must be a list of kernel names",
        ),
        (
            {"store": {**BASE["store"], "max_record_bytes": 0}},
            "[store] max_record_bytes must be a positive integer",
        ),
        (
            {"store": {**BASE["store"], "max_record_bytes": True}},
            "[store] max_record_bytes must be a positive integer",
        ),
        ({**BASE, "refs": {"allow": [1]}}, "[refs] allow must be a list of ref patterns"),
        (
            {"store": {**BASE["store"], "allowed_refs": []}},
            "unknown key [store] allowed_refs",
        ),
        (
            {**BASE, "server": {"max_push_commits": 0}},
            "[server] max_push_commits must be a positive integer",
        ),
        (
            {**BASE, "server": {"max_push_bytes": 1.5}},
            "[server] max_push_bytes must be a positive integer",
        ),
        *(
            (
                {**BASE, "server": {"hook_seconds": seconds}},
                "[server] hook_seconds must be a positive number of seconds",
            )
            for seconds in (0, -1.0, float("inf"), float("nan"), True, "60")
        ),
        ({**BASE, "server": {"max_push_size": 1}}, "unknown key [server] max_push_size"),
        ({"store": {"name": "kb", "format": "gitkb-2"}}, "[store] schema is missing"),
        ({"store": "kb"}, "store must be a table ([store])"),
    ],
)
def test_bad_keys_are_one_error_naming_the_key_and_file(data, message):
    with pytest.raises(GitkbError) as caught:
        store_config.parse(data, "/srv/kb")
    assert caught.value.message == f"/srv/kb: gitkb.toml: {message}"


@pytest.mark.slow
def test_mining_into_a_store_with_an_unknown_key_says_which(tmp_path, store):
    t = Trace(tmp_path / "kernel_opt_012_softmax")
    t.setup()
    t.legacy_keep(0, 100.0, "baseline softmax with three passes over each row")
    t.write()
    config = store.location / "gitkb.toml"
    config.write_text(config.read_text() + '\n[mine]\nnon_target_kernel = ["softmax_kernel"]\n')
    git("-c", "core.hooksPath=/dev/null", "commit", "-qam", "typo", cwd=store.location)
    done = kb("recon", str(t.path), "--store", str(store.location))
    assert done.returncode != 0
    assert done.stderr.decode().splitlines() == [
        f"gitkb: error: {store.location}: gitkb.toml: unknown key [mine] non_target_kernel"
    ]
