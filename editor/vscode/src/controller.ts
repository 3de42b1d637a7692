/**
 * Glue between the server, the chat panel, the approval surfaces, the palette commands and the
 * status bar.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { errorMessage, isRpcError } from './client/minoClient';
import { ApprovalBroker, type ApprovalChange, type PendingApproval } from './core/approvals';
import { MODE_INFO, memoryIndexLine, sessionPickItems, shortId, statusText, statusTooltip, type SessionPickItem } from './core/format';
import { classifyInput, type WebviewToHost } from './core/messages';
import { PAGE_SIZE, Transcript } from './core/transcript';
import { ChatViewProvider, CHAT_VIEW_ID } from './chatView';
import { ContextChips, toContextItems, type ContextChip } from './core/context';
import { isFileDiff } from './core/diffs';
import { DiffView } from './diffView';
import { fromFiles, fromSelection, type Taken } from './editorContext';
import { MinoServer } from './server';
import {
  ErrorCodes,
  MODES,
  type ApprovalRequest,
  type ConfirmParams,
  type Event,
  type Mode,
  type SessionInfo,
  type State,
  type Usage,
} from './protocol';
import type { CancellationTokenLike , MinoClient} from './client/minoClient';

/** workspaceState: the session this window shows, restored after a reload (initializationOptions.sessionId). */
const SESSION_KEY = 'mino.sessionId';

const CLEAR_PROMPT =
  "Clear this session's saved history? This does not undo executed commands or delete recovery copies or manual backups.";

/** Tool names in the notification text: plain characters only, so nothing can form a link. */
/** The question of an ordinary approval; any other question names a risk. */
const PLAIN_QUESTION = 'Approve this operation?';

export function notificationToolName(tool: string): string {
  const t = tool.replace(/[^A-Za-z0-9_.-]/g, '');
  return t || 'a tool';
}

function commandLink(label: string, command: string, args: unknown[]): string {
  return `[${label}](command:${command}?${encodeURIComponent(JSON.stringify(args))})`;
}

/** Where a tool call's diff is kept (approvals use their unguessable key). */
function callDiffKey(turnId: string, callId: string): string {
  return `call:${turnId}:${callId}`;
}

export class Controller implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  readonly channel: vscode.LogOutputChannel;
  readonly server: MinoServer;
  private readonly view: ChatViewProvider;
  private readonly broker: ApprovalBroker;
  private readonly transcript: Transcript;
  private readonly statusItem: vscode.StatusBarItem;
  private state: State | null = null;
  private turn: { cts: vscode.CancellationTokenSource; stopping: boolean } | undefined;
  private reloading: Promise<void> = Promise.resolve();
  /** The session whose history the transcript shows (or is being reloaded from). */
  private shownSession: string | null | undefined;
  private readonly notificationEnds = new Map<string, () => void>();
  private readonly workspaceState: vscode.Memento;
  /** Refreshes the open Resume Session picker (another window changed the sessions). */
  private refreshSessions: (() => void) | undefined;
  /** An earlier page of history is being asked for. */
  private earlierLoading = false;
  /** The latest usage event: its output count is shown while State.usage is that request's. */
  private lastUsage: Usage | undefined;
  /** The context chips of the next message (the panel shows them above the chat box). */
  private readonly chips = new ContextChips();
  /** Diffs of write_file / edit_file calls and approvals, shown in VS Code's diff editor. */
  private readonly diffs: DiffView;

  constructor(context: vscode.ExtensionContext) {
    this.channel = vscode.window.createOutputChannel('Mino', { log: true });
    this.workspaceState = context.workspaceState;
    this.broker = new ApprovalBroker(() => randomBytes(16).toString('hex'));
    this.transcript = new Transcript(
      (patches) => this.view.post({ type: 'patch', patches }),
      () => this.postEarlier(),
    );
    this.view = new ChatViewProvider(context.extensionUri, (m) => void this.onWebviewMessage(m));
    this.server = new MinoServer(
      this.channel,
      () => vscode.workspace.workspaceFolders?.[0],
      (client) => this.wire(client),
      () => this.workspaceState.get<string>(SESSION_KEY),
    );
    this.statusItem = vscode.window.createStatusBarItem('mino.status', vscode.StatusBarAlignment.Left, 50);
    this.statusItem.name = 'Mino';
    this.statusItem.command = 'mino.resumeSession';
    this.diffs = new DiffView((line) => this.channel.info(line));

    this.disposables.push(
      this.channel,
      this.view,
      this.server,
      this.statusItem,
      this.diffs,
      vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, this.view),
      this.broker.onDidChange((c) => this.onApprovalChange(c)),
      this.server.onDidChangeStatus((s) => {
        this.view.post({ type: 'connection', connection: s });
        this.updateStatusBar();
      }),
      this.server.onDidStart((client) => void this.onStarted(client)),
      this.server.onDidStop(() => this.onStopped()),
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigChanged(e)),
      vscode.workspace.onDidChangeWorkspaceFolders(() => {
        if (this.server.status.status !== 'running') void this.server.start();
      }),
    );
    this.registerCommands();
    this.registerEditorCommands();
    this.updateStatusBar();
    this.statusItem.show();
  }

  start(): Promise<void> {
    return this.server.start();
  }

  // ---------------------------------------------------------------------------------------------
  // server wiring

  private wire(client: MinoClient): void {
    client.onEvent((e) => this.onEvent(e));
    client.onStateChanged((s) => this.setState(s));
    client.onApprove((p, token) => this.onApprove(p, token));
    client.onConfirm((p) => this.onConfirm(p));
    client.onSessionsChanged(() => {
      this.channel.info('sessions changed in another window or terminal');
      this.refreshSessions?.();
    });
  }

  private async onStarted(client: MinoClient): Promise<void> {
    // a new server process: load its history even when the session is the one shown before
    this.shownSession = undefined;
    try {
      this.setState(await client.state());
    } catch (e) {
      this.channel.error(`mino/state: ${errorMessage(e)}`);
      if (isRpcError(e) && e.code === ErrorCodes.unavailable) {
        this.server.markUnavailable(e.message);
        this.sendSnapshot();
        return;
      }
      void this.reloadHistory();
    }
    await this.reloading;
  }

  private onStopped(): void {
    this.broker.cancelAll('shutdown');
    this.turn?.cts.dispose();
    if (this.turn) {
      this.turn = undefined;
      this.view.post({ type: 'turn', running: false });
    }
    this.transcript.endTurn(undefined);
  }

  /** A new State; when it names another session than the one shown, the history is reloaded. */
  private setState(s: State): void {
    this.state = s;
    // this window's session, for the next start (a reload gets its own conversation back)
    if (s.sessionId && s.sessionId !== this.workspaceState.get<string>(SESSION_KEY)) {
      void this.workspaceState.update(SESSION_KEY, s.sessionId);
    }
    this.view.post({ type: 'state', state: s });
    this.updateStatusBar();
    if (s.sessionId !== this.shownSession && !this.turn) void this.reloadHistory();
  }

  /** A model response reported its token counts: the context figure follows at once, mid-turn. */
  private onUsage(e: Usage): void {
    if (!this.state || typeof e.inputTokens !== 'number' || typeof e.contextWindow !== 'number') return;
    this.lastUsage = e;
    this.state = { ...this.state, usage: { inputTokens: e.inputTokens, contextWindow: e.contextWindow } };
    this.view.post({ type: 'state', state: this.state });
    this.updateStatusBar();
  }

  private updateStatusBar(): void {
    const st = this.server.status.status;
    const u = this.state?.usage;
    const out = u && this.lastUsage?.inputTokens === u.inputTokens ? this.lastUsage.outputTokens : undefined;
    this.statusItem.text = statusText(this.state, st);
    this.statusItem.tooltip = st === 'running' ? statusTooltip(this.state, out) : (this.server.status.message ?? 'Mino is not running.');
    this.statusItem.backgroundColor =
      st === 'failed' || this.state?.restoreProblem || this.state?.setup ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  /** Rebuilds the transcript from the latest page of `mino/history` (start-up, window reload, session
   *  switch); earlier pages follow as the person scrolls up (loadEarlier). */
  private reloadHistory(): Promise<void> {
    this.shownSession = this.state?.sessionId;
    const run = async () => {
      const client = this.server.client;
      if (!client) return;
      try {
        this.transcript.loadHistory(await client.history());
      } catch (e) {
        this.transcript.reset([]);
        this.channel.warn(`mino/history: ${errorMessage(e)}`);
      }
      this.sendSnapshot();
    };
    this.reloading = this.reloading.then(run, run);
    return this.reloading;
  }

  /** The page above the first item shown (the webview asks when the person scrolls to the top). */
  private async loadEarlier(): Promise<void> {
    const client = this.server.client;
    if (this.earlierLoading) return; // the webview hears when that one ends
    await this.reloading; // a reload in flight decides what is shown first
    const { more, before } = this.transcript.earlier();
    if (!client || !more) {
      this.postEarlier(); // the webview asked from an older view: it may ask again when there is more
      return;
    }
    if (before === null) {
      // The oldest live items went (a very long window): the latest page again, then earlier ones.
      await this.reloadHistory();
      return;
    }
    const generation = this.transcript.generation;
    this.earlierLoading = true;
    this.postEarlier();
    try {
      const page = await client.history({ before, limit: PAGE_SIZE });
      this.transcript.prependHistory(page, generation); // ignored when the session changed meanwhile
    } catch (e) {
      this.channel.warn(`mino/history: ${errorMessage(e)}`);
    } finally {
      this.earlierLoading = false;
      this.postEarlier();
    }
  }

  private postEarlier(): void {
    this.view.post({ type: 'earlier', earlier: { more: this.transcript.earlier().more, loading: this.earlierLoading } });
  }

  private sendSnapshot(): void {
    this.view.post({
      type: 'snapshot',
      items: this.transcript.snapshot(),
      state: this.state,
      connection: this.server.status,
      turnRunning: !!this.turn,
      earlier: { more: this.transcript.earlier().more, loading: this.earlierLoading },
    });
  }

  private onEvent(e: Event): void {
    if (e.type === 'approval_resolved') this.broker.resolvedByServer(e.callId, e.outcome);
    if (e.type === 'usage') this.onUsage(e);
    // kept for the card's "Open diff" (a pending approval keeps its own copy under its key)
    if (e.type === 'tool_call' && isFileDiff(e.diff)) this.diffs.put(callDiffKey(e.turnId, e.callId), e.diff, false);
    this.transcript.applyEvent(e);
  }

  // ---------------------------------------------------------------------------------------------
  // approvals and confirmations

  private onApprove(p: ApprovalRequest, token: CancellationTokenLike): Promise<boolean> {
    this.channel.info(`approval requested: ${p.tool} (call ${p.callId})`);
    return this.broker.request(p, token);
  }

  private onApprovalChange(c: ApprovalChange): void {
    this.view.setBadge(this.broker.count);
    const { key, params } = c.approval;
    if (c.kind === 'added') {
      this.transcript.approvalRequested(key, params);
      this.showApprovalNotification(c.approval);
      if (isFileDiff(params.diff)) {
        // the proposal in the diff editor, Approve and Deny in its title; the focus stays where it is
        this.diffs.put(key, params.diff, true);
        void this.diffs.open(key, { preserveFocus: true }).catch((e: unknown) => this.channel.warn(`diff: ${errorMessage(e)}`));
      }
    } else {
      this.channel.info(`approval ${c.outcome} (${c.source}): ${params.tool} (call ${params.callId})`);
      this.transcript.approvalSettled(params.callId, c.outcome);
      this.notificationEnds.get(key)?.();
      this.notificationEnds.delete(key);
      void this.diffs.settle(key); // answered anywhere: its diff editor closes
    }
  }

  /**
   * The editor notification. VS Code cannot withdraw a message notification from code, so this is
   * a progress notification (it goes away as soon as the approval ends, whoever answered) whose
   * text carries the Approve / Deny / Show details actions as command links. Closing it is not an
   * answer: the card in the panel stays and the badge keeps counting.
   */
  private showApprovalNotification(a: PendingApproval): void {
    const done = new Promise<void>((resolve) => this.notificationEnds.set(a.key, resolve));
    const tool = notificationToolName(a.params.tool);
    // A question that names a risk ("Run OUTSIDE the sandbox?") is said in the toast too.
    const risk = a.params.question && a.params.question !== PLAIN_QUESTION ? `: ${a.params.question}` : '';
    const links = [
      commandLink('Approve', 'mino.answerApproval', [a.key, 'approve']),
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

  private async onConfirm(p: ConfirmParams): Promise<boolean> {
    const choice = await vscode.window.showWarningMessage(
      p.kind === 'recovery'
        ? 'Mino: confirm recovery'
        : p.kind === 'skills'
          ? "Mino: load this project's skills?"
          : 'Mino: confirm',
      { modal: true, detail: p.message },
      'Yes',
      'No',
    );
    return choice === 'Yes';
  }

  // ---------------------------------------------------------------------------------------------
  // chat panel

  private async onWebviewMessage(m: WebviewToHost): Promise<void> {
    switch (m.type) {
      case 'ready':
        this.sendSnapshot();
        this.view.setBadge(this.broker.count);
        this.postChips();
        return;
      case 'stop':
        this.stopTurn();
        return;
      case 'loadEarlier':
        await this.loadEarlier();
        return;
      case 'approval': {
        const ok = this.broker.answer(m.key, m.approved, 'panel');
        if (!ok) this.channel.info('approval answer from the panel ignored: no longer pending');
        return;
      }
      case 'command':
        await vscode.commands.executeCommand(m.command);
        return;
      case 'submit':
        await this.submit(m.text);
        return;
      case 'removeContext':
        if (this.chips.remove(m.id)) this.postChips();
        return;
      case 'files':
        await this.completeFiles(m.requestId, m.prefix);
        return;
      case 'attachFile':
        this.addChips({ ok: true, items: [{ path: m.path }] });
        return;
      case 'openDiff':
        await this.openCallDiff(m.turnId, m.callId);
        return;
    }
  }

  private async submit(raw: string): Promise<void> {
    const action = classifyInput(raw);
    switch (action.kind) {
      case 'empty':
        return;
      case 'clear':
        await vscode.commands.executeCommand('mino.clearSession');
        return;
      case 'command': {
        const client = this.requireClient();
        if (!client) return;
        try {
          const r = await client.command(action.line);
          if (r?.state) this.setState(r.state);
          await this.reloading; // /new, /resume: the output goes below the other session's history
          this.transcript.addCommand(action.line, Array.isArray(r?.output) ? r.output : []);
        } catch (e) {
          this.transcript.addCommand(action.line, []);
          this.transcript.addNotice(this.describeError(e), 'error');
        }
        return;
      }
      case 'turn':
        await this.runTurn(action.text);
        return;
    }
  }

  private describeError(e: unknown): string {
    if (isRpcError(e)) {
      if (e.code === ErrorCodes.busy) {
        const detail = (e.data as { detail?: unknown } | undefined)?.detail;
        return typeof detail === 'string' && detail ? detail : 'Mino is busy with a turn. Wait for it, or press Stop.';
      }
      if (e.code === ErrorCodes.unavailable) {
        this.server.markUnavailable(e.message);
        return e.message;
      }
    }
    return errorMessage(e);
  }

  private async runTurn(text: string): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    if (this.turn) {
      this.transcript.addNotice('Mino is still answering. Press Stop to interrupt it.', 'warning');
      return;
    }
    const cts = new vscode.CancellationTokenSource();
    this.turn = { cts, stopping: false };
    this.view.post({ type: 'turn', running: true });
    const chips = this.chips.take(); // they go with this message
    if (chips.length) this.postChips();
    this.transcript.addUser(text, chips.map((c) => c.label));
    let turnId: string | undefined;
    try {
      const r = await client.turn(text, cts.token, toContextItems(chips));
      turnId = r?.turnId;
      this.transcript.endTurn(turnId);
      if (r?.status === 'failed') this.transcript.addNotice(r.error || r.text || 'The turn failed.', 'error');
      else if (r?.status === 'limit') this.transcript.addNotice(r.error || r.text || 'The turn stopped at a limit.', 'warning');
      else if (r?.status === 'interrupted') this.transcript.addNotice('Interrupted.', 'warning');
      if (r && !r.turnId) this.giveBackChips(chips); // the turn never started (no session selected)
    } catch (e) {
      this.transcript.endTurn(turnId);
      if (isRpcError(e) && e.code === ErrorCodes.requestCancelled) this.transcript.addNotice('Interrupted.', 'warning');
      else this.transcript.addNotice(this.describeError(e), 'error');
      // refused before anything was sent (bad item, busy, unavailable): the chips come back, to fix or send again
      if (isRpcError(e) && e.code !== ErrorCodes.requestCancelled) this.giveBackChips(chips);
    } finally {
      cts.dispose();
      if (this.turn?.cts === cts) this.turn = undefined;
      this.view.post({ type: 'turn', running: false });
    }
  }

  private stopTurn(): void {
    if (!this.turn || this.turn.stopping) return;
    this.turn.stopping = true;
    this.channel.info('interrupting the running turn ($/cancelRequest)');
    this.turn.cts.cancel();
  }

  private requireClient(): MinoClient | undefined {
    const c = this.server.client;
    if (!c) {
      const msg = this.server.status.message ?? 'Mino is not running.';
      void vscode.window.showErrorMessage(msg, 'Show log').then((x) => x && this.channel.show());
    }
    return c;
  }

  // ---------------------------------------------------------------------------------------------
  // palette commands

  /** A command whose failure is logged and shown as one error message (with Show log), never thrown. */
  private registerCommand(id: string, fn: (...args: unknown[]) => unknown): void {
    this.disposables.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await fn(...args);
        } catch (e) {
          this.channel.error(`${id}: ${errorMessage(e)}`);
          void vscode.window.showErrorMessage(`Mino: ${this.describeError(e)}`, 'Show log').then((x) => x && this.channel.show());
          return undefined;
        }
      }),
    );
  }

  private registerCommands(): void {
    this.registerCommand('mino.newSession', () => this.newSession());
    this.registerCommand('mino.resumeSession', () => this.resumeSession());
    this.registerCommand('mino.clearSession', () => this.clearSession());
    this.registerCommand('mino.setMode', () => this.setMode());
    this.registerCommand('mino.compact', () => this.compact());
    this.registerCommand('mino.showMemories', () => this.showMemories());
    this.registerCommand('mino.openMemoryFolder', () => this.openMemoryFolder());
    this.registerCommand('mino.showLog', () => this.channel.show());
    this.registerCommand('mino.restartServer', () => this.server.restart());
    this.registerCommand('mino.openSettings', () => vscode.commands.executeCommand('workbench.action.openSettings', 'mino.env'));
    this.registerCommand('mino.openFirstRun', () => this.openFirstRun());
    this.registerCommand('mino.answerApproval', (key, answer) => {
      if (typeof key !== 'string' || (answer !== 'approve' && answer !== 'deny')) return;
      if (!this.broker.answer(key, answer === 'approve', 'notification')) {
        void vscode.window.showInformationMessage('Mino: this approval was already answered.');
      }
    });
    this.registerCommand('mino.showApproval', async (key) => {
      await this.view.reveal(false);
      if (typeof key === 'string') setTimeout(() => this.view.post({ type: 'focusApproval', key }), 300);
    });
  }

  // ---------------------------------------------------------------------------------------------
  // the editor as context and as reviewer: chips, @ completion, diffs

  private registerEditorCommands(): void {
    this.registerCommand('mino.askAboutSelection', () => this.askAboutSelection());
    this.registerCommand('mino.addFileToChat', (uri, uris) => this.addFileToChat(uri, uris));
    this.registerCommand('mino.diff.approve', (uri) => this.answerFromDiff(uri, true));
    this.registerCommand('mino.diff.deny', (uri) => this.answerFromDiff(uri, false));
  }

  /** Where editor files must lie: the workspace folder Mino was started in. */
  private workdir(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? this.state?.workdir;
  }

  /** Editor context needs protocol 2; an older Mino is said so, once per try. */
  private contextSupported(): boolean {
    if (!this.requireClient()) return false;
    if ((this.server.protocolVersion ?? 1) >= 2) return true;
    void vscode.window.showWarningMessage(
      'Mino: this version of Mino cannot take editor context (it speaks protocol 1). Update Mino to attach selections and files.',
    );
    return false;
  }

  private async askAboutSelection(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const workdir = this.workdir();
    if (!editor || !workdir) {
      void vscode.window.showInformationMessage('Mino: open a file and select the lines to ask about.');
      return;
    }
    if (!this.contextSupported()) return;
    if (this.addChips(fromSelection(editor, workdir))) await this.focusChat();
  }

  private async addFileToChat(uri: unknown, uris: unknown): Promise<void> {
    const workdir = this.workdir();
    // the explorer passes the clicked file and the whole selection; the palette, nothing
    let picked = Array.isArray(uris) ? uris.filter((u): u is vscode.Uri => u instanceof vscode.Uri) : [];
    if (!picked.length && uri instanceof vscode.Uri) picked = [uri];
    if (!picked.length && vscode.window.activeTextEditor) picked = [vscode.window.activeTextEditor.document.uri];
    if (!picked.length || !workdir) {
      void vscode.window.showInformationMessage('Mino: open a file (or pick one in the Explorer) to add it to the chat.');
      return;
    }
    if (!this.contextSupported()) return;
    if (this.addChips(await fromFiles(picked, workdir))) await this.focusChat();
  }

  /** Adds what was taken as chips; says why when it cannot. True when something was added. */
  private addChips(taken: Taken): boolean {
    if (!taken.ok) {
      void vscode.window.showWarningMessage(`Mino: ${taken.message}`);
      return false;
    }
    let added = false;
    for (const item of taken.items) {
      const r = this.chips.add(item);
      if (!r.ok) {
        void vscode.window.showWarningMessage(`Mino: ${r.message}`);
        break;
      }
      added = true;
      this.channel.info(`context: ${r.chip.label}${r.replaced ? ' (replaced)' : ''}`);
    }
    this.postChips();
    return added;
  }

  private giveBackChips(chips: ContextChip[]): void {
    if (!chips.length) return;
    this.chips.restore(chips);
    this.postChips();
  }

  private postChips(): void {
    this.view.post({ type: 'context', chips: this.chips.views() });
  }

  /** Shows the panel with the keyboard in the chat box: the question comes next. */
  private async focusChat(): Promise<void> {
    await this.view.reveal(false);
    this.postChips();
    this.view.post({ type: 'focusInput' });
  }

  private async completeFiles(requestId: number, prefix: string): Promise<void> {
    const client = this.server.client;
    let paths: string[] = [];
    if (client && (this.server.protocolVersion ?? 1) >= 2) {
      try {
        const r = await client.files(prefix);
        paths = Array.isArray(r?.paths) ? r.paths.filter((p): p is string => typeof p === 'string') : [];
      } catch (e) {
        this.channel.warn(`mino/files: ${errorMessage(e)}`);
      }
    }
    this.view.post({ type: 'files', requestId, paths });
  }

  /** A card's "Open diff": the pending approval's proposal (with Approve / Deny), else the call's change. */
  private async openCallDiff(turnId: string, callId: string): Promise<void> {
    const pending = this.broker.list().find((a) => a.params.callId === callId && a.params.turnId === turnId);
    if (pending && (await this.diffs.open(pending.key))) return;
    if (await this.diffs.open(callDiffKey(turnId, callId))) return;
    void vscode.window.showInformationMessage('Mino: this change is no longer kept for the diff view (only recent ones are).');
  }

  /** Approve or Deny in a diff editor's title. */
  private answerFromDiff(uri: unknown, approved: boolean): void {
    const key = (uri instanceof vscode.Uri ? this.diffs.keyOf(uri) : undefined) ?? this.diffs.activeKey();
    if (!key || !this.broker.answer(key, approved, 'diff')) {
      void vscode.window.showInformationMessage('Mino: this approval was already answered.');
    }
  }

  private async newSession(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    const s = await client.newSession();
    this.setState(s); // another session: setState (or the mino/stateChanged before it) reloads the history
    await this.reloading;
    this.transcript.addNotice(`Session: ${s.sessionId ?? '(none)'}`);
  }

  private async resumeSession(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    const { sessions } = await client.listSessions();
    if (!sessions?.length) {
      void vscode.window.showInformationMessage('Mino: there are no saved sessions yet.');
      return;
    }
    const pick = await this.pickSession(sessions, () => client.listSessions());
    if (!pick) return;
    if (pick.current && !this.state?.restoreProblem) {
      void vscode.window.showInformationMessage(`Mino: session ${shortId(pick.id)} is already the current session.`);
      return;
    }
    let s: State;
    try {
      // a session marked open elsewhere is asked for too: the server says which window has it (-32006,
      // nothing changes), or resumes it when that window let it go meanwhile
      s = await client.resumeSession(pick.id);
    } catch (e) {
      if (isRpcError(e) && e.code === ErrorCodes.sessionInUse) {
        void vscode.window.showWarningMessage(
          `Mino: ${e.message} Switch to that window, or start a new session there (or close it), then resume it here.`,
        );
        return;
      }
      throw e;
    }
    this.setState(s);
    await this.reloading;
    this.transcript.addNotice(`Session: ${s.sessionId ?? pick.id}`);
  }

  /**
   * The Resume Session picker. It stays current while open: when another window or terminal
   * creates, clears, opens or closes a session (mino/sessionsChanged), the rows are listed again.
   */
  private async pickSession(
    sessions: SessionInfo[],
    list: () => Promise<{ sessions: SessionInfo[] }>,
  ): Promise<SessionPickItem | undefined> {
    const qp = vscode.window.createQuickPick<SessionPickItem>();
    qp.title = 'Mino: Resume Session';
    qp.placeholder = 'Pick a session (newest first; times in local time and UTC)';
    qp.matchOnDetail = true;
    qp.ignoreFocusOut = true;
    const fill = (all: SessionInfo[]) => {
      const active = qp.activeItems[0]?.id;
      qp.items = sessionPickItems(all, this.state?.sessionId ?? null);
      const again = qp.items.find((i) => i.id === active);
      if (again) qp.activeItems = [again];
    };
    fill(sessions);
    const refresh = () =>
      void list().then(
        (r) => {
          if (this.refreshSessions === refresh) fill(Array.isArray(r?.sessions) ? r.sessions : []);
        },
        (e: unknown) => this.channel.warn(`mino/sessions/list: ${errorMessage(e)}`),
      );
    this.refreshSessions = refresh;
    try {
      return await new Promise<SessionPickItem | undefined>((resolve) => {
        qp.onDidAccept(() => resolve(qp.selectedItems[0] ?? qp.activeItems[0]));
        qp.onDidHide(() => resolve(undefined));
        qp.show();
      });
    } finally {
      if (this.refreshSessions === refresh) this.refreshSessions = undefined;
      qp.dispose();
    }
  }

  private async clearSession(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    const id = this.state?.sessionId ?? (await client.state()).sessionId;
    if (!id) {
      void vscode.window.showInformationMessage('Mino: there is no current session to clear.');
      return;
    }
    const typed = await vscode.window.showInputBox({
      title: `Mino: Clear Session ${id}`,
      prompt: `${CLEAR_PROMPT} Type the complete session ID to clear it.`,
      placeHolder: 'the complete 32-character session ID',
      ignoreFocusOut: true,
    });
    if (typed === undefined) {
      void vscode.window.showInformationMessage('Session was not cleared.');
      return;
    }
    const r = await client.clearSession(id, typed);
    if (r?.state) this.setState(r.state);
    if (r?.cleared) {
      await this.reloadHistory();
      this.transcript.addNotice(`Cleared session: ${id}`);
      void vscode.window.showInformationMessage(`Cleared session: ${id}`);
    } else {
      const why = typed.trim() === '' ? 'Nothing was typed.' : 'The typed ID does not match.';
      this.transcript.addNotice(`Session was not cleared. ${why}`, 'warning');
      void vscode.window.showWarningMessage(`Session was not cleared. ${why}`);
    }
  }

  private async setMode(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    const current = this.state?.mode;
    const items = MODES.map((m) => ({
      label: `${m === current ? '$(check) ' : ''}${MODE_INFO[m].label}`,
      description: m === current ? 'current' : '',
      detail: MODE_INFO[m].detail,
      mode: m,
    }));
    const pick = await vscode.window.showQuickPick(items, { title: 'Mino: Set Permission Mode', placeHolder: 'How much may Mino do without asking?' });
    if (!pick) return;
    const mode: Mode = pick.mode;
    if (mode === 'bypass') {
      const ok = await vscode.window.showWarningMessage(
        'Switch Mino to bypass mode?',
        {
          modal: true,
          detail:
            'In bypass mode Mino runs every command, file edit and memory save without asking you first. Use it only in a workspace you can throw away.',
        },
        'Use bypass',
      );
      if (ok !== 'Use bypass') return;
    }
    this.setState(await client.setMode(mode));
    void vscode.window.setStatusBarMessage(`Mino: permission mode ${mode}`, 3000);
  }

  private async compact(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    const r = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Mino: compacting the session…', cancellable: true },
      (_progress, token) => client.compact(token),
    );
    this.transcript.addNotice(r.message);
    void vscode.window.showInformationMessage(`Mino: ${r.message}`);
  }

  private async showMemories(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    const r = await client.listMemories();
    type Item = vscode.QuickPickItem & { path?: string };
    const items: Item[] = (r.memories ?? []).map((m) => ({ label: memoryIndexLine(m), path: m.path }));
    if (r.problems?.length) {
      items.push({ label: 'Not loaded', kind: vscode.QuickPickItemKind.Separator });
      for (const p of r.problems) {
        items.push({ label: `$(warning) ${p.file}`, detail: p.reason, path: vscode.Uri.joinPath(vscode.Uri.file(r.dir), p.file).fsPath });
      }
    }
    if (!items.length) {
      void vscode.window.showInformationMessage(`Mino: no memories yet (in ${r.dir}).`);
      return;
    }
    const pick = await vscode.window.showQuickPick(items, {
      title: `Mino: Memories (${r.memories?.length ?? 0}) in ${r.dir}`,
      placeHolder: 'Open a memory file',
      matchOnDetail: true,
    });
    if (!pick?.path) return;
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(pick.path));
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  /** Mino's README at its "First run" section (what to set for OpenAI or a local server), when the
   *  server runs from a checkout; else the setup line itself. */
  private async openFirstRun(): Promise<void> {
    const setup = this.state?.setup;
    if (!setup?.readme) {
      void vscode.window.showInformationMessage(setup?.message ?? 'Mino has everything it needs to start a turn.');
      return;
    }
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(setup.readme));
    const line = Math.max(0, doc.getText().split('\n').findIndex((l) => l.trim() === '## First run'));
    const at = new vscode.Position(line, 0);
    await vscode.window.showTextDocument(doc, { selection: new vscode.Range(at, at), preview: true });
  }

  private async openMemoryFolder(): Promise<void> {
    let dir = this.state?.memory?.dir;
    if (!dir) {
      const client = this.requireClient();
      if (!client) return;
      dir = (await client.listMemories()).dir;
    }
    const uri = vscode.Uri.file(dir);
    if (vscode.env.uiKind === vscode.UIKind.Desktop && !vscode.env.remoteName) {
      await vscode.commands.executeCommand('revealFileInOS', uri);
    } else {
      await vscode.commands.executeCommand('vscode.openFolder', uri, { forceNewWindow: true });
    }
  }

  private onConfigChanged(e: vscode.ConfigurationChangeEvent): void {
    if (['mino.command', 'mino.args', 'mino.env'].some((k) => e.affectsConfiguration(k))) {
      void vscode.window.showInformationMessage('Mino settings changed. Restart Mino to use them?', 'Restart').then((c) => {
        if (c === 'Restart') void this.server.restart();
      });
    }
  }

  dispose(): void {
    this.broker.dispose();
    this.turn?.cts.cancel();
    for (const d of this.disposables.splice(0).reverse()) {
      try {
        d.dispose();
      } catch {
        /* ignore */
      }
    }
  }
}
