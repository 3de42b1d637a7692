/**
 * Start `mino --stdio` as a child process and speak the protocol over a plain vscode-jsonrpc
 * connection (LSP base framing). Used by the integration tests; no `vscode` import.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import * as path from 'node:path';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import { MinoClient, type RpcEndpoint } from './minoClient';
import { launchOptions } from '../core/launch';
import type { InitializeResult, Mode } from '../protocol';

export interface StdioOptions {
  command: string;
  args?: string[];
  env?: Record<string, string | undefined>;
  cwd: string;
  mode?: Mode;
  /** initializationOptions.sessionId: the session a reloaded window showed */
  sessionId?: string;
  /** Called with every stderr chunk (the server logs there). */
  onStderr?: (text: string) => void;
  /** Registers handlers before `initialize` (a `mino/confirm` may come during start-up). */
  wire?: (client: MinoClient) => void;
}

export interface StdioSession {
  client: MinoClient;
  connection: MessageConnection;
  process: ChildProcessWithoutNullStreams;
  initializeResult: InitializeResult;
  stderr(): string;
  /** shutdown + exit, then wait for the process (kills it after `timeoutMs`). Returns the exit code. */
  close(timeoutMs?: number): Promise<number | null>;
}

export function initializeParams(cwd: string, mode?: Mode, sessionId?: string): Record<string, unknown> {
  const uri = pathToFileURL(cwd).toString();
  return {
    processId: process.pid,
    clientInfo: { name: 'mino-vscode-tests' },
    rootUri: uri,
    workspaceFolders: [{ uri, name: path.basename(cwd) }],
    capabilities: {},
    initializationOptions: launchOptions(mode, sessionId),
  };
}

/** Spawn, connect, `initialize` + `initialized`. Rejects (and kills the child) on failure. */
export async function startStdio(opts: StdioOptions): Promise<StdioSession> {
  const child = spawn(opts.command, opts.args ?? ['--stdio'], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    stderr += d;
    opts.onStderr?.(d);
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => resolve(code));
    child.on('error', () => resolve(null));
  });
  const spawnError = new Promise<never>((_, reject) => child.on('error', reject));

  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const client = new MinoClient(connection as unknown as RpcEndpoint);
  opts.wire?.(client);
  connection.listen();

  let initializeResult: InitializeResult;
  try {
    initializeResult = await Promise.race([
      connection.sendRequest<InitializeResult>('initialize', initializeParams(opts.cwd, opts.mode, opts.sessionId)),
      spawnError,
      exited.then((code) => {
        throw new Error(`mino exited (code ${code}) before answering initialize:\n${stderr}`);
      }),
    ]);
    await connection.sendNotification('initialized', {});
  } catch (e) {
    child.kill('SIGKILL');
    connection.dispose();
    throw e;
  }

  return {
    client,
    connection,
    process: child,
    initializeResult,
    stderr: () => stderr,
    async close(timeoutMs = 5000) {
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        await Promise.race([connection.sendRequest('shutdown'), exited]);
        await connection.sendNotification('exit');
      } catch {
        /* already gone */
      }
      child.stdin.end();
      const code = await exited;
      clearTimeout(timer);
      connection.dispose();
      client.dispose();
      return code;
    },
  };
}
