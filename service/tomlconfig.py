"""Reading TOML configuration files with errors that name the file, the section and the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


def load_toml(path: Path, error: type[Exception]) -> dict[str, Any]:
    """The file's TOML as a dict; a missing or malformed file raises ``error`` naming it."""
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError as exc:
        raise error(f"{path}: no such configuration file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML ({exc})") from exc


class TomlReader:
    """Checked access to a parsed configuration: known sections and keys, typed values."""

    def __init__(self, data: dict[str, Any], where: str, error: type[Exception], sections: set[str]) -> None:
        self.data, self.where, self.error = data, where, error
        unknown = set(data) - sections
        if unknown:
            raise error(f"{where}: unknown section(s) {sorted(unknown)}; expected {sorted(sections)}")

    def section(self, name: str, allowed: set[str]) -> dict[str, Any]:
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            raise self.error(f"{self.where}: [{name}] must be a table")
        extra = set(value) - allowed
        if extra:
            raise self.error(f"{self.where}: unknown key(s) {sorted(extra)} in [{name}]; expected {sorted(allowed)}")
        return value

    def typed(self, section: str, values: dict[str, Any], key: str, kind: type, default: Any) -> Any:
        value = values.get(key, default)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(f"{self.where}: [{section}] {key} must be {kind.__name__}, not {value!r}")
        return value
