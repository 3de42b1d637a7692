"""Mino: a small, careful coding agent."""

__version__ = "0.13.0"
