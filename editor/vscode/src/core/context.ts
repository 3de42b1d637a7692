/**
 * Editor context for a turn: the chips above the chat box ("Ask About Selection", "Add File to
 * Chat", an `@` completion of a path Mino's `@` words cannot spell) and the `context` items of
 * `mino/turn` they become. Pure: no `vscode` import, so the limits and labels are unit-tested.
 *
 * The server checks everything again (paths inside the working directory, the sizes); these checks
 * only say it sooner, before anything is sent, in words a person can act on.
 */
import * as path from 'node:path';
import type { ContextItem } from '../protocol';
import type { ChipView } from './messages';

/** A text sent with an item (a selection, an unsaved buffer): at most this many UTF-8 bytes. */
export const MAX_ITEM_BYTES = 64 * 1024;
/** All items of one turn together. */
export const MAX_TOTAL_BYTES = 256 * 1024;
/** Chips at most; more is surely a mistake (and each is a part of the model's input). */
export const MAX_CHIPS = 20;

export interface ContextChip {
  /** a handle for the panel's remove button */
  id: string;
  /** relative to the working directory, "/"-separated */
  path: string;
  startLine?: number;
  endLine?: number;
  /** what the editor showed; absent: the server reads the file */
  text?: string;
  /** what the chip says: `app.py:10-20`, `src/app.py` */
  label: string;
  /** the chip's tooltip: the whole path and where the text comes from */
  title: string;
}

export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function kib(n: number): string {
  return `${Math.ceil(n / 1024)} KiB`;
}

/** `name:10-20` (`name:10` for one line, `name` for a whole file). */
export function chipLabel(relPath: string, startLine?: number, endLine?: number): string {
  const name = relPath.split('/').pop() || relPath;
  if (startLine === undefined) return name;
  return endLine === undefined || endLine === startLine ? `${name}:${startLine}` : `${name}:${startLine}-${endLine}`;
}

/**
 * `file` relative to the working directory, "/"-separated; undefined when it lies outside (or is
 * the folder itself). Lexical only: the server resolves symbolic links and refuses what escapes.
 */
export function relativeInside(workdir: string, file: string, p: typeof path = path): string | undefined {
  const rel = p.relative(workdir, file);
  if (!rel || rel === '..' || rel.startsWith(`..${p.sep}`) || p.isAbsolute(rel)) return undefined;
  return rel.split(p.sep).join('/');
}

/**
 * The lines a selection covers (1-based, inclusive). A selection that ends at the very start of a
 * line (a whole-line selection made with Shift+Down) does not include that line.
 */
export function selectionLines(
  start: { line: number; character: number },
  end: { line: number; character: number },
): { startLine: number; endLine: number } {
  let last = end.line;
  if (end.character === 0 && end.line > start.line) last -= 1;
  return { startLine: start.line + 1, endLine: last + 1 };
}

export type AddResult = { ok: true; chip: ContextChip; replaced: boolean } | { ok: false; message: string };

/** The chips of the next turn, in the order they were added. */
export class ContextChips {
  private chips: ContextChip[] = [];
  private next = 0;

  list(): ContextChip[] {
    return [...this.chips];
  }

  views(): ChipView[] {
    return this.chips.map(({ id, label, title }) => ({ id, label, title }));
  }

  get size(): number {
    return this.chips.length;
  }

  /**
   * Adds a chip; the same file and lines again replace the old chip (the newer text wins). Refused,
   * with a message saying why, when the text or all texts together are over the server's limits.
   */
  add(item: Omit<ContextChip, 'id' | 'label' | 'title'> & { title?: string }): AddResult {
    const label = chipLabel(item.path, item.startLine, item.endLine);
    if (item.text !== undefined && utf8Bytes(item.text) > MAX_ITEM_BYTES) {
      return {
        ok: false,
        message: `${label} is ${kib(utf8Bytes(item.text))}; Mino takes at most ${kib(MAX_ITEM_BYTES)} of selected text per item. Select less, or save the file and use "Mino: Add File to Chat".`,
      };
    }
    const same = this.chips.findIndex((c) => c.path === item.path && c.startLine === item.startLine && c.endLine === item.endLine);
    const others = this.chips.filter((_, i) => i !== same);
    if (same < 0 && this.chips.length >= MAX_CHIPS) {
      return { ok: false, message: `At most ${MAX_CHIPS} items can go with one message. Remove some first.` };
    }
    const total = others.reduce((n, c) => n + (c.text ? utf8Bytes(c.text) : 0), 0) + (item.text ? utf8Bytes(item.text) : 0);
    if (total > MAX_TOTAL_BYTES) {
      return {
        ok: false,
        message: `With ${label} the selected text would be ${kib(total)}; Mino takes at most ${kib(MAX_TOTAL_BYTES)} per message. Remove a chip first.`,
      };
    }
    const lines = item.startLine === undefined ? '' : item.endLine === undefined || item.endLine === item.startLine ? ` (line ${item.startLine})` : ` (lines ${item.startLine}-${item.endLine})`;
    const chip: ContextChip = {
      id: same >= 0 ? this.chips[same].id : `ctx-${++this.next}`,
      path: item.path,
      startLine: item.startLine,
      endLine: item.endLine,
      text: item.text,
      label,
      title: item.title ?? `${item.path}${lines}${item.text === undefined ? '' : ' — as the editor shows it'}`,
    };
    if (same >= 0) this.chips[same] = chip;
    else this.chips.push(chip);
    return { ok: true, chip, replaced: same >= 0 };
  }

  remove(id: string): boolean {
    const before = this.chips.length;
    this.chips = this.chips.filter((c) => c.id !== id);
    return this.chips.length !== before;
  }

  /** Takes every chip (they go with the message being sent). */
  take(): ContextChip[] {
    const all = this.chips;
    this.chips = [];
    return all;
  }

  /** Puts chips back in front (the server refused the message: nothing was sent). */
  restore(chips: ContextChip[]): void {
    const ids = new Set(this.chips.map((c) => c.id));
    this.chips = [...chips.filter((c) => !ids.has(c.id)), ...this.chips];
  }
}

/** The `context` of mino/turn. */
export function toContextItems(chips: readonly ContextChip[]): ContextItem[] {
  return chips.map((c) => {
    const item: ContextItem = { path: c.path };
    if (c.startLine !== undefined) item.startLine = c.startLine;
    if (c.endLine !== undefined) item.endLine = c.endLine;
    if (c.text !== undefined) item.text = c.text;
    return item;
  });
}
