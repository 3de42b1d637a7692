/**
 * Editor context for a turn: the chips above the chat box ("Ask About Selection", "Add File to
 * Chat", an `@` completion of a path Mino's `@` words cannot spell, an image pasted or attached in
 * the panel) and the `context` and `images` items of `mino/turn` they become. Pure: no `vscode`
 * import, so the limits and labels are unit-tested.
 *
 * The server checks everything again (paths inside the working directory, the sizes); these checks
 * only say it sooner, before anything is sent, in words a person can act on.
 */
import * as path from 'node:path';
import type { ContextItem, ImageItem } from '../protocol';
import { IMAGE_TYPES, MAX_IMAGE_BYTES, MAX_IMAGES, imageSizeRefused, imageTypeRefused, type ChipView } from './messages';

/**
 * A text sent with an item (a selection, an unsaved buffer) over this many UTF-8 bytes is not
 * refused: the server sends the model its first 64 KiB and a note (and says so), so it counts this
 * much towards the total.
 */
export const MAX_ITEM_BYTES = 64 * 1024;
/** All items of one turn together. */
export const MAX_TOTAL_BYTES = 256 * 1024;
export { IMAGE_TYPES, MAX_IMAGE_BYTES, MAX_IMAGES } from './messages';
/**
 * All images of one message together: in base64 they must fit the protocol's 16 MiB message with
 * the text and context around them.
 */
export const MAX_IMAGES_TOTAL_BYTES = 11 * 1024 * 1024;
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
  /** an image (pasted or attached in the panel): `path` is then only its name */
  image?: { mimeType: string; data: string; bytes: number };
}

export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function kib(n: number): string {
  return `${Math.ceil(n / 1024)} KiB`;
}

function mib(n: number): string {
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The bytes base64 `data` decodes to (without decoding it). */
export function base64Bytes(data: string): number {
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - pad;
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
    return this.chips.map(({ id, label, title, image }) => (image ? { id, label, title, kind: 'image' as const } : { id, label, title }));
  }

  get size(): number {
    return this.chips.length;
  }

  /**
   * Adds a chip; the same file and lines again replace the old chip (the newer text wins). Refused,
   * with a message saying why, when the text or all texts together are over the server's limits.
   */
  add(item: Omit<ContextChip, 'id' | 'label' | 'title' | 'image'> & { title?: string }): AddResult {
    const label = chipLabel(item.path, item.startLine, item.endLine);
    const same = this.chips.findIndex((c) => !c.image && c.path === item.path && c.startLine === item.startLine && c.endLine === item.endLine);
    const others = this.chips.filter((_, i) => i !== same);
    if (same < 0 && this.chips.length >= MAX_CHIPS) {
      return { ok: false, message: `At most ${MAX_CHIPS} items can go with one message. Remove some first.` };
    }
    // over 64 KiB the server sends the first 64 KiB (and says so): that is what counts
    const counted = (text?: string) => (text ? Math.min(utf8Bytes(text), MAX_ITEM_BYTES) : 0);
    const total = others.reduce((n, c) => n + counted(c.text), 0) + counted(item.text);
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

  /**
   * Adds an image (pasted, or chosen with the attach button): `data` is its bytes in base64.
   * Refused, with a message saying why, over the server's limits; the server checks its bytes.
   */
  addImage(name: string, mimeType: string, data: string): AddResult {
    const shown = name.trim() || 'image';
    if (!(IMAGE_TYPES as readonly string[]).includes(mimeType)) {
      return { ok: false, message: imageTypeRefused(shown) };
    }
    const bytes = base64Bytes(data);
    if (bytes > MAX_IMAGE_BYTES) {
      return { ok: false, message: imageSizeRefused(shown, bytes) };
    }
    const images = this.chips.filter((c) => c.image);
    if (images.length >= MAX_IMAGES) {
      return { ok: false, message: `At most ${MAX_IMAGES} images can go with one message. Remove one first.` };
    }
    if (this.chips.length >= MAX_CHIPS) {
      return { ok: false, message: `At most ${MAX_CHIPS} items can go with one message. Remove some first.` };
    }
    const total = images.reduce((n, c) => n + (c.image?.bytes ?? 0), 0) + bytes;
    if (total > MAX_IMAGES_TOTAL_BYTES) {
      return {
        ok: false,
        message: `With ${shown} the images would be ${mib(total)}; one message takes at most ${mib(MAX_IMAGES_TOTAL_BYTES)} of images. Remove one first.`,
      };
    }
    const chip: ContextChip = {
      id: `img-${++this.next}`,
      path: shown,
      label: shown,
      title: `${shown} — ${mimeType.slice('image/'.length).toUpperCase()} image, ${kib(bytes)}`,
      image: { mimeType, data, bytes },
    };
    this.chips.push(chip);
    return { ok: true, chip, replaced: false };
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

/** The `images` of mino/turn. */
export function toImageItems(chips: readonly ContextChip[]): ImageItem[] {
  return chips.flatMap((c) => (c.image ? [{ mimeType: c.image.mimeType, data: c.image.data, name: c.path }] : []));
}

/** The `context` of mino/turn. */
export function toContextItems(chips: readonly ContextChip[]): ContextItem[] {
  return chips.filter((c) => !c.image).map((c) => {
    const item: ContextItem = { path: c.path };
    if (c.startLine !== undefined) item.startLine = c.startLine;
    if (c.endLine !== undefined) item.endLine = c.endLine;
    if (c.text !== undefined) item.text = c.text;
    return item;
  });
}
