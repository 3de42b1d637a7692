/**
 * The before/after texts of write_file and edit_file calls, for VS Code's diff editor. Pure: no
 * `vscode` import (src/diffView.ts shows them).
 *
 * Two kinds of entry: the diff of a pending approval (kept until the approval ends), and the diff
 * of a call that ran without asking (kept for the card's "Open diff", the oldest dropped first when
 * all of them together pass a memory budget: each side may be up to 1 MiB).
 */
import type { FileDiff } from '../protocol';

export const DIFF_BUDGET_BYTES = 32 * 1024 * 1024;

export interface DiffEntry {
  readonly key: string;
  readonly diff: FileDiff;
  /** an approval waiting for its answer: its diff editor has Approve and Deny in its title */
  readonly pending: boolean;
}

/** The last segment of a path, "/" or "\\" separated. */
export function baseName(p: string): string {
  const parts = p.split(/[\\/]/u).filter(Boolean);
  return parts.at(-1) ?? p;
}

/** The diff editor's title: `NAME ↔ Mino's proposal`. */
export function diffTitle(diff: FileDiff): string {
  return `${baseName(diff.path)} ↔ Mino's proposal`;
}

/** A well-formed diff from the wire (anything else is not shown). */
export function isFileDiff(d: unknown): d is FileDiff {
  if (typeof d !== 'object' || d === null) return false;
  const o = d as Record<string, unknown>;
  return typeof o.path === 'string' && o.path !== '' && typeof o.after === 'string' && (o.before === null || typeof o.before === 'string');
}

function size(d: FileDiff): number {
  return (d.before?.length ?? 0) + d.after.length;
}

export class DiffStore {
  private readonly entries = new Map<string, DiffEntry>();

  constructor(private readonly budget = DIFF_BUDGET_BYTES) {}

  put(key: string, diff: FileDiff, pending: boolean): DiffEntry {
    this.entries.delete(key); // re-inserted: the newest
    const e: DiffEntry = { key, diff, pending };
    this.entries.set(key, e);
    this.evict();
    return e;
  }

  get(key: string): DiffEntry | undefined {
    return this.entries.get(key);
  }

  /** The approval ended: the entry stays only as an ordinary (droppable) one, or goes. */
  settle(key: string, keep = false): void {
    const e = this.entries.get(key);
    if (!e) return;
    if (keep) this.entries.set(key, { ...e, pending: false });
    else this.entries.delete(key);
    this.evict();
  }

  pendingKeys(): string[] {
    return [...this.entries.values()].filter((e) => e.pending).map((e) => e.key);
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }

  private evict(): void {
    let total = 0;
    for (const e of this.entries.values()) total += size(e.diff);
    // oldest first; a pending approval's diff is never dropped
    for (const e of [...this.entries.values()]) {
      if (total <= this.budget) break;
      if (e.pending) continue;
      this.entries.delete(e.key);
      total -= size(e.diff);
    }
  }
}
