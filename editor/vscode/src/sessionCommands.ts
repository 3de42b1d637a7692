/**
 * The palette's session commands: New, Resume (a picker that stays current), Clear, Set Mode,
 * Compact, and the memory list and folder. They reach the rest of the extension through
 * `SessionHost` (the Controller).
 */
import * as vscode from 'vscode';
import { errorMessage, isRpcError, type MinoClient } from './client/minoClient';
import { MODE_INFO, memoryIndexLine, sessionPickItems, shortId, type SessionPickItem } from './core/format';
import type { Transcript } from './core/transcript';
import { EFFORTS, ErrorCodes, MODES, type Effort, type Mode, type SessionInfo, type State } from './protocol';

const CLEAR_PROMPT =
  "Clear this session's saved history? This does not undo executed commands or delete recovery copies or manual backups.";

/** What the session commands need of the Controller. */
export interface SessionHost {
  readonly channel: vscode.LogOutputChannel;
  readonly transcript: Transcript;
  /** The server's client, or undefined after saying why there is none. */
  requireClient(): MinoClient | undefined;
  state(): State | null;
  /** A new State; another session's history is reloaded. */
  setState(s: State): void;
  /** The history reload in flight (resolved when none is). */
  reloading(): Promise<void>;
  reloadHistory(): Promise<void>;
}

export class SessionCommands {
  /** Refreshes the open Resume Session picker (another window changed the sessions). */
  private refreshSessions: (() => void) | undefined;

  constructor(private readonly host: SessionHost) {}

  /** mino/sessionsChanged: another window or terminal created, cleared, opened or closed a session. */
  sessionsChanged(): void {
    this.refreshSessions?.();
  }

  async newSession(): Promise<void> {
    const client = this.host.requireClient();
    if (!client) return;
    const s = await client.newSession();
    this.host.setState(s); // another session: setState (or the mino/stateChanged before it) reloads the history
    await this.host.reloading();
    this.host.transcript.addNotice(`Session: ${s.sessionId ?? '(none)'}`);
  }

  async resumeSession(): Promise<void> {
    const client = this.host.requireClient();
    if (!client) return;
    const { sessions } = await client.listSessions();
    if (!sessions?.length) {
      void vscode.window.showInformationMessage('Mino: there are no saved sessions yet.');
      return;
    }
    const pick = await this.pickSession(sessions, () => client.listSessions());
    if (!pick) return;
    if (pick.current && !this.host.state()?.restoreProblem) {
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
    this.host.setState(s);
    await this.host.reloading();
    this.host.transcript.addNotice(`Session: ${s.sessionId ?? pick.id}`);
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
      qp.items = sessionPickItems(all, this.host.state()?.sessionId ?? null);
      const again = qp.items.find((i) => i.id === active);
      if (again) qp.activeItems = [again];
    };
    fill(sessions);
    const refresh = () =>
      void list().then(
        (r) => {
          if (this.refreshSessions === refresh) fill(Array.isArray(r?.sessions) ? r.sessions : []);
        },
        (e: unknown) => this.host.channel.warn(`mino/sessions/list: ${errorMessage(e)}`),
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

  async clearSession(): Promise<void> {
    const client = this.host.requireClient();
    if (!client) return;
    const id = this.host.state()?.sessionId ?? (await client.state()).sessionId;
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
    if (r?.state) this.host.setState(r.state);
    if (r?.cleared) {
      await this.host.reloadHistory();
      this.host.transcript.addNotice(`Cleared session: ${id}`);
      void vscode.window.showInformationMessage(`Cleared session: ${id}`);
    } else {
      const why = typed.trim() === '' ? 'Nothing was typed.' : 'The typed ID does not match.';
      this.host.transcript.addNotice(`Session was not cleared. ${why}`, 'warning');
      void vscode.window.showWarningMessage(`Session was not cleared. ${why}`);
    }
  }

  async setMode(): Promise<void> {
    const client = this.host.requireClient();
    if (!client) return;
    const current = this.host.state()?.mode;
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
    this.host.setState(await client.setMode(mode));
    void vscode.window.setStatusBarMessage(`Mino: permission mode ${mode}`, 3000);
  }

  /** The picker for how hard a reasoning model thinks (ACP clients call it the thought level). */
  async setReasoningEffort(): Promise<void> {
    const client = this.host.requireClient();
    if (!client) return;
    const current = this.host.state()?.reasoningEffort ?? null;
    const choices: (Effort | null)[] = [null, ...EFFORTS];
    const items = choices.map((effort) => ({
      label: `${effort === current ? '$(check) ' : ''}${effort ?? 'Model default'}`,
      description: effort === current ? 'current' : '',
      detail: effort === null ? 'Send no reasoning settings' : `Ask the model for ${effort} reasoning effort`,
      effort,
    }));
    const pick = await vscode.window.showQuickPick(items, { title: 'Mino: Set Reasoning Effort', placeHolder: 'How hard should the model think?' });
    if (!pick) return;
    this.host.setState(await client.setReasoningEffort(pick.effort));
    void vscode.window.setStatusBarMessage(`Mino: reasoning effort ${pick.effort ?? 'model default'}`, 3000);
  }

  async compact(): Promise<void> {
    const client = this.host.requireClient();
    if (!client) return;
    const r = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Mino: compacting the session…', cancellable: true },
      (_progress, token) => client.compact(token),
    );
    this.host.transcript.addNotice(r.message);
    void vscode.window.showInformationMessage(`Mino: ${r.message}`);
  }

  /**
   * The remembered decisions (`/rules`): every rule numbered, with its project; picking one offers
   * to delete it, after which the calls it covered ask again.
   */
  async showRules(): Promise<void> {
    const client = this.host.requireClient();
    if (!client) return;
    const r = await client.listRules();
    for (const p of r.problems ?? []) void vscode.window.showWarningMessage(`Mino: ${p}`);
    if (!r.rules.length) {
      void vscode.window.showInformationMessage('Mino: no rules. Answer Always in this project to a question to keep one.');
      return;
    }
    type Item = vscode.QuickPickItem & { id: string };
    const items: Item[] = r.rules.map((rule, n) => ({
      label: `${n + 1}. ${rule.effect} ${rule.kind} ${rule.pattern}`,
      detail: rule.project,
      id: rule.id,
    }));
    const pick = await vscode.window.showQuickPick(items, {
      title: `Mino: Rules (${r.rules.length})`,
      placeHolder: 'Pick a rule to delete it',
      matchOnDetail: true,
    });
    if (!pick) return;
    const sure = await vscode.window.showWarningMessage(`Mino: delete the rule "${pick.label}"?`, { modal: true }, 'Delete');
    if (sure !== 'Delete') return;
    const done = await client.deleteRule(pick.id);
    void vscode.window.showInformationMessage(done.deleted ? `Mino: deleted ${pick.label}.` : 'Mino: that rule had already changed or gone.');
  }

  async showMemories(): Promise<void> {
    const client = this.host.requireClient();
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

  async openMemoryFolder(): Promise<void> {
    let dir = this.host.state()?.memory?.dir;
    if (!dir) {
      const client = this.host.requireClient();
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
}
