/**
 * The webview's copy of the host's transcript: a snapshot, then patches. Pure, so the tests can
 * check that the copy always equals the host's transcript.
 */
import type { ChatItem, Patch } from './messages';

export class Mirror {
  private readonly items = new Map<string, ChatItem>();
  private readonly order: string[] = [];

  /** Replaces everything; returns the ids to render. */
  reset(list: ChatItem[]): string[] {
    this.items.clear();
    this.order.length = 0;
    for (const it of list) {
      this.items.set(it.id, it);
      this.order.push(it.id);
    }
    return [...this.order];
  }

  /** Applies patches; returns the ids whose rendering changed (removed ones included). */
  apply(patches: Patch[]): string[] {
    const changed = new Set<string>();
    for (const p of patches) {
      if (p.op === 'upsert') {
        if (!this.items.has(p.item.id)) this.order.push(p.item.id);
        this.items.set(p.item.id, p.item);
        changed.add(p.item.id);
      } else if (p.op === 'delta') {
        const it = this.items.get(p.id);
        if (it && it.kind === 'assistant') {
          this.items.set(p.id, { ...it, text: it.text + p.text });
          changed.add(p.id);
        }
      } else if (p.op === 'prepend') {
        const fresh = p.items.filter((it) => !this.items.has(it.id));
        for (const it of fresh) this.items.set(it.id, it);
        this.order.unshift(...fresh.map((it) => it.id));
        for (const it of fresh) changed.add(it.id);
      } else if (p.op === 'remove') {
        this.items.delete(p.id);
        const i = this.order.indexOf(p.id);
        if (i >= 0) this.order.splice(i, 1);
        changed.add(p.id);
      }
    }
    return [...changed];
  }

  get(id: string): ChatItem | undefined {
    return this.items.get(id);
  }

  list(): ChatItem[] {
    return this.order.map((id) => this.items.get(id)!);
  }

  get size(): number {
    return this.order.length;
  }
}
