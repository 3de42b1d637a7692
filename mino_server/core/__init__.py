"""Mino's core: everything that knows no front end (no terminal, no JSON-RPC, no ACP).

See docs/ARCHITECTURE.md for the layers and how a turn flows through them."""
