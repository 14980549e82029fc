"""Errors the core raises for anticipated failures; edges translate them (MCP ToolError, CLI exit 2)."""


class MemoryMcpError(Exception):
    """Base of every anticipated failure; the message is meant for the person or agent."""


class InputError(MemoryMcpError):
    """Bad arguments: the message names the argument and what is wrong with it."""


class AlreadyDoneError(InputError):
    """The change asked for is already there (two memories already linked): nothing was written."""


class NotFoundError(MemoryMcpError):
    """No memory with that id or path."""


class StoreMissingError(NotFoundError):
    """A read named a store that does not exist (reads never create one)."""


class TransitionError(MemoryMcpError):
    """A lifecycle transition the state machine forbids."""


class StaleWriteError(MemoryMcpError):
    """The file changed since it was read; nothing was written."""


class StoreAccessError(MemoryMcpError):
    """The store cannot be locked, read or written right now (permissions, read-only disk, a busy lock)."""


class ContainmentError(StoreAccessError):
    """A path the store would use resolves outside it (a symlinked folder or file): nothing is touched."""
