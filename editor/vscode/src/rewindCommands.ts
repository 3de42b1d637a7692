/**
 * Rewind in the chat panel: "Rewind to here" on a user message whose turn changed files
 * (`mino/checkpoints` says which), `mino/rewind` when pressed, and the server's question
 * (`mino/confirm` kind rewind): each file's diff in VS Code's diff editor first (as it is ↔ as the
 * rewind leaves it), then a modal question with every line; the diffs close with the answer. It
 * reaches the rest of the extension through `RewindHost` (the Controller).
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { errorMessage, type MinoClient } from './client/minoClient';
import { isFileDiff } from './core/diffs';
import type { PanelRoutes } from './core/panelRoutes';
import type { Transcript } from './core/transcript';
import type { DiffView } from './diffView';
import type { ConfirmParams } from './protocol';

/** What rewinding needs of the Controller. */
export interface RewindHost {
  readonly channel: vscode.LogOutputChannel;
  readonly transcript: Transcript;
  readonly diffs: DiffView;
  /** The server's client if it runs (undefined: nothing is asked or shown). */
  client(): MinoClient | undefined;
  /** The server's client, or undefined after saying why there is none. */
  requireClient(): MinoClient | undefined;
  /** A turn is running (a rewind waits for it to end). */
  turnRunning(): boolean;
  reloadHistory(): Promise<void>;
  describeError(e: unknown): string;
}

export class RewindCommands {
  /** Each rewindable turn's number, as `mino/checkpoints` gave it (the done line names it). */
  private numbers = new Map<string, number>();

  constructor(private readonly host: RewindHost) {}

  /** The panel messages rewind answers: a user message's "Rewind to here". */
  panelRoutes() {
    return { rewind: (m) => this.rewindTo(m.turnId) } satisfies PanelRoutes;
  }

  /** Which user messages offer "Rewind to here": the turns `mino/checkpoints` lists. */
  async refresh(): Promise<void> {
    const client = this.host.client();
    if (!client) return;
    try {
      const { turns } = await client.checkpoints();
      this.numbers = new Map(turns.map((t) => [t.turnId, t.n]));
      this.host.transcript.setRewindable(new Set(turns.map((t) => t.turnId)));
    } catch (e) {
      this.host.channel.warn(`mino/checkpoints: ${errorMessage(e)}`);
    }
  }

  /** `mino/rewind`: the server asks first (`confirm`, below); then the panel shows the history
   *  again, the rewound turns marked, and one notice says what was rewound and what was kept. */
  async rewindTo(turnId: string): Promise<void> {
    const { transcript } = this.host;
    const client = this.host.requireClient();
    if (!client) return;
    if (this.host.turnRunning()) {
      transcript.addNotice('Mino is still answering. Press Stop to interrupt it.', 'warning');
      return;
    }
    // Taken now: reloading the history lists the checkpoints again, without the rewound turn.
    const n = this.numbers.get(turnId);
    try {
      const r = await client.rewind(turnId);
      if (r.confirmed) {
        await this.host.reloadHistory();
        const kept = r.kept.map((k) => `keep ${k.path}: ${k.reason}`);
        // The terminal's line, word for word (docs/BEHAVIOUR.md, "Rewind").
        const done = `Rewound ${r.rewound.length} file(s)` + (n === undefined ? '.' : `; the conversation continues from before turn ${n}.`);
        transcript.addNotice([done, ...kept].join('\n'), kept.length ? 'warning' : 'info');
      }
    } catch (e) {
      transcript.addNotice(this.host.describeError(e), 'error');
    }
    await this.refresh();
  }

  /** The rewind question (`mino/confirm` kind rewind). */
  async confirm(p: ConfirmParams): Promise<boolean> {
    const { diffs, channel } = this.host;
    const keys: string[] = [];
    for (const d of p.diffs ?? []) {
      if (!isFileDiff(d)) continue;
      const key = `rewind-${randomBytes(8).toString('hex')}`;
      diffs.put(key, d, false);
      keys.push(key);
      const name = d.path.split(/[\\/]/u).pop() ?? d.path;
      await diffs.open(key, { preserveFocus: true, title: `${name} ↔ after the rewind` }).catch((e: unknown) => channel.warn(`diff: ${errorMessage(e)}`));
    }
    try {
      const lines = p.message.split('\n');
      const question = lines.pop() ?? p.message;
      const choice = await vscode.window.showWarningMessage(`Mino: ${question}`, { modal: true, detail: lines.join('\n') }, 'Rewind');
      return choice === 'Rewind';
    } finally {
      for (const key of keys) void diffs.settle(key);
    }
  }
}
