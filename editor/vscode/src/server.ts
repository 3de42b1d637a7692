/**
 * Starting, watching and restarting `mino --stdio` through vscode-languageclient.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as readline from 'node:readline';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { MinoClient, errorMessage, type RpcEndpoint } from './client/minoClient';
import { Backoff, classifyExit, launchOptions, resolveCommand, type ExitReason } from './core/launch';
import type { ConnectionView } from './core/messages';
import type { Mode } from './protocol';
import { MODES } from './protocol';

export interface LaunchConfig {
  command: string;
  args: string[];
  env: Record<string, string>;
  mode: Mode | undefined; // undefined: the server uses config.yaml's mode
  cwd: string;
}

export function readLaunchConfig(folder: vscode.WorkspaceFolder): LaunchConfig {
  const cfg = vscode.workspace.getConfiguration('mino', folder.uri);
  const args = cfg.get<unknown>('args');
  const env = cfg.get<unknown>('env');
  const mode = cfg.get<string>('defaultMode', '');
  return {
    command: (cfg.get<string>('command') || 'mino').trim(),
    args: Array.isArray(args) ? args.map(String) : ['--stdio'],
    env:
      env && typeof env === 'object'
        ? Object.fromEntries(Object.entries(env as Record<string, unknown>).map(([k, v]) => [k, String(v)]))
        : {},
    mode: (MODES as readonly string[]).includes(mode) ? (mode as Mode) : undefined,
    cwd: folder.uri.fsPath,
  };
}

const STDERR_TAIL = 40;

export class MinoServer implements vscode.Disposable {
  private lc: LanguageClient | undefined;
  private child: ChildProcess | undefined;
  private minoClient: MinoClient | undefined;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly backoff = new Backoff();
  private startedAt = 0;
  private stderrTail: string[] = [];
  private messages: string[] = [];
  private lastExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private _status: ConnectionView = { status: 'stopped', message: 'Mino has not started yet.' };
  private readonly statusEmitter = new vscode.EventEmitter<ConnectionView>();
  readonly onDidChangeStatus = this.statusEmitter.event;
  private readonly readyEmitter = new vscode.EventEmitter<MinoClient>();
  /** Fires with a fresh client each time the server has started and answered `initialize`. */
  readonly onDidStart = this.readyEmitter.event;
  private readonly goneEmitter = new vscode.EventEmitter<void>();
  /** Fires when a running server went away (crash, exit, stop). */
  readonly onDidStop = this.goneEmitter.event;

  constructor(
    private readonly channel: vscode.LogOutputChannel,
    private readonly folder: () => vscode.WorkspaceFolder | undefined,
    /** Registers the server -> client handlers on a new client before it starts. */
    private readonly wire: (client: MinoClient) => void,
    /** The session this window showed last (kept per workspace): restored at start when it can be. */
    private readonly lastSession: () => string | undefined = () => undefined,
  ) {}

  get status(): ConnectionView {
    return this._status;
  }

  get client(): MinoClient | undefined {
    return this._status.status === 'running' ? this.minoClient : undefined;
  }

  /** The running server's `capabilities.experimental.mino.protocolVersion` (undefined: not running). */
  get protocolVersion(): number | undefined {
    if (this._status.status !== 'running') return undefined;
    const v = (this.lc?.initializeResult?.capabilities?.experimental as { mino?: { protocolVersion?: unknown } } | undefined)?.mino
      ?.protocolVersion;
    return typeof v === 'number' ? v : 1;
  }

  private setStatus(s: ConnectionView): void {
    this._status = s;
    this.statusEmitter.fire(s);
  }

  async start(): Promise<void> {
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    if (this.lc) return;
    const folder = this.folder();
    if (!folder) {
      this.setStatus({ status: 'stopped', message: 'Open a folder to start Mino: it works in the workspace folder.' });
      return;
    }
    const config = readLaunchConfig(folder);
    const env = { ...process.env, ...config.env };
    const resolved = resolveCommand(config.command, env.PATH ?? '', config.cwd);
    if (!resolved.ok) {
      this.fail('missing', resolved.message);
      return;
    }
    this.stopping = false;
    this.stderrTail = [];
    this.messages = [];
    this.lastExit = undefined;
    this.setStatus({ status: 'starting' });
    this.channel.info(`Starting ${resolved.path} ${config.args.join(' ')} in ${config.cwd} (mode ${config.mode ?? 'from config.yaml'})`);

    const serverOptions: ServerOptions = () =>
      new Promise<ChildProcess>((resolve, reject) => {
        const child = spawn(resolved.path, config.args, { cwd: config.cwd, env, stdio: 'pipe' });
        this.child = child;
        child.once('error', reject);
        child.once('spawn', () => resolve(child));
        child.stderr?.setEncoding('utf8');
        child.stderr?.on('data', (d: string) => {
          for (const line of d.split('\n')) if (line.trim()) this.stderrTail.push(line);
          if (this.stderrTail.length > STDERR_TAIL) this.stderrTail.splice(0, this.stderrTail.length - STDERR_TAIL);
        });
        child.once('exit', (code, signal) => {
          this.lastExit = { code, signal };
          this.channel.info(`Mino exited (${signal ? `signal ${signal}` : `code ${code}`})`);
        });
      });

    const channel = this.channel;
    const pipeLines = (input: NodeJS.ReadableStream, level: (line: string) => void) =>
      readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', level);
    const clientOptions: LanguageClientOptions = {
      // the server logs on stderr: keep the level its line says, not "error" for everything
      stdioOptions: {
        stdout: (i) => pipeLines(i, (l) => channel.info(l)),
        stderr: (i) =>
          pipeLines(i, (l) => {
            if (/\b(error|traceback|exception|critical)\b/i.test(l)) channel.error(l);
            else if (/\bwarn(ing)?\b/i.test(l)) channel.warn(l);
            else channel.info(l);
          }),
      },
      documentSelector: [],
      outputChannel: this.channel,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      workspaceFolder: folder,
      initializationOptions: launchOptions(config.mode, this.lastSession()),
      initializationFailedHandler: (e) => {
        this.channel.error(`initialize failed: ${errorMessage(e)}`);
        return false;
      },
      errorHandler: {
        error: (_e, _m, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true }),
        closed: () => {
          void this.onClosed();
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };

    const lc = new LanguageClient('mino', 'Mino', serverOptions, clientOptions);
    this.lc = lc;
    const client = new MinoClient(lc as unknown as RpcEndpoint);
    this.minoClient = client;
    // The server's window/showMessage: shown as usual, and remembered to explain an exit.
    lc.onNotification('window/showMessage', (p: { type: number; message: string }) => {
      const text = String(p?.message ?? '');
      // errors and warnings may explain an exit; an info line (e.g. "… so a new session was started",
      // naming another window's folder) never does
      if (p?.type === 1 || p?.type === 2) this.messages.push(text);
      if (p?.type === 1) {
        this.channel.error(text);
        void vscode.window.showErrorMessage(text, 'Restart Mino', 'Show log').then((c) => {
          if (c === 'Show log') this.channel.show();
          else if (c === 'Restart Mino') void this.restart();
        });
      } else if (p?.type === 2) {
        this.channel.warn(text);
        void vscode.window.showWarningMessage(text, 'Show log').then((c) => c && this.channel.show());
      } else {
        this.channel.info(text);
        void vscode.window.showInformationMessage(text);
      }
    });
    this.wire(client);
    try {
      await lc.start();
    } catch (e) {
      if (this.lc !== lc) return; // stopped meanwhile
      this.lc = undefined;
      this.minoClient = undefined;
      client.dispose();
      const spawnError = e as NodeJS.ErrnoException;
      if (spawnError?.code === 'ENOENT' || spawnError?.code === 'EACCES') {
        this.fail('missing', `Mino could not be started: "${config.command}" was not found or is not executable.`);
      } else {
        await this.afterExit(`Mino did not start: ${errorMessage(e)}`);
      }
      await lc.dispose().catch(() => undefined);
      return;
    }
    if (this.lc !== lc) return;
    this.startedAt = Date.now();
    this.setStatus({ status: 'running' });
    this.readyEmitter.fire(client);
  }

  private async onClosed(): Promise<void> {
    const lc = this.lc;
    if (!lc || this.stopping) return;
    this.lc = undefined;
    this.minoClient?.dispose();
    this.minoClient = undefined;
    this.goneEmitter.fire();
    if (Date.now() - this.startedAt > 60_000) this.backoff.reset();
    await this.afterExit('Mino stopped unexpectedly.');
    void lc.dispose().catch(() => undefined);
  }

  /** Decide, after the process went away, what to tell and whether to restart. */
  private async afterExit(fallback: string): Promise<void> {
    // give the exit event and the last stderr lines a moment to arrive
    await new Promise((r) => setTimeout(r, 200));
    const reason: ExitReason = classifyExit(this.lastExit, this.stderrTail, this.messages, fallback);
    if (reason.kind === 'locked') {
      this.fail('locked', reason.message);
      return;
    }
    const delay = this.backoff.next();
    if (delay === undefined) {
      this.fail('crashed', `${reason.message} It exited several times in a row, so it was not restarted.`);
      return;
    }
    this.setStatus({ status: 'failed', message: `${reason.message} Restarting in ${Math.round(delay / 1000)} s…` });
    void vscode.window.showWarningMessage(`${reason.message} Restarting in ${Math.round(delay / 1000)} s.`, 'Show log').then((c) => {
      if (c) this.channel.show();
    });
    this.restartTimer = setTimeout(() => void this.start(), delay);
  }

  /**
   * The server runs but cannot serve (error -32003: the store is locked by another Mino, the
   * configuration is bad, start-up failed). It has already said why with window/showMessage, so
   * this only records it: the panel and the status bar show it, commands refuse with it, and
   * nothing restarts by itself.
   */
  markUnavailable(message: string): void {
    if (!this.lc) return;
    this.channel.error(`Mino is unavailable: ${message}`);
    this.setStatus({ status: 'failed', message });
  }

  private fail(kind: 'missing' | 'locked' | 'crashed', message: string): void {
    this.setStatus({ status: 'failed', message });
    this.channel.error(message);
    const actions = kind === 'missing' ? ['Open Settings', 'Show log'] : ['Restart', 'Show log'];
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === 'Show log') this.channel.show();
      else if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'mino.command');
      else if (choice === 'Restart') void this.restart();
    });
  }

  async stop(): Promise<void> {
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const lc = this.lc;
    const child = this.child;
    this.lc = undefined;
    if (!lc) return;
    this.stopping = true;
    this.minoClient?.dispose();
    this.minoClient = undefined;
    this.goneEmitter.fire();
    try {
      await lc.stop(4000);
    } catch (e) {
      this.channel.warn(`stop: ${errorMessage(e)}`);
    }
    if (child && child.exitCode === null && child.signalCode === null) child.kill();
    void lc.dispose().catch(() => undefined);
    this.setStatus({ status: 'stopped', message: 'Mino is stopped.' });
  }

  async restart(): Promise<void> {
    this.backoff.reset();
    await this.stop();
    await this.start();
  }

  dispose(): void {
    void this.stop();
    this.statusEmitter.dispose();
    this.readyEmitter.dispose();
    this.goneEmitter.dispose();
  }
}
