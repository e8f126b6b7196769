"""Prompt files: loaded by name from `prompts/`, identified by a content hash, filled by variables.

A file has an optional ``=== system ===`` part and a ``=== user ===`` part; a ``{{ name }}`` placeholder without
a value is an error, and a value's own closing ``</data>`` tag is escaped so ticket text cannot leave its data
block. The format and why: docs/llm.md#prompt-files.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from faultline.errors import FaultlineError

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_SECTION = re.compile(r"^===\s*(system|user)\s*===\s*$", re.M)
_CLOSE, _CLOSE_WRITTEN = "</data>", "<\\/data>"  # the end of a data block, and how a value may write it
_NAME = re.compile(r"^[a-z0-9_]+(?:/[a-z0-9_]+)*(?:\.[a-z]+)?$")


def prompts_dir() -> Path:
    """The `prompts/` folder: the repository's in a checkout, the bundled copy in a wheel."""
    package = Path(__file__).resolve().parents[1]
    in_repo = package.parent / "prompts"
    return in_repo if in_repo.is_dir() else package / "_bundled" / "prompts"


@dataclass(frozen=True)
class Prompt:
    """One prompt file: its name (path under `prompts/`), text and SHA-256 of that text."""

    name: str
    text: str
    sha256: str

    @property
    def variables(self) -> set[str]:
        """Placeholder names the prompt expects."""
        return set(_PLACEHOLDER.findall(self.text))

    def render(self, variables: dict[str, Any]) -> list[dict[str, str]]:
        """Chat messages with every placeholder filled; missing variables raise `FaultlineError`."""
        missing = sorted(self.variables - set(variables))
        if missing:
            raise FaultlineError(f"prompt {self.name} needs variables {missing}",
                                 fix="pass them in `variables=`; the prompt file names what it uses")

        def fill(part: str) -> str:
            return _PLACEHOLDER.sub(lambda m: as_text(variables[m.group(1)]).replace(_CLOSE, _CLOSE_WRITTEN),
                                    part).strip()

        parts = _SECTION.split(self.text)
        if len(parts) == 1:
            return [{"role": "user", "content": fill(self.text)}]
        messages = [{"role": role, "content": fill(body)} for role, body in zip(parts[1::2], parts[2::2])]
        return [m for m in messages if m["content"]]


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


def load_prompt(name: str, *, folder: Path | None = None) -> Prompt:
    """Load `prompts/<name>` (``.md`` is added when the name has no suffix)."""
    if not _NAME.match(name):
        raise FaultlineError(f"invalid prompt name {name!r}",
                             fix="use a path under prompts/ in lower case, e.g. astra/log_agent")
    base = folder or prompts_dir()
    path = base / (name if Path(name).suffix else f"{name}.md")
    if not path.is_file():
        raise FaultlineError(f"prompt file {path} does not exist", fix=f"create it, or check the name {name!r}")
    text = path.read_text(encoding="utf-8")
    return Prompt(name=name, text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


def output_budget(name: str, *, folder: Path | None = None) -> int | None:
    """The output-token budget ``prompts/budgets.yml`` declares for prompt ``name``, None when it declares none."""
    path = (folder or prompts_dir()) / "budgets.yml"
    value = _budgets(path).get(name)
    if value is not None and (not isinstance(value, int) or value < 16):
        raise FaultlineError(f"{path}: the budget of {name} is {value!r}, not a whole number of tokens >= 16",
                             fix="write a whole number of output tokens, e.g. 400")
    return value


@lru_cache(maxsize=4)
def _budgets(path: Path) -> dict[str, Any]:
    # read once per process: every model call asks for its prompt's budget
    import yaml

    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.is_file() else {}
