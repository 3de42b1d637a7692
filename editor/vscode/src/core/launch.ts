/** Pure helpers for starting the server: find the command, explain an exit, back off restarts. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SESSION_ID_RE, type InitializationOptions, type Mode } from '../protocol';

export type Resolved = { ok: true; path: string } | { ok: false; message: string };

function isExecutableFile(p: string): boolean {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) return false;
    if (process.platform === 'win32') return true;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Finds `command` like a shell would (absolute, relative to `cwd`, or on `PATH`). */
export function resolveCommand(command: string, pathVar: string, cwd: string): Resolved {
  const cmd = command.trim();
  if (!cmd) return { ok: false, message: 'Mino could not be started: the setting "mino.command" is empty.' };
  const exts = process.platform === 'win32' ? ['', '.exe', '.cmd', '.bat'] : [''];
  if (cmd.includes('/') || (process.platform === 'win32' && cmd.includes('\\'))) {
    const p = path.resolve(cwd, cmd);
    for (const e of exts) if (isExecutableFile(p + e)) return { ok: true, path: p + e };
    return {
      ok: false,
      message: `Mino could not be started: "${cmd}" does not exist or is not executable. Install Mino or set "mino.command".`,
    };
  }
  for (const dir of pathVar.split(path.delimiter)) {
    if (!dir) continue;
    for (const e of exts) {
      const p = path.join(dir, cmd + e);
      if (isExecutableFile(p)) return { ok: true, path: p };
    }
  }
  return {
    ok: false,
    message: `Mino could not be started: the command "${cmd}" was not found on PATH. Install Mino (pip install mino) or set "mino.command" to its full path.`,
  };
}

export type ExitReason = { kind: 'locked' | 'exited'; message: string };

const LOCK_RE = /\b(in use|locked|sessions\.lock)\b/i;

/**
 * Why the server went away. The store lock is special: another Mino holds it, so restarting
 * would only fail again; the server says so on stderr or in window/showMessage.
 */
export function classifyExit(
  exit: { code: number | null; signal: string | null } | undefined,
  stderrTail: string[],
  messages: string[],
  fallback: string,
): ExitReason {
  const said = [...messages, ...stderrTail].reverse().find((l) => LOCK_RE.test(l));
  if (said) {
    return {
      kind: 'locked',
      message: `Mino's session store is in use by another Mino process: ${said.trim()} Close the other Mino (another window or a terminal), then restart.`,
    };
  }
  const how = exit ? (exit.signal ? ` (signal ${exit.signal})` : ` (exit code ${exit.code})`) : '';
  // the last line that says what went wrong (not a traceback frame, not ordinary start-up chatter)
  const last = [...stderrTail]
    .reverse()
    .find((l) => /(error|exception|fatal|failed|cannot|could not)/i.test(l) && !/^\s*(File "|Traceback|\^)/.test(l));
  return { kind: 'exited', message: `${fallback.replace(/\.$/, '')}${how}.${last ? ` Last message: ${last.trim()}` : ''}` };
}

/** Restart delays: 1 s, 2 s, 4 s, 8 s, 16 s, then give up until `reset()`. */
export class Backoff {
  private attempt = 0;
  constructor(private readonly delays: number[] = [1000, 2000, 4000, 8000, 16000]) {}
  next(): number | undefined {
    if (this.attempt >= this.delays.length) return undefined;
    return this.delays[this.attempt++];
  }
  reset(): void {
    this.attempt = 0;
  }
}

/**
 * `initializationOptions`: the start-up mode, and the session to restore (a version-1 server ignores
 * the field and restores by its start-up table, as before).
 */
export function launchOptions(mode: Mode | undefined, sessionId: string | undefined): InitializationOptions {
  const o: InitializationOptions = {};
  if (mode) o.mode = mode;
  if (sessionId && SESSION_ID_RE.test(sessionId)) o.sessionId = sessionId;
  return o;
}
