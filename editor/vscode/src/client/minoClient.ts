/**
 * The typed JSON-RPC side of the extension: everything that speaks the Mino protocol. It has no
 * `vscode` import, so it runs unchanged over a LanguageClient (in the extension host) or over a
 * plain vscode-jsonrpc connection to a child process (in the integration tests).
 */
import type {
  ApprovalRequest,
  ApproveResult,
  ClearResult,
  ClientRequests,
  CommandResult,
  CompactResult,
  Checkpoints,
  Effort,
  ConfirmParams,
  RewindResult,
  ConfirmResult,
  ContextItem,
  ImageItem,
  Event,
  FileList,
  History,
  HistoryParams,
  MemoryList,
  RuleDeleteResult,
  RuleList,
  Mode,
  SessionList,
  State,
  TurnResult,
} from '../protocol';
import { Methods } from '../protocol';

/** The cancellation token shape shared by vscode, vscode-jsonrpc and vscode-languageclient. */
export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): { dispose(): unknown };
}

export interface DisposableLike {
  dispose(): unknown;
}

/** What both `LanguageClient` and vscode-jsonrpc's `MessageConnection` provide. */
export interface RpcEndpoint {
  sendRequest<R>(method: string, params: unknown, token?: CancellationTokenLike): Promise<R>;
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  onRequest(method: string, handler: (params: never, token: CancellationTokenLike) => unknown): DisposableLike;
  onNotification(method: string, handler: (params: never) => void): DisposableLike;
}

/** true: yes; 'always': yes, and keep the rules the request offers (`always`); anything else: no. */
export type ApproveHandler = (params: ApprovalRequest, token: CancellationTokenLike) => Promise<boolean | 'always'>;
export type ConfirmHandler = (params: ConfirmParams, token: CancellationTokenLike) => Promise<boolean>;

/** A JSON-RPC error as thrown by vscode-jsonrpc (`ResponseError`) or the language client. */
export interface RpcErrorLike {
  code: number;
  message: string;
  data?: unknown;
}

export function isRpcError(e: unknown): e is RpcErrorLike {
  return typeof e === 'object' && e !== null && typeof (e as RpcErrorLike).code === 'number' && typeof (e as RpcErrorLike).message === 'string';
}

/** A message a person can read, from whatever a request rejected with. */
export function errorMessage(e: unknown): string {
  if (isRpcError(e)) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Minimal shape check of an approval request, so a malformed one is denied, never shown half. */
export function isApprovalRequest(p: unknown): p is ApprovalRequest {
  if (!isObject(p)) return false;
  if (typeof p.callId !== 'string' || typeof p.tool !== 'string' || typeof p.turnId !== 'string') return false;
  if (typeof p.question !== 'string' || typeof p.workdir !== 'string') return false;
  if (!(p.warning === null || p.warning === undefined || typeof p.warning === 'string')) return false;
  if (!Array.isArray(p.fields)) return false;
  return p.fields.every((f) => isObject(f) && typeof f.label === 'string' && typeof f.value === 'string');
}

export function isEvent(e: unknown): e is Event {
  return isObject(e) && typeof e.type === 'string' && (typeof e.turnId === 'string' || e.turnId === null);
}

export class MinoClient {
  private readonly disposables: DisposableLike[] = [];

  constructor(private readonly rpc: RpcEndpoint) {}

  private request<M extends keyof ClientRequests>(
    method: M,
    params: ClientRequests[M]['params'],
    token?: CancellationTokenLike,
  ): Promise<ClientRequests[M]['result']> {
    // Never pass an undefined token: vscode-jsonrpc would send [params, null] as positional params.
    return token
      ? this.rpc.sendRequest<ClientRequests[M]['result']>(method, params, token)
      : this.rpc.sendRequest<ClientRequests[M]['result']>(method, params);
  }

  state(): Promise<State> {
    return this.request(Methods.state, {});
  }
  /**
   * Runs a turn; cancelling `token` sends `$/cancelRequest`, and the server interrupts the turn.
   * `context`: files or lines attached to it (protocol 2; left out when there are none).
   */
  turn(text: string, token?: CancellationTokenLike, context?: ContextItem[], images?: ImageItem[]): Promise<TurnResult> {
    const params: { text: string; context?: ContextItem[]; images?: ImageItem[] } = { text };
    if (context?.length) params.context = context;
    if (images?.length) params.images = images;
    return this.request(Methods.turn, params, token);
  }
  command(line: string): Promise<CommandResult> {
    return this.request(Methods.command, { line });
  }
  listSessions(): Promise<SessionList> {
    return this.request(Methods.sessionsList, {});
  }
  newSession(): Promise<State> {
    return this.request(Methods.sessionsNew, {});
  }
  resumeSession(id: string): Promise<State> {
    return this.request(Methods.sessionsResume, { id });
  }
  clearSession(id: string, typedId: string): Promise<ClearResult> {
    return this.request(Methods.sessionsClear, { id, typedId });
  }
  setMode(mode: Mode): Promise<State> {
    return this.request(Methods.mode, { mode });
  }
  /** null: no reasoning settings are sent (the model's default). */
  setReasoningEffort(effort: Effort | null): Promise<State> {
    return this.request(Methods.reasoning, { effort });
  }
  /** Cancelling `token` stops the summary request ("Compaction interrupted; history is unchanged."). */
  compact(token?: CancellationTokenLike): Promise<CompactResult> {
    return this.request(Methods.compact, {}, token);
  }
  listMemories(): Promise<MemoryList> {
    return this.request(Methods.memoryList, {});
  }
  /** The remembered decisions (protocol 4). */
  listRules(): Promise<RuleList> {
    return this.request(Methods.rules, {});
  }
  deleteRule(id: string): Promise<RuleDeleteResult> {
    return this.request(Methods.rulesDelete, { id });
  }
  /** Workspace files for `@` completion (protocol 2). */
  files(prefix: string): Promise<FileList> {
    return this.request(Methods.files, { prefix });
  }
  /** The turns that changed files and can be rewound (protocol 3). */
  checkpoints(): Promise<Checkpoints> {
    return this.request(Methods.checkpoints, {});
  }
  /** Rewinds to before the turn `turnId`; the server asks first (`mino/confirm` kind rewind). */
  rewind(turnId: string): Promise<RewindResult> {
    return this.request(Methods.rewind, { turnId });
  }
  /** `{}`: the latest page; `{before}`: the page before the item with that seq. */
  history(params: HistoryParams = {}): Promise<History> {
    return this.request(Methods.history, params);
  }

  onEvent(handler: (e: Event) => void): DisposableLike {
    return this.keep(
      this.rpc.onNotification(Methods.event, ((params: unknown) => {
        if (isEvent(params)) handler(params);
      })),
    );
  }

  onStateChanged(handler: (s: State) => void): DisposableLike {
    return this.keep(
      this.rpc.onNotification(Methods.stateChanged, ((params: unknown) => {
        if (isObject(params)) handler(params as unknown as State);
      })),
    );
  }

  /** Another window (or terminal) on this MINO_HOME created, cleared, opened or closed a session. */
  onSessionsChanged(handler: () => void): DisposableLike {
    return this.keep(this.rpc.onNotification(Methods.sessionsChanged, (() => handler())));
  }

  /**
   * Answers `mino/approve`. Anything but an explicit `true` from the handler is a denial: a
   * malformed request, a handler that throws, a cancelled request.
   */
  onApprove(handler: ApproveHandler): DisposableLike {
    return this.keep(
      this.rpc.onRequest(Methods.approve, (async (params: unknown, token: CancellationTokenLike): Promise<ApproveResult> => {
        if (!isApprovalRequest(params)) return { approved: false };
        try {
          const answer = await handler(params, token);
          const approved = (answer === true || answer === 'always') && !token.isCancellationRequested;
          // `always` keeps the offered rules for the project: only with a yes, only where offered.
          return approved && answer === 'always' && params.always ? { approved, always: true } : { approved };
        } catch {
          return { approved: false };
        }
      })),
    );
  }

  /** Answers `mino/confirm`; anything but an explicit `true` is a no. */
  onConfirm(handler: ConfirmHandler): DisposableLike {
    return this.keep(
      this.rpc.onRequest(Methods.confirm, (async (params: unknown, token: CancellationTokenLike): Promise<ConfirmResult> => {
        if (!isObject(params) || typeof params.message !== 'string') return { confirmed: false };
        try {
          const confirmed = await handler(params as unknown as ConfirmParams, token);
          return { confirmed: confirmed === true && !token.isCancellationRequested };
        } catch {
          return { confirmed: false };
        }
      })),
    );
  }

  private keep(d: DisposableLike): DisposableLike {
    this.disposables.push(d);
    return d;
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) {
      try {
        d.dispose();
      } catch {
        /* already gone */
      }
    }
  }
}
