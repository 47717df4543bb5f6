"""The technique vocabulary and its detector: the diff first, words as the fallback, two
changes never one key, the labeled set's precision and recall, a bad vocabulary file as
one clear error, and the cheap paths (anchors, the version line) answering as the slow
ones do."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from helpers import CONFORMANCE, ROOT

from gitkb.errors import GitkbError
from gitkb.store.cache import file as cache_file
from gitkb.testing import technique_levers
from gitkb.trace import technique_patterns, techniques, vocabulary_version

LABELED = ROOT / "tests" / "data" / "techniques_labeled.json"
HELD_OUT = ROOT / "tests" / "data" / "techniques_held_out.json"
TOML = ROOT / "targets" / "techniques.toml"


def detect(diff: str, sentence: str, dsl: str = "triton") -> techniques.Detection:
    return techniques.vocabulary().detect(diff, sentence, dsl)


def change(before: str, after: str) -> str:
    return f"-{before}\n+{after}\n"


def test_the_cache_layout_names_the_vocabulary_file_s_digest(monkeypatch, tmp_path):
    import hashlib
    import tomllib

    stated = tomllib.loads(TOML.read_text())["version"]
    assert techniques.vocabulary().version == stated
    digest = hashlib.sha256(TOML.read_bytes()).hexdigest()[:16]
    assert cache_file.layout().endswith(f"+techniques-{digest}")
    # any edit of the file is a new layout, so the cache re-derives every technique
    edited = tmp_path / vocabulary_version.FILE_NAME
    edited.write_bytes(TOML.read_bytes() + b"\n")
    monkeypatch.setattr(vocabulary_version, "vocabulary_path", lambda: str(edited))
    vocabulary_version.digest.cache_clear()
    try:
        assert vocabulary_version.digest() not in (digest, "missing")
    finally:
        vocabulary_version.digest.cache_clear()


def test_the_shipped_vocabulary_passes_the_checks_its_loading_skips():
    """The shipped file is loaded without compiling its patterns (each is compiled when
    first run): here every pattern compiles and every parameter's captures its value."""
    checked = techniques.parse(TOML.read_bytes())
    assert [t.name for t in checked.techniques] == [
        t.name for t in techniques.vocabulary().techniques
    ]
    bad = 'version = "1"\n[[technique]]\nname = "a"\ndsls = ["triton"]\nwords = ["(x"]\n'
    unchecked = techniques.parse(bad.encode(), check=False)
    with pytest.raises(GitkbError, match="bad pattern"):  # one clear line when first run
        unchecked.detect("", "a sentence that names a", "triton")


def test_every_technique_is_complete_and_named_by_its_own_name():
    vocabulary = techniques.vocabulary()
    families = {"triton", "tlx", "cuda", "hip", "ck", "cute"}
    assert families <= {f for t in vocabulary.techniques for f in t.dsls}
    for t in vocabulary.techniques:
        assert t.meaning and (t.code or t.words), t.name
        # its own name, in any spelling, names it: no uncategorized phrase spells a key
        for spelled in (t.name, t.name.replace("-", " "), t.name.replace("-", "_")):
            named = vocabulary.detect("", f"try {spelled} here", t.dsls[0])
            assert t.name in {f.name for f in named.found}, (t.name, spelled)


def test_the_diff_is_read_first_and_words_are_the_fallback():
    diff = change(
        "    x = tl.load(p + offs)", '    x = tl.load(p + offs, eviction_policy="evict_first")'
    )
    found = detect(diff, "more warps per row")
    assert (found.key, found.source) == ("eviction-policy-evict-first", "diff")
    worded = detect("", "more warps per row")
    assert (worded.key, worded.source) == ("num-warps-up", "words")
    nothing = detect(change("    a = 1", "    a = 2"), "tidy the epilogue")
    assert (nothing.key, nothing.source, nothing.phrase) == ("", "none", "tidy-the-epilogue")


def test_a_comment_is_no_code():
    diff = change("    x = tl.load(p)", "    x = tl.load(p)  # eviction_policy='evict_first' next")
    assert detect(diff, "a note for the next run").key == ""


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            change("    num_warps=4,", "    num_warps=8,"),
            change("    num_warps=8,", "    num_warps=4,"),
        ),
        (
            change("x = tl.load(p)", 'x = tl.load(p, eviction_policy="evict_first")'),
            change("x = tl.load(p)", 'x = tl.load(p, eviction_policy="evict_last")'),
        ),
        (
            change("x = tl.load(p)", 'x = tl.load(p, cache_modifier=".cg")'),
            change("x = tl.load(p)", 'x = tl.load(p, cache_modifier=".cs")'),
        ),
        (
            change("BLOCK_SIZE = 512", "BLOCK_SIZE = 1024"),
            change("BLOCK_SIZE = 512", "BLOCK_SIZE = 256"),
        ),
    ],
)
def test_two_different_changes_never_share_a_key(first, second):
    a, b = detect(first, ""), detect(second, "")
    assert a.categorized and b.categorized and a.key != b.key
    assert {f.name for f in a.found} == {f.name for f in b.found}  # one technique, two ways


def test_one_change_in_three_producers_words_is_one_key():
    said = (
        "evict-first on the streamed x keeps the weight in L2",
        "tl.load x eviction_policy evict_first",
    )
    assert {detect("", s).key for s in said} == {"eviction-policy-evict-first"}
    warps = (
        "num_warps 4 -> 8",
        "8 warps per row saturate the load path",
        "retuned num_warps from 4 to 8",
    )
    assert {detect("", s).key for s in warps} == {"num-warps-up"}
    # a combination stays a combination, its parts in one order
    both = detect("", "two rows per program with num_warps 8")
    assert both.key == "num-warps-up+rows-per-program-up"
    assert techniques.vocabulary().parse_key(both.key) == both.found


def test_keys_parse_only_as_the_vocabulary_spells_them():
    vocabulary = techniques.vocabulary()
    assert vocabulary.parse_key("num-warps-up") == (techniques.Found("num-warps", "up"),)
    assert vocabulary.parse_key("eviction-policy-evict-first") is not None
    for bad in (
        "",
        "num-warps-sideways",
        "vectorized-bit-loads",
        "rows-per-program-up+num-warps-up",
        "online-softmax-up",
        "num-warps+",
    ):
        assert vocabulary.parse_key(bad) is None, bad


def test_a_record_keeps_its_phrase_beside_the_canonical_tag():
    record = {
        "type": "strategy",
        "retrieval": {"scope": {"dsl": "triton", "operator_family": "softmax"},
                      "technique_tags": ["retuned-num-warps-from-4-to-8", "softmax"]},
        "payload": {"change": "retuned num_warps from 4 to 8"},
    }  # fmt: skip
    found = techniques.tag_record(record)
    assert found.key == "num-warps-up"
    assert record["retrieval"]["technique_tags"] == [
        "num-warps-up", "retuned-num-warps-from-4-to-8", "softmax"
    ]  # fmt: skip
    assert techniques.record_technique(record).key == "num-warps-up"
    untouched = {"type": "strategy", "retrieval": {"technique_tags": ["x"]},
                 "payload": {"change": "tidy the epilogue"}}  # fmt: skip
    assert not techniques.tag_record(untouched).categorized
    assert untouched["retrieval"]["technique_tags"] == ["x"]
    assert techniques.record_technique(untouched).phrase == "x"


@pytest.mark.parametrize(
    ("sentence", "key"),
    [
        # a transition between two numbers, however it is spelled
        ("num_stages 3 rather than 2 for the long K loop", "num-stages-up"),
        ("BLOCK_SIZE 4096 (was 1024)", "block-size-up"),
        ("set BLOCK_M to 64 from 128", "block-size-down"),
        ("128 threads per block instead of 512", "threads-per-block-down"),
        # a word or two before the old number, a transition running past the window
        ("num_stages 4 (was a hard-coded 5)", "num-stages-down"),
        ("BLOCK_SIZE = next_power_of_2(n_cols) clamped at 16384 rather than 2048", "block-size-up"),
        ("go from 8 to 2 warps", "num-warps-down"),
        # said with an adverb, and beside a word that only sounds like more
        ("num_stages back down: 5 down to 3, the additional stages did nothing", "num-stages-down"),
        ("brought num_warps 16 back to 8; the extra warps only waited", "num-warps-down"),
        # a verb beside a number the parameter has no default for
        ("raise the warps to 8", "num-warps-up"),
        ("shrink BLOCK_N to 32", "block-size-down"),
        # the nearest verb speaks for the parameter, not one across the sentence
        ("drop the tail mask and double BLOCK_K", "block-size-up+mask-elimination"),
        # rows or tiles given to each program or CTA, and amounts in words
        ("every block now handles 8 rows", "rows-per-program-up"),
        ("three tiles for each CTA", "rows-per-program-up"),
        # a pipeline's depth said as how deep it is
        ("software pipelining two deep over K", "num-stages-down"),
        # intrinsics spelled inside a sentence
        ("butterfly reduction with __shfl_xor_sync", "warp-shuffle"),
        ("a __shared__ buffer for the partial sums", "shared-memory-staging"),
        # a persistent grid said by its size
        ("grid of num_sms programs that stride over the row blocks", "persistent-kernel"),
        # program ids remapped for L2
        ("remap the pid order so neighbours reuse K and V", "l2-tile-swizzle"),
    ],
)
def test_a_sentence_says_which_way_a_parameter_went(sentence, key):
    cuda = "__" in sentence or "threads per block" in sentence
    assert detect("", sentence, "cuda" if cuda else "triton").key == key


def test_a_bare_parameter_beside_another_technique_is_a_mention():
    # the parameters are what autotune sweeps, not changes of their own
    assert detect("", "autotune BLOCK_M and num_stages per shape").key == "autotune"
    # alone, a bare parameter still names its technique, with no direction
    assert detect("", "retuned num_stages").key == "num-stages"
    # a number or a direction makes it a change of its own
    assert detect("", "autotune with num_stages 4").key == "autotune+num-stages-up"


@pytest.mark.parametrize(
    ("dsl", "sentence", "key"),
    [
        # vector types, spelled as types or as what the data goes through
        ("cuda", "store the pairs through __nv_bfloat162", "vector-loads"),
        ("hip", "half2 loads for gamma and beta", "vector-loads"),
        ("cuda", "read the scales as uint2, two per thread", "vector-loads"),
        ("cuda", "dequantize the int4 weights before the MMA", ""),
        # __launch_bounds__ named in prose, threads per block however it is written
        ("cuda", "put __launch_bounds__ on the softmax kernel", "launch-bounds"),
        ("hip", "256 threads/block rather than 64", "threads-per-block-up"),
        ("cuda", "block size 128 instead of 1024", "threads-per-block-down"),
        ("cuda", "block size 64x64 in smem", "shared-memory-staging"),
        # a CK pipeline version as a value, the new one where two are named
        ("ck", "BlockGemmPipelineVersion from v1 to v5", "ck-pipeline-v5"),
        ("ck", "the v3 block GEMM pipeline for large K", "ck-pipeline-v3"),
        ("ck", "scheduler Interwave -> Intrawave", "ck-pipeline-intrawave"),
        # a row held in registers; pipeline stages are no staging in shared memory
        ("triton", "the 2048-wide row stays resident in registers", "register-resident-rows"),
        ("triton", "4 stages overflowed smem", "num-stages-up"),
        ("cuda", "no per-element division: rsqrtf once, then multiply", "reciprocal-multiply"),
        ("hip", "direct-to-LDS loads for the B tile", "async-copy"),
    ],
)
def test_words_name_what_the_code_would(dsl, sentence, key):
    assert detect("", sentence, dsl).key == key


def test_a_code_signature_in_a_sentence_names_it_as_code():
    assert detect("", "`__launch_bounds__(512, 1)` on the kernel", "cuda").key == "launch-bounds"
    assert detect("", "KernelTmaWarpSpecializedCooperative as the schedule", "cute").key == (
        "warp-specialization"
    )
    # a copy atom that is cp.async is the async copy; one that is TMA replaces the tiled copy
    atom = "a copy atom of SM80_CP_ASYNC_CACHEGLOBAL<uint128_t> for the A tile"
    assert detect("", atom, "cute").key == "async-copy+cute-tiled-copy"
    assert detect("", "copy atom SM90_TMA_LOAD for the A tile", "cute").key == "tma-descriptors"
    # only as code: ``int4`` in prose may be 4-bit weights, ``int4*`` is the vector type
    assert detect("", "reinterpret_cast<const int4*>(x) for the row", "cuda").key == (
        "vector-loads"
    )
    assert detect("", "an int4 GEMM for the decode shapes", "cuda").key == ""
    # only where the code is the record's family's: PTX is no Triton change
    ptx = "ld.global.v4.b32 shows up in the PTX"
    assert (detect("", ptx, "cuda").key, detect("", ptx, "triton").key) == ("vector-loads", "")


def test_a_lone_value_is_named_by_its_trailing_comment():
    # CK's and CUTLASS's positional template arguments carry their names as comments
    tile = (
        "         256,   // BlockSize\n-        64,    // KPerBlock\n+        128,   // KPerBlock\n"
    )
    assert detect(tile, "", "ck").key == "ck-block-tile-up"
    # a comment that is no lone value's name is still no code
    assert detect(change("    // KPerBlock 64", "    // KPerBlock 128"), "", "ck").key == ""


def test_a_task_s_warps_are_not_the_launch_s():
    tasks = (
        "+    with tlx.async_tasks():\n+        with tlx.async_task(num_warps=1, registers=24):\n"
    )
    assert detect(tasks, "", "tlx").key == "warp-specialization"
    launch = tasks + change("    kernel[grid](a, num_warps=4)", "    kernel[grid](a, num_warps=8)")
    assert detect(launch, "", "tlx").key == "num-warps-up+warp-specialization"


def test_a_double_buffer_is_a_stage_dimension_or_a_flipped_index():
    staged = change("    __shared__ half sB[BK][BN];", "    __shared__ half sB[kStages][BK][BN];")
    assert detect(staged, "", "cuda").key == "double-buffering"
    assert detect("+        stage ^= 1;\n", "", "cuda").key == "double-buffering"
    # a padded tile is no second buffer
    padded = change("    __shared__ float t[32][32];", "    __shared__ float t[32][33];")
    assert detect(padded, "", "cuda").key == "smem-padding"


def test_the_lever_is_read_before_its_purpose_else_the_whole_sentence():
    assert detect("", "num_warps 2 to free registers for the larger tiles").key == (
        "num-warps-down"
    )
    # nothing before the purpose: the whole sentence is read
    assert detect("", "to hide latency, fold the scale into the load loop").key == (
        "fuse-into-load-loop"
    )


def test_a_named_setting_keeps_its_value_whole():
    vocabulary = techniques.vocabulary()
    shown = detect(change("  LoopScheduler::Default,", "  LoopScheduler::Interwave,"), "", "ck")
    assert shown.key == "ck-pipeline-interwave"
    versioned = detect(
        change("  BlockGemmPipelineVersion::v2,", "  BlockGemmPipelineVersion::v4,"), "", "ck"
    )
    assert versioned.key == "ck-pipeline-v4"
    assert vocabulary.parse_key("ck-pipeline-v4") == (techniques.Found("ck-pipeline", "v4"),)
    # the sentence's version is the same key as the diff's
    assert detect("", "move to pipeline v4", "ck").key == "ck-pipeline-v4"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[technique]]\nname = "a"\ndsls = ["triton"]\nwords = ["a"]\n', "needs a version"),
        ('version = "1"\n', "no [[technique]]"),
        (
            'version = "1"\n[[technique]]\nname = "a"\ndsls = ["triton"]\nwords = ["(unclosed"]\n',
            "bad pattern",
        ),
        (
            'version = "1"\n[[technique]]\nname = "A b"\ndsls = ["triton"]\nwords = ["a"]\n',
            "lowercase-hyphenated",
        ),
        (
            'version = "1"\n[[technique]]\nname = "a"\ndsls = ["triton"]\nkind = "parameter"\n'
            'code = ["num_warps"]\n',
            "capture its value",
        ),
        (
            'version = "1"\n' + '[[technique]]\nname = "a"\ndsls = ["t"]\nwords = ["a"]\n' * 2,
            "named twice",
        ),
        (
            'version = "1"\n[[technique]]\nname = "a"\ndsls = ["t"]\nwords = ["a"]\n'
            'subsumes = ["b"]\n',
            "subsumes unknown",
        ),
        (
            'version = "1"\n[[technique]]\nname = "a"\ndsls = ["t"]\ncode = ["a"]\n'
            'code_dsls = ["u"]\n',
            "code_dsls lists some of its dsls",
        ),
        ("version = \n", "techniques.toml"),
    ],
)
def test_a_bad_vocabulary_is_one_clear_error(text, message):
    with pytest.raises(GitkbError, match=re.escape(message)):
        techniques.parse(text.encode())


def _without_anchors(vocabulary: techniques.Vocabulary) -> techniques.Vocabulary:
    """The vocabulary with every pattern run on every text (no anchor looked for first)."""

    def bare(s: technique_patterns.Signature) -> technique_patterns.Signature:
        return dataclasses.replace(s, anchors=None)

    plain = tuple(
        dataclasses.replace(
            t,
            code=tuple(map(bare, t.code)),
            words=tuple(dataclasses.replace(w, signature=bare(w.signature)) for w in t.words),
        )
        for t in vocabulary.techniques
    )
    families = {f: tuple(t for t in plain if f in t.dsls) for t in plain for f in t.dsls}
    indexes = {
        f: techniques.FamilyIndex(
            techniques.AnchorIndex.of(ts, True), techniques.AnchorIndex.of(ts, False)
        )
        for f, ts in [*families.items(), ("", plain)]
    }
    return techniques.Vocabulary(vocabulary.version, plain, vocabulary.aliases, families, indexes)


def test_anchors_only_skip_patterns_that_cannot_match():
    vocabulary = techniques.vocabulary()
    slow = _without_anchors(vocabulary)
    levers = [
        lv
        for lv in technique_levers.labeled_set(LABELED) + technique_levers.labeled_set(HELD_OUT)
        if "sentence" in lv
    ]
    extra = [("", "a persistent loop; streaming loads", "triton"), ("", "grid-stride loop", "cuda")]
    for diff, sentence, dsl in [(lv["diff"], lv["sentence"], lv["dsl"]) for lv in levers] + extra:
        diff = technique_levers.lever_diff(diff)
        assert vocabulary.detect(diff, sentence, dsl) == slow.detect(diff, sentence, dsl)
    for t in vocabulary.techniques:
        for signature in t.code:
            for anchor in signature.anchors or ():
                assert anchor == anchor.lower() and len(anchor) >= 3


def test_the_labeled_set_meets_its_targets():
    levers = technique_levers.labeled_set(LABELED)
    assert len(levers) >= 60
    assert {"examples", "testing", "trace-factory", "atrex", "gpu-wiki", "written"} <= {
        lv["origin"] for lv in levers
    }
    assert len({lv["id"] for lv in levers}) == len(levers)
    score = technique_levers.score(levers, CONFORMANCE if CONFORMANCE.is_dir() else None)
    assert len(score.levers) >= 60
    assert score.recall >= 0.9, [m for m in score.misses() if m.label]
    assert score.precision >= 0.95, [m for m in score.misses() if m.predicted]
    assert score.merges() == []


def test_the_labeled_set_copies_no_conformance_record():
    doc = json.loads(LABELED.read_text())
    wiki = [lv for lv in doc["levers"] if lv["origin"] == "gpu-wiki"]
    assert wiki and all(set(lv) <= {"id", "origin", "record", "label", "note"} for lv in wiki)


def test_the_held_out_set_is_labeled_in_the_vocabulary_and_scored_apart():
    # its figures are the bench's to report (bench/techniques.py), batch by batch: a test
    # holding them to a target would make the set one to tune against
    doc = json.loads(HELD_OUT.read_text())
    held = doc["levers"]
    assert len(held) >= 60 and len({lv["id"] for lv in held}) == len(held)
    assert all(lv["origin"] == "held-out" for lv in held)
    # each batch says when and how it was written, and what it scored then
    assert {str(lv["batch"]) for lv in held} == set(doc["batches"])
    assert all("precision" in note and "recall" in note for note in doc["batches"].values())
    vocabulary = techniques.vocabulary()
    unknown = [lv["id"] for lv in held if lv["label"] and not vocabulary.parse_key(lv["label"])]
    assert unknown == []
    labeled = {lv["id"] for lv in technique_levers.labeled_set(LABELED)}
    assert not labeled & {lv["id"] for lv in held}
