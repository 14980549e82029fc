"""Kernel change notifications for `memories/`: lets a reconcile skip the scan when nothing happened.

The stat gate costs one `stat()` per file on every tool call (~40 ms for 10,000 files here). Like git's
fsmonitor, a long-running server can instead ask the kernel: inotify queues an event the moment any
write, rename, delete or attribute change completes in a watched folder, so reading the queue
(non-blocking) at the start of a call tells exactly whether anything changed since the last full pass.

Used only where that is sound: Linux, `inotify_simple` importable, a local filesystem (network and FUSE
filesystems do not report other machines' changes), every folder watched, no symlinks in `memories/`.
Anything unusual — a queue overflow, a watch that cannot be added, a folder removed — makes the next
pass a full one. Without a watch every pass is a full one, as before.
"""

from __future__ import annotations

import os
import re
import select
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# inotify_simple is imported at the first watch a process opens, not with this module: it loads ctypes and runs
# `ldconfig -p` to find libc (~15 ms of CPU), which a process making one call (a hook's CLI call) never needs
INotify = None
_flags = None
_MASK = 0
_FOLDER_EVENTS = 0

# Filesystems whose inotify events cover every change (no remote writers the kernel cannot see).
LOCAL_FILESYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "f2fs", "zfs", "jfs", "reiserfs", "bcachefs"}
)

_OCTAL_ESCAPE = re.compile(rb"\\([0-7]{3})")


def _inotify_available(load: bool) -> bool:
    """Whether inotify_simple can be used here; `load`: import it (once per process), else only find it."""
    global INotify, _flags, _MASK, _FOLDER_EVENTS
    if INotify is not None:
        return True
    if not load:
        import importlib.util

        return importlib.util.find_spec("inotify_simple") is not None
    try:  # Linux only; optional so the package installs everywhere
        from inotify_simple import INotify as loaded
        from inotify_simple import flags
    except (ImportError, OSError):  # pragma: no cover - non-Linux
        return False
    # the watched folder itself went away or moved, or its watch was dropped
    _FOLDER_EVENTS = flags.DELETE_SELF | flags.MOVE_SELF | flags.IGNORED | flags.UNMOUNT
    _MASK = (
        flags.MODIFY
        | flags.ATTRIB
        | flags.CLOSE_WRITE
        | flags.MOVED_FROM
        | flags.MOVED_TO
        | flags.CREATE
        | flags.DELETE
        | flags.DELETE_SELF
        | flags.MOVE_SELF
    )
    INotify, _flags = loaded, flags
    return True


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem holding `path`, from /proc/self/mountinfo (None when unknown)."""
    try:
        real = os.fsencode(path.resolve())
        lines = Path("/proc/self/mountinfo").read_bytes().splitlines()
    except OSError:
        return None
    best, best_type = b"", None
    for line in lines:
        head, sep, tail = line.partition(b" - ")
        fields = head.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        # compared as bytes: mountinfo escapes space, tab, newline and backslash as \ooo, other bytes are raw
        mount = _OCTAL_ESCAPE.sub(lambda m: bytes([int(m.group(1), 8)]), fields[4])
        inside = real == mount or real.startswith(mount.rstrip(b"/") + b"/")
        if inside and len(mount) >= len(best):  # the longest (and, if equal, the latest) mount wins
            best, best_type = mount, os.fsdecode(tail.split()[0])
    return best_type


@dataclass
class Changes:
    """What the kernel reported since the last pass."""

    files: set[Path] = field(default_factory=set)  # paths named by file events
    # True when only files changed (no folder created, removed or moved, no watch lost): a pass over `files`
    # alone then sees everything a full scan would
    complete: bool = True


class CanonWatch:
    """Watches the folders of `memories/`; `poll()` says what changed since the last full pass (`rearm`)."""

    def __init__(self, memories_dir: Path, enabled: bool = True, one_call: bool = False) -> None:
        """`one_call`: the process makes one call and exits (a one-shot CLI command): the watch is judged as a
        server would judge it (what `describe` says) but never opened, since no later call of the process could
        skip its scan; every pass of such a process is a full one, as with the watch off."""
        self.memories_dir = memories_dir
        self.why_off: str | None = None
        self._inotify = None
        self._watched: dict[int, Path] = {}
        self._armed = False
        if not enabled:
            self.why_off = "turned off (index.change_watch = false)"
            return
        if not sys.platform.startswith("linux") or not _inotify_available(load=not one_call):
            self.why_off = "no inotify on this system"
            return
        fs = filesystem_type(memories_dir)
        if fs not in LOCAL_FILESYSTEMS:
            self.why_off = f"filesystem {fs or 'unknown'} may not report every change"
            return
        if one_call:
            return
        try:
            self._inotify = INotify()
        except OSError as exc:
            self.why_off = f"inotify unavailable ({exc.strerror or exc})"

    @property
    def active(self) -> bool:
        return self._inotify is not None

    def poll(self) -> Changes | None:
        """What changed since the last pass (no files and complete: nothing at all), or None when that is
        not known (not armed, or the kernel's queue overflowed): scan and trust nothing."""
        if self._inotify is None:
            return None
        events = self._inotify.read(timeout=0)
        if not self._armed:
            return None
        if not events:
            return Changes()
        self._armed = False  # the pass that follows re-arms
        changes = Changes()
        for event in events:
            if event.mask & _flags.Q_OVERFLOW:
                return None
            folder = self._watched.get(event.wd)
            if folder is None or not event.name or event.mask & (_flags.ISDIR | _FOLDER_EVENTS):
                changes.complete = False  # a folder came, went or moved: only a scan sees what is in it
            if folder is not None and event.name:
                changes.files.add(folder / event.name)
        return changes

    def describe(self, saw_symlink: bool) -> str:
        """The watch as a status line says it."""
        if self.why_off is not None:
            return f"off: {self.why_off}"
        if saw_symlink:
            return "off: memories/ holds symlinks (every call stats every file)"
        return "on (inotify)"

    def quiet(self) -> bool:
        """Whether `poll()` would answer "nothing at all" now, without taking the events: armed, nothing queued."""
        if self._inotify is None or not self._armed:
            return False
        return not select.select([self._inotify.fileno()], [], [], 0)[0]

    def resume(self) -> None:
        """After a pass over only the files events named (no folder changed): the watch set is still whole."""
        if self._inotify is not None:
            self._armed = True

    def rearm(self, folders: Iterable[Path], trusted: bool, racy: bool) -> bool:
        """After a full pass: watch every folder it scanned. The next poll() is trusted (True returned) when
        `trusted` and, if the pass left racy entries (files read within their write's mtime tick), when no
        folder is new: a second same-tick write raises an event only in a folder watched before the read.
        """
        if self._inotify is None:
            return False
        wanted = {Path(f) for f in folders}
        try:
            for wd, folder in list(self._watched.items()):
                if folder not in wanted:
                    self._remove(wd)
            new = wanted - set(self._watched.values())
            for folder in new:
                # a folder created after the scan began announced itself to its (watched) parent already
                self._watched[self._inotify.add_watch(folder, _MASK)] = folder
        except OSError:
            # e.g. fs.inotify.max_user_watches reached, or a folder vanished: full passes are still correct
            self._armed = False
            return False
        self._armed = trusted and not (racy and new)
        return self._armed

    def _remove(self, wd: int) -> None:
        self._watched.pop(wd, None)
        try:
            self._inotify.rm_watch(wd)  # type: ignore[union-attr]
        except OSError:
            pass  # the folder is gone and the kernel dropped the watch already

    def close(self) -> None:
        if self._inotify is not None:
            try:
                self._inotify.close()
            finally:
                self._inotify = None
                self._armed = False
                self._watched.clear()
