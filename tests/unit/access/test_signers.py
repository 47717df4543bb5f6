"""access/allowed_signers as gitkb renders it, and the [access] table."""

from __future__ import annotations

import datetime as dt

import pytest

from gitkb.access import policy, signers
from gitkb.access.signers import AllowedSigner, SignersError

KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIEoIUtfzuGjIVTUbZ+R7nNW10pBX53SywJPLTBjS+5nb"
LINE = f'alice@example.org namespaces="git" ssh-ed25519 {KEY}'


def test_what_gitkb_renders_parses_back_to_the_same_bytes():
    listed = [
        AllowedSigner("alice@example.org", "ssh-ed25519", KEY),
        AllowedSigner("bob", "ssh-ed25519", KEY, valid_before="20261201000000Z"),
    ]
    raw = signers.render(listed)
    assert raw.decode().splitlines()[1] == (
        f'bob namespaces="git",valid-before="20261201000000Z" ssh-ed25519 {KEY}'
    )
    assert signers.parse(raw) == listed
    assert listed[0].fingerprint == "SHA256:pTBXw/DLfZAhQHmUEg+ZhO1A70RG02G+zcuo+o1iCTA"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"{LINE}\nbob ssh-ed25519 {KEY}\n", "line 2: a line is"),
        (f"{LINE}\n{LINE.replace('git', 'file')}\n", 'line 2: the options start namespaces="git"'),
        (f"{LINE}\n# a comment\n", "line 2: a line is"),
        (f"{LINE}\n\n", "line 2: a line is"),
        (f"{LINE} alice-laptop\n", "line 1: a line is"),
        (f"{LINE}\n{LINE}\n", "line 2: the same line twice"),
        (LINE, "line 1: no final newline"),
        (f'a namespaces="git" ssh-rsa {KEY}\n', "line 1: the ssh-rsa key does not decode"),
        (f'a namespaces="git" ssh-ed25519 {KEY[:-1]}\n', "line 1: the ssh-ed25519 key does not"),
        (f'al,ice namespaces="git" ssh-ed25519 {KEY}\n', "line 1: 'al,ice' is no principal"),
        (f'a namespaces="git",cert-authority ssh-ed25519 {KEY}\n', "line 1: not as gitkb writes"),
        (f'a namespaces="git",valid-before="2026" ssh-ed25519 {KEY}\n', "line 1: valid-before"),
        (f'a namespaces="git" ssh-dss {KEY}\n', "line 1: not an OpenSSH public key"),
    ],
)
def test_a_file_gitkb_does_not_write_is_refused_naming_its_line(text, why):
    with pytest.raises(SignersError) as refused:
        signers.parse(text.encode())
    assert refused.value.message.startswith(why)


def test_revoking_keeps_an_earlier_end_and_stamps_are_utc():
    signer = AllowedSigner("a", "ssh-ed25519", KEY, valid_before="20250101000000Z")
    assert signer.revoked("20260101000000Z").valid_before == "20250101000000Z"
    assert signer.revoked("20240101000000Z").valid_before == "20240101000000Z"
    zone = dt.timezone(dt.timedelta(hours=2))
    assert signers.utc_stamp(dt.datetime(2026, 1, 1, 2, 0, tzinfo=zone)) == "20260101000000Z"
    assert signers.utc_stamp(dt.datetime(2026, 1, 1)) == "20260101000000Z"


def test_the_access_table_is_held_to_the_one_gitkb_writes():
    good = policy.Policy(True, ("bob",), ("alice",)).table()
    assert policy.table_problem(good) is None
    assert policy.policy_of({"access": good}).role_of("bob") == "curator"
    assert policy.policy_of({"access": good}).role_of("carol") == "contributor"
    for bad in ({**good, "extra": 1}, {**good, "require_signed": "yes"},
                {**good, "admins": ["b", "a"]}, {**good, "curators": ["a b"]}):  # fmt: skip
        assert policy.table_problem(bad)
        assert policy.policy_of({"access": bad}) == policy.Policy()
