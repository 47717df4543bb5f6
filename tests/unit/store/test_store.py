"""Store admissions as commits, through the library and the CLI, on real repositories."""

from __future__ import annotations

import json

import pytest
from helpers import example_files, git, kb, needs_conformance

from gitkb.errors import AdmissionRefused, GitkbError, NotAStore, RecordError, RefMoved
from gitkb.importers.gpu_wiki import export_tree, import_tree
from gitkb.record import dumps
from gitkb.store import Store
from gitkb.testing import synthetic
from gitkb.vcs.repository import Repository


def snapshot(store_dir):
    """What must not change when an admission is refused: refs, files, objects reachable."""
    refs = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=store_dir).stdout
    files = sorted(
        p.relative_to(store_dir).as_posix() for p in store_dir.rglob("*") if ".git" not in p.parts
    )
    return refs, files


def test_init_writes_the_skeleton_in_one_commit(tmp_path):
    store = Store.init(tmp_path / "kb")
    log = git("log", "--format=%s%n%(trailers:only,unfold)", cwd=tmp_path / "kb").stdout
    assert log.startswith("kb init kb\nKB-Action: init\n")
    tracked = git("ls-files", cwd=tmp_path / "kb").stdout.split()
    assert tracked == [
        ".gitattributes",
        ".gitignore",
        ".pre-commit-config.yaml",
        "README.md",
        "gitkb.toml",
    ]
    assert store.config()["store"]["schema"] == "clean-1.3"
    assert store.config()["store"]["format"] == "gitkb-2" == store.format
    assert "/records/index.json" in (tmp_path / "kb" / ".gitignore").read_text()
    assert "ledger/*.jsonl merge=union" in (tmp_path / "kb" / ".gitattributes").read_text()
    assert "git-kb hook pre-commit" in (tmp_path / "kb" / ".pre-commit-config.yaml").read_text()
    assert git("status", "--porcelain", cwd=tmp_path / "kb").stdout == ""
    with pytest.raises(GitkbError, match="already holds a git repository"):
        Store.init(tmp_path / "kb")


def test_init_never_overwrites_a_users_files(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("mine\n")
    with pytest.raises(GitkbError, match="already holds files"):
        Store.init(tmp_path / "notes")
    assert (tmp_path / "notes" / "README.md").read_text() == "mine\n"
    assert not (tmp_path / "notes" / ".git").exists()
    (tmp_path / "plain").write_text("x")
    with pytest.raises(GitkbError, match="is a file"):
        Store.init(tmp_path / "plain")


@pytest.mark.slow
def test_insert_keeps_bytes_updates_index_and_work_tree(store):
    raw = example_files()[0].read_bytes()
    admission = store.admit(raw, "insert", source="x.json", trace="t1", trace_commit="a" * 40)
    assert admission.commit == store.tip
    assert store.repo.read(store.tip, admission.path) == raw
    assert admission.record_id in store.view()
    trailers = dict(store.repo.commit(store.tip).trailers)
    assert trailers["KB-Action"] == "insert" and trailers["KB-Record"] == admission.record_id
    assert trailers["KB-Trace"] == "t1" and trailers["KB-Trace-Commit"] == "a" * 40
    assert (store.location / admission.path).read_bytes() == raw
    assert git("status", "--porcelain", cwd=store.location).stdout == ""
    with pytest.raises(AdmissionRefused, match="already exists"):
        store.admit(raw, "insert")


@pytest.mark.slow
def test_confirm_is_idempotent_per_evidence(store):
    target = synthetic.strategy(1)
    store.admit(dumps(target), "insert")
    incoming = synthetic.strategy(2)
    first = store.admit(dumps(incoming), "confirm", target=target["id"])
    again = store.admit(dumps(incoming), "confirm", target=target["id"])
    assert first.commit and again.commit is None and "already counted" in again.note
    other = store.admit(dumps(synthetic.strategy(3)), "confirm", target=target["id"])
    record = json.loads(store.read_record(target["id"]).raw)
    assert record["worth"]["track"]["counters"]["verified_effective"] == 2
    assert record["worth"]["track"]["confirm_keys"] == [
        f"{target['id']}:{incoming['id']}",
        f"{target['id']}:{synthetic.strategy(3)['id']}",
    ]
    assert dict(store.repo.commit(other.commit).trailers)["KB-Record"] == target["id"]
    assert incoming["id"] not in store.view()  # a confirm does not insert the incoming record


@pytest.mark.slow
def test_conflict_queues_numbered_files_for_a_human(store):
    target = synthetic.strategy(1)
    store.admit(dumps(target), "insert")
    incoming = synthetic.strategy(2)
    incoming["worth"]["gain"]["pct"] = incoming["worth"]["gain"]["metrics"][0]["delta_pct"] = -5.0
    paths = [store.admit(dumps(incoming), "conflict", target=target["id"]).path for _ in range(2)]
    assert paths == [f"conflicts/{incoming['id']}.1.json", f"conflicts/{incoming['id']}.2.json"]
    queued = json.loads(store.repo.read(store.tip, paths[0]))
    assert queued["existing_record_id"] == target["id"] and queued["resolution"] is None
    assert queued["incoming_record"] == incoming and 0 <= queued["match_confidence"] <= 1
    assert "-5.0" in queued["conflict_reason"]
    assert store.view().entry(target["id"]) is not None and len(store.view()) == 1


@pytest.mark.slow
def test_match_lists_same_scope_candidates(store):
    base = synthetic.strategy(0)
    store.admit(dumps(base), "insert")
    store.admit(dumps(synthetic.strategy(1)), "insert")  # another arch: not a candidate
    twin = synthetic.strategy(360)  # the synthetic cycle puts 360 in record 0's scope
    scope_keys = ("vendor", "arch", "dsl", "operator_family")
    assert [twin["retrieval"]["scope"][k] for k in scope_keys] == [
        base["retrieval"]["scope"][k] for k in scope_keys
    ]
    twin["episode_key"] = base["episode_key"]
    result = store.match(twin)
    assert [c["id"] for c in result["candidates"]] == [base["id"]]
    assert result["episode_key_matches"] == [base["id"]]
    assert result["candidates"][0]["gain_direction"] == "positive"
    anydsl = dict(
        twin, retrieval=dict(twin["retrieval"], scope=dict(twin["retrieval"]["scope"], dsl="any"))
    )
    assert store.match(anydsl)["candidates_count"] == 1


@pytest.mark.parametrize(
    ("raw", "expected", "error"),
    [
        (b"{not json", "malformed JSON", RecordError),
        (b"\xff\xfe", "not UTF-8", RecordError),
        (b"[1, 2]", "JSON object", RecordError),
        (
            json.dumps(dict(synthetic.strategy(1), id="../x")).encode(),
            "not a record id",
            RecordError,
        ),
        (
            json.dumps(dict(synthetic.strategy(1), level="kernel")).encode(),
            "schema",
            AdmissionRefused,
        ),
        (
            json.dumps(dict(synthetic.strategy(1), id="a.b.c")).encode(),
            "segments",
            AdmissionRefused,
        ),
    ],
)
@pytest.mark.slow
def test_bad_records_leave_the_store_unchanged(store, raw, expected, error):
    before = snapshot(store.location)
    with pytest.raises(error, match=expected):
        store.admit(raw, "insert", source="bad.json")
    assert snapshot(store.location) == before


def test_confirm_needs_an_existing_target(store):
    with pytest.raises(GitkbError, match="--target"):
        store.admit(dumps(synthetic.strategy(1)), "confirm")
    with pytest.raises(AdmissionRefused, match="not in the store"):
        store.admit(dumps(synthetic.strategy(1)), "confirm", target="no.such.record.id.here")
    with pytest.raises(GitkbError, match="unknown action"):
        store.admit(dumps(synthetic.strategy(1)), "upsert")


def test_ref_moving_under_every_attempt_is_reported_and_nothing_lands(store, monkeypatch):
    before = store.tip

    def racing_update(self, ref, old, new, reason="gitkb"):
        raise RefMoved(f"{ref} moved during the update: expected {old}, found something else")

    monkeypatch.setattr(Repository, "update_ref", racing_update)
    with pytest.raises(RefMoved, match="moved"):
        store.admit(dumps(synthetic.strategy(1)), "insert")
    monkeypatch.undo()
    assert store.tip == before and len(store.view()) == 0


@pytest.mark.slow
def test_ref_moved_once_is_retried_on_the_new_tip(store):
    """A commit that lands on main between our read and our swap (a human's, or a push)."""
    repo = store.repo
    real_update = Repository.update_ref
    raced = []

    def update_after_a_race(self, ref, old, new, reason="gitkb"):
        if not raced:
            raced.append(True)
            other = self.write_commit(old, {"notes.txt": b"human"}, "human edit\n")
            real_update(self, ref, old, other)
        return real_update(self, ref, old, new, reason)

    Repository.update_ref = update_after_a_race
    try:
        store.admit(dumps(synthetic.strategy(1)), "insert")
    finally:
        Repository.update_ref = real_update
    assert repo.read(store.tip, "notes.txt") == b"human"
    assert synthetic.strategy(1)["id"] in store.view()


def test_open_refuses_what_is_not_a_store(tmp_path):
    with pytest.raises(NotAStore, match="no such directory"):
        Store.open(tmp_path / "nope")
    with pytest.raises(NotAStore, match="not a git repository"):
        Store.open(tmp_path)
    git("init", "-q", str(tmp_path / "plain"))
    with pytest.raises(NotAStore, match="no main branch"):
        Store.open(tmp_path / "plain")


def test_reindex_rebuilds_the_cache_and_writes_the_ignored_work_tree_index(store):
    store.admit(dumps(synthetic.strategy(1)), "insert")
    tip = store.tip
    result = store.reindex()
    assert store.tip == tip, "reindex commits nothing"
    assert result["records"] == 1 and result["unindexed"] == []
    written = store.location / "records" / "index.json"
    assert result["work_tree_index"] == str(written)
    assert json.loads(written.read_bytes())["records"][0]["id"] == synthetic.strategy(1)["id"]
    assert git("status", "--porcelain", cwd=store.location).stdout == "", "it is git-ignored"
    store.admit(dumps(synthetic.strategy(2)), "insert")
    ids = [e["id"] for e in json.loads(written.read_bytes())["records"]]
    assert synthetic.strategy(2)["id"] in ids, "a kept work-tree index follows admissions"


def test_bare_store_works_without_checkout(bare_store):
    bare_store.admit(dumps(synthetic.strategy(7)), "insert")
    assert [e["id"] for e in bare_store.list(arch="blackwell")] == [synthetic.strategy(7)["id"]]
    assert bare_store.list(arch="cdna3") == []


@pytest.mark.slow
def test_gpu_wiki_import_export_is_byte_identical(tmp_path):
    sample = needs_conformance()
    store = Store.init(tmp_path / "kb.git", bare=True)
    import_tree(store, sample)
    out = tmp_path / "out"
    assert export_tree(store, out) == 282
    originals = sorted(
        p.relative_to(sample)
        for p in (sample / "records").rglob("*.json")
        if p.name != "index.json"
    )
    exported = sorted(
        p.relative_to(out) for p in (out / "records").rglob("*.json") if p.name != "index.json"
    )
    assert originals == exported
    assert all((sample / p).read_bytes() == (out / p).read_bytes() for p in originals)
    from gitkb.gates.registry import by_name
    from gitkb.store.validation import folder_context

    assert by_name(["index"])[0].run(folder_context(out)).status == "PASS"
    # importing again is refused (ids exist), and nothing is written
    tip = store.tip
    with pytest.raises(AdmissionRefused, match="already in the store"):
        import_tree(store, sample)
    assert store.tip == tip


def test_import_refuses_a_tree_with_a_bad_record(tmp_path):
    tree = tmp_path / "wiki"
    good = synthetic.strategy(1)
    (tree / "records/strategy/any").mkdir(parents=True)
    (tree / "records/strategy/any" / f"{good['id']}.json").write_bytes(dumps(good))
    (tree / "records/strategy/any/misnamed.json").write_bytes(dumps(synthetic.strategy(2)))
    store = Store.init(tmp_path / "kb")
    tip = store.tip
    with pytest.raises(AdmissionRefused, match="misnamed.json"):
        import_tree(store, tree)
    assert store.tip == tip


@pytest.mark.slow
def test_a_gpu_wiki_import_says_what_it_did(tmp_path):
    """One line: the records imported, no other steps, the commit (and its JSON report
    lists one import step a record, as the dry run planned)."""
    tree = tmp_path / "wiki"
    records = [synthetic.strategy(n) for n in range(3)]
    for record in records:
        path = tree / "records/strategy/any" / f"{record['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dumps(record))
    store = Store.init(tmp_path / "kb")
    planned = kb("import", "gpu-wiki", str(tree), "--store", str(store.location), "--dry-run",
                 "--json")  # fmt: skip
    done = kb("import", "gpu-wiki", str(tree), "--store", str(store.location))
    assert done.returncode == 0, done.stderr
    tip = Store.open(store.location).tip
    line = done.stdout.decode().strip()
    assert line == f"imported 3 records from gpu-wiki, 0 other steps (1 commits) [{tip[:12]}]"
    steps = json.loads(planned.stdout)["steps"]
    assert [s["action"] for s in steps] == ["import"] * 3


@pytest.mark.slow
def test_cli_round_trip(tmp_path):
    kb_dir = tmp_path / "kb"
    assert kb("init", str(kb_dir)).returncode == 0
    files = [str(p) for p in example_files()]
    result = kb("admit", *files, "--store", str(kb_dir))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().count("insert ") == len(files)
    listing = kb("list", "--json", "--store", str(kb_dir))
    ids = [e["id"] for e in json.loads(listing.stdout)]
    assert len(ids) == len(files)
    shown = kb("show", ids[0], "--store", str(kb_dir))
    assert json.loads(shown.stdout)["id"] == ids[0]
    log = kb("log", ids[0], "--json", "--store", str(kb_dir))
    assert [h["action"] for h in json.loads(log.stdout)] == ["insert"]
    validate = kb("validate", str(kb_dir))
    assert validate.returncode == 0, validate.stdout
    match = kb("match", files[0], "--store", str(kb_dir))
    assert json.loads(match.stdout)["status"] == "ok"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["admit", "{missing}", "--store", "{store}"], "No such file", 1),
        (["admit", "{bad}", "--store", "{store}"], "malformed JSON", 1),
        (["admit", "{good}", "--action", "upsert", "--store", "{store}"], "upsert", 2),
        (["list", "--store", "{tmp}"], "is not a gitkb store", 1),
        (["show", "no.such.id.at.all", "--store", "{store}"], "no record", 1),
    ],
)
def test_cli_errors_are_one_clear_line(tmp_path, args, message, code):
    kb_dir = tmp_path / "kb"
    Store.init(kb_dir)
    (tmp_path / "bad.json").write_text("{oops")
    values = {
        "missing": str(tmp_path / "missing.json"),
        "bad": str(tmp_path / "bad.json"),
        "good": str(example_files()[0]),
        "store": str(kb_dir),
        "tmp": str(tmp_path),
    }
    result = kb(*[a.format(**values) for a in args])
    stderr = result.stderr.decode()
    assert result.returncode == code
    assert message in stderr and "Traceback" not in stderr
    assert len([line for line in stderr.splitlines() if line.strip()]) <= 3


def test_a_kept_store_remembers_a_bounded_number_of_facts(tmp_path, monkeypatch):
    """A server asked about ever new values (terms, filter values) of one commit keeps at
    most ``_FACTS`` answers, then forgets them all and asks again."""
    from gitkb.store.cache import index_cache

    monkeypatch.setattr(index_cache, "_FACTS", 2)
    kept = Store.init(tmp_path / "kb")
    kept.admit(dumps(synthetic.strategy(1, families=1)), "insert")
    asked: list[str] = []
    with kept.cache.snapshot(kept.tip) as cache:
        for key in ("a", "b", "a", "b", "c", "c"):
            cache.remembered((key,), lambda key=key: asked.append(key))
    assert asked == ["a", "b", "a", "b", "c"]  # full at two: forgotten, asked again


def test_a_kept_store_remembers_facts_of_one_commit_only(tmp_path):
    """What the cache remembers of a commit's rows (the vocabulary's answers, the record
    count) is asked again once main moves, by this process or another, or the cache is
    rebuilt."""
    from gitkb.store.cache import queries, vocabulary

    kept = Store.init(tmp_path / "kb")
    kept.admit(dumps(synthetic.strategy(1, families=1)), "insert")
    family = synthetic.strategy(2, families=3)["retrieval"]["scope"]["operator_family"]

    def facts() -> tuple:
        with kept.cache.snapshot(kept.tip) as cache:
            return queries.record_count(cache), vocabulary.holds(cache, "family", family)

    assert facts() == facts() == (1, False)
    Store.open(kept.location).admit(dumps(synthetic.strategy(2, families=3)), "insert")
    assert facts() == (2, True)  # another writer moved main: asked again
    with kept.cache.snapshot(kept.tip) as cache:
        cache.rebuild()
        assert queries.record_count(cache) == 2
