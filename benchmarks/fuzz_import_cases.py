"""The generated inputs of benchmarks/fuzz_import.py: one generator per import shape (``env_files``,
``docker_run``, ``secrets``), each a function of a seeded ``random.Random`` that returns a :class:`Case`
(the files of a project folder, the one to import, and the secret values no output may hold)."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field

from llm_dyno.core.bounded_read import MAX_IMPORT_BYTES

_ALNUM = string.ascii_letters + string.digits

# Secrets in this process's environment: /proc/self/environ, a bare KEY or ${VAR} would copy them
ENV_SECRETS = {
    "FUZZ_PLAIN_HOLDER": "hf_" + "Q" * 8 + "envsecret" + "7" * 16,
    "HF_TOKEN": "fuzz-env-hf-token-value-0042",
    "VLLM_API_KEY": "fuzz-env-api-key-value-0042",
}


@dataclass
class Case:
    """One generated input: files to write into a fresh project folder, the one to import, and the
    secret values none of the outputs may hold."""

    files: dict[str, bytes | str] = field(default_factory=dict)
    main: str = "docker-compose.yml"
    secrets: list[str] = field(default_factory=list)
    sparse: dict[str, int] = field(default_factory=dict)  # name -> size of a sparse file
    fifos: list[str] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)  # name -> target
    outside: dict[str, str] = field(default_factory=dict)  # files next to (not inside) the project


# ---- secret values --------------------------------------------------------------------------------


def _word(r: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    if n > 64:  # long values: a random head repeated (drawing each character would dominate the run)
        head = "".join(r.choice(alphabet) for _ in range(64))
        return (head * (n // 64 + 1))[:n]
    return "".join(r.choice(alphabet) for _ in range(n))


def _secret(r: random.Random, case: Case) -> str:
    """A secret value of a recognisable shape; the part that must never be written is recorded."""
    kind = r.randrange(7)
    if kind == 0:
        value = "hf_" + _word(r, r.randint(30, 40))
    elif kind == 1:
        value = "sk-" + _word(r, r.randint(24, 48), _ALNUM + "_-")
    elif kind == 2:
        value = r.choice(["ghp_", "gho_", "github_pat_"]) + _word(r, 36)
    elif kind == 3:
        value = "AKIA" + _word(r, 16, string.ascii_uppercase + string.digits)
    elif kind == 4:
        value = "glpat-" + _word(r, 20)
    elif kind == 5:
        value = "xoxb-" + _word(r, 24)
    else:
        password = "pw" + _word(r, 14)
        scheme = r.choice(["http", "https", "socks5", "HTTP"])
        value = f"{scheme}://{_word(r, 6, string.ascii_lowercase)}:{password}@proxy.example:3128"
        case.secrets.append(password)
        return value
    case.secrets.append(value)
    return value


def _secret_name_literal(r: random.Random, case: Case) -> tuple[str, str]:
    """A variable whose name says it is secret, with a literal value of no known shape."""
    name = r.choice(["HF_TOKEN", "MY_API_KEY", "DB_PASSWORD", "SERVICE_SECRET", "X_ACCESS_KEY", "apikey"])
    value = "lit" + _word(r, r.randint(12, 30))
    case.secrets.append(value)
    return name, value


def _any_name(r: random.Random) -> str:
    return r.choice(["FOO", "MODEL_OPTS", "X", "PROXY", "HTTPS_PROXY", "no_proxy", "A.B", "a-b", "CFG_1"])


# ---- env_files ------------------------------------------------------------------------------------


_BENIGN_ENV = (5, 6, 7, 8, 9, 11, 13)  # secrets and plain lines: half the files import


def _env_line(r: random.Random, case: Case, defined: list[str], benign: bool) -> str:
    kind = r.choice(_BENIGN_ENV) if benign else r.randrange(14)
    name = _any_name(r) + str(r.randrange(100))
    if kind == 0:  # an expansion bomb: each value repeats the one above
        if defined:
            value = "".join("${" + defined[-1] + "}" for _ in range(r.randint(2, 16)))
        else:
            value = "x" * r.randint(1, 4096)
        defined.append(name)
        return f"{name}={value}"
    if kind == 1:  # a recursive reference to itself or a later name
        return f"{name}=${{{name}}}${{{name}:-${{{name}}}}}"
    if kind == 2:
        return f"{name}={'v' * r.choice([10, 65_000, 65_536, 70_000, 300_000])}"
    if kind == 3:
        return r.choice(["456 = ABC", "1=2", " = x", "=", "export", "export  K = v", "K:v", "[x]=1"])
    if kind == 4:  # a multi-line quote, closed or not
        quote = r.choice(["'", '"'])
        body = "\n".join(_word(r, r.randint(0, 20)) for _ in range(r.randint(1, 5)))
        return f"{name}={quote}{body}" + (quote if r.random() < 0.7 else "")
    if kind == 5:
        return f"{name}={_secret(r, case)}"
    if kind == 6:
        key, value = _secret_name_literal(r, case)
        return f"{key}={value}"
    if kind == 7:  # a bare key: the environment's value
        return r.choice(list(ENV_SECRETS))
    if kind == 8:
        return f"{name}=${{{r.choice(list(ENV_SECRETS))}}}"
    if kind == 9:
        return f"# {_word(r, 30)}"
    if kind == 10:
        return f'{name}="a\\nb\\x\\$\\\\ ${{{name}:?must be set}}"'
    if kind == 11:
        return f"{name}={_word(r, 10)} # a comment {_secret(r, case)}"
    if kind == 12:
        return "".join(
            r.choice(["\x00", "\x1b", "\r", "\t", "é", "\ufeff", "$", "{", "}", "'"]) for _ in range(8)
        )
    return f"export {name}={_word(r, 12)}"


def _env_text(r: random.Random, case: Case) -> str:
    defined: list[str] = []
    benign = r.random() < 0.5
    lines = [_env_line(r, case, defined, benign) for _ in range(r.randint(1, 12))]
    text = "\n".join(lines) + r.choice(["\n", "", "\r\n"])
    return ("\ufeff" if r.random() < 0.2 else "") + text


def gen_env_files(r: random.Random) -> Case:
    case = Case(outside={"outside.env": f"STOLEN={ENV_SECRETS['FUZZ_PLAIN_HOLDER']}\n"})
    case.files[".env"] = _env_text(r, case)
    env_files: list[str] = []
    for i in range(r.randint(0, 3)):
        kind = r.randrange(9)
        name = f"e{i}.env"
        if kind == 0:
            case.files[name] = _env_text(r, case)
        elif kind == 1:
            case.sparse[name] = r.choice([(1 << 20) + 1, 1 << 30])
        elif kind == 2:
            case.fifos.append(name)
        elif kind == 3:
            name = r.choice(
                ["/proc/self/environ", "/proc/1/environ", "/proc/self/cmdline", "/dev/zero", "/sys/x"]
            )
        elif kind == 4:
            name = r.choice(["../outside.env", "/etc/passwd", "/etc/shadow", "~/.bashrc"])
        elif kind == 5:
            case.links[name] = r.choice(["../outside.env", "/proc/self/environ", "/dev/zero", "e9.env"])
        elif kind == 6:
            case.files[name] = b"K=\xff\xfe\n" + b"A=" + bytes(r.randrange(256) for _ in range(20))
        elif kind == 7:
            name = "missing.env"
        else:
            case.files[name] = _env_text(r, case).encode() + b"\x00" * r.choice([0, 1, 4096])
        env_files.append(name)
    env_block = ""
    if env_files:
        if r.random() < 0.5:
            env_block = "    env_file:\n" + "".join(f"      - {_yaml_str(n)}\n" for n in env_files)
        else:
            env_block = "    env_file:\n" + "".join(
                f"      - path: {_yaml_str(n)}\n        required: {r.choice(['true', 'false'])}\n"
                + (f"        format: {r.choice(['raw', 'dotenv'])}\n" if r.random() < 0.3 else "")
                for n in env_files
            )
    environment = "".join(
        f"      {_any_name(r)}{i}: {r.choice(['${FOO1}', '${X2:-d}', '$$LIT', '${HF_TOKEN}', 'plain'])}\n"
        for i in range(r.randint(0, 3))
    )
    case.files["docker-compose.yml"] = (
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
        "    command: --model ${MODEL:-org/model} --port 8000\n"
        + env_block
        + ("    environment:\n" + environment if environment else "")
    )
    return case


def _yaml_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# ---- docker_run -----------------------------------------------------------------------------------

_QUOTES: list[Callable[[str], str]] = [
    lambda w: w,
    lambda w: "'" + w.replace("'", "'\\''") + "'",
    lambda w: '"' + w.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"',
    lambda w: "$'" + w.replace("\\", "\\\\").replace("'", "\\'") + "'",
    lambda w: "'" + w,  # unclosed
    lambda w: w + '"',
]


_BENIGN_FLAGS = (0, 1, 2, 3, 4, 6, 9, 10, 14)


def _docker_flag(r: random.Random, case: Case, benign: bool) -> list[str]:
    kind = r.choice(_BENIGN_FLAGS) if benign else r.randrange(16)
    if kind == 0:
        return ["-e", f"{_any_name(r)}={_secret(r, case)}"]
    if kind == 1:
        key, value = _secret_name_literal(r, case)
        return [r.choice(["-e", "--env"]), f"{key}={value}"]
    if kind == 2:
        return ["--label", f"{_any_name(r)}={_secret(r, case)}"]
    if kind == 3:
        return ["-v", f"/data/{_word(r, 8)}:/models:{r.choice(['ro', 'rw', 'z', 'x'])}"]
    if kind == 4:
        return ["-p", r.choice(["8000:8000", "127.0.0.1:8020:8000", "0.0.0.0:80:8000/udp", "x:y", "8000"])]
    if kind == 5:
        return [
            r.choice(["--gpus", "--gpus=all", "--gpus", "--runtime"]),
            r.choice(["all", '"device=0,1"', "nvidia"]),
        ]
    if kind == 6:
        return [
            r.choice(["--shm-size", "--ipc", "--network", "--restart", "--name", "--user", "-w"]),
            _word(r, 6),
        ]
    if kind == 7:
        return ["-H", r.choice(["tcp://203.0.113.5:2375", "ssh://u@h", "unix:///x.sock"])]
    if kind == 8:
        return [f"--{_word(r, r.randint(1, 12), string.ascii_lowercase + '-')}", _word(r, 5)]
    if kind == 9:
        return [r.choice(["-d", "--rm", "-it", "--init", "--privileged", "-t"])]
    if kind == 10:
        return ["-e", _any_name(r)]  # taken from the environment
    if kind == 11:
        return ["--env-file", r.choice(["/proc/self/environ", "../outside.env", "x.env"])]
    if kind == 12:
        return ["--ulimit", r.choice(["memlock=-1", "stack=67108864", "nofile=a:b"])]
    if kind == 13:
        return ["--tmpfs", "/tmp:size=" + r.choice(["64m", "x", "1" * 30])]
    if kind == 14:
        return ["-e", f"HTTP_PROXY={_secret(r, case)}"]
    return ["--label", f"{_word(r, 4)}={_word(r, r.choice([5, 500, 70_000]))}"]


def _serve_args(r: random.Random, case: Case) -> list[str]:
    args: list[str] = []
    for _ in range(r.randint(0, 8)):
        kind = r.randrange(8)
        if kind == 0:
            args += [r.choice(["--api-key", "--api-ke", "--api_key", "--hf-token", "--hf-t"]), _word(r, 20)]
            case.secrets.append(args[-1])
        elif kind == 1:
            args.append(r.choice(["--api-key=", "--hf-token="]) + _secret(r, case))
        elif kind == 2:
            args += [
                r.choice(["--max-model-len", "--gpu-memory-utilization", "--port"]),
                r.choice(["4096", "0.9", "-1", "x", "1e400"]),
            ]
        elif kind == 3:
            args += ["--served-model-name", _secret(r, case)]
        elif kind == 4:
            args += [
                "--speculative-config",
                r.choice(['{"method":"mtp","num_speculative_tokens":3}', "{", "[]"]),
            ]
        elif kind == 5:
            args += ["--api-key", "${VLLM_API_KEY:-" + _secret(r, case) + "}"]
        elif kind == 6:
            args.append(f"--{_word(r, 8, string.ascii_lowercase)}")
        else:
            args += ["--kv-cache-dtype", r.choice(["fp8", "auto", "fp8_e5m2"])]
    return args


def _command_line(r: random.Random, case: Case, flags: list[str], args: list[str]) -> str:
    model = r.choice(["org/model", "/models/m", _word(r, 1)])
    image = r.choice(["vllm/vllm-openai:v0.11.0", "vllm/vllm-openai@sha256:" + "a" * 64, "img", "-x"])
    words = [*flags, image, *r.choice([["--model", model], [model], [model], []]), *args]
    quote = r.choice(_QUOTES[:4]) if r.random() < 0.9 else (lambda w: r.choice(_QUOTES)(w))
    joiner = r.choice([" ", " \\\n  ", "  ", " \t"])
    return "docker run " + joiner.join(quote(w) for w in words) + "\n"


def gen_docker_run(r: random.Random) -> Case:
    case = Case(main="run.sh", outside={"outside.env": f"STOLEN={_secret(random.Random(1), Case())}\n"})
    n = r.choice([0, 1, 3, 8, 20, 60]) if r.random() < 0.98 else r.choice([500, 5_000])
    benign = r.random() < 0.5
    flags = [w for _ in range(n) for w in _docker_flag(r, case, benign)]
    line = _command_line(r, case, flags, _serve_args(r, case))
    kind = r.randrange(20)
    if kind == 0:  # a huge line: the reader's bound, not the parser, must refuse it
        case.sparse["run.sh"] = r.choice([MAX_IMPORT_BYTES + 1, 50 << 20])
    elif kind == 1:
        line = line.rstrip("\n") + " " + "x" * r.choice([100_000, MAX_IMPORT_BYTES - len(line) - 10])
    elif kind == 2:
        line = "sudo " + line
    elif kind == 3:
        line = "#!/bin/sh\n# comment\n" + line + "echo done\n"
    elif kind == 4:
        line = line.replace("docker", "podman", 1)
    case.files["run.sh"] = line
    case.files["x.env"] = f"A={_secret(r, case)}\n"
    return case


# ---- secrets --------------------------------------------------------------------------------------


def gen_secrets(r: random.Random) -> Case:
    case = Case()
    where = r.randrange(10)
    secret = _secret(r, case)
    if where < 5:  # a compose file with the secret in one place
        name = r.choice([_any_name(r), "HF_TOKEN", "weird.name", "PROXY_URL"])
        env, labels, command, entry = "", "", "--model org/m --port 8000", ""
        if where == 0:
            env = f"      {name}: {_yaml_str(secret)}\n"
        elif where == 1:
            labels = (
                f"    labels:\n      {r.choice(['token', 'x', 'org.example.auth'])}: {_yaml_str(secret)}\n"
            )
        elif where == 2:
            entry = '    entrypoint: ["bash", "-c"]\n'
            command = _yaml_str(f"export X={secret}; vllm serve org/m --port 8000")
        elif where == 3:
            command = f"--model org/m --served-model-name {secret} --port 8000"
        else:
            key, value = _secret_name_literal(r, case)
            env = f"      {key}: {_yaml_str(value)}\n      {name}: {_yaml_str('http://' + secret.split('://')[-1])}\n"
        case.files["docker-compose.yml"] = (
            "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
            f"    command: {command}\n" + entry + labels + (f"    environment:\n{env}" if env else "")
        )
        return case
    case.main = "run.sh"
    if where == 5:
        line = f"docker run -e {_any_name(r)}={secret} vllm/vllm-openai --model org/m"
    elif where == 6:
        line = f"docker run --label k={secret} vllm/vllm-openai --model org/m"
    elif where == 7:
        line = f"docker run --entrypoint bash vllm/vllm-openai -c 'vllm serve org/m --hf-token {secret}'"
    elif where == 8:
        line = f"vllm serve {r.choice(['org/m', secret])} --api-key {r.choice([secret, '${K}'])} --port 8000"
    else:
        key, value = _secret_name_literal(r, case)
        line = f"docker run -e {key}={value} -e HTTPS_PROXY={secret} vllm/vllm-openai --model org/m"
    case.files["run.sh"] = line + "\n"
    return case


SHAPES: dict[str, Callable[[random.Random], Case]] = {
    "env_files": gen_env_files,
    "docker_run": gen_docker_run,
    "secrets": gen_secrets,
}
