/**
 * The chat transcript kept by the extension host: the source of truth the webview mirrors. It is
 * rebuilt from the latest page of `mino/history` (window reload, session switch), grows upwards by
 * earlier pages as the person scrolls up, and is updated by `mino/event`s and approvals. Every
 * change goes out as a list of patches. Pure: no `vscode` import.
 */
import type { ApprovalRequest, Event, History, HistoryItem, Outcome } from '../protocol';
import type { ApprovalView, ChatItem, Patch } from './messages';
import { isFileDiff } from './diffs';

type ToolItem = Extract<ChatItem, { kind: 'tool' }>;
type AssistantItem = Extract<ChatItem, { kind: 'assistant' }>;

export const MAX_ITEMS = 2000;
/** Items per `mino/history` page the panel asks for (the server's default). */
export const PAGE_SIZE = 200;

/** The page above the first item: whether there is one, and the `before` to ask for it with
 *  (null: the items shown no longer say where they start, so the latest page is loaded again). */
export interface Earlier {
  more: boolean;
  before: number | null;
}

type Page = Pick<History, 'items'> & { more?: boolean };

export class Transcript {
  private items: ChatItem[] = [];
  private readonly byId = new Map<string, ChatItem>();
  /** turnId -> id of the assistant item that text_deltas currently append to */
  private readonly openText = new Map<string, string>();
  private seq = 0;
  /** The log record (seq) behind each item that came from `mino/history`; live items have none. */
  private readonly seqs = new Map<string, number>();
  /** Live items push the oldest out beyond this many; earlier pages the person asked for raise it. */
  private limit = MAX_ITEMS;
  private earlierMore = false;
  private earlierBefore: number | null = null;
  private gen = 0;

  constructor(
    private readonly emit: (patches: Patch[]) => void = () => {},
    /** The answer of `earlier()` may have changed (not called for reset/loadHistory: a snapshot follows). */
    private readonly onEarlier: () => void = () => {},
  ) {}

  snapshot(): ChatItem[] {
    return this.items.map((i) => structuredClone(i));
  }

  private nextId(prefix: string): string {
    this.seq += 1;
    return `${prefix}-${this.seq}`;
  }

  private put(item: ChatItem, patches: Patch[]): void {
    if (!this.byId.has(item.id)) {
      this.items.push(item);
      if (this.items.length > this.limit) {
        const dropped = this.items.splice(0, this.items.length - this.limit);
        for (const d of dropped) {
          this.byId.delete(d.id);
          patches.push({ op: 'remove', id: d.id });
        }
        this.trimmed(dropped);
      }
    } else {
      const idx = this.items.findIndex((i) => i.id === item.id);
      this.items[idx] = item;
    }
    this.byId.set(item.id, item);
    patches.push({ op: 'upsert', item: structuredClone(item) });
  }

  /** Replace everything; the caller sends a snapshot. */
  reset(items: ChatItem[]): void {
    this.items = [];
    this.byId.clear();
    this.openText.clear();
    this.seqs.clear();
    this.limit = MAX_ITEMS;
    this.earlierMore = false;
    this.earlierBefore = null;
    this.gen += 1;
    for (const i of items) {
      this.items.push(i);
      this.byId.set(i.id, i);
    }
  }

  /** Replace everything by the latest page of `mino/history`; the caller sends a snapshot. */
  loadHistory(page: Page): void {
    const pairs = this.historyItems(Array.isArray(page.items) ? page.items : []);
    this.reset(pairs.map(([item]) => item));
    for (const [item, seq] of pairs) if (seq !== undefined) this.seqs.set(item.id, seq);
    this.setEarlier(page.more === true, pairs[0]?.[1]);
  }

  /** Changes with every reset: a page asked for under another generation belongs to what was shown then. */
  get generation(): number {
    return this.gen;
  }

  earlier(): Earlier {
    return { more: this.earlierMore, before: this.earlierBefore };
  }

  /** An earlier page, asked for with `earlier().before` in `generation`: its items go above the
   *  first item. Returns false (and changes nothing) when it no longer fits what is shown. */
  prependHistory(page: Page, generation: number): boolean {
    const bound = this.earlierBefore;
    if (generation !== this.gen || bound === null) return false;
    // Only what lies above the first item: a page never shows an item twice.
    const pairs = this.historyItems(Array.isArray(page.items) ? page.items : []).filter(
      ([, seq]) => seq !== undefined && seq < bound,
    );
    if (pairs.length) {
      const fresh = pairs.map(([item]) => item);
      this.items.unshift(...fresh);
      for (const [item, seq] of pairs) {
        this.byId.set(item.id, item);
        this.seqs.set(item.id, seq!);
      }
      this.limit = Math.max(this.limit, this.items.length); // what the person scrolled up to stays
      this.emit([{ op: 'prepend', items: fresh.map((i) => structuredClone(i)) }]);
    }
    this.setEarlier(page.more === true, pairs[0]?.[1]);
    this.onEarlier();
    return true;
  }

  /** Items from `mino/history`. */
  fromHistory(history: HistoryItem[]): ChatItem[] {
    return this.historyItems(history).map(([item]) => item);
  }

  private historyItems(history: HistoryItem[]): [ChatItem, number | undefined][] {
    const out: [ChatItem, number | undefined][] = [];
    for (const h of history) {
      const text = typeof h.text === 'string' ? h.text : '';
      const seq = Number.isSafeInteger(h.seq) ? h.seq : undefined;
      if (h.role === 'user')
        out.push([
          {
            kind: 'user',
            id: this.nextId('h'),
            text,
            ...(h.turnId ? { turnId: h.turnId } : {}),
            ...(h.rewound === true ? { rewound: true } : {}),
          },
          seq,
        ]);
      else if (h.role === 'assistant')
        out.push([
          {
            kind: 'assistant',
            id: this.nextId('h'),
            turnId: h.turnId ?? '',
            text,
            streaming: false,
            ...(h.interrupted === true ? { interrupted: true } : {}),
          },
          seq,
        ]);
      else if (h.role === 'tool')
        out.push([
          {
            kind: 'tool',
            id: this.nextId('h'),
            turnId: h.turnId ?? '',
            callId: '',
            tool: h.tool ?? 'tool',
            fields: [],
            status: h.status,
            result: text,
          },
          seq,
        ]);
    }
    return out;
  }

  /** More exists only above an item whose seq is known: without one there is nothing to ask with. */
  private setEarlier(more: boolean, firstSeq: number | undefined): void {
    this.earlierMore = more && firstSeq !== undefined;
    this.earlierBefore = this.earlierMore ? firstSeq! : null;
  }

  /** The oldest items went (the transcript is full): what they showed is now the page above. */
  private trimmed(dropped: ChatItem[]): void {
    let lastSeq: number | undefined;
    let liveLost = false;
    for (const d of dropped) {
      const seq = this.seqs.get(d.id);
      this.seqs.delete(d.id);
      if (seq !== undefined) lastSeq = seq;
      else if (d.kind === 'user' || d.kind === 'assistant' || d.kind === 'tool') liveLost = true; // in the log, seq unknown
    }
    if (lastSeq === undefined && !liveLost) return; // only notices and command output: not in the log
    this.earlierMore = true;
    if (liveLost) {
      this.earlierBefore = null;
    } else {
      const first = this.items.find((i) => this.seqs.has(i.id));
      this.earlierBefore = first ? this.seqs.get(first.id)! : lastSeq! + 1;
    }
    this.onEarlier();
  }

  /** What the person sent; `context`: the labels of the chips that went with it. */
  addUser(text: string, context?: string[]): void {
    const patches: Patch[] = [];
    this.put({ kind: 'user', id: this.nextId('u'), text, ...(context?.length ? { context: [...context] } : {}) }, patches);
    this.emit(patches);
  }

  addNotice(text: string, level: 'info' | 'warning' | 'error' = 'info'): void {
    const patches: Patch[] = [];
    this.put({ kind: 'notice', id: this.nextId('n'), level, text }, patches);
    this.emit(patches);
  }

  addCommand(line: string, output: string[]): void {
    const patches: Patch[] = [];
    this.put({ kind: 'command', id: this.nextId('c'), line, output: [...output] }, patches);
    this.emit(patches);
  }

  private toolItem(turnId: string, callId: string, tool: string, patches: Patch[]): ToolItem {
    const id = `t-${turnId}-${callId}`;
    const existing = this.byId.get(id);
    if (existing && existing.kind === 'tool') return existing;
    const item: ToolItem = { kind: 'tool', id, turnId, callId, tool, fields: [] };
    this.put(item, patches);
    return item;
  }

  private closeText(turnId: string, patches: Patch[]): void {
    const id = this.openText.get(turnId);
    if (!id) return;
    this.openText.delete(turnId);
    const item = this.byId.get(id);
    if (item && item.kind === 'assistant' && item.streaming) this.put({ ...item, streaming: false }, patches);
  }

  applyEvent(ev: Event): void {
    const patches: Patch[] = [];
    switch (ev.type) {
      case 'text_delta': {
        if (typeof ev.text !== 'string' || ev.text === '') break;
        const id = this.openText.get(ev.turnId);
        const item = id ? this.byId.get(id) : undefined;
        if (item && item.kind === 'assistant') {
          item.text += ev.text;
          patches.push({ op: 'delta', id: item.id, text: ev.text });
        } else {
          const created: AssistantItem = { kind: 'assistant', id: this.nextId('a'), turnId: ev.turnId, text: ev.text, streaming: true };
          this.openText.set(ev.turnId, created.id);
          this.put(created, patches);
        }
        break;
      }
      case 'assistant_message': {
        // The complete text of the message the deltas built; it wins over what was streamed.
        const id = this.openText.get(ev.turnId);
        const item = id ? this.byId.get(id) : undefined;
        if (item && item.kind === 'assistant') {
          this.put({ ...item, text: ev.text, streaming: false }, patches);
        } else if (typeof ev.text === 'string' && ev.text !== '') {
          this.put({ kind: 'assistant', id: this.nextId('a'), turnId: ev.turnId, text: ev.text, streaming: false }, patches);
        }
        this.openText.delete(ev.turnId);
        break;
      }
      case 'tool_call': {
        this.closeText(ev.turnId, patches);
        const item = this.toolItem(ev.turnId, ev.callId, ev.tool, patches);
        this.put(
          {
            ...item,
            tool: ev.tool,
            fields: Array.isArray(ev.fields) ? ev.fields : [],
            warning: ev.warning ?? null,
            decision: ev.decision,
            ...(isFileDiff(ev.diff) ? { hasDiff: true } : {}),
          },
          patches,
        );
        break;
      }
      case 'tool_result': {
        this.closeText(ev.turnId, patches);
        const item = this.toolItem(ev.turnId, ev.callId, ev.tool, patches);
        this.put({ ...item, status: ev.status, result: ev.text }, patches);
        break;
      }
      case 'approval_resolved': {
        this.markApproval(ev.callId, ev.outcome, patches);
        break;
      }
      case 'thinking': {
        if (typeof ev.text !== 'string' || ev.text === '') break;
        this.closeText(ev.turnId, patches);
        this.put({ kind: 'thinking', id: this.nextId('t'), turnId: ev.turnId, text: ev.text }, patches);
        break;
      }
      case 'notice': {
        if (ev.turnId) this.closeText(ev.turnId, patches);
        this.put({ kind: 'notice', id: this.nextId('n'), level: 'info', text: ev.text }, patches);
        break;
      }
      case 'turn_end': {
        this.closeText(ev.turnId, patches);
        // approvals still shown as pending for this turn can no longer be answered
        for (const i of this.items) {
          if (i.kind === 'tool' && i.turnId === ev.turnId && i.approval?.state === 'pending') {
            this.put({ ...i, approval: { ...i.approval, state: 'cancelled' } }, patches);
          }
        }
        break;
      }
      default:
        break;
    }
    if (patches.length) this.emit(patches);
  }

  /** An approval request: shown on the card of its call (created if the call was not announced). */
  approvalRequested(key: string, p: ApprovalRequest): void {
    const patches: Patch[] = [];
    this.closeText(p.turnId, patches);
    const item = this.toolItem(p.turnId, p.callId, p.tool, patches);
    const approval: ApprovalView = {
      key,
      fields: p.fields,
      warning: p.warning ?? null,
      question: p.question,
      workdir: p.workdir,
      state: 'pending',
      ...(p.always ? { always: p.always } : {}),
    };
    this.put({ ...item, tool: p.tool, approval }, patches);
    this.emit(patches);
  }

  approvalSettled(callId: string, outcome: Outcome): void {
    const patches: Patch[] = [];
    this.markApproval(callId, outcome, patches);
    if (patches.length) this.emit(patches);
  }

  private markApproval(callId: string, outcome: Outcome, patches: Patch[]): void {
    for (const i of this.items) {
      if (i.kind === 'tool' && i.callId === callId && i.approval?.state === 'pending') {
        this.put({ ...i, approval: { ...i.approval, state: outcome } }, patches);
      }
    }
  }

  /** The turn finished (or failed) on the client side: close any streaming text. */
  /** The turn of the latest user message without one is `turnId` (a live message learns its turn
   *  from the turn's answer). */
  userTurn(turnId: string): void {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (item.kind !== 'user') continue;
      if (item.turnId) return;
      const patches: Patch[] = [];
      this.put({ ...item, turnId }, patches);
      this.emit(patches);
      return;
    }
  }

  /** User messages whose turn is in `turns` offer "Rewind to here"; the others no longer do. */
  setRewindable(turns: ReadonlySet<string>): void {
    const patches: Patch[] = [];
    for (const item of this.items) {
      if (item.kind !== 'user') continue;
      const rewind = !!item.turnId && turns.has(item.turnId) && !item.rewound;
      if (rewind !== !!item.rewind) {
        const next = { ...item, rewind: true };
        if (!rewind) delete (next as { rewind?: boolean }).rewind;
        this.put(next, patches);
      }
    }
    if (patches.length) this.emit(patches);
  }

  endTurn(turnId: string | undefined): void {
    const patches: Patch[] = [];
    if (turnId) this.closeText(turnId, patches);
    for (const [t] of this.openText) this.closeText(t, patches);
    if (patches.length) this.emit(patches);
  }

  get length(): number {
    return this.items.length;
  }
}
