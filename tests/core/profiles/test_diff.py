"""Semantic profile diff: spelling, order and JSON key order are not differences; values are."""

from __future__ import annotations

from typing import Any

from llm_dyno.core.profiles.diff import DiffRow, diff_profiles
from llm_dyno.core.profiles.model import Profile

IMAGE = "vllm/vllm-openai@sha256:" + "a" * 64


def _p(**kw: Any) -> Profile:
    data: dict[str, Any] = {
        "name": "base",
        "model": "Qwen/Qwen3-8B",
        "docker": {"image": IMAGE, "ports": ["8020:8000"], "volumes": ["/m:/root/.cache/huggingface"]},
        "args": [
            "--max-model-len",
            "32768",
            "--speculative-config",
            '{"method":"mtp","num_speculative_tokens":3}',
        ],
        "env": {"NCCL_P2P_DISABLE": "1"},
        "gpus": "all",
    }
    data.update(kw)
    return Profile.model_validate(data)


def test_same_meaning_is_empty() -> None:
    a = _p()
    b = _p(
        name="other",
        notes="different notes",
        args=['--speculative-config={"num_speculative_tokens": 3, "method": "mtp"}', "--max_model_len=32768"],
    )
    d = diff_profiles(a, b)
    assert d.is_empty and d.rows == () and len(d) == 0
    assert d.to_dict() == {"empty": True, "rows": []}


def test_model_flag_spelling_is_not_a_difference() -> None:
    assert diff_profiles(_p(), _p(model_flag=True)).is_empty


def test_changed_added_removed_flags() -> None:
    a = _p(args=["--max-model-len", "32768", "--enforce-eager", "--kv-cache-dtype", "fp8_e5m2"])
    b = _p(args=["--max-model-len", "65536", "--kv-cache-dtype", "fp8_e5m2", "--dtype", "half"])
    assert diff_profiles(a, b).rows == (
        DiffRow("engine flags", "--max-model-len", "32768", "65536", "changed"),
        DiffRow("engine flags", "--enforce-eager", "on", None, "removed"),
        DiffRow("engine flags", "--dtype", None, "half", "added"),
    )


def test_json_value_change_and_negated_switch() -> None:
    a = _p(
        args=[
            "--speculative-config",
            '{"method":"mtp","num_speculative_tokens":3}',
            "--enable-prefix-caching",
        ]
    )
    b = _p(
        args=[
            "--no-enable-prefix-caching",
            "--speculative-config",
            '{"num_speculative_tokens":2,"method":"mtp"}',
        ]
    )
    assert diff_profiles(a, b).rows == (
        DiffRow(
            "engine flags",
            "--speculative-config",
            '{"method":"mtp","num_speculative_tokens":3}',
            '{"method":"mtp","num_speculative_tokens":2}',
            "changed",
        ),
        DiffRow("engine flags", "--enable-prefix-caching", "on", "off", "changed"),
    )


def test_model_image_digest_and_container() -> None:
    a = _p()
    b = _p(
        model="Qwen/Qwen3-14B",
        docker={
            "image": "vllm/vllm-openai@sha256:" + "b" * 64,
            "ports": ["8021:8000", "9000:9000"],
            "volumes": ["/other:/root/.cache/huggingface"],
            "shm_size": "16gb",
            "ipc": "host",
        },
    )
    assert diff_profiles(a, b).rows == (
        DiffRow("model", "model", "Qwen/Qwen3-8B", "Qwen/Qwen3-14B", "changed"),
        DiffRow("container", "image digest", "sha256:" + "a" * 64, "sha256:" + "b" * 64, "changed"),
        DiffRow("container", "ipc", None, "host", "added"),
        DiffRow("container", "shm_size", None, "16gb", "added"),
        DiffRow("container", "port 8000", "8020:8000", "8021:8000", "changed"),
        DiffRow("container", "port 9000", None, "9000:9000", "added"),
        DiffRow(
            "container",
            "volume /root/.cache/huggingface",
            "/m:/root/.cache/huggingface",
            "/other:/root/.cache/huggingface",
            "changed",
        ),
    )


def test_image_name_and_equal_sizes() -> None:
    a = _p(docker={"image": "vllm/vllm-openai:v0.10.0", "shm_size": "16g"})
    b = _p(docker={"image": "vllm/vllm-openai:v0.11.0", "shm_size": "16GB"})
    assert diff_profiles(a, b).rows == (
        DiffRow("container", "image", "vllm/vllm-openai:v0.10.0", "vllm/vllm-openai:v0.11.0", "changed"),
    )


def test_env_gpus_power_and_order() -> None:
    a = _p(env={"A": "1", "B": "2", "NCCL_P2P_DISABLE": "1"}, power={"limit_w": 330})
    b = _p(
        env={"NCCL_P2P_DISABLE": "0", "B": "2", "C": "3"},
        gpus=[0, 1],
        power={"limit_w": 280, "per_gpu_w": {1: 250}},
    )
    d = diff_profiles(a, b)
    assert d.rows == (
        DiffRow("environment", "A", "1", None, "removed"),
        DiffRow("environment", "NCCL_P2P_DISABLE", "1", "0", "changed"),
        DiffRow("environment", "C", None, "3", "added"),
        DiffRow("runtime", "gpus", "all", "0,1", "changed"),
        DiffRow("power", "limit_w", "330.0", "280.0", "changed"),
        DiffRow("power", "GPU 1 limit_w", None, "250.0", "added"),
    )
    assert d.to_dict()["rows"][0] == {
        "group": "environment",
        "key": "A",
        "left": "1",
        "right": None,
        "kind": "removed",
    }
    assert not d.is_empty


def test_notes_only_when_asked() -> None:
    a, b = _p(), _p(name="renamed", notes="hello")
    assert diff_profiles(a, b).is_empty
    assert diff_profiles(a, b, include_notes=True).rows == (
        DiffRow("notes", "name", "base", "renamed", "changed"),
        DiffRow("notes", "notes", None, "hello", "added"),
    )


def test_runtime_change() -> None:
    a = _p()
    b = Profile.model_validate(
        {
            "name": "p",
            "runtime": "process",
            "model": "Qwen/Qwen3-8B",
            "args": a.args,
            "env": a.env,
            "gpus": "all",
        }
    )
    assert diff_profiles(a, b).rows == (
        DiffRow("container", "image", "vllm/vllm-openai", None, "removed"),
        DiffRow("container", "image digest", "sha256:" + "a" * 64, None, "removed"),
        DiffRow("container", "port 8000", "8020:8000", None, "removed"),
        DiffRow(
            "container", "volume /root/.cache/huggingface", "/m:/root/.cache/huggingface", None, "removed"
        ),
        DiffRow("runtime", "runtime", "docker", "process", "changed"),
    )


def test_container_settings_from_compose_are_compared() -> None:
    from llm_dyno.core.profiles.model import DockerSettings, Profile

    a = Profile(name="a", model="m", docker=DockerSettings(image="i", ports=("8000:8000",)))
    assert a.docker is not None
    b = a.with_changes(
        docker={
            **a.docker.model_dump(),
            "bind": "file",
            "network": "p_default",
            "logging": {"options": {"max-size": "10m"}},
        }
    )
    rows = {row.key: (row.left, row.right) for row in diff_profiles(a, b).rows}
    assert rows["bind"] == ("loopback", "file")
    assert rows["network"] == (None, "p_default")
    assert "max-size" in str(rows["logging"][1])
