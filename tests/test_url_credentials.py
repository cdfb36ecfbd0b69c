"""A URL's ``user:password@`` never reaches a file: attached servers and the history store the URL
without it (through the CLI, against a loopback server)."""

from __future__ import annotations

from pathlib import Path

from tests.support.hostile_server import HostileServer
from tests.test_hostile_servers import llm_dyno

PASSWORD = "wt12-url-pw-91c"


def _files_with(home: Path, secret: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_url_credentials_are_stripped_before_anything_is_stored(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with HostileServer("models_list", good_posts=99, lifetime_s=40) as server:
        url = server.url.replace("http://", f"http://user:{PASSWORD}@")
        watched = llm_dyno(["watch", "--url", url, "--count", "1"], home)
        benched = llm_dyno(
            ["bench", "--url", url, "--model", "tiny", "--suite", "quick", "--runs", "1", "--warmups", "0"],
            home,
        )
    assert benched.code == 0, benched.err
    assert "saved as #1" in benched.out
    attached = (home / "data" / "attached.json").read_text()
    assert f'"url": "{server.url}"' in attached
    shown = llm_dyno(["history", "show", "1", "--json"], home)
    assert f'"url": "{server.url}"' in shown.out
    for ran in (watched, shown):
        assert PASSWORD not in ran.out
    out_files = {str(home / "out.txt"), str(home / "err.txt")}
    assert [f for f in _files_with(home, PASSWORD) if f not in out_files] == []
