/**
 * History in pages: the transcript shows the latest page, grows upwards by earlier pages without
 * gaps or repeats, and the webview's mirror follows (prepend patches); the webview asks for the
 * page above only at the top and keeps what the person reads in place.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Mirror } from '../../src/core/mirror';
import { EARLIER_MARGIN_PX, keptScrollTop, shouldLoadEarlier } from '../../src/core/paging';
import { MAX_ITEMS, Transcript } from '../../src/core/transcript';
import type { Patch } from '../../src/core/messages';
import type { History, HistoryItem } from '../../src/protocol';

/** A session of `n` shown items (seq 1, 3, 5 …: records between them are not shown), served in
 *  pages the way the server does: the latest `limit` with seq below `before`, oldest first. */
function server(n: number) {
  const all: HistoryItem[] = [];
  for (let k = 0; k < n; k++) {
    const seq = 2 * k + 1;
    all.push(
      k % 3 === 2
        ? { seq, turnId: `t${k}`, role: 'tool', text: `out ${seq}`, tool: 'bash', status: 'completed' }
        : { seq, turnId: `t${k}`, role: k % 3 ? 'assistant' : 'user', text: `text ${seq}` },
    );
  }
  const asked: ({ before?: number; limit?: number } | undefined)[] = [];
  const history = (params?: { before?: number; limit?: number }): History => {
    asked.push(params);
    const below = all.filter((i) => params?.before === undefined || i.seq < params.before);
    const limit = params?.limit ?? 200;
    return { items: below.slice(Math.max(0, below.length - limit)), more: below.length > limit };
  };
  return { all, history, asked };
}

function texts(items: { kind: string; text?: string; result?: string }[]): string[] {
  return items.map((i) => (i.kind === 'tool' ? i.result! : i.text!));
}

function viaJson<T>(x: T): T {
  return JSON.parse(JSON.stringify(x)) as T;
}

test('the latest page, then earlier pages above it: no gaps, no repeats, the mirror follows', () => {
  const s = server(530);
  const mirror = new Mirror();
  let earlierChanges = 0;
  const t = new Transcript(
    (p: Patch[]) => mirror.apply(viaJson(p)),
    () => earlierChanges++,
  );
  t.loadHistory(s.history());
  mirror.reset(viaJson(t.snapshot()));
  assert.equal(t.length, 200);
  assert.deepEqual(t.earlier(), { more: true, before: s.all[330].seq });
  while (t.earlier().more) {
    const { before } = t.earlier();
    assert.ok(t.prependHistory(s.history({ before: before!, limit: 200 }), t.generation));
    assert.deepEqual(mirror.list(), t.snapshot());
  }
  assert.equal(earlierChanges, 2);
  assert.deepEqual(t.earlier(), { more: false, before: null });
  assert.deepEqual(texts(t.snapshot()), texts(s.all.map((h) => (h.role === 'tool' ? { kind: 'tool', result: h.text } : { kind: h.role, text: h.text }))));
  assert.deepEqual(
    s.asked.map((a) => a?.before),
    [undefined, s.all[330].seq, s.all[130].seq],
  );
});

test('live items after the page stay below the earlier pages, and a page never repeats an item', () => {
  const s = server(250);
  const t = new Transcript();
  t.loadHistory(s.history({ limit: 50 }));
  t.addUser('a live question');
  t.applyEvent({ turnId: 'L', type: 'assistant_message', text: 'a live answer' });
  // the same page again (e.g. two scroll events): only what lies above the first item goes in
  const page = s.history({ before: t.earlier().before!, limit: 50 });
  assert.ok(t.prependHistory(page, t.generation));
  assert.ok(t.prependHistory({ items: page.items, more: true }, t.generation));
  const shown = texts(t.snapshot());
  assert.equal(new Set(shown).size, shown.length);
  assert.deepEqual(shown.slice(-2), ['a live question', 'a live answer']);
  assert.equal(shown.length, 100 + 2);
});

test('a page asked for before a session switch is dropped', () => {
  const s = server(300);
  const t = new Transcript();
  t.loadHistory(s.history());
  const generation = t.generation;
  const before = t.earlier().before!;
  t.loadHistory(server(3).history()); // another session was shown meanwhile
  assert.equal(t.prependHistory(s.history({ before }), generation), false);
  assert.equal(t.length, 3);
  assert.deepEqual(t.earlier(), { more: false, before: null });
});

test('an empty session, a page without seqs and a fully loaded one offer nothing above', () => {
  const t = new Transcript();
  t.loadHistory({ items: [], more: false });
  assert.deepEqual(t.earlier(), { more: false, before: null });
  t.loadHistory({ items: [{ role: 'user', text: 'old server' } as HistoryItem], more: true });
  assert.deepEqual(t.earlier(), { more: false, before: null });
  t.loadHistory(server(10).history());
  assert.deepEqual(t.earlier(), { more: false, before: null });
});

test('when live items push the oldest out, the page above starts where the shown items start', () => {
  const s = server(100);
  const t = new Transcript();
  t.loadHistory(s.history({ limit: 100 }));
  assert.equal(t.earlier().more, false);
  for (let n = 0; n < MAX_ITEMS - 100 + 10; n++) t.addNotice(`n${n}`); // 10 history items go
  assert.deepEqual(t.earlier(), { more: true, before: s.all[10].seq });
  for (let n = 0; n < 90; n++) t.addNotice(`m${n}`); // every history item is gone
  assert.deepEqual(t.earlier(), { more: true, before: s.all[99].seq + 1 });
  t.addUser('live'); // a logged item …
  for (let n = 0; n < MAX_ITEMS; n++) t.addNotice(`k${n}`); // … goes too: where to start is unknown
  assert.deepEqual(t.earlier(), { more: true, before: null });
});

test('earlier pages the person loaded are not pushed out by the next live item', () => {
  const s = server(3000);
  const t = new Transcript();
  t.loadHistory(s.history());
  for (let k = 0; k < 12; k++) t.prependHistory(s.history({ before: t.earlier().before!, limit: 200 }), t.generation);
  assert.equal(t.length, 2600);
  t.addUser('next');
  assert.equal(t.length, 2600); // the oldest went for the new one; the rest stays
  assert.deepEqual(t.earlier(), { more: true, before: s.all[401].seq });
});

test('the webview asks at the top only, once per page, and keeps the reading position', () => {
  const open = { more: true, loading: false };
  const box = (scrollTop: number) => ({ scrollTop, scrollHeight: 5000, clientHeight: 600 });
  assert.equal(shouldLoadEarlier(box(EARLIER_MARGIN_PX - 1), open, false), true);
  assert.equal(shouldLoadEarlier(box(EARLIER_MARGIN_PX + 1), open, false), false);
  assert.equal(shouldLoadEarlier(box(0), open, true), false);
  assert.equal(shouldLoadEarlier(box(0), { more: true, loading: true }, false), false);
  assert.equal(shouldLoadEarlier(box(0), { more: false, loading: false }, false), false);
  assert.equal(shouldLoadEarlier({ scrollTop: 0, scrollHeight: 300, clientHeight: 600 }, open, false), true);
  // 1,200 px of earlier items went in above: the same message is still 100 px below the top
  assert.equal(keptScrollTop({ scrollTop: 100, scrollHeight: 5000, clientHeight: 600 }, 6200), 1300);
});
