/**
 * Where an approval is shown and answered besides its diff editor: the card in the chat panel (its
 * Approve / Deny, the panel message `approval`), the badge on the panel, and the editor
 * notification with its command links (`mino.answerApproval`, `mino.showApproval`). The broker
 * (core/approvals.ts) decides; this module shows what it holds and passes answers to it.
 */
import * as vscode from 'vscode';
import { errorMessage, type CancellationTokenLike } from './client/minoClient';
import type { ApprovalAnswer, ApprovalBroker, ApprovalChange, PendingApproval } from './core/approvals';
import { isFileDiff } from './core/diffs';
import type { PanelRoutes } from './core/panelRoutes';
import type { Transcript } from './core/transcript';
import type { ChatViewProvider } from './chatView';
import type { DiffView } from './diffView';
import { APPROVAL_QUESTION, type ApprovalRequest } from './protocol';

/** Tool names in the notification text: plain characters only, so nothing can form a link. */
export function notificationToolName(tool: string): string {
  const t = tool.replace(/[^A-Za-z0-9_.-]/g, '');
  return t || 'a tool';
}

function commandLink(label: string, command: string, args: unknown[]): string {
  return `[${label}](command:${command}?${encodeURIComponent(JSON.stringify(args))})`;
}

/** What the approval surfaces need of the Controller. */
export interface ApprovalHost {
  readonly channel: vscode.LogOutputChannel;
  readonly broker: ApprovalBroker;
  readonly view: ChatViewProvider;
  readonly transcript: Transcript;
  readonly diffs: DiffView;
}

export class ApprovalSurfaces implements vscode.Disposable {
  private readonly notificationEnds = new Map<string, () => void>();
  private readonly subscription: { dispose(): void };

  constructor(private readonly host: ApprovalHost) {
    this.subscription = host.broker.onDidChange((c) => this.onChange(c));
  }

  /** The panel messages approvals answer: a card's Approve or Deny. */
  panelRoutes() {
    return {
      approval: (m) => {
        const ok = this.host.broker.answer(m.key, m.approved && m.always ? 'always' : m.approved, 'panel');
        if (!ok) this.host.channel.info('approval answer from the panel ignored: no longer pending');
      },
    } satisfies PanelRoutes;
  }

  /** `mino/approve`: held by the broker until someone answers (or the server withdraws it). */
  request(p: ApprovalRequest, token: CancellationTokenLike): Promise<ApprovalAnswer> {
    this.host.channel.info(`approval requested: ${p.tool} (call ${p.callId})`);
    return this.host.broker.request(p, token);
  }

  /** The panel's badge: how many approvals wait. */
  showBadge(): void {
    this.host.view.setBadge(this.host.broker.count);
  }

  /** `mino.answerApproval`: Approve, Always in this project (where offered) or Deny in the notification. */
  answerFromNotification(key: unknown, answer: unknown): void {
    if (typeof key !== 'string' || (answer !== 'approve' && answer !== 'deny' && answer !== 'always')) return;
    if (!this.host.broker.answer(key, answer === 'always' ? 'always' : answer === 'approve', 'notification')) {
      void vscode.window.showInformationMessage('Mino: this approval was already answered.');
    }
  }

  /** `mino.showApproval`: the notification's Show details, the card in the panel. */
  async show(key: unknown): Promise<void> {
    await this.host.view.reveal(false);
    if (typeof key === 'string') setTimeout(() => this.host.view.post({ type: 'focusApproval', key }), 300);
  }

  private onChange(c: ApprovalChange): void {
    const { channel, transcript, diffs } = this.host;
    this.showBadge();
    const { key, params } = c.approval;
    if (c.kind === 'added') {
      transcript.approvalRequested(key, params);
      this.showNotification(c.approval);
      if (isFileDiff(params.diff)) {
        // the proposal in the diff editor, Approve and Deny in its title; the focus stays where it is
        diffs.put(key, params.diff, true);
        void diffs.open(key, { preserveFocus: true }).catch((e: unknown) => channel.warn(`diff: ${errorMessage(e)}`));
      }
    } else {
      channel.info(`approval ${c.outcome} (${c.source}): ${params.tool} (call ${params.callId})`);
      transcript.approvalSettled(params.callId, c.outcome);
      this.notificationEnds.get(key)?.();
      this.notificationEnds.delete(key);
      void diffs.settle(key); // answered anywhere: its diff editor closes
    }
  }

  /**
   * The editor notification. VS Code cannot withdraw a message notification from code, so this is
   * a progress notification (it goes away as soon as the approval ends, whoever answered) whose
   * text carries the Approve / Deny / Show details actions as command links. Closing it is not an
   * answer: the card in the panel stays and the badge keeps counting.
   */
  private showNotification(a: PendingApproval): void {
    const done = new Promise<void>((resolve) => this.notificationEnds.set(a.key, resolve));
    const tool = notificationToolName(a.params.tool);
    // A question that names a risk ("Run OUTSIDE the sandbox?") is said in the toast too.
    const risk = a.params.question && a.params.question !== APPROVAL_QUESTION ? `: ${a.params.question}` : '';
    const links = [
      commandLink('Approve', 'mino.answerApproval', [a.key, 'approve']),
      ...(a.params.always ? [commandLink('Always in this project', 'mino.answerApproval', [a.key, 'always'])] : []),
      commandLink('Deny', 'mino.answerApproval', [a.key, 'deny']),
      commandLink('Show details', 'mino.showApproval', [a.key]),
    ].join('\u2002'); // an en space: does not collapse, keeps the toast on one line
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Mino wants to run ${tool}${risk}`, cancellable: false },
      async (progress) => {
        progress.report({ message: links });
        await done;
      },
    );
  }

  dispose(): void {
    this.subscription.dispose();
  }
}
