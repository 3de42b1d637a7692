/**
 * Pending approvals: one per `mino/approve` request, answered by whichever surface answers first
 * (the notification, the card in the chat panel, the diff editor's title). Pure: no `vscode` import.
 *
 * Nothing here ever approves on its own: no default, no timeout. A request ends as approved only
 * through `answer(key, true)`; cancellation, `approval_resolved` from the server, a restart of the
 * server and `dispose()` all end it as not approved.
 */
import type { CancellationTokenLike } from '../client/minoClient';
import type { ApprovalRequest, Outcome } from '../protocol';

/** A person's answer: yes, no, or yes and keep the offered rules (`always`, only when offered). */
export type ApprovalAnswer = boolean | 'always';

/** Where an answer came from: a person ('notification', 'panel', 'diff': the diff editor's title) or not. */
export type AnswerSource = 'notification' | 'panel' | 'diff' | 'server' | 'cancelled' | 'shutdown';
export type PersonSource = 'notification' | 'panel' | 'diff';

export interface PendingApproval {
  /** Unguessable handle used by UI surfaces (notification command links, webview messages). */
  readonly key: string;
  readonly params: ApprovalRequest;
}

export type ApprovalChange =
  | { kind: 'added'; approval: PendingApproval }
  | { kind: 'settled'; approval: PendingApproval; outcome: Outcome; source: AnswerSource };

interface Entry {
  approval: PendingApproval;
  resolve: (answer: ApprovalAnswer) => void;
  /** the subscription to the request's cancellation, dropped when it settles */
  cancellation?: { dispose(): unknown };
}

export class ApprovalBroker {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<(c: ApprovalChange) => void>();

  constructor(private readonly newKey: () => string) {}

  onDidChange(listener: (c: ApprovalChange) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private fire(c: ApprovalChange): void {
    for (const l of [...this.listeners]) {
      try {
        l(c);
      } catch {
        /* a failing surface must not break the others */
      }
    }
  }

  /** Registers a request; the promise resolves with the first answer (true or 'always' only when approved). */
  request(params: ApprovalRequest, token?: CancellationTokenLike): Promise<ApprovalAnswer> {
    // A repeated request for the same call replaces the old one, which ends denied.
    const old = this.findByCallId(params.callId);
    if (old) this.settle(old.key, 'cancelled', 'cancelled');
    const approval: PendingApproval = { key: this.newKey(), params };
    return new Promise<ApprovalAnswer>((resolve) => {
      const entry: Entry = { approval, resolve };
      this.entries.set(approval.key, entry);
      const cancel = () => this.settle(approval.key, 'cancelled', 'cancelled');
      if (token?.isCancellationRequested) {
        this.fire({ kind: 'added', approval });
        cancel();
        return;
      }
      if (token) entry.cancellation = token.onCancellationRequested(cancel);
      this.fire({ kind: 'added', approval });
    });
  }

  private settle(key: string, outcome: Outcome, source: AnswerSource, always = false): boolean {
    const e = this.entries.get(key);
    if (!e) return false;
    this.entries.delete(key);
    e.cancellation?.dispose();
    // Only a person's explicit answer approves; `always` only where the request offered it.
    const approved = outcome === 'approved' && (source === 'notification' || source === 'panel' || source === 'diff');
    e.resolve(approved && always && e.approval.params.always ? 'always' : approved);
    this.fire({ kind: 'settled', approval: e.approval, outcome, source });
    return true;
  }

  /** A person's answer. Returns false when the approval is no longer pending (someone was first). */
  answer(key: string, approved: ApprovalAnswer, source: PersonSource): boolean {
    return this.settle(key, approved ? 'approved' : 'denied', source, approved === 'always');
  }

  /** `mino/event approval_resolved`: the server has ended it (answer, cancel, turn end). */
  resolvedByServer(callId: string, outcome: Outcome): void {
    // The server has already ended it; what we would answer now no longer counts.
    const a = this.findByCallId(callId);
    if (a) this.settle(a.key, outcome, 'server');
  }

  /** The server went away: everything still pending ends as not approved. */
  cancelAll(source: AnswerSource = 'shutdown'): void {
    for (const key of [...this.entries.keys()]) this.settle(key, 'cancelled', source);
  }

  /** At most one approval is pending per call: a repeated request replaces the old one. */
  findByCallId(callId: string): PendingApproval | undefined {
    for (const e of this.entries.values()) if (e.approval.params.callId === callId) return e.approval;
    return undefined;
  }

  list(): PendingApproval[] {
    return [...this.entries.values()].map((e) => e.approval);
  }

  get count(): number {
    return this.entries.size;
  }

  dispose(): void {
    this.cancelAll('shutdown');
    this.listeners.clear();
  }
}
