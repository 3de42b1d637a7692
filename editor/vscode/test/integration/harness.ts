/**
 * Runs the REAL `mino --stdio` against the scripted Responses-API server, in a temporary MINO_HOME
 * and workspace, through the extension's own client module (src/client).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import assert from 'node:assert/strict';
import { resolveCommand } from '../../src/core/launch';
import { startStdio, type StdioSession } from '../../src/client/stdio';
import type { ApproveHandler } from '../../src/client/minoClient';
import type { ApprovalRequest, Event, Mode, State } from '../../src/protocol';

// out/test/integration -> editor/vscode -> repo root
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..', '..', '..');

/** The mino executable: $MINO_COMMAND, else the repo's .venv, else `mino` on PATH. */
export function findMino(): string | undefined {
  const candidates = [process.env.MINO_COMMAND, path.join(REPO_ROOT, '.venv', 'bin', 'mino'), 'mino'].filter(
    (c): c is string => !!c,
  );
  for (const c of candidates) {
    const r = resolveCommand(c, process.env.PATH ?? '', process.cwd());
    if (r.ok) return r.path;
  }
  return undefined;
}

/** The Python that runs the scripted model: $MINO_PYTHON, else the one beside mino, else python3. */
export function findPython(mino: string): string {
  if (process.env.MINO_PYTHON) return process.env.MINO_PYTHON;
  for (const name of ['python', 'python3']) {
    const p = path.join(path.dirname(mino), name);
    if (fs.existsSync(p)) return p;
  }
  return 'python3';
}

export type Reply = Record<string, unknown>;

export class ScriptedModel {
  private constructor(
    readonly baseUrl: string,
    private readonly proc: ChildProcess,
    private readonly stderr: () => string,
  ) {}

  static async start(python: string, replies: Reply[], dir: string): Promise<ScriptedModel> {
    // JSON is YAML: no YAML library needed here
    const file = path.join(dir, 'replies.yaml');
    fs.writeFileSync(file, JSON.stringify(replies, null, 1));
    const proc = spawn(python, ['-m', 'mino_server.testing.scripted_model', '--replies', file], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONPATH: REPO_ROOT },
    });
    let err = '';
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`scripted model did not start: ${err}`)), 15000);
      proc.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const line = out.split('\n')[0];
        if (out.includes('\n')) {
          clearTimeout(timer);
          resolve(line.trim());
        }
      });
      proc.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`scripted model exited (${code}): ${err}`));
      });
    });
    return new ScriptedModel(url, proc, () => err);
  }

  /** Stops the server; returns the errors it recorded (unexpected or mismatched requests). */
  async stop(): Promise<string> {
    if (this.proc.exitCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGINT');
      const t = setTimeout(() => this.proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    }
    return this.stderr();
  }
}

export interface Mino {
  session: StdioSession;
  home: string;
  workdir: string;
  events: Event[];
  states: State[];
  approvals: ApprovalRequest[];
  /** mino/sessionsChanged notifications received */
  sessionsChanged: number;
  /** what the next mino/approve gets; default: deny */
  approve: ApproveHandler;
  model: ScriptedModel;
  /** Closes Mino and the model; returns what the model printed on stderr (its recorded errors). */
  close(): Promise<string>;
}

export interface MinoOptions {
  mino: string;
  replies: Reply[];
  mode?: Mode;
  home?: string;
  /** initializationOptions.sessionId */
  sessionId?: string;
  /** files to create in the workspace: path relative to it -> content */
  files?: Record<string, string>;
  confirm?: (message: string) => boolean;
}

export async function startMino(opts: MinoOptions): Promise<Mino> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mino-it-'));
  const home = opts.home ?? path.join(root, 'home');
  const workdir = path.join(root, 'ws');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  fs.mkdirSync(workdir);
  fs.writeFileSync(path.join(workdir, 'README.md'), '# test workspace\n');
  for (const [rel, text] of Object.entries(opts.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(workdir, rel)), { recursive: true });
    fs.writeFileSync(path.join(workdir, rel), text);
  }
  const model = await ScriptedModel.start(findPython(opts.mino), opts.replies, root);
  const m: Partial<Mino> = { home, workdir, events: [], states: [], approvals: [], sessionsChanged: 0, model };
  m.approve = () => Promise.resolve(false);
  let session: StdioSession;
  try {
    session = await startStdio({
      command: opts.mino,
      args: ['--stdio'],
      cwd: workdir,
      mode: opts.mode ?? 'manual',
      sessionId: opts.sessionId,
      env: {
        MINO_HOME: home,
        MINO_BASE_URL: model.baseUrl,
        MINO_API_KEY: 'test',
        MINO_MODEL: 'scripted',
        OPENAI_API_KEY: undefined,
      },
      wire: (client) => {
        client.onEvent((e) => m.events!.push(e));
        client.onStateChanged((s) => m.states!.push(s));
        client.onSessionsChanged(() => (m.sessionsChanged! += 1));
        client.onApprove((p, token) => {
          m.approvals!.push(p);
          return m.approve!(p, token);
        });
        client.onConfirm((p) => Promise.resolve(opts.confirm ? opts.confirm(p.message) : false));
      },
    });
  } catch (e) {
    await model.stop();
    throw e;
  }
  m.session = session;
  m.close = async () => {
    await session.close();
    const errors = await model.stop();
    fs.rmSync(root, { recursive: true, force: true });
    return errors;
  };
  return m as Mino;
}

/** The mino executable the integration tests run; without one they are skipped (T). */
export const MINO = findMino();
export const T = {
  timeout: 60_000,
  skip: MINO ? false : 'no mino executable found (set MINO_COMMAND, or install the Python package into .venv)',
};

/** Runs `fn` against a Mino started as `opts` says, closes it after, and fails if the scripted model
 * recorded errors (a request it did not expect, a `require` not met). */
export async function withMino(opts: Omit<MinoOptions, 'mino'>, fn: (m: Mino) => Promise<void>): Promise<void> {
  const m = await startMino({ mino: MINO!, ...opts });
  let modelErrors: string;
  try {
    await fn(m);
  } finally {
    modelErrors = await m.close();
  }
  assert.ok(!/error:/.test(modelErrors), `the scripted model recorded errors:\n${modelErrors}`);
}

export function until<T>(fn: () => T | undefined | false, timeoutMs = 10000, what = 'condition'): Promise<T> {
  const end = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = () => {
      const v = fn();
      if (v) return resolve(v);
      if (Date.now() > end) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}
