/**
 * Glue between the server, the chat panel, the approval surfaces, the palette commands and the
 * status bar. The panel's messages go to the feature that answers them (core/panelRoutes.ts): the
 * chat's turns and history here, approvals (approvalSurfaces.ts), editor context
 * (editorCommands.ts), rewind (rewindCommands.ts) and the palette's commands.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { errorMessage, isRpcError } from './client/minoClient';
import { ApprovalBroker } from './core/approvals';
import { statusText, statusTooltip } from './core/format';
import { classifyInput } from './core/messages';
import { PanelRouter, type PanelRoutes } from './core/panelRoutes';
import { PAGE_SIZE, Transcript } from './core/transcript';
import { ApprovalSurfaces } from './approvalSurfaces';
import { ChatViewProvider, CHAT_VIEW_ID } from './chatView';
import { toContextItems, toImageItems } from './core/context';
import { isFileDiff } from './core/diffs';
import { DiffView } from './diffView';
import { callDiffKey, EditorCommands } from './editorCommands';
import { RewindCommands } from './rewindCommands';
import { SessionCommands } from './sessionCommands';
import { MinoServer } from './server';
import { ErrorCodes, type ConfirmParams, type Event, type State, type Usage } from './protocol';
import type { MinoClient } from './client/minoClient';

/** workspaceState: the session this window shows, restored after a reload (initializationOptions.sessionId). */
const SESSION_KEY = 'mino.sessionId';

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
  private readonly workspaceState: vscode.Memento;
  /** An earlier page of history is being asked for. */
  private earlierLoading = false;
  /** The latest usage event: its output count is shown while State.usage is that request's. */
  private lastUsage: Usage | undefined;
  /** Diffs of write_file / edit_file calls and approvals, shown in VS Code's diff editor. */
  private readonly diffs: DiffView;
  /** Chips, @ completion and diffs (editorCommands.ts). */
  private readonly editor: EditorCommands;
  /** The palette's session commands (sessionCommands.ts). */
  private readonly sessions: SessionCommands;
  /** "Rewind to here" and the rewind question (rewindCommands.ts). */
  private readonly rewind: RewindCommands;
  /** The approval's card, badge and notification (approvalSurfaces.ts). */
  private readonly approvals: ApprovalSurfaces;
  /** Each panel message to the feature that answers it. */
  private readonly panel: PanelRouter;

  constructor(context: vscode.ExtensionContext) {
    this.channel = vscode.window.createOutputChannel('Mino', { log: true });
    this.workspaceState = context.workspaceState;
    this.broker = new ApprovalBroker(() => randomBytes(16).toString('hex'));
    this.transcript = new Transcript(
      (patches) => this.view.post({ type: 'patch', patches }),
      () => this.postEarlier(),
    );
    this.view = new ChatViewProvider(context.extensionUri, (m) => void this.panel.dispatch(m));
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
    this.editor = new EditorCommands(
      this.view,
      this.server,
      this.channel,
      this.broker,
      this.diffs,
      () => this.state,
      () => this.requireClient(),
    );
    this.sessions = new SessionCommands({
      channel: this.channel,
      transcript: this.transcript,
      requireClient: () => this.requireClient(),
      state: () => this.state,
      setState: (st) => this.setState(st),
      reloading: () => this.reloading,
      reloadHistory: () => this.reloadHistory(),
    });
    this.rewind = new RewindCommands({
      channel: this.channel,
      transcript: this.transcript,
      diffs: this.diffs,
      client: () => this.server.client,
      requireClient: () => this.requireClient(),
      turnRunning: () => !!this.turn,
      reloadHistory: () => this.reloadHistory(),
      describeError: (e) => this.describeError(e),
    });
    this.approvals = new ApprovalSurfaces({
      channel: this.channel,
      broker: this.broker,
      view: this.view,
      transcript: this.transcript,
      diffs: this.diffs,
    });
    this.panel = PanelRouter.of({
      chat: this.chatRoutes(),
      palette: this.paletteRoutes(),
      approvals: this.approvals.panelRoutes(),
      context: this.editor.panelRoutes(),
      rewind: this.rewind.panelRoutes(),
    });

    this.disposables.push(
      this.channel,
      this.view,
      this.server,
      this.statusItem,
      this.diffs,
      vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, this.view),
      this.approvals,
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
    client.onApprove((p, token) => this.approvals.request(p, token));
    client.onConfirm((p) => this.onConfirm(p));
    client.onSessionsChanged(() => {
      this.channel.info('sessions changed in another window or terminal');
      this.sessions.sessionsChanged();
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
    const latest = u && this.lastUsage?.inputTokens === u.inputTokens ? this.lastUsage : undefined;
    this.statusItem.text = statusText(this.state, st);
    this.statusItem.tooltip =
      st === 'running' ? statusTooltip(this.state, latest?.outputTokens, latest) : (this.server.status.message ?? 'Mino is not running.');
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
      await this.rewind.refresh();
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
  // confirmations

  private async onConfirm(p: ConfirmParams): Promise<boolean> {
    if (p.kind === 'rewind') return this.rewind.confirm(p);
    if (p.kind === 'instructions' && p.files?.length) return this.confirmInstructions(p);
    const choice = await vscode.window.showWarningMessage(
      p.kind === 'recovery'
        ? 'Mino: confirm recovery'
        : p.kind === 'skills'
          ? "Mino: load this project's skills?"
          : p.kind === 'instructions'
            ? "Mino: send this project's AGENTS.md instructions to the model?"
            : p.kind === 'elicitation'
              ? 'Mino: an MCP server asks'
              : 'Mino: confirm',
      { modal: true, detail: p.message },
      'Yes',
      'No',
    );
    return choice === 'Yes';
  }

  /**
   * AGENTS.md before it is first sent: the modal shows the paths and first lines (the message);
   * "Show the files" opens everything the model would get, as plain text in a read-only editor,
   * and asks again. Closing the modal is a no.
   */
  private async confirmInstructions(p: ConfirmParams): Promise<boolean> {
    const show = 'Show the files';
    for (;;) {
      const choice = await vscode.window.showWarningMessage(
        "Mino: send this project's AGENTS.md instructions to the model?",
        { modal: true, detail: p.message },
        'Yes',
        'No',
        show,
      );
      if (choice !== show) return choice === 'Yes';
      const content = (p.files ?? []).map((f) => `=== ${f.path} ===\n${f.text}`).join('\n');
      const doc = await vscode.workspace.openTextDocument({ content, language: 'plaintext' });
      await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: false });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // chat panel

  /** The panel messages the chat answers: its start, a message typed, Stop, the page before. */
  private chatRoutes() {
    return {
      ready: () => {
        this.sendSnapshot();
        this.approvals.showBadge();
        this.editor.postChips();
      },
      submit: (m) => this.submit(m.text),
      stop: () => this.stopTurn(),
      loadEarlier: () => this.loadEarlier(),
    } satisfies PanelRoutes;
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
    const chips = this.editor.chips.take(); // they go with this message
    if (chips.length) this.editor.postChips();
    this.transcript.addUser(text, chips.map((c) => c.label));
    let turnId: string | undefined;
    try {
      const r = await client.turn(text, cts.token, toContextItems(chips), toImageItems(chips));
      turnId = r?.turnId;
      this.transcript.endTurn(turnId);
      if (turnId) this.transcript.userTurn(turnId);
      if (r?.status === 'failed') this.transcript.addNotice(r.error || r.text || 'The turn failed.', 'error');
      else if (r?.status === 'limit') this.transcript.addNotice(r.error || r.text || 'The turn stopped at a limit.', 'warning');
      else if (r?.status === 'interrupted') this.transcript.addNotice('Interrupted.', 'warning');
      if (r && !r.turnId) this.editor.giveBackChips(chips); // the turn never started (no session selected)
    } catch (e) {
      this.transcript.endTurn(turnId);
      if (isRpcError(e) && e.code === ErrorCodes.requestCancelled) this.transcript.addNotice('Interrupted.', 'warning');
      else this.transcript.addNotice(this.describeError(e), 'error');
      // refused before anything was sent (bad item, busy, unavailable): the chips come back, to fix or send again
      if (isRpcError(e) && e.code !== ErrorCodes.requestCancelled) this.editor.giveBackChips(chips);
    } finally {
      cts.dispose();
      if (this.turn?.cts === cts) this.turn = undefined;
      this.view.post({ type: 'turn', running: false });
    }
    await this.rewind.refresh();
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

  /** The panel's buttons that run a palette command (restore problem, connection, first run). */
  private paletteRoutes() {
    return {
      command: async (m) => {
        await vscode.commands.executeCommand(m.command);
      },
    } satisfies PanelRoutes;
  }

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
    this.registerCommand('mino.newSession', () => this.sessions.newSession());
    this.registerCommand('mino.resumeSession', () => this.sessions.resumeSession());
    this.registerCommand('mino.clearSession', () => this.sessions.clearSession());
    this.registerCommand('mino.setMode', () => this.sessions.setMode());
    this.registerCommand('mino.setReasoningEffort', () => this.sessions.setReasoningEffort());
    this.registerCommand('mino.compact', () => this.sessions.compact());
    this.registerCommand('mino.showMemories', () => this.sessions.showMemories());
    this.registerCommand('mino.showRules', () => this.sessions.showRules());
    this.registerCommand('mino.openMemoryFolder', () => this.sessions.openMemoryFolder());
    this.registerCommand('mino.showLog', () => this.channel.show());
    this.registerCommand('mino.restartServer', () => this.server.restart());
    this.registerCommand('mino.openSettings', () => vscode.commands.executeCommand('workbench.action.openSettings', 'mino.env'));
    this.registerCommand('mino.openFirstRun', () => this.openFirstRun());
    this.registerCommand('mino.answerApproval', (key, answer) => this.approvals.answerFromNotification(key, answer));
    this.registerCommand('mino.showApproval', (key) => this.approvals.show(key));
  }

  // ---------------------------------------------------------------------------------------------
  // the editor as context and as reviewer: chips, @ completion, diffs

  private registerEditorCommands(): void {
    this.registerCommand('mino.askAboutSelection', () => this.editor.askAboutSelection());
    this.registerCommand('mino.addFileToChat', (uri, uris) => this.editor.addFileToChat(uri, uris));
    this.registerCommand('mino.diff.approve', (uri) => this.editor.answerFromDiff(uri, true));
    this.registerCommand('mino.diff.deny', (uri) => this.editor.answerFromDiff(uri, false));
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
