/**
 * The Mino editor protocol, version 1 (see PROTOCOL.md at the shared root and the project's own
 * protocol document). Every type of the JSON-RPC contract between `mino --stdio` and this extension
 * lives in this one file; `test/unit/protocolSchema.test.ts` checks it against
 * `docs/protocol.schema.json`.
 *
 * No imports: this module is shared by the extension host, the webview bundle and the tests.
 */

export const PROTOCOL_VERSION = 1;

export type PermissionMode = 'manual' | 'accept-edits' | 'bypass';
export const PERMISSION_MODES: readonly PermissionMode[] = ['manual', 'accept-edits', 'bypass'];

export interface InitializationOptions {
  mode?: PermissionMode;
}

export interface InitializeResult {
  serverInfo: { name: string; version: string };
  capabilities: { experimental: { mino: { protocolVersion: number; maxMessageBytes: number } } };
}

export interface MemoryProblem {
  file: string;
  reason: string;
}

export interface State {
  sessionId: string | null;
  restoreProblem: string | null;
  mode: PermissionMode;
  workdir: string;
  model: string;
  busy: boolean;
  sandbox: string | null;
  memory: { dir: string; count: number; problems: MemoryProblem[] };
}

/**
 * One line of an approval display, `Label: "value"`. `value` is already escaped for display by the
 * server (SPEC §6): shown as is, in quotes, never interpreted.
 */
export interface Field {
  label: string;
  value: string;
}

// ---------------------------------------------------------------------------------------------
// Client -> server requests

export type TurnStatus = 'completed' | 'limit' | 'interrupted' | 'failed';
export type ToolResultStatus = 'completed' | 'denied' | 'failed' | 'invalid_arguments' | 'unknown';

export interface TurnParams {
  text: string;
}
export interface TurnResult {
  /** "" when the turn never started (no session selected, or the chat stopped) */
  turnId: string;
  status: TurnStatus;
  text: string;
  error?: string;
}

export interface CommandParams {
  line: string;
}
export interface CommandResult {
  output: string[];
  state: State;
}

export interface SessionInfo {
  id: string;
  /** ISO 8601, UTC */
  updatedAt: string;
  active: boolean;
}
export interface SessionsListResult {
  sessions: SessionInfo[];
}
export interface SessionsResumeParams {
  id: string;
}
export interface SessionsClearParams {
  id: string;
  typedId: string;
}
export interface SessionsClearResult {
  cleared: boolean;
  state: State;
}
export interface ModeParams {
  mode: PermissionMode;
}
export interface CompactResult {
  compacted: boolean;
  message: string;
}

export type MemoryType = 'user' | 'feedback' | 'project' | 'reference';
export interface MemoryInfo {
  name: string;
  type: MemoryType;
  summary: string;
  details: boolean;
  path: string;
}
export interface MemoryListResult {
  dir: string;
  memories: MemoryInfo[];
  problems: MemoryProblem[];
}

export type HistoryRole = 'user' | 'assistant' | 'tool';
export interface HistoryItem {
  turnId: string | null;
  role: HistoryRole;
  text: string;
  tool?: string;
  status?: ToolResultStatus;
}
export interface HistoryResult {
  items: HistoryItem[];
}

export type EmptyParams = Record<string, never>;

// ---------------------------------------------------------------------------------------------
// Server -> client

export interface ApproveParams {
  turnId: string;
  callId: string;
  tool: string;
  fields: Field[];
  warning: string | null;
  question: string;
  workdir: string;
}
export interface ApproveResult {
  approved: boolean;
}

export interface ConfirmParams {
  kind: 'recovery';
  sessionId: string;
  message: string;
}
export interface ConfirmResult {
  confirmed: boolean;
}

export type ToolDecision = 'run' | 'ask' | 'show';
export type ApprovalOutcome = 'approved' | 'denied' | 'cancelled';

export interface TextDeltaEvent {
  turnId: string;
  type: 'text_delta';
  text: string;
}
export interface AssistantMessageEvent {
  turnId: string;
  type: 'assistant_message';
  text: string;
}
export interface ToolCallEvent {
  turnId: string;
  type: 'tool_call';
  callId: string;
  tool: string;
  fields: Field[];
  /** shown after the fields (e.g. memory_save's warning) */
  warning: string | null;
  decision: ToolDecision;
}
export interface ToolResultEvent {
  turnId: string;
  type: 'tool_result';
  callId: string;
  tool: string;
  status: ToolResultStatus;
  text: string;
}
export interface ApprovalResolvedEvent {
  turnId: string;
  type: 'approval_resolved';
  callId: string;
  outcome: ApprovalOutcome;
}
export interface NoticeEvent {
  /** null for notices outside a turn */
  turnId: string | null;
  type: 'notice';
  text: string;
}
export interface TurnEndEvent {
  turnId: string;
  type: 'turn_end';
  status: TurnStatus;
}
export type MinoEvent =
  | TextDeltaEvent
  | AssistantMessageEvent
  | ToolCallEvent
  | ToolResultEvent
  | ApprovalResolvedEvent
  | NoticeEvent
  | TurnEndEvent;
export type MinoEventType = MinoEvent['type'];

// ---------------------------------------------------------------------------------------------
// Method names and the shape of each method, used by the typed client and by the schema test.

export const Methods = {
  state: 'mino/state',
  turn: 'mino/turn',
  command: 'mino/command',
  sessionsList: 'mino/sessions/list',
  sessionsNew: 'mino/sessions/new',
  sessionsResume: 'mino/sessions/resume',
  sessionsClear: 'mino/sessions/clear',
  mode: 'mino/mode',
  compact: 'mino/compact',
  memoryList: 'mino/memory/list',
  history: 'mino/history',
  // server -> client
  approve: 'mino/approve',
  confirm: 'mino/confirm',
  event: 'mino/event',
  stateChanged: 'mino/stateChanged',
} as const;

/** Client -> server requests: params and result of each. */
export interface ClientRequests {
  'mino/state': [EmptyParams, State];
  'mino/turn': [TurnParams, TurnResult];
  'mino/command': [CommandParams, CommandResult];
  'mino/sessions/list': [EmptyParams, SessionsListResult];
  'mino/sessions/new': [EmptyParams, State];
  'mino/sessions/resume': [SessionsResumeParams, State];
  'mino/sessions/clear': [SessionsClearParams, SessionsClearResult];
  'mino/mode': [ModeParams, State];
  'mino/compact': [EmptyParams, CompactResult];
  'mino/memory/list': [EmptyParams, MemoryListResult];
  'mino/history': [EmptyParams, HistoryResult];
}
/** Server -> client requests. */
export interface ServerRequests {
  'mino/approve': [ApproveParams, ApproveResult];
  'mino/confirm': [ConfirmParams, ConfirmResult];
}
/** Server -> client notifications. */
export interface ServerNotifications {
  'mino/event': MinoEvent;
  'mino/stateChanged': State;
}

/**
 * The fields this extension sends and reads, per method; the schema test compares them with
 * docs/protocol.schema.json. A method has a `result` here when it is a request. What the client
 * sends (the schema says who sends each method): `params` are sent, `result` is read. What the
 * server sends: `params` are read, `result` is sent. Everything read must be
 * required (always present) in the schema; everything sent must exist there, and every field the
 * schema requires must be sent. Keep in step with the interfaces above.
 */
const STATE_FIELDS = ['sessionId', 'restoreProblem', 'mode', 'workdir', 'model', 'busy', 'sandbox', 'memory'];
export const REQUIRED_FIELDS: Record<string, { params: string[]; result?: string[] }> = {
  'mino/state': { params: [], result: STATE_FIELDS },
  'mino/turn': { params: ['text'], result: ['turnId', 'status', 'text'] },
  'mino/command': { params: ['line'], result: ['output', 'state'] },
  'mino/sessions/list': { params: [], result: ['sessions'] },
  'mino/sessions/new': { params: [], result: STATE_FIELDS },
  'mino/sessions/resume': { params: ['id'], result: STATE_FIELDS },
  'mino/sessions/clear': { params: ['id', 'typedId'], result: ['cleared', 'state'] },
  'mino/mode': { params: ['mode'], result: STATE_FIELDS },
  'mino/compact': { params: [], result: ['compacted', 'message'] },
  'mino/memory/list': { params: [], result: ['dir', 'memories', 'problems'] },
  'mino/history': { params: [], result: ['items'] },
  'mino/approve': { params: ['turnId', 'callId', 'tool', 'fields', 'warning', 'question', 'workdir'], result: ['approved'] },
  'mino/confirm': { params: ['kind', 'sessionId', 'message'], result: ['confirmed'] },
  'mino/event': { params: ['turnId', 'type'] },
  'mino/stateChanged': { params: STATE_FIELDS },
};

/** Per event type, the fields the chat reads (all must be required in the schema). */
export const EVENT_FIELDS: Record<MinoEventType, string[]> = {
  text_delta: ['turnId', 'type', 'text'],
  assistant_message: ['turnId', 'type', 'text'],
  tool_call: ['turnId', 'type', 'callId', 'tool', 'fields', 'warning', 'decision'],
  tool_result: ['turnId', 'type', 'callId', 'tool', 'status', 'text'],
  approval_resolved: ['turnId', 'type', 'callId', 'outcome'],
  notice: ['turnId', 'type', 'text'],
  turn_end: ['turnId', 'type', 'status'],
};

/** JSON-RPC error codes the server uses. */
export const ErrorCodes = {
  invalidParams: -32602,
  internal: -32603,
  busy: -32001,
  notInitialized: -32002,
  /** the server cannot serve: store locked by another Mino (`data.kind: "storeLocked"`), bad config, store cannot be opened, start-up failed */
  unavailable: -32003,
  /** a valid request that cannot be done now; nothing changed */
  refused: -32004,
  /** saving the selection or clearing failed: the chat stops */
  storageFailed: -32005,
  requestCancelled: -32800,
} as const;

export interface UnavailableData {
  kind: 'storeLocked' | 'config' | 'storage' | 'startup';
  pid?: number;
}

export const SESSION_ID_RE = /^[0-9a-f]{32}$/;
