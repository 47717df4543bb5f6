"""Git servers on 127.0.0.1 for the push tests: git daemon, git http-backend behind
lighttpd (smart HTTP, optionally with basic auth), and OpenSSH's sshd serving through
gitolite3; each runs until the block ends. ``Remote`` is what a client needs to push to
one of them (a URL and the environment its git runs with), whatever the transport."""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gitkb.hooks.install import server_shim

DAEMON_START_S = 10


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Remote:
    """Where a client pushes (``url``), and what its git's environment needs besides the
    test's own to get there (``env``: an ssh command with the user's key, say)."""

    url: str
    env: dict[str, str] = field(default_factory=dict)


def push_to(work: Path, remote: Remote, *refspecs: str):
    """``git push --porcelain`` from the clone at ``work`` to ``remote`` (text mode)."""
    return subprocess.run(
        ["git", "push", "--porcelain", remote.url, *(refspecs or ("main",))],
        cwd=work,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", **remote.env},
        capture_output=True,
        text=True,
    )


@contextlib.contextmanager
def serving(command: list[str], port: int, url: str, log: Path | None = None):
    """Run a server process until it answers on ``port``; yield ``url``; stop it. A server
    that writes to ``log`` says there why it did not start."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + DAEMON_START_S
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                if process.poll() is None:
                    process.kill()
                said = log.read_text() if log is not None and log.exists() else ""
                pytest.fail(f"{command[0]} did not start: {process.stderr.read().decode()}{said}")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def git_daemon(base: Path):
    """``git daemon`` serving the repositories under ``base`` (receive-pack on); skips
    where this git has no daemon (some distributions ship it as a package of its own)."""
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True)
    if not (Path(exec_path.stdout.strip()) / "git-daemon").is_file():
        pytest.skip("git daemon is not installed (Fedora and Alpine: the git-daemon package)")
    port = free_port()
    command = ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
               "--enable=receive-pack", f"--port={port}", "--listen=127.0.0.1",
               str(base)]  # fmt: skip
    return serving(command, port, f"git://127.0.0.1:{port}")


HTTP_BACKEND = Path("/usr/lib/git-core/git-http-backend")


def smart_http(base: Path, tmp_path: Path, users: dict[str, str] | None = None):
    """``git http-backend`` behind Debian's lighttpd on 127.0.0.1, serving the bare
    repositories under ``base`` (receive-pack on); skips where either is missing. With
    ``users`` (name -> password), every request needs HTTP basic auth and lighttpd hands the
    backend, and so the hooks, the user as ``REMOTE_USER``; without, every push is
    ``tester``'s."""
    lighttpd = shutil.which("lighttpd") or next(
        (p for p in ("/usr/sbin/lighttpd",) if Path(p).exists()), None
    )
    if lighttpd is None or not HTTP_BACKEND.exists():
        pytest.skip("lighttpd or git http-backend is not installed")
    port = free_port()
    env = {"GIT_PROJECT_ROOT": str(base), "GIT_HTTP_EXPORT_ALL": "1",
           "PATH": os.environ["PATH"], "HOME": os.environ["HOME"],
           "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    modules = ["mod_alias", "mod_cgi", "mod_setenv"]
    auth = ""
    if users is None:
        env["REMOTE_USER"] = "tester"
    else:
        modules = ["mod_auth", "mod_authn_file", *modules]
        passwords = tmp_path / "lighttpd.users"
        passwords.write_text("".join(f"{name}:{word}\n" for name, word in users.items()))
        auth = (
            'auth.backend = "plain"\n'
            f'auth.backend.plain.userfile = "{passwords}"\n'
            'auth.require = ("/git" => ("method" => "basic", "realm" => "gitkb",'
            ' "require" => "valid-user"))\n'
        )
    environment = ", ".join(f"{quoted(k)} => {quoted(v)}" for k, v in env.items())
    conf = tmp_path / "lighttpd.conf"
    conf.write_text(
        f'server.document-root = "{base}"\n'
        f"server.port = {port}\n"
        'server.bind = "127.0.0.1"\n'
        f"server.modules = ({', '.join(map(quoted, modules))})\n"
        f'server.errorlog = "{tmp_path / "lighttpd.log"}"\n'
        f"{auth}"
        f'alias.url = ("/git" => "{HTTP_BACKEND}")\n'
        '$HTTP["url"] =~ "^/git" {\n'
        '  cgi.assign = ("" => "")\n'
        f"  setenv.add-environment = ({environment})\n"
        "}\n"
    )
    return serving([lighttpd, "-D", "-f", str(conf)], port, f"http://127.0.0.1:{port}/git")


def quoted(text: str) -> str:
    return f'"{text}"'


def http_remote(url: str, user: str, password: str) -> Remote:
    """A smart-HTTP ``url`` (``http://host:port/...``) as ``user`` logs in to it."""
    scheme, rest = url.split("://", 1)
    return Remote(f"{scheme}://{user}:{password}@{rest}")


# --------------------------------------------------------------------------- ssh + gitolite

SSHD = Path("/usr/sbin/sshd")  # sshd re-executes itself, so it runs by its absolute path
GITOLITE_HOOK = "gitkb"  # the repo-specific hook's name under LOCAL_CODE


def ssh_keys(folder: Path, *names: str) -> dict[str, Path]:
    """A fresh ed25519 key pair per name (``folder/<name>``, ``.pub`` beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
                        "-f", str(folder / name)], check=True)  # fmt: skip
    return {name: folder / name for name in names}


@dataclass(frozen=True)
class Gitolite:
    """A gitolite3 hosting ``home`` (its rc, conf, keydir and logs), serving the bare
    repositories under ``base`` to sshd on ``port``, which logs every key in as ``login``
    and leaves the rest to gitolite-shell."""

    home: Path
    base: Path
    port: int
    login: str
    keys: dict[str, Path]

    def remote(self, user: str, repo: str) -> Remote:
        """Where ``user`` (their own key) pushes gitolite's repository ``repo``."""
        ssh = (f"ssh -F /dev/null -i {self.keys[user]} -p {self.port} -o IdentitiesOnly=yes "
               "-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
               "-o LogLevel=ERROR")  # fmt: skip
        return Remote(f"ssh://{self.login}@127.0.0.1:{self.port}/{repo}", {"GIT_SSH_COMMAND": ssh})


def _gitolite_rc(home: Path, base: Path, local: Path) -> None:
    """gitolite's default rc, with the repositories under ``base`` and repo-specific hooks
    (``option hook.pre-receive = ...``) taken from ``local``."""
    (home / ".gitolite" / "logs").mkdir(parents=True)  # gitolite fails where it cannot log
    rc = subprocess.run(["gitolite", "print-default-rc"], capture_output=True, text=True,
                        env={**os.environ, "HOME": str(home)}, check=True).stdout  # fmt: skip
    at = rc.index("%RC = (\n") + len("%RC = (\n")
    rc = rc[:at] + f"    GL_REPO_BASE => '{base}',\n    LOCAL_CODE => '{local}',\n" + rc[at:]
    enable = "            # 'repo-specific-hooks',"
    assert enable in rc, "gitolite's default rc no longer names repo-specific-hooks"
    (home / ".gitolite.rc").write_text(rc.replace(enable, enable.replace("# ", "")))


@contextlib.contextmanager
def gitolite_over_ssh(tmp_path: Path, base: Path, access: dict[str, dict[str, str]],
                      hook: bytes | None = None):  # fmt: skip
    """sshd on 127.0.0.1 (its own config, host key and pid file under ``tmp_path``)
    serving gitolite3, whose repositories are the bare ones under ``base``. ``access``:
    repository -> {user: gitolite permission ("RW+", "R", ...)}; each user gets a key of
    their own. ``hook`` is installed as gitolite's repo-specific pre-receive hook of every
    repository named. Skips where sshd, ssh or gitolite3 is missing."""
    for tool in ("gitolite", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian: openssh-server, gitolite3)")
    if not SSHD.exists():
        pytest.skip("sshd is not installed (Debian: openssh-server)")
    if os.geteuid() == 0:
        # Run as root, sshd wants its privilege-separation folder (Debian's service
        # makes it at boot); run as anyone else, it logs in only that user and needs none.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    home, local = tmp_path / "gitolite", tmp_path / "gitolite" / "local"
    (local / "hooks" / "repo-specific").mkdir(parents=True)
    users = sorted({user for grants in access.values() for user in grants})
    keys = ssh_keys(tmp_path / "keys", "gitolite-admin", *users)
    _gitolite_rc(home, base, local)
    if hook is not None:
        script = local / "hooks" / "repo-specific" / GITOLITE_HOOK
        script.write_bytes(hook)
        script.chmod(0o755)
    # The admin files written first, so that one `gitolite setup` commits them to the
    # admin repository, compiles them, and has its triggers write authorized_keys and the
    # repo-specific hooks (server-side administration: nobody pushes gitolite-admin).
    conf = ["repo gitolite-admin", "    RW+ = gitolite-admin"]
    for repo, grants in access.items():
        conf += [f"repo {repo}", *(f"    {perm} = {user}" for user, perm in grants.items())]
        if hook is not None:
            conf.append(f"    option hook.pre-receive = {GITOLITE_HOOK}")
    (home / ".gitolite" / "conf").mkdir()
    (home / ".gitolite" / "conf" / "gitolite.conf").write_text("\n".join(conf) + "\n")
    (home / ".gitolite" / "keydir").mkdir()
    for user in users:
        shutil.copy(f"{keys[user]}.pub", home / ".gitolite" / "keydir" / f"{user}.pub")
    setup = ["gitolite", "setup", "-pk", f"{keys['gitolite-admin']}.pub"]
    subprocess.run(setup, env={**os.environ, "HOME": str(home)}, check=True, capture_output=True)

    port = free_port()
    host_key = ssh_keys(tmp_path / "sshd", "host")["host"]
    login = getpass.getuser()
    config = tmp_path / "sshd" / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"PidFile {tmp_path / 'sshd' / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {home / '.ssh' / 'authorized_keys'}\n"
        # gitolite-shell finds its rc under HOME: the hosting user's, not the login's.
        f"SetEnv HOME={home}\nAllowUsers {login}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        "LogLevel ERROR\n"
    )
    log = tmp_path / "sshd" / "sshd.log"
    with serving([str(SSHD), "-D", "-f", str(config), "-E", str(log)], port, "", log):
        yield Gitolite(home, base, port, login, keys)


# --------------------------------------------------------------------------- every transport

TRANSPORTS = ("file", "git-daemon", "smart-http", "ssh")
MATRIX_USERS = ("alice", "bob")


@dataclass(frozen=True)
class Host:
    """One bare store served over one transport: each user's ``Remote``, and the variable
    the host names them by in the hook's environment (None: the transport names no one)."""

    transport: str
    remotes: dict[str, Remote]
    via: str | None

    def remote(self, user: str = MATRIX_USERS[0]) -> Remote:
        return self.remotes[user]


@contextlib.contextmanager
def hosting(transport: str, server: Path, tmp_path: Path, users: tuple[str, ...] = MATRIX_USERS):
    """Serve the bare store ``server`` (its hooks installed, under ``tmp_path``) over
    ``transport``: file://, git daemon, smart HTTP with basic auth, or sshd with gitolite3
    (gitkb's shim its repo-specific pre-receive hook, each user granted RW and a key of
    their own). Yields a ``Host``; skips where the transport's server is missing."""
    base, name = server.parent, server.name
    if transport == "file":
        yield Host(transport, {u: Remote(f"file://{server}") for u in users}, None)
    elif transport == "git-daemon":
        with git_daemon(base) as url:
            yield Host(transport, {u: Remote(f"{url}/{name}") for u in users}, None)
    elif transport == "smart-http":
        words = {u: f"{u}-password" for u in users}
        with smart_http(base, tmp_path, words) as url:
            remotes = {u: http_remote(f"{url}/{name}", u, words[u]) for u in users}
            yield Host(transport, remotes, "REMOTE_USER")
    elif transport == "ssh":
        repo = name.removesuffix(".git")
        access = {repo: {u: "RW" for u in users}}
        with gitolite_over_ssh(tmp_path, base, access, hook=server_shim()) as gitolite:
            yield Host(transport, {u: gitolite.remote(u, repo) for u in users}, "GL_USER")
    else:
        raise ValueError(f"no transport {transport!r}; one of {', '.join(TRANSPORTS)}")
