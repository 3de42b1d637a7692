"""`mino --acp`: Mino as an Agent Client Protocol agent (Zed, JetBrains IDEs, Neovim, Emacs).

A front end beside cli.py and server/: app.py serves the protocol, mapping.py words the core's
contract in ACP's terms, transport.py frames one JSON-RPC message per line.
"""
