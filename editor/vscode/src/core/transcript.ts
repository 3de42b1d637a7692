/**
 * The chat transcript kept by the extension host: the source of truth the webview mirrors. It is
 * rebuilt from `mino/history` (window reload, session switch) and updated by `mino/event`s and
 * approvals. Every change goes out as a list of patches. Pure: no `vscode` import.
 */
import type { ApprovalRequest, Event, HistoryItem, Outcome } from '../protocol';
import type { ApprovalView, ChatItem, Patch } from './messages';

type ToolItem = Extract<ChatItem, { kind: 'tool' }>;
type AssistantItem = Extract<ChatItem, { kind: 'assistant' }>;

export const MAX_ITEMS = 2000;

export class Transcript {
  private items: ChatItem[] = [];
  private readonly byId = new Map<string, ChatItem>();
  /** turnId -> id of the assistant item that text_deltas currently append to */
  private readonly openText = new Map<string, string>();
  private seq = 0;

  constructor(private readonly emit: (patches: Patch[]) => void = () => {}) {}

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
      if (this.items.length > MAX_ITEMS) {
        const dropped = this.items.splice(0, this.items.length - MAX_ITEMS);
        for (const d of dropped) {
          this.byId.delete(d.id);
          patches.push({ op: 'remove', id: d.id });
        }
      }
    } else {
      const idx = this.items.findIndex((i) => i.id === item.id);
      this.items[idx] = item;
    }
    this.byId.set(item.id, item);
    patches.push({ op: 'upsert', item: structuredClone(item) });
  }

  /** Replace everything (history load); the caller sends a snapshot. */
  reset(items: ChatItem[]): void {
    this.items = [];
    this.byId.clear();
    this.openText.clear();
    for (const i of items) {
      this.items.push(i);
      this.byId.set(i.id, i);
    }
  }

  /** Items from `mino/history`. */
  fromHistory(history: HistoryItem[]): ChatItem[] {
    const out: ChatItem[] = [];
    for (const h of history) {
      const text = typeof h.text === 'string' ? h.text : '';
      if (h.role === 'user') out.push({ kind: 'user', id: this.nextId('h'), text });
      else if (h.role === 'assistant')
        out.push({ kind: 'assistant', id: this.nextId('h'), turnId: h.turnId ?? '', text, streaming: false });
      else if (h.role === 'tool')
        out.push({
          kind: 'tool',
          id: this.nextId('h'),
          turnId: h.turnId ?? '',
          callId: '',
          tool: h.tool ?? 'tool',
          fields: [],
          status: h.status,
          result: text,
        });
    }
    return out;
  }

  addUser(text: string): void {
    const patches: Patch[] = [];
    this.put({ kind: 'user', id: this.nextId('u'), text }, patches);
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
          { ...item, tool: ev.tool, fields: Array.isArray(ev.fields) ? ev.fields : [], warning: ev.warning ?? null, decision: ev.decision },
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
