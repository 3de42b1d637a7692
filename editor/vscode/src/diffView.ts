/**
 * Mino's proposed file changes in VS Code's diff editor: read-only virtual documents (a
 * TextDocumentContentProvider on the `mino-diff` scheme) for the file before and after, titled
 * `NAME ↔ Mino's proposal`.
 *
 * For a pending approval the diff editor's title bar has Approve and Deny (package.json: menus
 * `editor/title`, shown while the document is one of `mino.pendingDiffs`). Closing the tab is not an
 * answer; any answer, wherever it is given, closes the tab (`settle`). Nothing here touches the file
 * on disk: the server writes it once approved.
 */
import * as vscode from 'vscode';
import { DiffStore, baseName, diffTitle, type DiffEntry } from './core/diffs';
import type { FileDiff } from './protocol';

export const DIFF_SCHEME = 'mino-diff';
/** The context key the editor/title menus test: the `after` URIs of pending approvals' diffs. */
export const PENDING_DIFFS_KEY = 'mino.pendingDiffs';

type Side = 'before' | 'after';

export class DiffView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly store = new DiffStore();
  private readonly changes = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changes.event;
  private readonly registration: vscode.Disposable;

  constructor(private readonly log: (line: string) => void) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this);
    void this.updateContext();
  }

  /** `mino-diff:/<kind>/<key>/<side>/<name>`: the name keeps the language (syntax colours) right. */
  uri(key: string, side: Side, diff: FileDiff): vscode.Uri {
    return vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${encodeURIComponent(key)}/${side}/${baseName(diff.path)}` });
  }

  /** The entry key a `mino-diff` URI names. */
  keyOf(uri: vscode.Uri | undefined): string | undefined {
    if (!uri || uri.scheme !== DIFF_SCHEME) return undefined;
    const m = /^\/([^/]+)\/(before|after)\//u.exec(uri.path);
    if (!m) return undefined;
    try {
      return decodeURIComponent(m[1]);
    } catch {
      return undefined;
    }
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const key = this.keyOf(uri);
    const e = key === undefined ? undefined : this.store.get(key);
    if (!e) return '';
    const side = /^\/[^/]+\/(before|after)\//u.exec(uri.path)?.[1];
    return side === 'before' ? (e.diff.before ?? '') : e.diff.after;
  }

  has(key: string): boolean {
    return !!this.store.get(key);
  }

  /** Keeps a diff (a pending approval's, or a call's that ran) without opening it. */
  put(key: string, diff: FileDiff, pending: boolean): DiffEntry {
    const e = this.store.put(key, diff, pending);
    // an already open document of this key shows the new text
    this.changes.fire(this.uri(key, 'before', diff));
    this.changes.fire(this.uri(key, 'after', diff));
    if (pending) void this.updateContext();
    return e;
  }

  /** Opens the diff editor of a kept entry; false when it is gone. */
  async open(key: string, opts: { preserveFocus?: boolean; title?: string } = {}): Promise<boolean> {
    const e = this.store.get(key);
    if (!e) return false;
    const title = opts.title ?? (e.pending ? diffTitle(e.diff) : `${baseName(e.diff.path)} ↔ Mino's edit`);
    // the new file has no "before": an empty left side
    await vscode.commands.executeCommand('vscode.diff', this.uri(key, 'before', e.diff), this.uri(key, 'after', e.diff), title, {
      preview: false,
      preserveFocus: opts.preserveFocus ?? false,
    });
    this.log(`diff opened: ${title}`);
    // answered while the editor was opening: close what just opened
    if (!this.store.get(key)) await this.closeTabs(key);
    return true;
  }

  private async closeTabs(key: string): Promise<void> {
    const tabs = this.tabsOf(key);
    if (!tabs.length) return;
    try {
      await vscode.window.tabGroups.close(tabs, true);
    } catch (err) {
      this.log(`closing a Mino diff: ${String(err)}`);
    }
  }

  /** The approval ended (any answer, cancel, shutdown), or a rewind's question was answered: its
   *  diff tabs close and it is dropped. */
  async settle(key: string): Promise<void> {
    if (!this.store.get(key)) return;
    this.store.settle(key);
    await this.updateContext();
    await this.closeTabs(key);
  }

  /** Open diff tabs showing this entry. */
  tabsOf(key: string): vscode.Tab[] {
    const out: vscode.Tab[] = [];
    for (const g of vscode.window.tabGroups.all) {
      for (const t of g.tabs) {
        const input = t.input;
        if (input instanceof vscode.TabInputTextDiff && this.keyOf(input.modified) === key) out.push(t);
      }
    }
    return out;
  }

  /** The entry of the active editor tab, if it is one of ours. */
  activeKey(): string | undefined {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (input instanceof vscode.TabInputTextDiff) return this.keyOf(input.modified);
    if (input instanceof vscode.TabInputText) return this.keyOf(input.uri);
    return undefined;
  }

  private async updateContext(): Promise<void> {
    const uris: string[] = [];
    for (const key of this.store.pendingKeys()) {
      const e = this.store.get(key);
      if (e) uris.push(this.uri(key, 'after', e.diff).toString(), this.uri(key, 'before', e.diff).toString());
    }
    await vscode.commands.executeCommand('setContext', PENDING_DIFFS_KEY, uris);
  }

  dispose(): void {
    this.store.clear();
    void vscode.commands.executeCommand('setContext', PENDING_DIFFS_KEY, []);
    this.registration.dispose();
    this.changes.dispose();
  }
}
