"""The core's exceptions that reach a front end, defined once.

Front ends turn them into what their person or client sees: the CLI prints the message, the two
protocol front ends answer with the code of `mino_server/jsonrpc.py`'s table. Standard library only,
so that table can be consulted before the rest of the core has loaded; the modules that raise these
import them from here. (sessions/store.py's SessionInUse stays with the Holder it carries: the
conversation turns it into SessionOpenElsewhere before any front end sees it.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .vocab import FAILED, ToolStatus

if TYPE_CHECKING:
    from .contract import OpenElsewhere


class CommandError(Exception):
    """A command that cannot be done; the message is shown as is and nothing changed."""


class SessionOpenElsewhere(CommandError):
    """The session is open in another conversation (another window, terminal or ACP session)."""

    def __init__(self, other: OpenElsewhere) -> None:
        # Imported here: words imports contract, which this module must not load before it is needed
        # (the protocol front ends read this module's classes to answer their first requests).
        from .words import session_in_use

        super().__init__(session_in_use(other))
        self.other = other


class RecoveryRefused(Exception):
    """The user did not confirm that a command may have run; the session was not activated."""


class StorageError(Exception):
    """Saving the selection or clearing failed: the chat must stop (docs/BEHAVIOUR.md, "Durability")."""


class StoreLocked(Exception):
    """The store lock stayed taken for STORE_LOCK_WAIT_S; `pid` is the holder's, when its note could be read."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


class SelectionError(Exception):
    """active-session.json exists but cannot be used."""


class ConfigError(Exception):
    """A configuration problem, as one line a person can act on."""


class ContextError(ValueError):
    """An item that cannot be attached; the message names it and says why (nothing was sent)."""


# ---- a tool call's (core/tools/): they end the call, never the turn ----------------------------
class ArgumentError(Exception):
    """The arguments are not acceptable; the message goes to the model as an invalid_arguments result."""


class ToolFailure(Exception):
    """The call cannot go ahead; ends it with `status` and `message` (before or after asking)."""

    def __init__(self, message: str, status: ToolStatus = FAILED) -> None:
        super().__init__(message)
        self.status = status
