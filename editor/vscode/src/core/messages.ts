/**
 * Messages between the chat webview and the extension host, and the items the chat shows.
 * Pure and shared by both sides; every message coming from the webview is validated by
 * `parseWebviewMessage` before the host acts on it.
 */
import type { ApprovalField, Decision, Outcome, State } from '../protocol';

export interface ApprovalView {
  /** The broker's unguessable key; the webview answers with it. */
  key: string;
  fields: ApprovalField[];
  warning: string | null;
  question: string;
  workdir: string;
  state: 'pending' | Outcome;
  /** where a rule can cover the call: what Always in this project keeps (escaped by the server) */
  always?: { rules: string[]; project: string } | null;
}

export type ChatItem =
  | {
      kind: 'user';
      id: string;
      text: string;
      /** the context chips sent with it */
      context?: string[];
      /** its turn, once known (history, or the turn's answer) */
      turnId?: string;
      /** its turn changed files that can be rewound: the message offers "Rewind to here" */
      rewind?: boolean;
      /** /rewind took its turn back: later requests no longer send it */
      rewound?: boolean;
    }
  | {
      kind: 'assistant';
      id: string;
      turnId: string;
      text: string;
      streaming: boolean;
      /** the person interrupted this answer: the text is what had streamed (history) */
      interrupted?: boolean;
    }
  | {
      kind: 'tool';
      id: string;
      turnId: string;
      callId: string;
      tool: string;
      fields: ApprovalField[];
      warning?: string | null;
      decision?: Decision;
      approval?: ApprovalView;
      status?: string;
      result?: string;
      /** the call carried a file diff: the card offers "Open diff" */
      hasDiff?: boolean;
    }
  | { kind: 'notice'; id: string; level: 'info' | 'warning' | 'error'; text: string }
  /** what the model was thinking (a reasoning summary): a collapsed block, never the answer */
  | { kind: 'thinking'; id: string; turnId: string; text: string }
  | { kind: 'command'; id: string; line: string; output: string[] };

/** A context chip as the panel shows it (its text stays in the extension host). */
export interface ChipView {
  id: string;
  /** `app.py:10-20` */
  label: string;
  /** the whole path, and where the text comes from */
  title: string;
  /** an image chip */
  kind?: 'image';
}

export type Patch =
  | { op: 'upsert'; item: ChatItem }
  | { op: 'delta'; id: string; text: string }
  | { op: 'remove'; id: string }
  /** Items of an earlier history page, in order, to go above the first item. */
  | { op: 'prepend'; items: ChatItem[] };

/** Whether an earlier page of history exists above the first item, and whether it is loading. */
export interface EarlierView {
  more: boolean;
  loading: boolean;
}

export type ConnectionStatus = 'starting' | 'running' | 'stopped' | 'failed';

export interface ConnectionView {
  status: ConnectionStatus;
  message?: string;
}

export type HostToWebview =
  | {
      type: 'snapshot';
      items: ChatItem[];
      state: State | null;
      connection: ConnectionView;
      turnRunning: boolean;
      earlier: EarlierView;
    }
  | { type: 'patch'; patches: Patch[] }
  | { type: 'earlier'; earlier: EarlierView }
  | { type: 'state'; state: State | null }
  | { type: 'connection'; connection: ConnectionView }
  | { type: 'turn'; running: boolean }
  | { type: 'focusApproval'; key: string }
  /** the chips of the next message */
  | { type: 'context'; chips: ChipView[] }
  /** the answer to an `@` completion request */
  | { type: 'files'; requestId: number; paths: string[] }
  | { type: 'focusInput' };

/** Commands the webview may ask the host to run (the restore-problem and connection buttons). */
export const WEBVIEW_COMMANDS = [
  'mino.resumeSession',
  'mino.newSession',
  'mino.showLog',
  'mino.restartServer',
  'mino.openSettings',
  'mino.openFirstRun',
] as const;
export type WebviewCommand = (typeof WEBVIEW_COMMANDS)[number];

export type WebviewToHost =
  | { type: 'ready' }
  | { type: 'submit'; text: string }
  | { type: 'stop' }
  | { type: 'approval'; key: string; approved: boolean; always?: boolean }
  | { type: 'removeContext'; id: string }
  /** `@` completion: files whose path or name starts with `prefix` */
  | { type: 'files'; requestId: number; prefix: string }
  /** a completed path the `@` syntax cannot spell (white space): attach it as a chip */
  | { type: 'attachFile'; path: string }
  /** an image pasted or chosen in the panel: its bytes in base64 */
  | { type: 'attachImage'; name: string; mimeType: string; data: string }
  | { type: 'openDiff'; turnId: string; callId: string }
  | { type: 'rewind'; turnId: string }
  | { type: 'command'; command: WebviewCommand }
  /** The person scrolled to the top (or pressed the button there): show the page before. */
  | { type: 'loadEarlier' };

/** Every type of message the webview sends; the record makes the compiler keep it equal to `WebviewToHost`. */
const MESSAGE_TYPES: Record<WebviewToHost['type'], true> = {
  ready: true,
  submit: true,
  stop: true,
  approval: true,
  removeContext: true,
  files: true,
  attachFile: true,
  attachImage: true,
  openDiff: true,
  rewind: true,
  command: true,
  loadEarlier: true,
};
export const WEBVIEW_MESSAGE_TYPES = Object.keys(MESSAGE_TYPES) as readonly WebviewToHost['type'][];

/** Images: PNG, JPEG, GIF or WebP (the server checks their bytes), at most 5 MiB each and 8 a message. */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const MAX_IMAGES = 8;

/** Why an image is refused, worded once for the panel (before reading it) and the host (after). */
export function imageTypeRefused(name: string): string {
  return `${name} is not a PNG, JPEG, GIF or WebP image; Mino can attach only those.`;
}
export function imageSizeRefused(name: string, bytes: number): string {
  const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  return `${name} is ${mib(bytes)}; Mino takes images of at most ${mib(MAX_IMAGE_BYTES)}.`;
}

const MAX_INPUT = 1_000_000;
/** base64 of a little more than the server's 5 MiB an image: a bigger one is refused by its size */
const MAX_IMAGE_DATA = 8 * 1024 * 1024;

/** Validates a message from the webview; anything unexpected is dropped (undefined). */
export function parseWebviewMessage(m: unknown): WebviewToHost | undefined {
  if (typeof m !== 'object' || m === null) return undefined;
  const o = m as Record<string, unknown>;
  switch (o.type) {
    case 'ready':
      return { type: 'ready' };
    case 'stop':
      return { type: 'stop' };
    case 'loadEarlier':
      return { type: 'loadEarlier' };
    case 'submit':
      return typeof o.text === 'string' && o.text.length <= MAX_INPUT ? { type: 'submit', text: o.text } : undefined;
    case 'removeContext':
      return typeof o.id === 'string' && o.id.length <= 100 ? { type: 'removeContext', id: o.id } : undefined;
    case 'files':
      return Number.isSafeInteger(o.requestId) && typeof o.prefix === 'string' && o.prefix.length <= 4096
        ? { type: 'files', requestId: o.requestId as number, prefix: o.prefix }
        : undefined;
    case 'attachFile':
      return typeof o.path === 'string' && o.path !== '' && o.path.length <= 4096 ? { type: 'attachFile', path: o.path } : undefined;
    case 'attachImage':
      return typeof o.name === 'string' &&
        o.name.length <= 200 &&
        typeof o.mimeType === 'string' &&
        o.mimeType.length <= 100 &&
        typeof o.data === 'string' &&
        o.data.length <= MAX_IMAGE_DATA &&
        /^[A-Za-z0-9+/]*={0,2}$/u.test(o.data)
        ? { type: 'attachImage', name: o.name, mimeType: o.mimeType, data: o.data }
        : undefined;
    case 'openDiff':
      return typeof o.turnId === 'string' && typeof o.callId === 'string' && o.callId !== ''
        ? { type: 'openDiff', turnId: o.turnId, callId: o.callId }
        : undefined;
    case 'rewind':
      return typeof o.turnId === 'string' && /^[0-9a-f]{1,64}$/u.test(o.turnId) ? { type: 'rewind', turnId: o.turnId } : undefined;
    case 'approval':
      // strictly a boolean: a missing or truthy-but-not-true value is not an approval
      // `always` strictly true too: the panel's Always in this project
      return typeof o.key === 'string' && typeof o.approved === 'boolean'
        ? { type: 'approval', key: o.key, approved: o.approved, ...(o.approved && o.always === true ? { always: true } : {}) }
        : undefined;
    case 'command':
      return typeof o.command === 'string' && (WEBVIEW_COMMANDS as readonly string[]).includes(o.command)
        ? { type: 'command', command: o.command as WebviewCommand }
        : undefined;
    default:
      return undefined;
  }
}

/** What the text typed in the chat box means. */
export type InputAction =
  | { kind: 'empty' }
  | { kind: 'clear' }
  | { kind: 'command'; line: string }
  | { kind: 'turn'; text: string };

export function classifyInput(raw: string): InputAction {
  const text = raw.replace(/\s+$/u, '');
  if (text.trim() === '') return { kind: 'empty' };
  const first = text.trimStart();
  if (first.startsWith('/')) {
    const line = first.trim();
    // The server cannot prompt for the typed ID, so /clear runs the Clear Session command, which asks.
    if (/^\/clear(\s|$)/u.test(line)) return { kind: 'clear' };
    return { kind: 'command', line };
  }
  return { kind: 'turn', text };
}
