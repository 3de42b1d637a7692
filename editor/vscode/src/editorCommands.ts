/**
 * The editor as context and as reviewer: the chips of the next message (a selection, files from the
 * Explorer), `@` completion in the chat box, and the diff editor's view of a tool call's change with
 * Approve / Deny in its title.
 */
import * as vscode from 'vscode';
import { errorMessage, type MinoClient } from './client/minoClient';
import type { ApprovalBroker } from './core/approvals';
import { ContextChips, type ContextChip } from './core/context';
import type { PanelRoutes } from './core/panelRoutes';
import type { ChatViewProvider } from './chatView';
import type { DiffView } from './diffView';
import { fromFiles, fromSelection, type Taken } from './editorContext';
import type { MinoServer } from './server';
import type { State } from './protocol';

/** Where a tool call's diff is kept (approvals use their unguessable key). */
export function callDiffKey(turnId: string, callId: string): string {
  return `call:${turnId}:${callId}`;
}

export class EditorCommands {
  /** The context chips of the next message (the panel shows them above the chat box). */
  readonly chips = new ContextChips();

  constructor(
    private readonly view: ChatViewProvider,
    private readonly server: MinoServer,
    private readonly channel: vscode.LogOutputChannel,
    private readonly broker: ApprovalBroker,
    private readonly diffs: DiffView,
    private readonly state: () => State | null,
    private readonly requireClient: () => MinoClient | undefined,
  ) {}

  /** The panel messages the editor context answers: the chips, `@` completion, a card's "Open diff". */
  panelRoutes() {
    return {
      removeContext: (m) => {
        if (this.chips.remove(m.id)) this.postChips();
      },
      files: (m) => this.completeFiles(m.requestId, m.prefix),
      attachFile: (m) => {
        this.addChips({ ok: true, items: [{ path: m.path }] });
      },
      attachImage: (m) => this.addImage(m.name, m.mimeType, m.data),
      openDiff: (m) => this.openCallDiff(m.turnId, m.callId),
    } satisfies PanelRoutes;
  }

  /** Where editor files must lie: the workspace folder Mino was started in. */
  private workdir(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? this.state()?.workdir;
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

  async askAboutSelection(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const workdir = this.workdir();
    if (!editor || !workdir) {
      void vscode.window.showInformationMessage('Mino: open a file and select the lines to ask about.');
      return;
    }
    if (!this.contextSupported()) return;
    if (this.addChips(fromSelection(editor, workdir))) await this.focusChat();
  }

  async addFileToChat(uri: unknown, uris: unknown): Promise<void> {
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
  addChips(taken: Taken): boolean {
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

  /** An image pasted or chosen in the panel becomes a chip; says why when it cannot. */
  addImage(name: string, mimeType: string, data: string): void {
    const r = this.chips.addImage(name, mimeType, data);
    if (!r.ok) void vscode.window.showWarningMessage(`Mino: ${r.message}`);
    else this.channel.info(`image: ${r.chip.label} (${r.chip.image?.bytes ?? 0} bytes)`);
    this.postChips();
  }

  giveBackChips(chips: ContextChip[]): void {
    if (!chips.length) return;
    this.chips.restore(chips);
    this.postChips();
  }

  postChips(): void {
    this.view.post({ type: 'context', chips: this.chips.views() });
  }

  /** Shows the panel with the keyboard in the chat box: the question comes next. */
  private async focusChat(): Promise<void> {
    await this.view.reveal(false);
    this.postChips();
    this.view.post({ type: 'focusInput' });
  }

  async completeFiles(requestId: number, prefix: string): Promise<void> {
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
  async openCallDiff(turnId: string, callId: string): Promise<void> {
    const pending = this.broker.list().find((a) => a.params.callId === callId && a.params.turnId === turnId);
    if (pending && (await this.diffs.open(pending.key))) return;
    if (await this.diffs.open(callDiffKey(turnId, callId))) return;
    void vscode.window.showInformationMessage('Mino: this change is no longer kept for the diff view (only recent ones are).');
  }

  /** Approve or Deny in a diff editor's title. */
  answerFromDiff(uri: unknown, approved: boolean): void {
    const key = (uri instanceof vscode.Uri ? this.diffs.keyOf(uri) : undefined) ?? this.diffs.activeKey();
    if (!key || !this.broker.answer(key, approved, 'diff')) {
      void vscode.window.showInformationMessage('Mino: this approval was already answered.');
    }
  }
}
