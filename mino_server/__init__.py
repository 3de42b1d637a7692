"""Mino: a small, careful coding agent."""

__version__ = "0.13.0"

# The editor protocol's version (docs/PROTOCOL.md; mino_server/server/protocol.py is the protocol):
# here, outside every front end, because `mino doctor` compares an installed extension's with it.
PROTOCOL_VERSION = 4
