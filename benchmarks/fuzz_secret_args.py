"""Issue 29, class 5, as a fuzz target (added to benchmarks/fuzz_trust.py's targets): ``vllm serve``
arguments made of flags, secret flags in every spelling, and words that refer to secrets anywhere in
them (``${HF_TOKEN}``, ``$API_KEY``, ``a${X_SECRET}b``, ``keyring:…``, escaped ``$${…}``) and to plain
variables. Each argument list is either refused (``DynoError`` from :func:`split_secret_flags`, the
one function both runtimes build their command with) or split into a command that, resolved as the
launch resolves it against an environment holding the secrets, holds none of their values.
"""

from __future__ import annotations

from hypothesis import strategies as st

from llm_dyno.core.errors import DynoError
from llm_dyno.core.secrets import resolve_command, split_secret_flags

SECRET_VALUE = "s3cr3t-fuzz-value-Zq81"  # noqa: S105 - the fuzz's stand-in secret
PLAIN_VALUE = "/plain/fuzz/value"
# every name a reference may use: secret-named ones hold the secret, the others a plain value
ENVIRON = {
    "HF_TOKEN": SECRET_VALUE,
    "VLLM_API_KEY": SECRET_VALUE,
    "AWS_SECRET_ACCESS_KEY": SECRET_VALUE,
    "db_password": SECRET_VALUE,
    "MODEL_DIR": PLAIN_VALUE,
    "PORT": "8000",
}
_REFS = ["${HF_TOKEN}", "$VLLM_API_KEY", "${AWS_SECRET_ACCESS_KEY:-x}", "${db_password}", "$HF_TOKEN"]
_PLAIN = ["${MODEL_DIR}", "$PORT", "$${HF_TOKEN}", "$$VLLM_API_KEY", "plain", "", "-", "=", "a=b"]
_FLAGS = [
    "--api-key",
    "--api_key",
    "--api-ke",
    "--hf-token",
    "--hf_token",
    "--hf-t",
    "--api-server-count",
    "--hf-config-path",
    "--served-model-name",
    "--tokenizer",
    "-tp",
    "--x",
]


@st.composite
def _word(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["flag", "attached", "value", "inside"]))
    ref = st.sampled_from([*_REFS, *_PLAIN])
    if kind == "flag":
        return draw(st.sampled_from(_FLAGS))
    if kind == "attached":
        return f"{draw(st.sampled_from(_FLAGS))}={draw(ref)}"
    if kind == "value":
        return draw(ref)
    before, after = draw(st.sampled_from(["", "a", "--x=pre-"])), draw(st.sampled_from(["", "b", "/x"]))
    return f"{before}{draw(ref)}{after}"


def secret_args() -> st.SearchStrategy[list[str]]:
    """Argument lists of up to 8 words."""
    return st.lists(_word(), max_size=8)


def check_secret_args(args: list[str]) -> None:
    """Refused, or a command whose resolution holds no secret value."""
    command, _env = split_secret_flags(["org/m", *args])  # DynoError: the documented refusal
    resolved = resolve_command(command, ENVIRON)
    if any(SECRET_VALUE in word for word in resolved):
        raise AssertionError(f"a secret value reached the command line: {command}")


TARGET = (secret_args, check_secret_args, (DynoError,))
