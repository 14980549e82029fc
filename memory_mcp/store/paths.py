"""Where a store lives on disk, and the path rules that keep every access inside it.

Containment: a store is refused when anything it reads or writes by a fixed name (`memories/`, `.index/`
and the files in it, `dictionary.md`, `.gitignore`, `config.toml`) is a symlink resolving outside the
store, or when a project's store root resolves outside the project root (`check_contained`, on every
call). Every memory file is then confined once more, by resolved path, before it is read, written or
deleted (`memory_file`): a symlinked file or subfolder inside `memories/` cannot lead outside it either.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ..domain.errors import ContainmentError, InputError, StoreAccessError

STORE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
DEFAULT_ROOT = Path("~/.memory-mcp/default")
GITIGNORE = "# derived, disposable: rebuilt from memories/ by memory-mcp\n.index/\n"
# what the server opens under a store root by name: none of these may lead outside the store
GUARDED_NAMES = frozenset({"memories", ".index", "dictionary.md", ".gitignore", "config.toml"})


def _below(path: Path, parent: Path) -> bool:
    """`path` is strictly inside `parent` (both real paths)."""
    return parent in path.parents


@dataclass(frozen=True)
class Store:
    name: str
    root: Path
    # the directory the root must resolve inside (a project's root for its `.memory/`); None: the root is
    # the account's own configured path, used as it resolves
    container: Path | None = None

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

        A store that cannot be written (read-only disk, another account's files) is still opened when its
        memories/ is there: the session then answers from an in-memory index, and a write says why it cannot
        happen. A store that cannot be created at all is refused, naming the path and the reason.
        """
        problem = self.unusable()
        if problem:
            raise StoreAccessError(f"store: {problem}")
        try:
            self.memories_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if not self.memories_dir.is_dir():
                raise StoreAccessError(f"store: cannot create the store at {self.root}: {_reason(exc)}") from None
        try:
            self.index_dir.mkdir(parents=True, exist_ok=True)
            gitignore = self.root / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text(GITIGNORE, encoding="utf-8")
        except OSError:
            pass

    def unusable(self) -> str | None:
        """Why this path can never hold a store (a file where a folder must be), or None. Creates nothing."""
        for path in (self.memories_dir, self.root, *self.root.parents):
            try:
                mode = os.stat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                continue  # not there, or below a file: the file is found further up
            except OSError as exc:
                return f"cannot use the store at {self.root}: {_reason(exc)}"
            if stat.S_ISDIR(mode):
                return None
            if path == self.root:
                return f"{self.root} is a file, not a store folder"
            if path == self.memories_dir:
                return f"{path} is a file, not a folder: {self.root} is not a store"
            return f"cannot create the store at {self.root}: {path} is a file, not a folder"
        return None

    def in_git_repository(self) -> bool:
        """Whether the store lies inside a git working tree (a `.git` entry in its root or above it)."""
        return any(os.path.lexists(p / ".git") for p in (self.root, *self.root.parents))

    def check_contained(self) -> None:
        """Refuse the store when its root leaves its container, or a fixed entry is a symlink leading outside.

        Cheap enough for every call (an lstat per level of the root below its container, two small
        directory reads); real paths are computed only when a symlink is actually there.
        """
        if self.container is not None:
            self._check_root_in_container(self.container)
        real_root: Path | None = None
        for folder, names in ((self.root, GUARDED_NAMES), (self.index_dir, None)):
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue  # missing or unreadable: nothing there can lead outside
            for entry in entries:
                if (names is None or entry.name in names) and entry.is_symlink():
                    real_root = real_root or Path(os.path.realpath(self.root))
                    target = Path(os.path.realpath(entry.path))
                    if not _below(target, real_root):
                        shown = self.relative(Path(entry.path)) + ("/" if entry.name in ("memories", ".index") else "")
                        raise ContainmentError(
                            f"store: {shown} is a symlink to {target}, outside the store {real_root}; "
                            "refusing to use this store (nothing was read or written)"
                        )

    def _check_root_in_container(self, container: Path) -> None:
        try:
            parts = self.root.relative_to(container).parts
        except ValueError:
            parts = ()
        path = container
        for part in parts:
            path = path / part
            try:
                is_link = stat.S_ISLNK(os.lstat(path).st_mode)
            except OSError:
                return  # not there yet: it is created inside the container
            if is_link:
                real_container = Path(os.path.realpath(container))
                target = Path(os.path.realpath(path))
                if not _below(Path(os.path.realpath(self.root)), real_container):
                    raise ContainmentError(
                        f"store: {path.relative_to(container).as_posix()}/ is a symlink to {target}, outside the "
                        f"project root {real_container}; refusing to use this store (nothing was read or written)"
                    )
                return

    def memory_file(self, rel: str) -> Path:
        """The absolute path of the memory file `rel` (`memories/...`), refused when it resolves outside memories/.

        Defence in depth below `check_contained`: a symlinked file, or a symlinked subfolder on the way, must
        resolve inside the real `memories/`. One lstat per path component (plain strings: this runs for every
        file a reconcile reads); real paths only when a link is seen.
        """
        parts = rel.split("/")
        if len(parts) < 2 or parts[0] != "memories" or ".." in parts or "" in parts:
            raise ContainmentError(f"path: '{rel}' is not inside memories/")
        path = str(self.root)
        for part in parts:
            path = os.path.join(path, part)
            try:
                is_link = stat.S_ISLNK(os.lstat(path).st_mode)
            except OSError:
                break  # not there (a new file): nothing below can be a link
            if is_link:
                self._check_link(rel, Path(path))
                break
        return self.root.joinpath(*parts)

    def _check_link(self, rel: str, link: Path) -> None:
        real_memories = Path(os.path.realpath(self.memories_dir))
        real = Path(os.path.realpath(self.root.joinpath(*rel.split("/"))))
        if not _below(real_memories, Path(os.path.realpath(self.root))) or not _below(real, real_memories):
            raise ContainmentError(
                f"path: '{rel}' goes through the symlink {self.relative(link)} to {real}, outside "
                f"{self.root}/memories; nothing was read, written or deleted"
            )

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


def _reason(exc: OSError) -> str:
    """An OSError as a person reads it: what went wrong, and where when it was not the store root itself."""
    text = exc.strerror or str(exc)
    if isinstance(exc, PermissionError):
        text += " (the folder is read-only or belongs to another account)"
    return f"{text}: {exc.filename}" if exc.filename else text


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
