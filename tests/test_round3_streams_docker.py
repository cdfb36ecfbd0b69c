"""The bounded stream readers (core/runtime/stream_bounds.py) against the real local Docker engine:
a post_start hook's output, stdout and stderr, line by line, and its exit status, as docker exec gives
them; the same hook writing without end is cut at its deadline (issue 29, class 9)."""

from __future__ import annotations

import time
from collections.abc import Callable

import docker
import pytest

from llm_dyno.core.profiles.model import ExecHook
from llm_dyno.core.runtime.docker_hooks import HookFailed, run_hooks

pytestmark = pytest.mark.docker


def test_a_hook_s_output_and_status_come_through_the_real_engine(smi_container: Callable[..., str]) -> None:
    name = smi_container("hook")
    lines: list[str] = []
    client = docker.from_env()
    try:
        hook = ExecHook(command=("sh", "-c", "echo one; echo two >&2; printf 'no end'; exit 3"))
        with pytest.raises(HookFailed) as failed:
            run_hooks(client.api, name, [hook], "post_start", lines.append, 30.0)
        run_hooks(client.api, name, [ExecHook(command=("true",))], "post_start", lines.append, 30.0)
    finally:
        client.close()
    assert "post_start hook exited with status 3" in failed.value.message
    said = [line for line in lines if not line.startswith("[post_start] running")]
    # stdout's and stderr's lines apart (their order between the two is the engine's), each whole
    assert sorted(said[:3]) == ["[post_start] no end", "[post_start] one", "[post_start] two"], said
    assert said[3] == "[post_start] exited with status 3", said
    assert said[-1] == "[post_start] exited with status 0"


def test_a_hook_writing_without_end_is_cut_at_its_deadline(smi_container: Callable[..., str]) -> None:
    name = smi_container("hook-yes")
    lines: list[str] = []
    client = docker.from_env()
    started = time.monotonic()
    try:
        with pytest.raises(HookFailed) as failed:
            hook = ExecHook(command=("sh", "-c", "while :; do printf xxxxxxxxxxxxxxxx; done"))
            run_hooks(client.api, name, [hook], "post_start", lines.append, 3.0)
    finally:
        client.close()
    took = time.monotonic() - started
    message = failed.value.message
    assert "within 3 s" in message or "more than 64 MiB arrived" in message, message
    assert took < 10, took
