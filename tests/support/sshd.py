"""A throwaway sshd on 127.0.0.1 that lets a fresh key log in as this user: a real ``ssh://`` Docker
host for tests (the engine behind it is the local one, reached with ``docker system dial-stdio``).

The client side is the system ``ssh`` through a wrapper placed first on PATH, which adds the key and
skips host-key prompts: docker-py (and so the app) run ``ssh`` from PATH, as the docker CLI does.
"""

from __future__ import annotations

import getpass
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.vllm_env import free_port

SSHD = "/usr/sbin/sshd"


def available() -> str | None:
    """Why an sshd cannot be started here (None: it can)."""
    if not Path(SSHD).exists() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "no sshd / ssh / ssh-keygen (apt-get install openssh-server)"
    return None


@contextmanager
def ssh_server(folder: Path) -> Iterator[tuple[str, Path]]:
    """Run sshd until the block ends; yields the ``ssh://user@127.0.0.1:PORT`` URL and a folder to put
    first on PATH (its ``ssh`` logs in with the test key)."""
    folder.mkdir(parents=True, exist_ok=True)
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key)], check=True)
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    port = free_port()
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        f"PidFile {folder / 'sshd.pid'}\n"
    )
    (folder / "ssh_config").write_text(
        f"Host *\n  IdentityFile {folder / 'client_key'}\n  StrictHostKeyChecking no\n"
        "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  BatchMode yes\n"
    )
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "ssh"
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("ssh")} -F {folder / "ssh_config"} "$@"\n')
    wrapper.chmod(0o755)
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation folder
    log = (folder / "sshd.log").open("wb")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(folder / "sshd_config")], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 10
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start: {(folder / 'sshd.log').read_text()[-2000:]}")
            time.sleep(0.05)
        yield f"ssh://{getpass.getuser()}@127.0.0.1:{port}", bin_dir
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
