"""The editor's draft: profile data being edited, field by field, and its validation.

No Qt here. The form reads and writes named fields; engine flags are edited in place in ``args`` (the
user's spelling and order are kept, see :mod:`llm_dyno.core.profiles.edit`). ``validate()`` says which
field is wrong and why, so the form can put the hint under that field. A draft of a stored profile is
validated as that profile's :meth:`~llm_dyno.core.profiles.model.Profile.with_changes` (the one path
every front end changes a profile by, ``llm-dyno profile set`` too), so a bad value reads the same in
the window as in the CLI; a draft with nothing to start from is read as a new profile's data.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles import edit
from llm_dyno.core.profiles.model import SCHEMA_VERSION, Profile, profile_from_data

# form field -> engine flag (canonical name)
FLAG_FIELDS: dict[str, str] = {
    "served_model_name": "served-model-name",
    "host": "host",
    "port": "port",
    "max_model_len": "max-model-len",
    "gpu_memory_utilization": "gpu-memory-utilization",
    "max_num_seqs": "max-num-seqs",
    "max_num_batched_tokens": "max-num-batched-tokens",
    "kv_cache_dtype": "kv-cache-dtype",
    "quantization": "quantization",
    "dtype": "dtype",
    "tensor_parallel_size": "tensor-parallel-size",
}
SWITCH_FIELDS: dict[str, str] = {
    "enforce_eager": "enforce-eager",
    "prefix_caching": "enable-prefix-caching",
    "chunked_prefill": "enable-chunked-prefill",
}
SPEC_FLAG = "speculative-config"
MANAGED_FLAGS: frozenset[str] = frozenset(
    {*FLAG_FIELDS.values(), *SWITCH_FIELDS.values(), *("no-" + s for s in SWITCH_FIELDS.values()), SPEC_FLAG}
)
DOCKER_FIELDS: dict[str, str] = {
    "image": "image",
    "docker_host": "host",
    "container_name": "container_name",
    "shm_size": "shm_size",
    "ipc": "ipc",
    "ports": "ports",
    "ports_bind": "bind",
    "volumes": "volumes",
}
_PYDANTIC_FIELDS: dict[str, str] = {
    "name": "name",
    "notes": "notes",
    "model": "model",
    "runtime": "runtime",
    "env": "env",
    "gpus": "gpus",
    "power.limit_w": "power_limit_w",
    "docker": "image",
    **{f"docker.{v}": k for k, v in DOCKER_FIELDS.items()},
}


_UNSET = object()


@dataclass
class Validation:
    """The outcome of validating a draft: the profile when valid, else messages per field."""

    profile: Profile | None
    errors: dict[str, str] = field(default_factory=dict)  # field key ("" = not tied to a field) -> message

    @property
    def ok(self) -> bool:
        """Whether the draft is a valid profile."""
        return self.profile is not None and not self.errors


class Draft:
    """Profile data under edit. Start from a profile or from raw data (e.g. parsed YAML); ``base`` is
    the stored profile the data changes (None for data with nothing to start from)."""

    def __init__(self, data: dict[str, Any], base: Profile | None = None) -> None:
        self.data: dict[str, Any] = copy.deepcopy(data)
        self.base = base

    @classmethod
    def of(cls, profile: Profile) -> Draft:
        """A draft holding ``profile``, which it changes."""
        return cls(profile.to_dict(), profile)

    def changes(self) -> dict[str, Any]:
        """What the draft changes of its base, by the profile's field names: a new value, or the
        field's default where the draft left it out (empty when there is no base)."""
        if self.base is None:
            return {}
        before = self.base.to_dict()
        fields = Profile.model_fields
        out: dict[str, Any] = {}
        for key in (*before, *(k for k in self.data if k not in before)):
            if key == "schema" or self.data.get(key, _UNSET) == before.get(key, _UNSET):
                continue
            if key in self.data:
                out[key] = copy.deepcopy(self.data[key])
            elif key in fields:
                out[key] = fields[key].get_default(call_default_factory=True)
        return out

    # ---- reading -------------------------------------------------------------------------------
    @property
    def args(self) -> tuple[str, ...]:
        """The engine flags as argv tokens."""
        raw = self.data.get("args") or []
        return tuple(str(a) for a in raw) if isinstance(raw, list | tuple) else ()

    def _docker(self) -> dict[str, Any]:
        d = self.data.get("docker")
        return d if isinstance(d, dict) else {}

    def get(self, key: str) -> Any:
        """The value of a form field: str for text fields, bool|None for switches, lists, a dict for env."""
        if key in FLAG_FIELDS:
            return edit.get_flag(self.args, FLAG_FIELDS[key]) or ""
        if key in SWITCH_FIELDS:
            return edit.get_switch(self.args, SWITCH_FIELDS[key])
        if key in DOCKER_FIELDS:
            value = self._docker().get(DOCKER_FIELDS[key])
            if key in ("ports", "volumes"):
                return [str(v) for v in value or []]
            return "" if value is None else str(value)
        if key == "spec_json":
            return edit.get_flag(self.args, SPEC_FLAG) or ""
        if key in ("spec_method", "spec_tokens"):
            spec = self.spec()
            name = "method" if key == "spec_method" else "num_speculative_tokens"
            value = spec.get(name) if spec else None
            return "" if value is None else str(value)
        if key == "gpus":
            gpus = self.data.get("gpus")
            if gpus is None:
                return ""
            return gpus if isinstance(gpus, str) else ",".join(str(g) for g in gpus)
        if key == "power_limit_w":
            power = self.data.get("power")
            limit = power.get("limit_w") if isinstance(power, dict) else None
            return "" if limit is None else f"{float(limit):g}"
        if key in ("idle_minutes", "idle_action"):
            idle = self.data.get("idle_timeout")
            value = (
                idle.get("minutes" if key == "idle_minutes" else "action") if isinstance(idle, dict) else None
            )
            return "" if value is None else f"{value:g}" if isinstance(value, (int, float)) else str(value)
        if key == "env":
            env = self.data.get("env")
            return (
                {str(k): "" if v is None else str(v) for k, v in env.items()} if isinstance(env, dict) else {}
            )
        if key == "extra_flags":
            return [
                shlex.join(tokens)
                for name, tokens in edit.flag_groups(self.args)
                if name not in MANAGED_FLAGS
            ]
        value = self.data.get(key)
        return "" if value is None else str(value)

    def spec(self) -> dict[str, Any] | None:
        """The speculative config as a dict (None if absent or not valid JSON)."""
        text = edit.get_flag(self.args, SPEC_FLAG)
        if not text:
            return None
        try:
            obj = json.loads(text)
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None

    # ---- writing -------------------------------------------------------------------------------
    def _set_args(self, args: tuple[str, ...]) -> None:
        if args:
            self.data["args"] = list(args)
        else:
            self.data.pop("args", None)

    def set(self, key: str, value: Any) -> None:
        """Change one form field."""
        if key in FLAG_FIELDS:
            self._set_args(edit.set_optional_flag(self.args, FLAG_FIELDS[key], str(value or "")))
        elif key in SWITCH_FIELDS:
            self._set_args(edit.set_switch(self.args, SWITCH_FIELDS[key], value))
        elif key in DOCKER_FIELDS:
            docker = dict(self._docker())
            name = DOCKER_FIELDS[key]
            if key in ("ports", "volumes"):
                items = [str(v).strip() for v in value or [] if str(v).strip()]
                if items:
                    docker[name] = items
                else:
                    docker.pop(name, None)
            elif str(value or "").strip():
                docker[name] = str(value).strip()
            else:
                docker.pop(name, None)
            if docker:
                self.data["docker"] = docker
            else:
                self.data.pop("docker", None)
        elif key == "spec_json":
            self._set_args(edit.set_optional_flag(self.args, SPEC_FLAG, str(value or "")))
        elif key in ("spec_method", "spec_tokens"):
            self._set_spec_part(key, str(value or "").strip())
        elif key == "gpus":
            text = str(value or "").strip()
            if not text:
                self.data.pop("gpus", None)
            elif text == "all":
                self.data["gpus"] = "all"
            else:
                self.data["gpus"] = text  # validated (and turned into a list) by the model
        elif key == "power_limit_w":
            self._set_power(str(value or "").strip())
        elif key == "env":
            env = {str(k): str(v) for k, v in dict(value or {}).items()}
            if env:
                self.data["env"] = env
            else:
                self.data.pop("env", None)
        elif key == "extra_flags":
            groups = []
            for line in value or []:
                try:
                    groups.append(shlex.split(str(line)))
                except ValueError:
                    groups.append(str(line).split())
            self._set_args(edit.replace_unmanaged(self.args, MANAGED_FLAGS, groups))
        elif key in ("idle_minutes", "idle_action"):
            idle = dict(self.data.get("idle_timeout") or {})
            text = str(value or "").strip()
            name = "minutes" if key == "idle_minutes" else "action"
            if text:
                idle[name] = text  # validated (a number of minutes, stop or sleep) by the model
            else:
                idle.pop(name, None)
            if idle:  # an action without minutes is refused by the model, which names the field
                self.data["idle_timeout"] = idle
            else:
                self.data.pop("idle_timeout", None)
        elif key == "notes":
            if value:
                self.data["notes"] = str(value)
            else:
                self.data.pop("notes", None)
        else:
            self.data[key] = value

    def _set_spec_part(self, key: str, text: str) -> None:
        spec = self.spec() or {}
        name = "method" if key == "spec_method" else "num_speculative_tokens"
        if not text:
            spec.pop(name, None)
        elif name == "num_speculative_tokens" and text.isdigit():
            spec[name] = int(text)
        else:
            spec[name] = text
        if not spec.get("method"):
            self._set_args(edit.remove_flag(self.args, SPEC_FLAG))
            return
        ordered = {"method": spec.pop("method"), **spec}
        self._set_args(edit.set_flag(self.args, SPEC_FLAG, json.dumps(ordered, separators=(",", ":"))))

    def _set_power(self, text: str) -> None:
        power = dict(self.data.get("power") or {})
        if text:
            try:
                power["limit_w"] = float(text)
            except ValueError:
                power["limit_w"] = text  # the model reports it
        else:
            power.pop("limit_w", None)
        if power:
            self.data["power"] = power
        else:
            self.data.pop("power", None)

    # ---- validation ----------------------------------------------------------------------------
    def validate(self, source: str | None = None) -> Validation:
        """Validate the draft as a profile; errors are keyed by form field."""
        errors: dict[str, str] = {}
        gpus = self.data.get("gpus")
        if isinstance(gpus, str) and gpus != "all" and not re.fullmatch(r"\s*\d+(\s*,\s*\d+)*\s*", gpus):
            errors["gpus"] = "'all' or GPU indices separated by commas, e.g. 0,1"
        spec_text = edit.get_flag(self.args, SPEC_FLAG)
        if spec_text and self.spec() is None:
            errors["spec_json"] = 'not a JSON object, e.g. {"method":"ngram","num_speculative_tokens":3}'
        if errors:
            return Validation(None, errors)
        try:
            if self.base is not None and self.data.get("schema", SCHEMA_VERSION) == SCHEMA_VERSION:
                profile = self.base.with_changes(**self.changes())
            else:  # a new profile's data, or a schema this version does not read (said by the reader)
                profile = profile_from_data(copy.deepcopy(self.data), source=source)
        except DynoError as exc:
            return Validation(None, {self._field_of(exc): exc.message})
        return Validation(profile)

    def _field_of(self, exc: DynoError) -> str:
        where = exc.where.field if exc.where is not None else None
        if where and where.startswith("args"):
            for flag in edit.flag_groups(self.args):
                name, tokens = flag
                if name is None or not exc.message.startswith(tokens[0].split("=", 1)[0]):
                    continue
                for key, flag_name in FLAG_FIELDS.items():
                    if flag_name == name:
                        return key
                if name == SPEC_FLAG:
                    return "spec_json"
            return "extra_flags"
        if where:
            for prefix, key in sorted(_PYDANTIC_FIELDS.items(), key=lambda kv: -len(kv[0])):
                if where == prefix or where.startswith(prefix + "."):
                    return key
        if "docker" in exc.message:
            return "image"
        return ""
