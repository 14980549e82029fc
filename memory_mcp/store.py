"""Where a store lives on disk, and the path rules that keep every access inside it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

STORE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
DEFAULT_ROOT = Path("~/.memory-mcp/default")
GITIGNORE = "# derived, disposable: rebuilt from memories/ by memory-mcp\n.index/\n"


@dataclass(frozen=True)
class Store:
    name: str
    root: Path

    @property
    def memories_dir(self) -> Path:
        return self.root / "memories"

    @property
    def index_dir(self) -> Path:
        return self.root / ".index"

    @property
    def db_path(self) -> Path:
        return self.index_dir / "index.sqlite3"

    @property
    def lock_path(self) -> Path:
        return self.index_dir / "write.lock"

    @property
    def dictionary_path(self) -> Path:
        return self.root / "dictionary.md"

    def exists(self) -> bool:
        """A store is a directory holding `memories/`; anything else is not one (yet)."""
        return self.memories_dir.is_dir()

    def ensure(self) -> None:
        """Create the layout on first use; the store writes its own .gitignore for the index.

        A store that cannot be written (read-only disk, another account's files) is still opened: the
        session then answers from an in-memory index, and a write says why it cannot happen.
        """
        try:
            self.memories_dir.mkdir(parents=True, exist_ok=True)
        except OSError:
            if not self.root.is_dir():
                raise
        try:
            self.index_dir.mkdir(parents=True, exist_ok=True)
            gitignore = self.root / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text(GITIGNORE, encoding="utf-8")
        except OSError:
            pass

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def resolve_inside(self, rel: str) -> Path:
        """A store-relative path as an absolute one, refusing anything that leaves the store."""
        if not rel or "\x00" in rel:
            raise InputError("path: must be a non-empty store-relative path")
        candidate = Path(rel)
        if candidate.is_absolute() or rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
            raise InputError(f"path: '{rel}' is absolute; give a path relative to the store")
        if ".." in candidate.parts:
            raise InputError(f"path: '{rel}' leaves the store ('..' is not allowed)")
        full = self.root / candidate
        real_root = self.root.resolve()
        try:
            real = full.resolve(strict=False)
        except (OSError, RuntimeError):
            raise InputError(f"path: '{rel}' cannot be resolved (symlink loop?)") from None
        if real != real_root and real_root not in real.parents:
            raise InputError(f"path: '{rel}' resolves outside the store (symlink escape)")
        return full


def default_root() -> Path:
    env = os.environ.get("MEMORY_MCP_ROOT")
    return Path(env).expanduser() if env else DEFAULT_ROOT.expanduser()


def open_store(base: Path, name: str | None) -> Store:
    """The base store, or a named sibling of it (`store` argument: a name, never a path)."""
    base = base.expanduser().absolute()
    if name is None or name == "" or name == base.name:
        return Store(base.name, base)
    if not STORE_NAME.match(name):
        raise InputError(
            f"store: '{name}' is not a store name (letters, digits, '-' and '_', at most 64; never a path)"
        )
    return Store(name, base.parent / name)
