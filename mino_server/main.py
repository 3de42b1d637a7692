"""`mino` entry point: dispatch to the CLI, the editor server or the eval runner.

Kept tiny: each path imports only what it needs (start-up time is measured in bench/).
"""

from __future__ import annotations

import sys

USAGE = """\
usage: mino [--model MODEL] [--base-url URL] [--mode MODE]   chat in the terminal
       mino --stdio [--mode MODE]                            the editor server (JSON-RPC on stdio)
       mino --acp [--model MODEL] [--base-url URL] [--mode MODE]
                                                             an Agent Client Protocol agent on stdio
                                                             (Zed, JetBrains IDEs, Neovim, Emacs)
       mino -p PROMPT [--output-format text|json|stream-json] [--resume ID] [--mode MODE]
                                                             one turn for scripts and CI, then exit
                                                             (PROMPT "-": read it from stdin)
       mino eval DIR [--live] [-k NAME] [--json]             run the eval cases in DIR
       mino doctor [--json] [--model MODEL] [--base-url URL] check what a turn needs, with fixes
       mino --version | --help

--reasoning-effort minimal|low|medium|high (terminal, -p, --acp): how hard a reasoning model thinks.

Modes: manual (default), accept-edits, bypass, plan. Home: $MINO_HOME (default ~/.mino).
Environment: MINO_MODEL, MINO_BASE_URL, MINO_API_KEY (or the variable named by api_key_env,
default OPENAI_API_KEY).
"""


class UsageError(Exception):
    pass


def _parse(argv: list[str]) -> dict[str, object]:
    opts: dict[str, object] = {
        "stdio": False,
        "acp": False,
        "model": None,
        "base_url": None,
        "mode": None,
        "print": None,
        "resume": None,
        "output_format": None,
        "reasoning_effort": None,
    }
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--stdio":
            opts["stdio"] = True
        elif arg == "--acp":
            opts["acp"] = True
        elif arg in ("-p", "--print") or arg.startswith("--print="):
            name, eq, value = arg.partition("=")
            if not eq:
                i += 1
                if i >= len(argv):
                    raise UsageError(f'{name} needs the prompt (or "-" to read it from stdin)')
                value = argv[i]
            if opts["print"] is not None:
                raise UsageError(f"{name} given twice")
            opts["print"] = value
        elif arg in (
            "--model",
            "--base-url",
            "--mode",
            "--resume",
            "--output-format",
            "--reasoning-effort",
        ) or (
            arg.startswith(
                ("--model=", "--base-url=", "--mode=", "--resume=", "--output-format=", "--reasoning-effort=")
            )
        ):
            name, eq, value = arg.partition("=")
            if not eq:
                i += 1
                if i >= len(argv):
                    raise UsageError(f"{name} needs a value")
                value = argv[i]
            opts[name[2:].replace("-", "_")] = value
        else:
            raise UsageError(f"unknown argument: {arg}")
        i += 1
    return opts


OUTPUT_FORMATS = ("text", "json", "stream-json")


def _print_usage_problem(opts: dict[str, object]) -> str | None:
    """Why the `-p` flags do not fit together (None: they do)."""
    if opts["print"] is None:
        for flag in ("resume", "output_format"):
            if opts[flag] is not None:
                return f"--{flag.replace('_', '-')} goes with -p PROMPT (one turn for scripts)"
        return None
    if opts["stdio"] or opts["acp"]:
        return "-p runs one turn in the terminal; it does not go with --stdio or --acp"
    if opts["output_format"] is not None and opts["output_format"] not in OUTPUT_FORMATS:
        return f"unknown --output-format {opts['output_format']!r}; use one of: {', '.join(OUTPUT_FORMATS)}"
    return None


def main(argv: list[str] | None = None) -> int:
    as_program = argv is None  # the `mino` executable, not a caller that wants the code back
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--help"], ["-h"]):
        sys.stdout.write(USAGE)
        return 0
    if argv[:1] in (["--version"], ["-V"]):
        from . import __version__

        print(f"mino {__version__}")
        return 0
    if argv[:1] == ["eval"]:
        from .evals.runner import eval_main

        return eval_main(argv[1:])
    if argv[:1] == ["doctor"]:
        from .cli import doctor_main

        return doctor_main(argv[1:])
    try:
        opts = _parse(argv)
    except UsageError as exc:
        from .core.display import terminal_text  # an argument is quoted back: shown, never obeyed

        sys.stderr.write(f"mino: {terminal_text(str(exc))}\n{USAGE}")
        return 2
    if opts["stdio"] and opts["acp"]:
        sys.stderr.write(f"mino: --stdio and --acp are two protocols; choose one\n{USAGE}")
        return 2
    if opts["stdio"] and opts["reasoning_effort"] is not None:
        sys.stderr.write(f"mino: --reasoning-effort is chosen in the editor's picker with --stdio\n{USAGE}")
        return 2
    problem = _print_usage_problem(opts)
    if problem:
        from .core.display import terminal_text

        sys.stderr.write(f"mino: {terminal_text(problem)}\n{USAGE}")
        return 2
    if opts["print"] is not None:
        from .oneshot import run_print

        try:
            code = run_print(
                str(opts["print"]),
                resume=opts["resume"],  # type: ignore[arg-type]
                output_format=str(opts["output_format"] or "text"),
                model=opts["model"],  # type: ignore[arg-type]
                base_url=opts["base_url"],  # type: ignore[arg-type]
                mode=opts["mode"],  # type: ignore[arg-type]
                reasoning_effort=opts["reasoning_effort"],  # type: ignore[arg-type]
            )
        except KeyboardInterrupt:  # before or after the turn (during it, Ctrl-C interrupts the turn)
            code = 130
        if as_program:
            _exit_now(code)
        return code
    if opts["acp"]:
        from .acp.app import serve as serve_acp

        return serve_acp(
            opts["mode"],  # type: ignore[arg-type]
            opts["model"],  # type: ignore[arg-type]
            opts["base_url"],  # type: ignore[arg-type]
            opts["reasoning_effort"],  # type: ignore[arg-type]
        )
    if opts["stdio"]:
        from .server.app import serve

        return serve(mode=opts["mode"])  # type: ignore[arg-type]
    from .cli import run_cli

    try:
        code = run_cli(
            opts["model"],  # type: ignore[arg-type]
            opts["base_url"],  # type: ignore[arg-type]
            opts["mode"],  # type: ignore[arg-type]
            opts["reasoning_effort"],  # type: ignore[arg-type]
        )
    except KeyboardInterrupt:
        code = 130
    if as_program:
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End the CLI without the interpreter's teardown: freeing every module costs several ms after
    the last reply, and the OS frees it all anyway. Nothing is lost: session records
    are fsynced as they are written, the store lock is released with the process, and the terminal
    output is flushed here."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    # os._exit skips atexit: what Mino started (a command, an MCP server, what they left) ends here.
    # A module another thread is still importing (the sandbox probe's, on a fast exit) has started
    # nothing yet, and may lack end_all: the exit goes on whatever.
    orphans = sys.modules.get("mino_server.core.tools.orphans")
    if orphans is not None:
        try:
            orphans.end_all()
        except Exception:
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
