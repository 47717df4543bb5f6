"""gitkb.jsontext writes and reads JSON text exactly as the json module does."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pytest

from gitkb import jsontext

_SCALARS = [
    0,
    -1,
    7,
    10**30,
    -(10**400),
    0.0,
    -0.0,
    1.5,
    1e300,
    1e-300,
    3.141592653589793,
    float("inf"),
    float("-inf"),
    float("nan"),
    True,
    False,
    None,
    "",
    "a",
    "é",
    "☃",
    "\U0001f600",
    "\udc80",
    "\ud83d",
    'quote " and \\ and \n\t\x00\x1f',
    "\u2028",
]


def _document(rng: random.Random, depth: int = 0) -> object:
    kind = rng.random()
    if depth > 4 or kind < 0.45:
        return rng.choice(_SCALARS)
    if kind < 0.7:
        return [_document(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 5]))]
    if kind < 0.75:
        return tuple(_document(rng, depth + 1) for _ in range(rng.choice([0, 2])))
    keys = ["id", "é", "b", "a", "", "\udc80", "x y"]
    return {rng.choice(keys) + str(n): _document(rng, depth + 1) for n in range(rng.randint(0, 5))}


OPTIONS = [
    {},
    {"ensure_ascii": False},
    {"separators": (",", ":")},
    {"ensure_ascii": False, "separators": (",", ":"), "check_circular": False},
    {"indent": 1},
    {"indent": 1, "ensure_ascii": False},
    {"indent": 2, "sort_keys": True},
    {"indent": 0},
    {"sort_keys": True},
]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_dumps_writes_what_json_writes(options):
    rng = random.Random(20261201)
    for _ in range(400):
        value = _document(rng)
        assert jsontext.dumps(value, **options) == json.dumps(value, **options)


def test_dumps_refuses_what_json_refuses_alike():
    loop: list = []
    loop.append(loop)
    cases = [
        ({1: {object()}}, {}),
        ({"a": object()}, {"indent": 1}),
        (loop, {}),
        (loop, {"indent": 1}),
        ([math.nan], {"allow_nan": False}),
        ([math.inf], {"allow_nan": False, "indent": 1}),
        ({(1, 2): 3}, {"indent": 1}),
    ]
    for value, options in cases:
        with pytest.raises((TypeError, ValueError)) as ours:
            jsontext.dumps(value, **options)
        with pytest.raises((TypeError, ValueError)) as theirs:
            json.dumps(value, **options)
        assert type(ours.value) is type(theirs.value)
    keyed = {1: "int", 2.5: "float", False: "bool", None: "none"}
    assert jsontext.dumps(keyed, indent=1) == json.dumps(keyed, indent=1)


def test_loads_reads_what_json_reads_and_fails_where_it_fails():
    rng = random.Random(7)
    texts = [json.dumps(_document(rng), **rng.choice(OPTIONS)) for _ in range(300)]
    texts += [
        "",
        " ",
        "[1,",
        '{"a" 1}',
        "[1] x",
        "nul",
        '"\\x"',
        "\ufeff[]",
        "1e999",
        "[-Infinity, NaN]",
        '{"a": 1, "a": 2}',
        "\n\n  [1,\n2,,]",
        "  7  \n",
        "[" * 5,
    ]
    for text in texts:
        for given in (text, text.encode("utf-8", "surrogatepass")):
            try:
                expected = json.loads(given)
            except json.JSONDecodeError as exc:
                with pytest.raises(jsontext.Malformed) as ours:
                    jsontext.loads(given)
                assert (ours.value.msg, ours.value.pos, ours.value.lineno, ours.value.colno) == (
                    exc.msg, exc.pos, exc.lineno, exc.colno)  # fmt: skip
                assert str(ours.value) == str(exc)
                continue
            found = jsontext.loads(given)
            assert json.dumps(found) == json.dumps(expected)
    for encoding in ("utf-16", "utf-32", "utf-8-sig"):
        assert jsontext.loads('{"é": [1]}'.encode(encoding)) == {"é": [1]}


def test_a_decoder_runs_its_hooks_as_json_does():
    def pairs(found):
        return ("pairs", found)

    hooks = {"object_pairs_hook": pairs, "parse_float": str, "parse_int": lambda t: -int(t),
             "parse_constant": lambda name: name.lower()}  # fmt: skip
    text = '{"a": [1, 2.50, NaN, {"b": -Infinity}], "a": 3}'
    assert jsontext.Decoder(**hooks).decode(text) == json.JSONDecoder(**hooks).decode(text)

    def refuse(found):
        raise OverflowError("a hook's own error")

    with pytest.raises(OverflowError):
        jsontext.Decoder(object_pairs_hook=refuse).decode("{}")


def test_importing_it_loads_neither_json_nor_re():
    code = "import sys, gitkb.jsontext; print(sorted({'json', 're', 'enum'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_malformed_text_is_malformed_before_json_is_loaded():
    """The C scanner finds json's error class among the loaded modules only: a process that
    never loaded ``json`` still gets one ``Malformed`` for bad text, not a SystemError."""
    code = (
        "import sys, gitkb.jsontext as j\n"
        "for text in ('{oops', '[1,', '{\"a\" 1}'):\n"
        "    try:\n"
        "        j.loads(text)\n"
        "    except j.Malformed as exc:\n"
        "        print(exc.msg)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wanted = []
    for text in ("{oops", "[1,", '{"a" 1}'):
        with pytest.raises(json.JSONDecodeError) as caught:
            json.loads(text)
        wanted.append(caught.value.msg)
    assert done.stdout.splitlines() == wanted
