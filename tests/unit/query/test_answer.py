"""`git kb query`: the GPU-wiki retrieval contract over a real store, through the real CLI."""

from __future__ import annotations

import copy
import json

import pytest
from helpers import example_files, git, kb

from gitkb import record as rec
from gitkb.query import answer
from gitkb.query.feedback import feedback
from gitkb.query.scope import Request
from gitkb.store import Store
from gitkb.testing import synthetic

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

STRATEGY = "nvidia.h100.triton.softmax.online-rescale-two-pass-s01"
ANTI = "nvidia.h100.triton.norm.anti.whole-row-in-registers-t01"
CARD = "nvidia.hopper.any.kernel-opt.online-softmax"


def _neutral(vendor: str, name: str) -> dict:
    """The shipped technique card, rewritten as ``vendor``'s architecture-neutral record."""
    card = json.loads(next(p for p in example_files() if CARD in p.name).read_bytes())
    card = copy.deepcopy(card)
    card["id"] = f"{vendor}.generic.any.kernel-opt.{name}"
    card["level"] = "generic"
    card["retrieval"]["scope"].update(vendor=vendor, arch="generic", architectures=[])
    card["retrieval"]["generality"]["arch"] = "any"
    card["episode_key"] = f"generic|any|softmax|{name}|generic"
    card["payload"]["technique"] = f"{name} (architecture-neutral)"
    return card


@pytest.fixture(scope="module")
def kbdir(tmp_path_factory):
    """A store holding the shipped examples (Hopper, Triton), synthetic strategies on
    Hopper, Blackwell and CDNA3, and NVIDIA's and AMD's architecture-neutral cards."""
    store = Store.init(tmp_path_factory.mktemp("q") / "kb")
    for path in example_files():
        store.admit(path.read_bytes(), "insert", source=str(path))
    records = [synthetic.strategy(n, families=4) for n in range(12)]
    records += [_neutral("nvidia", "warp-shuffle-reduction"), _neutral("amd", "lds-reduction")]
    blackwell_only = synthetic.strategy(13, families=4)  # n=13: nvidia blackwell
    blackwell_only["retrieval"]["triggers"] = ["tcgen05 accumulator in tensor memory"]
    records.append(blackwell_only)
    for record in records:
        store.admit(rec.dumps(record), "insert")
    return store.location


def ask(kbdir, *args: str, code: int = 0) -> dict:
    done = kb("query", "--store", str(kbdir), "--json", *args)
    assert done.returncode == code, done.stderr.decode()
    return json.loads(done.stdout) if code == 0 else {"stderr": done.stderr.decode()}


def ids(doc: dict) -> list[str]:
    return [r["id"] for r in doc["records"]]


@pytest.mark.parametrize(
    "token", ["sm_90", "9.0", "H100", "H20", "hopper", "NVIDIA H100 80GB HBM3"]
)
def test_runtime_arch_tokens_resolve_through_the_target_tables(kbdir, token):
    doc = ask(kbdir, "--arch", token, "--limit", "50")
    assert doc["query"]["arch"] == "hopper" and doc["query"]["arch_given"] == token
    labels = {r["id"]: r["match"]["arch"] for r in doc["records"]}
    assert labels[STRATEGY] == "exact" and labels[ANTI] == "exact"
    assert labels["nvidia.generic.any.kernel-opt.warp-shuffle-reduction"] == "architecture-neutral"
    # never another vendor's records, neutral or not, nor a sibling architecture's
    assert not [i for i in labels if i.startswith("amd.")]
    assert all(r["applies_to"]["arch"] in ("hopper", "generic") for r in doc["records"])


def test_amd_tokens_take_amd_records_only(kbdir):
    for token in ("gfx942", "mi300x"):
        doc = ask(kbdir, "--arch", token, "--limit", "50")
        assert doc["query"]["arch"] == "cdna3" and doc["records"]
        assert {r["applies_to"]["vendor"] for r in doc["records"]} == {"amd"}
        assert "amd.generic.any.kernel-opt.lds-reduction" in ids(doc)


def test_strict_arch_drops_the_neutral_records(kbdir):
    doc = ask(kbdir, "--arch", "sm_90", "--strict-arch", "--limit", "50")
    assert {r["match"]["arch"] for r in doc["records"]} == {"exact"}


def test_unknown_values_fail_closed_with_the_near_misses(kbdir):
    out = ask(kbdir, "--family", "softmx", code=2)["stderr"]
    assert out.count("\n") == 1 and "unknown family 'softmx'; did you mean: softmax" in out
    out = ask(kbdir, "--arch", "sm_89", code=2)["stderr"]
    assert "unknown arch 'sm_89'" in out and "9.0" in out
    out = ask(kbdir, "--arch", "gfx950", code=2)["stderr"]  # real, but not in this store
    assert "resolves to cdna4, which this store holds no records for" in out
    assert ask(kbdir, "--type", "strategy")["query"]["type"] == "strategy"
    out = ask(kbdir, "--type", "doc", code=2)["stderr"]
    assert "unknown type 'doc'" in out
    # spelling is forgiven, nothing more
    assert ask(kbdir, "--dsl", "Triton")["query"]["dsl"] == "triton"
    # a long value is named by its start and length, never echoed whole
    out = ask(kbdir, "--technique", "q" * 5000, code=2)["stderr"]
    assert f"unknown technique {'q' * 80!r}... (5,000 characters)" in out and "q" * 81 not in out


def test_only_the_served_projection_leaves_the_store(kbdir):
    doc = ask(kbdir, "--arch", "sm_90", "--limit", "50")
    assert set(doc) == {"query", "result", "records"}
    for hit in doc["records"]:
        assert set(hit) == {"id", "type", "applies_to", "match", "payload"}
        text = json.dumps(hit)
        for engine_only in ('"worth"', '"evidence"', '"locator"', '"links"', '"worth_score"',
                            '"technique_tags"', '"signals"', '"tier"'):  # fmt: skip
            assert engine_only not in text, (hit["id"], engine_only)
    stored = json.loads(rec.dumps(json.loads(kb("show", STRATEGY, "--store", str(kbdir)).stdout)))
    served = next(r for r in doc["records"] if r["id"] == STRATEGY)
    assert served["payload"] == stored["payload"]
    assert served["applies_to"] == stored["retrieval"]["scope"]


def test_brief_drops_code_and_names_what_it_dropped(kbdir):
    doc = ask(kbdir, "--arch", "sm_90", "--brief", "online", "rescale")
    hit = next(r for r in doc["records"] if r["id"] == STRATEGY)
    assert "snippet" not in hit["payload"].get("implementation", {})
    omitted = hit["payload"]["omitted_by_brief"]["fields"]
    assert omitted["implementation.snippet"] > 0 and "next_steps" in omitted


def test_max_bytes_drops_the_weakest_hits_and_says_so(kbdir):
    full = ask(kbdir, "--arch", "sm_90", "--limit", "50")
    budget = len(json.dumps(full, separators=(",", ":")).encode()) // 2
    done = kb("query", "--store", str(kbdir), "--json", "--arch", "sm_90", "--limit", "50",
              "--max-bytes", str(budget))  # fmt: skip
    assert len(done.stdout.rstrip(b"\n")) <= budget
    trimmed = json.loads(done.stdout)
    dropped = trimmed["result"]["dropped_for_budget"]
    assert dropped > 0 and ids(trimmed) == ids(full)[: len(ids(full)) - dropped]
    tiny = ask(kbdir, "--arch", "sm_90", "--max-bytes", "10", code=2)
    assert "--max-bytes 10 is less than this query's answer with no records" in tiny["stderr"]


def test_max_bytes_is_never_exceeded_by_one_big_hit(tmp_path):
    """A hit bigger than the whole budget is served brief (its code named, not sent) when
    that fits, and left out, named with its size, when even its prose does not."""
    store = Store.init(tmp_path / "kb")
    strategy = synthetic.strategy(1, families=1)
    strategy["payload"]["implementation"]["snippet"] = "x = 1\n" * 40_000
    prose = synthetic.strategy(2, families=1)
    prose["payload"]["mechanism"] = "Rows stay in registers. " * 12_000
    for record in (strategy, prose):
        store.admit(rec.dumps(record), "insert")
    budget = 65_536
    for record, trimmed in ((strategy, True), (prose, False)):
        done = kb("query", "--store", str(store.location), "--json", "--family",
                  record["retrieval"]["scope"]["operator_family"], "--max-bytes", str(budget),
                  record["id"].rsplit(".", 1)[1])  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.rstrip(b"\n")) <= budget
        result = json.loads(done.stdout)["result"]
        hits = json.loads(done.stdout)["records"]
        if trimmed:
            assert result["trimmed_for_budget"] == record["id"] and result["served"] == 1
            omitted = hits[0]["payload"]["omitted_by_brief"]["fields"]
            assert omitted["implementation.snippet"] == len("x = 1\n" * 40_000)
        else:
            assert hits == [] and result["served"] == 0 and result["dropped_for_budget"] == 1
            assert result["over_budget_hit"]["id"] == record["id"]
            assert result["over_budget_hit"]["bytes"] > budget


def test_zero_matches_say_why_and_fall_back_only_labelled(kbdir):
    doc = ask(kbdir, "--arch", "sm_90", "--dsl", "triton", "xyzzy", "--seed", "1")
    result = doc["result"]
    assert result["kind"] == "fallback" and "NOT query matches" in result["note"]
    assert result["served"] >= 1 and result["scoped_pool"] > 0
    removals = result["empty_because"]["single_filter_removals_that_would_match"]
    assert removals == [] or all(r["would_match"] > 0 for r in removals)
    empty = ask(kbdir, "--arch", "sm_90", "--type", "anti-strategy", "softmax", "--no-fallback")
    assert empty["result"]["kind"] == "empty" and empty["records"] == []
    removals = empty["result"]["empty_because"]["single_filter_removals_that_would_match"]
    assert {"drop": "--type", "would_match": removals[0]["would_match"]} in removals
    # a match only on a sibling architecture of the same vendor is counted, not served...
    sibling = ask(kbdir, "--arch", "sm_90", "tcgen05", "--no-fallback")
    assert sibling["result"]["kind"] == "empty"
    elsewhere = sibling["result"]["available_elsewhere"]
    assert elsewhere["matches_on_other_architectures_of_this_vendor"] == 1
    # ...until --cross-arch serves it, labelled
    crossed = ask(kbdir, "--arch", "sm_90", "tcgen05", "--cross-arch")
    assert [(r["applies_to"]["arch"], r["match"]["arch"]) for r in crossed["records"]] == [
        ("blackwell", "other-architecture")
    ]


def test_the_symptom_and_operator_vocabularies_are_what_the_records_list(tmp_path):
    """``--list-symptoms`` and ``--list-operators`` list what the records hold (symptoms and
    bottleneck; the scope's operators), and a symptom filter matches as a signal exactly
    when one of them holds it."""
    store = Store.init(tmp_path / "kb", bare=True)
    records = [synthetic.strategy(n, families=3) for n in range(6)]
    records[1]["retrieval"]["signals"]["bottleneck"] = "occupancy-register-capped"
    records[2]["retrieval"]["signals"]["symptoms"] = ["bank-conflicts", "memory-bound"]
    records[3]["retrieval"]["scope"]["operators"] = ["op000", "fused-rmsnorm"]
    for record in records:
        store.admit(rec.dumps(record), "insert")
    listed = {}
    for flag, name in (("--list-symptoms", "symptom"), ("--list-operators", "operator")):
        done = kb("query", "--store", str(store.location), flag)
        assert done.returncode == 0, done.stderr
        listed[name] = set(done.stdout.decode().splitlines())
    signals = [[*r["retrieval"]["signals"]["symptoms"], r["retrieval"]["signals"]["bottleneck"]]
               for r in records]  # fmt: skip
    assert listed["symptom"] == {s for found in signals for s in found if s}
    assert "occupancy-register-capped" in listed["symptom"]
    assert listed["operator"] == {o for r in records for o in r["retrieval"]["scope"]["operators"]}
    for symptom, wanted in (("bank-conflicts", [records[2]]), ("occupancy-register-capped",
                                                               [records[1]])):  # fmt: skip
        done = kb("query", "--store", str(store.location), "--json", "--symptom", symptom)
        assert done.returncode == 0 and b"not an indexed symptom" not in done.stderr
        assert [r["id"] for r in json.loads(done.stdout)["records"]] == [r["id"] for r in wanted]
    done = kb("query", "--store", str(store.location), "--json", "--symptom", "bank")
    assert b"'bank' is not an indexed symptom" in done.stderr
    assert json.loads(done.stdout)["query"]["symptom_match_mode"] == "text"
    done = kb("query", "--store", str(store.location), "--json", "--operator", "fused-rmsnorm")
    assert [r["id"] for r in json.loads(done.stdout)["records"]] == [records[3]["id"]]


def test_coverage_shows_how_the_pool_was_reached(kbdir):
    done = kb("query", "--store", str(kbdir), "--arch", "H20", "--coverage")
    cover = json.loads(done.stdout)
    assert cover["by_reach"]["exact"] > 0 and cover["by_reach"]["architecture-neutral"] == 1
    assert cover["scoped_pool"] == sum(cover["by_reach"].values())
    assert cover["store_total"] == len(example_files()) + 15


def test_ranking_blends_text_with_capped_worth(kbdir):
    # --any: a record matching three terms outranks a better-worth record matching one
    doc = ask(kbdir, "--any", "--arch", "sm_90", "online", "rescale", "two-pass", "--limit", "3")
    assert ids(doc)[0] == STRATEGY
    by_worth = ask(kbdir, "--arch", "sm_90", "--rank", "importance", "--limit", "3")
    assert ids(by_worth)[0] != STRATEGY  # the 0.55 card and the 0.45 records rank first


def test_feedback_moves_ranking_without_touching_the_record(tmp_path):
    store = Store.init(tmp_path / "kb")
    for n in (0, 3):  # two Hopper strategies, same text and worth
        store.admit(rec.dumps(synthetic.strategy(n, families=1)), "insert")
    first, second = sorted(store.view().ids())
    request = Request(arch="hopper", rank="importance")
    assert [r["id"] for r in answer.query(store, request)["records"]] == [first, second]
    before = store.read_record(second).raw
    for n in range(4):
        feedback(store, second, "helped", trace="run-a", trace_commit=f"{n:040x}")
    assert [r["id"] for r in answer.query(store, request)["records"]] == [second, first]
    assert store.read_record(second).raw == before  # nothing rewrote the record
    for n in range(8):
        feedback(store, second, "misleading", trace="run-b", trace_commit=f"{n:040x}")
    assert [r["id"] for r in answer.query(store, request)["records"]] == [first, second]


def test_retracted_records_are_left_out_unless_asked(kbdir, tmp_path):
    git("clone", "-q", str(kbdir), str(tmp_path / "copy"))
    copy_dir = tmp_path / "copy"
    assert (
        kb("retract", STRATEGY, "--reason", "wrong shapes", "--store", str(copy_dir)).returncode
        == 0
    )
    assert STRATEGY not in ids(ask(copy_dir, "--arch", "sm_90", "--limit", "50"))
    assert STRATEGY in ids(ask(copy_dir, "--arch", "sm_90", "--limit", "50", "--include-retired"))


def test_a_bare_clone_answers_and_lists(kbdir, tmp_path):
    git("clone", "-q", "--bare", str(kbdir), str(tmp_path / "bare.git"))
    doc = ask(tmp_path / "bare.git", "--arch", "sm_90", "--dsl", "triton", "online", "softmax")
    assert doc["result"]["kind"] == "matches" and STRATEGY in ids(doc)
    listed = kb("query", "--store", str(tmp_path / "bare.git"), "--list-arch").stdout.decode()
    assert listed.split() == ["blackwell", "cdna3", "generic", "hopper"]


def test_text_output_labels_fallbacks_and_neutral_hits(kbdir):
    done = kb("query", "--store", str(kbdir), "--arch", "sm_90", "xyzzy", "--seed", "3")
    text = done.stdout.decode()
    assert done.returncode == 0 and text.startswith("!! NOT MATCHES")
    done = kb("query", "--store", str(kbdir), "--arch", "sm_90", "warp-shuffle")
    assert "[architecture-neutral]" in done.stdout.decode()


def test_not_a_store_is_an_error(tmp_path):
    done = kb("query", "--store", str(tmp_path), "softmax")
    assert done.returncode == 1 and b"is not a gitkb store" in done.stderr


@pytest.fixture(scope="module")
def varied(kbdir, tmp_path_factory):
    """The query store's clone with more to rank: strategies of every synthetic arch and
    DSL and worth, feedback on some of them, one retracted."""
    copy_dir = tmp_path_factory.mktemp("varied") / "kb"
    git("clone", "-q", str(kbdir), str(copy_dir))
    store = Store.open(copy_dir)
    for n in range(20, 60):
        record = synthetic.strategy(n, families=6)
        record["worth"]["rank"]["score"] = (n % 6) / 5
        store.admit(rec.dumps(record), "insert")
    for n, record_id in enumerate(sorted(store.view().ids())[::9]):
        verdict = "helped" if n % 2 else "misleading"
        for k in range(3):
            feedback(store, record_id, verdict, trace="run-v", trace_commit=f"{n:020x}{k:020x}")
    assert kb("retract", STRATEGY, "--reason", "test", "--store", str(copy_dir)).returncode == 0
    return copy_dir


def _requests(vocabulary: dict, n: int) -> list[Request]:
    import random

    pick = random.Random(23).choice
    words = ["softmax", "online", "rescale", "row", "xyzzy", "gluon", "b200", "op003", "s0003"]
    out = []
    for _ in range(n):
        out.append(Request(
            terms=tuple(pick(words) for _ in range(pick([0, 1, 1, 2, 3]))),
            arch=pick([None, None, "hopper", "blackwell", "cdna3", "generic"]),
            vendor=pick([None, None, "nvidia", "amd"]),
            dsl=pick([None, None, *vocabulary["dsl"]]),
            family=pick([None] * 4 + vocabulary["family"]),
            type=pick([None] * 6 + vocabulary["type"]),
            symptom=pick([None] * 6 + [*vocabulary["symptom"], "register pressure"]),
            tier=pick([None] * 6 + ["proven", "promising"]),
            strict_arch=pick([False, False, True]),
            cross_arch=pick([False, True]),
            any_term=pick([False, True]),
            include_retired=pick([False, True]),
            min_importance=pick([None] * 4 + [0.3]),
            min_gain=pick([None] * 4 + [5.0]),
            min_speedup=pick([None] * 4 + [1.1]),
            exclude=frozenset(pick([(), (), (STRATEGY,)])),
            rank=pick(["blend", "blend", "text", "importance"]),
            weight_importance=pick([1.0, 0.0, 2.5]),
            limit=pick([1, 3, 8, 50]),
        ).checked())  # fmt: skip
    return out


def _questions(cache, n: int):
    """(request, its scope resolved) for ``n`` random questions over the store's vocabulary;
    those naming a value the store does not hold are left out."""
    from gitkb.errors import GitkbError
    from gitkb.query import scope

    vocabulary = {name: sorted(scope.Vocabulary(cache).values(name))
                  for name in ("dsl", "family", "type", "symptom")}  # fmt: skip
    for request in _requests(vocabulary, n):
        try:
            yield request, scope.resolve(cache, request)
        except GitkbError:
            continue  # a value this store does not hold


def test_the_cache_decides_and_ranks_a_scope_as_deciding_every_record_here_would(varied):
    """What SQL decides, counts and ranks (every record but those with feedback) equals
    what the same scope gives with every record decided in Python, over many questions."""
    from gitkb.query import cards, pool, rank

    store = Store.open(varied)
    compared = 0
    with store.cache.snapshot(store.tip) as cache:
        every_id = tuple(sorted(cache.ids()))
        for request, s in _questions(cache, 500):
            reader = answer.Reader(store, cache, request, None)
            fast, slow = reader.pooled(s), pool.pooled(cache, s, every_id, reader.refold)
            assert fast.size() == slow.size() and fast.symptom_mode == slow.symptom_mode
            assert rank.matches(fast) == rank.matches(slow)
            assert [(c.path, how) for c, how in fast.members()] == [
                (c.path, how) for c, how in slow.members()
            ]
            with_cards = cards.CARD_TYPE if cards.broad(s) else None
            ranked = [
                [(h.candidate.path, h.reach, h.key, h.text_hits) for h in
                 rank.ranked(p, request.limit, with_cards)] for p in (fast, slow)
            ]  # fmt: skip
            assert ranked[0] == ranked[1], request
            compared += bool(ranked[0])
    assert compared >= 60  # most questions had hits to compare


@pytest.mark.parametrize("walk", [1, 3, 64])
def test_a_walk_from_the_most_important_end_ranks_as_keying_every_record(varied, monkeypatch, walk):
    """A large pool is read from the top of the importance index and the reading stops
    once no unread record can outrank the best found: over many questions, and walks so
    short that most must fall back, it ranks exactly as keying every record does."""
    from gitkb.query import rank
    from gitkb.store.cache import queries

    monkeypatch.setattr(queries, "_WALK", walk)
    store = Store.open(varied)
    settled = fell_back = 0
    real_walk = queries._walked

    def counted(*args):
        nonlocal settled, fell_back
        found = real_walk(*args)
        settled += found is not None
        fell_back += found is None
        return found

    monkeypatch.setattr(queries, "_walked", counted)
    with store.cache.snapshot(store.tip) as cache:
        for request, s in _questions(cache, 300):
            pooled = answer.Reader(store, cache, request, None).pooled(s)
            keys = rank.ranking(s)
            walked, keyed = (
                [(r.row.path, r.key, r.text_hits, r.reach) for r in queries.ranked_rows(
                    cache, pooled.exact, keys, request.limit, from_the_top=top)]
                for top in (True, False)
            )  # fmt: skip
            assert walked == keyed, request
    assert settled > 20 and (walk == 64 or fell_back > 20)  # both ways were taken


@pytest.mark.parametrize("few", [0, 2, 256])
def test_a_diagnosis_counts_as_reading_every_text_however_few_match_the_store(
    varied, monkeypatch, few
):
    """An empty answer's counts (each filter dropped, the sibling architectures) count the
    records the terms match store-wide by path when they are at most ``_FEW_MATCHED``, by
    their texts when more: either way, what deciding each member in Python counts."""
    from gitkb.query import rank
    from gitkb.store.cache import queries

    monkeypatch.setattr(queries, "_FEW_MATCHED", few)
    store = Store.open(varied)
    counted = 0
    with store.cache.snapshot(store.tip) as cache:
        for request, s in _questions(cache, 200):
            reader = answer.Reader(store, cache, request, None)
            for asked in (s, s.widened(), *(s.without(n) for n in ("arch", "dsl", "family"))):
                members = reader.pooled(asked).members()
                wanted = sum(1 for c, _ in members
                             if rank.text_hits(c, asked.terms, request.any_term))  # fmt: skip
                assert reader.matches(asked) == wanted, (request, asked)
                counted += wanted > 0
    assert counted > 100


def test_a_speedup_floor_reads_the_records_measured_speedup_from_the_cache(tmp_path, monkeypatch):
    """``--min-speedup`` floors the entry's speedup where it states one, else the record's
    measured speedup (``curation.speedup``, here from its gain). The cache keeps that, so
    the floor reads no record but the hits it serves."""
    from gitkb.record.curation import speedup
    from gitkb.store.view import StoreView

    store = Store.init(tmp_path / "kb", bare=True)
    records = [synthetic.strategy(n) for n in range(12)]
    metrics = records[0]["retrieval"]["signals"]["metrics"]
    metrics.update(page_best_speedup_x=3.0, speedup_x=1.01)  # the entry's is page_best
    for record in records:
        store.admit(rec.dumps(record), "insert")
    floor = 1.3
    stated = {records[0]["id"]: 3.0}
    wanted = sorted(r["id"] for r in records if stated.get(r["id"], speedup(r) or 0) >= floor)
    assert records[0]["id"] in wanted and 2 < len(wanted) < len(records) - 2
    read: list[str] = []
    real = StoreView.read_checked

    def reading(view, paths):
        read.extend(paths)
        return real(view, paths)

    monkeypatch.setattr(StoreView, "read_checked", reading)
    found = answer.query(Store.open(store.location), Request(min_speedup=floor, limit=50))
    assert sorted(r["id"] for r in found["records"]) == wanted
    assert len(read) == len(wanted)  # the hits, read to serve them; no other record


def test_a_fallback_sample_drawn_by_position_is_the_sample_of_every_member(varied):
    """The fallback draws positions and reads only the members drawn: the same records,
    in the same order, as random.sample over every member of the pool, seed for seed.
    And the pool is what its scope matches without terms (the diagnosis counts it so)."""
    import random

    store = Store.open(varied)
    compared = 0
    with store.cache.snapshot(store.tip) as cache:
        for n, (request, s) in enumerate(_questions(cache, 300)):
            reader = answer.Reader(store, cache, request, None)
            pooled = reader.pooled(s)
            members = pooled.members()
            assert pooled.size() == len(members)
            # what the zero-match diagnosis takes as dropping the terms would match
            assert reader.matches(s.without("terms")) == len(members)
            count = min(len(members), request.limit)
            drawn = pooled.at(random.Random(n).sample(range(len(members)), count))
            every = random.Random(n).sample(members, count)
            assert [(c.path, how) for c, how in drawn] == [(c.path, how) for c, how in every]
            compared += count > 1
    assert compared > 40


def test_a_term_is_a_literal_substring_whatever_characters_it_holds(tmp_path):
    """The cache tests "the text holds the term" with GLOB: the pattern characters a term
    may hold (* ? [ ]) stand for themselves, as Python's ``in`` has them."""
    store = Store.init(tmp_path / "kb", bare=True)
    literal, plain = synthetic.strategy(0), synthetic.strategy(3)
    literal["retrieval"]["triggers"] = ["out[i] *= scale? under [tile]"]
    plain["retrieval"]["triggers"] = ["out i scale! under tile"]
    for record in (literal, plain):
        store.admit(rec.dumps(record), "insert")
    for term, wanted in (("[i]", [literal["id"]]), ("scale?", [literal["id"]]),
                         ("*=", [literal["id"]]), ("e?", [literal["id"]]),
                         ("[tile]", [literal["id"]]), ("[ab]", []), ("s*e", []),
                         ("out", sorted([literal["id"], plain["id"]]))):  # fmt: skip
        doc = answer.query(store, Request(terms=(term,), any_term=True, limit=10))
        matched = sorted(ids(doc)) if doc["result"]["kind"] == "matches" else []
        assert matched == wanted, (term, doc["result"])


def test_a_term_of_100000_characters_is_answered_and_too_many_words_refused(tmp_path):
    """Past SQLite's GLOB pattern limit (50,000 bytes) one word is still a substring test:
    found where the text holds it, an empty answer where none does. Past 256 words a query
    is refused in one line (exit 2), never exit 70."""
    store = Store.init(tmp_path / "kb")
    record = synthetic.strategy(1, families=1)
    record["payload"]["goal"] = "Rows-stay-in-registers." * 5_000
    store.admit(rec.dumps(record), "insert")
    for term, served in ((record["payload"]["goal"][:100_000], 1), ("q" * 100_000, 0)):
        done = kb("query", "--store", str(store.location), "--json", "--max-bytes", "10000000",
                  "--limit", "1", term)  # fmt: skip
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert [r["id"] for r in answer["records"]][:served] == [record["id"]] * served
        assert (answer["result"]["kind"] == "fallback") is (served == 0)
    done = kb("query", "--store", str(store.location), "Rows stay in registers. " * 4_000)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "gitkb: error: a query holds at most 256 words; this one holds 16,000\n"
    )
