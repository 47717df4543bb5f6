"""A store many people share: clones admitting, attesting and retracting at once, syncing
by merge and by rebase through a hooked server (file:// and git daemon); the same id
admitted twice; format-1 stores; the admission policy's decisions across traces."""

from __future__ import annotations

import json
import random
import shutil
import threading
import time
from pathlib import Path

import pytest
from helpers import git, kb, put_git_kb_on_path
from helpers.servers import git_daemon

from gitkb import record as rec
from gitkb.layout import BRANCH
from gitkb.record.index import INDEX_PATH, Index, index_entry
from gitkb.store import Store
from gitkb.store.admission import AUTO
from gitkb.store.request import AdmitRequest
from gitkb.testing import synthetic
from gitkb.vcs import treediff
from gitkb.vcs.trailers import format_message
from gitkb.warmstart.attest import read_ledger

pytestmark = pytest.mark.slow  # every test here takes seconds (pyproject: markers)

WORKERS = 8
ROUNDS = 2


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A bare store with the hook installed, one shared record admitted, `git-kb` on PATH."""
    put_git_kb_on_path(tmp_path, monkeypatch)
    store = Store.init(tmp_path / "server.git", bare=True)
    store.admit(rec.dumps(synthetic.strategy(0)))
    assert kb("hooks", "install", "--server", str(store.location)).returncode == 0
    return store.location


def ok(done) -> str:
    out = done.stdout if isinstance(done.stdout, str) else done.stdout.decode()
    err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode()
    assert done.returncode == 0, out + err
    return out


def clone(url: str, path: Path) -> Path:
    git("clone", "-q", url, str(path))
    return path


def sync(work: Path, rebase: bool, rng: random.Random, attempts: int = 40) -> None:
    """Pull (merge or rebase) and push until the push lands."""
    for _ in range(attempts):
        pulled = git("pull", "-q", "--rebase" if rebase else "--no-rebase", "origin", "main",
                     cwd=work, check=False)  # fmt: skip
        assert pulled.returncode == 0, pulled.stdout + pulled.stderr
        pushed = git("push", "-q", "origin", "main", cwd=work, check=False)
        if pushed.returncode == 0:
            return
        assert "pre-receive hook declined" not in pushed.stderr, pushed.stderr
        time.sleep(rng.uniform(0.01, 0.2))
    pytest.fail(f"{work}: the push never landed")


def worker(number: int, url: str, tmp_path: Path, report: dict) -> None:
    rng = random.Random(number)
    work = clone(url, tmp_path / f"clone{number}")
    shared = synthetic.strategy(0)["id"]
    mine: list[str] = []
    for round_ in range(ROUNDS):
        for k in range(2):
            record = synthetic.strategy(1000 + number * 10 + round_ * 2 + k)
            path = tmp_path / f"in{number}-{round_}-{k}.json"
            path.write_bytes(rec.dumps(record))
            ok(kb("admit", str(path), "--store", str(work)))
            mine.append(record["id"])
        ok(kb("attest", shared, "--outcome", "validated", "--by", f"worker{number}",
              "--store", str(work)))  # fmt: skip
        if round_ == ROUNDS - 1:
            ok(kb("retract", mine[0], "--reason", f"worker {number} takes it back",
                  "--store", str(work)))  # fmt: skip
        sync(work, rebase=number % 2 == 1, rng=rng)
    report[number] = {"admitted": mine, "retracted": mine[0]}


def test_eight_clones_share_a_hooked_server_by_merge_and_rebase(server, tmp_path):
    report: dict[int, dict] = {}
    errors: list[BaseException] = []
    with git_daemon(tmp_path) as daemon:
        urls = [f"file://{server}", f"{daemon}/server.git"]

        def run(number: int) -> None:
            try:
                worker(number, urls[number % 2], tmp_path, report)
            except BaseException as exc:  # noqa: BLE001 - reported below, with the worker
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(n,)) for n in range(WORKERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    assert not errors, errors
    assert len(report) == WORKERS
    store = Store.open(server)
    held = set(store.view().ids())
    for number, done in report.items():
        assert set(done["admitted"]) <= held, f"worker {number} lost admissions"
        assert store.read_record(done["retracted"]).data["status"] == "deprecated"
    ledger = read_ledger(store, synthetic.strategy(0)["id"])
    by = sorted(e["by"] for e in ledger.events if e.get("event") == "attest")
    assert by == sorted(f"worker{n}" for n in range(WORKERS) for _ in range(ROUNDS))
    assert not ledger.bad_lines
    validated = kb("validate", "--full", str(server))
    assert validated.returncode == 0, validated.stdout.decode()
    assert git("fsck", "--strict", "--no-dangling", cwd=server, check=False).returncode == 0
    merges = git("rev-list", "--merges", "--count", "main", cwd=server).stdout.strip()
    assert int(merges) >= 1, "some clones synced by merge"


def test_a_plain_merged_pull_with_union_ledgers_is_accepted(server, tmp_path):
    a = clone(str(server), tmp_path / "a")
    b = clone(str(server), tmp_path / "b")
    shared = synthetic.strategy(0)["id"]
    for work, n in ((a, 1), (b, 2)):
        Store.open(work).admit(rec.dumps(synthetic.strategy(n)))
        ok(kb("attest", shared, "--outcome", "validated", "--by", work.name, "--store", str(work)))
    ok(git("push", "-q", "origin", "main", cwd=a))
    refused = git("push", "-q", "origin", "main", cwd=b, check=False)
    assert refused.returncode != 0 and "pre-receive" not in refused.stderr  # not a fast-forward
    ok(git("pull", "-q", "--no-rebase", "origin", "main", cwd=b))
    assert git("rev-list", "--merges", "--count", "HEAD", cwd=b).stdout.strip() == "1"
    ok(git("push", "-q", "origin", "main", cwd=b))
    ledger = read_ledger(Store.open(server), shared)
    assert sorted(e["by"] for e in ledger.events) == ["a", "b"]


def test_a_merge_that_drops_ledger_lines_is_refused(server, tmp_path):
    a = clone(str(server), tmp_path / "a")
    b = clone(str(server), tmp_path / "b")
    shared = synthetic.strategy(0)["id"]
    for work in (a, b):
        ok(kb("attest", shared, "--outcome", "validated", "--by", work.name, "--store", str(work)))
    ok(git("push", "-q", "origin", "main", cwd=a))
    ok(git("fetch", "-q", "origin", cwd=b))
    git("merge", "-q", "--no-commit", "-s", "ours", "origin/main", cwd=b)  # keeps b's ledger only
    ok(git("commit", "-qm", "merge", "--no-verify", cwd=b))
    done = git("push", "-q", "origin", "main", cwd=b, check=False)
    assert done.returncode != 0 and "the merge dropped lines a parent holds" in done.stderr


def test_the_same_id_from_two_clones_is_refused_and_renumber_fixes_it(server, tmp_path):
    a = clone(str(server), tmp_path / "a")
    b = clone(str(server), tmp_path / "b")
    record = synthetic.strategy(5)
    Store.open(a).admit(rec.dumps(record))
    ok(git("push", "-q", "origin", "main", cwd=a))
    theirs = git("rev-parse", "HEAD", cwd=a).stdout.strip()
    elsewhere = json.loads(json.dumps(record))
    elsewhere["retrieval"]["scope"]["operator_family"] = "op-other"  # another folder
    mine = Store.open(b).admit(rec.dumps(elsewhere))
    ok(git("pull", "-q", "--rebase", "origin", "main", cwd=b))
    ours = git("rev-parse", "HEAD", cwd=b).stdout.strip()
    assert ours != mine.commit  # rebased
    refused = git("push", "-q", "origin", "main", cwd=b, check=False)
    lines = [line for line in refused.stderr.splitlines() if f"{record['id']}: ids:" in line]
    assert len(lines) == 1, refused.stderr
    assert f"admitted by {theirs[:12]}" in lines[0] and f"{ours[:12]} admits it again" in lines[0]
    assert f"git kb renumber {record['id']}" in lines[0]
    done = kb("renumber", record["id"], "--json", "--store", str(b))
    report = json.loads(ok(done))
    assert report["new_id"] == record["id"].replace("s00005", "s00006")
    ok(git("push", "-q", "origin", "main", cwd=b))
    store = Store.open(server)
    assert {record["id"], report["new_id"]} <= set(store.view().ids())
    assert store.read_record(report["new_id"]).data["id"] == report["new_id"]
    subjects = git("log", "--format=%s", "-3", cwd=b).stdout
    assert f"kb insert {report['new_id']}" in subjects
    assert git("status", "--porcelain", cwd=b).stdout == ""


def test_renumber_needs_an_upstream_and_a_local_admission(tmp_path):
    store = Store.init(tmp_path / "kb")
    store.admit(rec.dumps(synthetic.strategy(1)))
    done = kb("renumber", synthetic.strategy(1)["id"], "--store", str(store.location))
    assert done.returncode == 1 and b"git fetch" in done.stderr


# --------------------------------------------------------------------------- format 1


def format_1_store(path: Path, records: list[dict]) -> Store:
    """A store as gitkb wrote it before format 2: records/index.json committed with every
    admission, gitkb.toml saying gitkb-1."""
    git("init", "-q", "-b", "main", str(path))
    index = Index()
    for record in records:
        target = path / rec.path_for(record)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(rec.dumps(record))
        index.put(index_entry(record, rec.path_for(record)))
    (path / INDEX_PATH).write_bytes(index.dumps())
    (path / "gitkb.toml").write_text(
        '[store]\nname = "old"\nformat = "gitkb-1"\nschema = "clean-1.3"\n'
    )
    (path / ".gitattributes").write_text("ledger/*.jsonl merge=union\n")
    git("add", "-A", cwd=path)
    message = format_message("kb import old", "", [("KB-Action", "import")])
    git("commit", "-q", "-m", message, cwd=path)
    return Store.open(path)


def test_a_format_1_store_reads_as_it_is_and_upgrades_in_one_commit(tmp_path, monkeypatch):
    records = [synthetic.strategy(n) for n in range(3)]
    old = format_1_store(tmp_path / "old", records)
    assert old.format == "gitkb-1"
    tip = old.tip
    listed = kb("list", "--json", "--store", str(old.location))
    assert sorted(e["id"] for e in json.loads(listed.stdout)) == sorted(r["id"] for r in records)
    assert kb("resolve", "--kernel", "op001", "--arch", "blackwell", "--store",
              str(old.location)).returncode == 0  # fmt: skip
    assert old.tip == tip, "reading writes nothing"

    put_git_kb_on_path(tmp_path, monkeypatch)
    git("clone", "-q", "--bare", str(old.location), str(tmp_path / "server.git"))
    assert kb("hooks", "install", "--server", str(tmp_path / "server.git")).returncode == 0
    git("remote", "add", "server", str(tmp_path / "server.git"), cwd=old.location)
    done = kb("upgrade", "--store", str(old.location))
    assert done.returncode == 0 and b"upgraded to store format 2" in done.stdout
    upgraded = Store.open(old.location)
    assert upgraded.format == "gitkb-2" and upgraded.config()["store"]["format"] == "gitkb-2"
    info = upgraded.repo.commit(upgraded.tip)
    assert info.subject == "kb upgrade gitkb-2" and list(info.parents) == [tip]
    assert dict(info.trailers)["KB-Action"] == "upgrade"
    changed = sorted(c.path for c in treediff.changes(upgraded.repo, tip, upgraded.tip))
    assert changed == [".gitignore", "gitkb.toml", INDEX_PATH]
    assert not (old.location / INDEX_PATH).exists()
    pushed = git("push", "-q", "server", "main", cwd=old.location, check=False)
    assert pushed.returncode == 0, pushed.stderr
    again = kb("upgrade", "--store", str(old.location))
    assert b"already store format 2" in again.stdout


def test_the_first_write_to_a_format_1_store_upgrades_it_with_a_note(tmp_path):
    old = format_1_store(tmp_path / "old", [synthetic.strategy(1)])
    done = kb("admit", "-", "--store", str(old.location), input=rec.dumps(synthetic.strategy(2)))
    assert done.returncode == 0, done.stderr
    assert b"uses store format 1" in done.stderr
    subjects = git("log", "--format=%s", "-2", cwd=old.location).stdout.split("\n")
    assert subjects[1] == "kb upgrade gitkb-2" and subjects[0].startswith("kb insert ")


# --------------------------------------------------------------------------- the policy


def traced(record: dict, label: str, commit: str, pct: float | None = None) -> dict:
    """``record`` as mined from trace ``label`` at ``commit`` (a trace-free evidence)."""
    record = json.loads(json.dumps(record))
    record["evidence"]["raw"] = {"seed": f"from {label}", "effect": record["evidence"]["raw"].get(
        "effect", {})}  # fmt: skip
    if pct is not None:
        record["worth"]["gain"]["pct"] = pct
        record["worth"]["gain"]["metrics"][0]["delta_pct"] = pct
    return record


def auto(store: Store, record: dict, label: str, commit: str):
    request = AdmitRequest(rec.dumps(record), AUTO, trace=label, trace_commit=commit)
    return store.admit_many([request])[0]


def test_same_code_with_a_contradicting_gain_is_a_conflict_not_a_confirmation(store):
    held = synthetic.strategy(1)
    held["worth"]["gain"]["pct"] = held["worth"]["gain"]["metrics"][0]["delta_pct"] = 22.0
    store.admit(rec.dumps(held))
    contrary = traced(synthetic.strategy(1), "trace-b", "b" * 40, pct=-8.0)
    contrary["id"] = held["id"].replace("s00001", "s00009")
    admission = auto(store, contrary, "trace-b", "b" * 40)
    assert admission.action == "conflict" and admission.path.startswith("conflicts/")
    counters = store.read_record(held["id"]).data["worth"]["track"]["counters"]
    assert counters["verified_effective"] == 0


def test_different_code_under_the_same_episode_key_is_another_record(store):
    first = synthetic.strategy(1)
    store.admit(rec.dumps(first))
    second = traced(synthetic.strategy(2), "trace-b", "b" * 40)
    second["episode_key"] = first["episode_key"]
    second["retrieval"]["scope"] = first["retrieval"]["scope"]
    second["id"] = first["id"].replace("s00001", "s00002")
    admission = auto(store, second, "trace-b", "b" * 40)
    assert admission.action == "insert" and admission.record_id == second["id"]
    assert (
        store.read_record(second["id"]).data["payload"]["implementation"]["snippet"]
        == (second["payload"]["implementation"]["snippet"])
    )


def test_confirmations_count_once_per_trace_commit_across_runs(store):
    held = synthetic.strategy(1)
    store.admit(rec.dumps(held))
    again = synthetic.strategy(1)
    again["id"] = held["id"].replace("s00001", "s00042")  # the id another run allocated
    for label in ("trace-b", "trace-c"):
        first = auto(store, again, label, label[-1] * 40)
        repeat = auto(store, again, label, label[-1] * 40)
        assert first.action == "confirm" and first.commit is not None
        assert repeat.commit is None and "already counted" in repeat.note
    track = store.read_record(held["id"]).data["worth"]["track"]
    assert track["counters"]["verified_effective"] == 2
    assert track["confirm_keys"] == ["trace-b@" + "b" * 40, "trace-c@" + "c" * 40]


def test_a_store_moved_by_hand_is_seen_by_the_next_reader(store, tmp_path):
    """C git moving main (a pull, a hand commit) leaves the cache behind: the next reader
    moves it by tree diff and sees what main holds."""
    store.admit(rec.dumps(synthetic.strategy(1)))
    other = tmp_path / "other"
    shutil.copytree(store.location, other)
    record = synthetic.strategy(2)
    (other / rec.path_for(record)).parent.mkdir(parents=True, exist_ok=True)
    (other / rec.path_for(record)).write_bytes(rec.dumps(record))
    git("add", "-A", cwd=other)
    git("commit", "-q", "--no-verify", "-m", f"kb insert {record['id']}", "-m",
        f"KB-Action: insert\nKB-Record: {record['id']}", cwd=other)  # fmt: skip
    ok(git("pull", "-q", str(other), "main", cwd=store.location))
    assert record["id"] in Store.open(store.location).view()
    assert (
        git("rev-parse", BRANCH, cwd=store.location).stdout.strip()
        == Store.open(store.location).tip
    )
