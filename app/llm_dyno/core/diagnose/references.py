"""References: someone's published result that a user compares their server against.

A reference is a configuration (a compose file or an inline profile, when one was published), the
numbers claimed for it, the hardware it ran on and where it was published. Shipped references live in
``resources/references/``; the user's own in ``data_dir()/references/``. A file holds one reference, or
several under ``references:`` with shared ``defaults:`` (a published table, one row per variant).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError, Location
from llm_dyno.core.paths import data_dir, resources_dir
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.model import Profile, profile_from_data
from llm_dyno.core.profiles.validation import problem_of
from llm_dyno.core.profiles.yamlio import Path_, dump, line_for, load_with_lines

REFERENCE_SCHEMA = 1
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")


class ReferenceError(DynoError):
    """A reference file is malformed, or a reference cannot be found."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Hardware(_Frozen):
    """What the reference ran on."""

    gpu: str | None = None
    gpu_count: int = Field(default=1, ge=1)
    power_limit_w: float | None = Field(default=None, gt=0, le=2000)
    driver: str | None = None
    cuda: str | None = None


class CapPoint(_Frozen):
    """The same setup measured at another power cap: the source's own power curve."""

    power_limit_w: float = Field(gt=0, le=2000)
    narrative_tps: float | None = Field(default=None, gt=0)
    code_tps: float | None = Field(default=None, gt=0)


class Numbers(_Frozen):
    """Claimed or measured results (the community protocol: wall tokens/s per prompt).

    ``acceptance_per_position`` holds fractions (0.93, not 93): vLLM's per-position rates, cumulative.
    """

    narrative_tps: float | None = Field(default=None, ge=0)
    code_tps: float | None = Field(default=None, ge=0)
    acceptance_per_position: tuple[float, ...] = ()
    mean_acceptance_length: float | None = Field(default=None, ge=1)
    context_tokens: int | None = None
    vram_gb: float | None = None
    power_draw_w: float | None = None
    # the same setup at other caps, as its source published them (the cap of ``hardware`` is the main one)
    at_other_caps: tuple[CapPoint, ...] = ()

    @field_validator("acceptance_per_position")
    @classmethod
    def _fractions(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        for x in v:
            if not 0 <= x <= 1:
                raise ValueError(f"{x} is not a fraction; write 0.93 for 93 %")
        return v


class EngineFlags(_Frozen):
    """The engine settings a reference published, where it published no whole configuration.

    ``speculative_method`` is ``"none"`` for a run without speculative decoding (None: not stated).
    """

    speculative_method: str | None = None
    num_speculative_tokens: int | None = Field(default=None, ge=0)
    kv_cache_dtype: str | None = None
    max_model_len: int | None = Field(default=None, gt=0)

    @property
    def speculates(self) -> bool | None:
        """Whether it ran with speculative decoding (None: not stated)."""
        if self.speculative_method is None:
            return None
        return self.speculative_method != "none"

    def describe_spec(self) -> str:
        """``mtp, 3 tokens`` / ``none`` / ``not stated``."""
        if self.speculates is None:
            return "not stated"
        if not self.speculates:
            return "none"
        k = f", {self.num_speculative_tokens} tokens" if self.num_speculative_tokens else ""
        return f"{self.speculative_method}{k}"


class Source(_Frozen):
    """Where the reference was published."""

    url: str | None = None
    text: str = ""  # a quote or a note on what the source says and what was inferred


class PublishedFile(_Frozen):
    """A file of a public repository at one commit: where a shipped compose was copied from."""

    repo: str = Field(pattern=r"^[\w.-]+/[\w.-]+$")  # owner/name on GitHub
    path: str
    commit: str = Field(pattern="^[0-9a-f]{40}$")

    @property
    def url(self) -> str:
        """The file on GitHub at that commit."""
        return f"https://github.com/{self.repo}/blob/{self.commit}/{self.path}"

    def describe(self) -> str:
        """``owner/name path @ 061a5f1``."""
        return f"{self.repo} {self.path} @ {self.commit[:7]}"


class EarlierImage(_Frozen):
    """An image the reference's source ran before the one it measured on (its pins drifted)."""

    image: str
    vllm_version: str | None = None
    note: str = ""  # what the source says about it, and where


class Reference(_Frozen):
    """Someone's configuration and numbers to compare against."""

    schema_version: int = Field(default=REFERENCE_SCHEMA, alias="schema")
    id: str
    title: str
    kind: str = Field(default="claimed", pattern="^(claimed|measured)$")
    image: str | None = None
    vllm_version: str | None = None
    hardware: Hardware = Field(default_factory=Hardware)
    numbers: Numbers = Field(default_factory=Numbers)
    engine: EngineFlags | None = None  # where no compose/profile was published
    source: Source = Field(default_factory=Source)
    compose: str | None = None  # a compose file next to this one
    compose_source: PublishedFile | None = None  # where that compose file was copied from
    earlier_images: tuple[EarlierImage, ...] = ()  # pins its source ran before ``image``
    # what its source states about the running engine, by boot-log fact (e.g. "start-script patches")
    stated_facts: dict[str, str] = Field(default_factory=dict)
    profile: dict[str, Any] | None = None  # or an inline profile in the profile file layout
    file: str | None = Field(default=None, exclude=True)  # where it was read from (not stored)

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID_RE.match(v):
            raise ValueError("an id of lower-case letters, digits, '.', '_' or '-' (e.g. my-3090-run)")
        return v

    def load_profile(self) -> Profile | None:
        """The reference's configuration as a Profile, when it published one."""
        if self.profile is not None:
            return profile_from_data(self.profile, source=self.file)
        if self.compose is None:
            return None
        return import_text(self.compose_text(), source=str(self.compose_path()), name=self.id).profile

    def compose_path(self) -> Path | None:
        """The compose file it ships (``compose:``, relative to the reference's own file and inside its
        folder: a reference file from elsewhere cannot make the app read any other file)."""
        if self.compose is None:
            return None
        base = (Path(self.file).parent if self.file else Path(".")).resolve()
        path = (base / self.compose).resolve()
        if not path.is_relative_to(base):
            raise ReferenceError(
                f"the reference's compose file {self.compose!r} is outside the reference's folder {base}",
                where=Location(self.file, None, "compose"),
                hint="keep the compose file beside the reference file (or in a folder below it)",
            )
        return path

    def compose_text(self) -> str:
        """The text of its compose file; :class:`ReferenceError` naming the field when unreadable."""
        path = self.compose_path()
        if path is None:
            raise ReferenceError(f"reference {self.id!r} ships no compose file", where=Location(self.file))
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ReferenceError(
                f"cannot read the reference's compose file {path}: {exc.strerror}",
                where=Location(self.file, None, "compose"),
                hint="reinstall the package, or point compose: at a file beside the reference",
            ) from None

    def engine_flags(self) -> EngineFlags | None:
        """The engine settings: from the published configuration, else the ``engine:`` fields."""
        try:
            profile = self.load_profile()
        except ReferenceError:
            profile = None
        if profile is None:
            return self.engine
        e = profile.engine()
        spec = e.speculative_config
        return EngineFlags(
            speculative_method=str(spec.get("method") or "draft") if spec else "none",
            num_speculative_tokens=e.num_speculative_tokens,
            kv_cache_dtype=e.kv_cache_dtype,
            max_model_len=e.max_model_len,
        )

    @property
    def image_ref(self) -> str | None:
        """The image the reference ran: its own ``image`` or its profile's."""
        if self.image:
            return self.image
        if self.profile is not None or self.compose is not None:
            p = self.load_profile()
            return p.docker.image if p is not None and p.docker else None
        return None

    def to_yaml(self) -> str:
        """The reference as a YAML document (the file layout)."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=False)
        return dump({k: v for k, v in data.items() if v not in ({}, [], "")})


def shipped_references_dir() -> Path:
    """``resources/references/``."""
    return resources_dir() / "references"


def user_references_dir() -> Path:
    """``data_dir()/references/``: the user's own references."""
    return data_dir() / "references"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _validate(data: Any, source: str | None, lines: dict[Path_, int], at: Path_) -> Reference:
    if not isinstance(data, dict):
        raise ReferenceError(
            "a reference must be a mapping (id:, title:, numbers: …)", where=Location(source, 1)
        )
    try:
        return Reference.model_validate({**data, "file": source})
    except ValidationError as exc:
        problem = problem_of(exc, source=source, lines=lines, at=at)
        raise ReferenceError(problem.message, where=problem.where, hint=problem.hint) from None


def references_from_yaml(text: str, source: str | None = None) -> list[Reference]:
    """Every reference in a YAML document; errors name the file, line and field."""
    try:
        data, lines = load_with_lines(text, source)
    except DynoError as exc:
        raise ReferenceError(exc.message, where=exc.where, hint=exc.hint) from None
    if isinstance(data, dict) and "references" in data:
        defaults = data.get("defaults") or {}
        items = data["references"]
        if not isinstance(items, list) or not isinstance(defaults, dict):
            raise ReferenceError(
                "'references' must be a list and 'defaults' a mapping",
                where=Location(source, line_for(lines, ("references",)), "references"),
            )
        out = []
        for i, item in enumerate(items):
            merged = _merge(defaults, item) if isinstance(item, dict) else item
            out.append(_validate(merged, source, lines, ("references", i)))
        return out
    return [_validate(data, source, lines, ())]


def load_references(dirs: list[Path] | None = None) -> list[Reference]:
    """All references in the shipped and user folders (or ``dirs``), user ones last.

    A broken file raises :class:`ReferenceError` naming it; duplicate ids keep the later one.
    """
    by_id: dict[str, Reference] = {}
    for folder in dirs if dirs is not None else [shipped_references_dir(), user_references_dir()]:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")):
            for ref in references_from_yaml(path.read_text(encoding="utf-8"), str(path)):
                by_id[ref.id] = ref
    return list(by_id.values())


def find_reference(ref_id: str, dirs: list[Path] | None = None) -> Reference:
    """The reference of that id; a path to a YAML file also works."""
    path = Path(ref_id)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        refs = references_from_yaml(path.read_text(encoding="utf-8"), str(path))
        return refs[0]
    refs = load_references(dirs)
    for ref in refs:
        if ref.id == ref_id:
            return ref
    raise ReferenceError(
        f"no reference named {ref_id!r}",
        hint="`llm-dyno reference list` shows them: " + ", ".join(r.id for r in refs),
    )


def reference_from_compose(
    compose_text: str,
    *,
    ref_id: str,
    title: str,
    narrative_tps: float | None = None,
    code_tps: float | None = None,
    acceptance_per_position: tuple[float, ...] = (),
    gpu: str | None = None,
    power_limit_w: float | None = None,
    driver: str | None = None,
    vllm_version: str | None = None,
    source_url: str | None = None,
    source_text: str = "",
    kind: str = "claimed",
) -> Reference:
    """A reference from a pasted compose file (or docker run / vllm serve line) and typed numbers."""
    profile = import_text(compose_text, source=f"reference {ref_id}", name=ref_id).profile
    data = {
        "id": ref_id,
        "title": title,
        "kind": kind,
        "image": profile.docker.image if profile.docker else None,
        "vllm_version": vllm_version,
        "hardware": {"gpu": gpu, "power_limit_w": power_limit_w, "driver": driver},
        "numbers": {
            "narrative_tps": narrative_tps,
            "code_tps": code_tps,
            "acceptance_per_position": list(acceptance_per_position),
        },
        "source": {"url": source_url, "text": source_text},
        "profile": profile.to_dict(),
    }
    return _validate(data, None, {}, ())


def save_reference(ref: Reference, folder: Path | None = None) -> Path:
    """Write a reference to ``data_dir()/references/<id>.yaml`` (or ``folder``)."""
    target = (folder or user_references_dir()) / f"{ref.id}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, ref.to_yaml())
    return target
