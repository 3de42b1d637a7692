/**
 * The editor as context and as reviewer (protocol 2), in the pure modules: context chips and their
 * limits, `@` completion in the chat box, the kept diffs, the panel's new messages and cards, and
 * what is sent at start-up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import {
  ContextChips,
  MAX_CHIPS,
  MAX_ITEM_BYTES,
  MAX_TOTAL_BYTES,
  chipLabel,
  relativeInside,
  selectionLines,
  toContextItems,
  toImageItems,
  MAX_IMAGES,
} from '../../src/core/context';
import { applyMention, mentionAt, mentionable, removeMention } from '../../src/core/mention';
import { DiffStore, baseName, diffTitle, isFileDiff } from '../../src/core/diffs';
import { parseWebviewMessage, type ChatItem } from '../../src/core/messages';
import { Transcript } from '../../src/core/transcript';
import { ApprovalBroker } from '../../src/core/approvals';
import { launchOptions } from '../../src/core/launch';
import { renderItem } from '../../src/webview/render';
import type { ApprovalRequest, Event } from '../../src/protocol';

// ---- chips -------------------------------------------------------------------------------------

test('chip labels: name and lines', () => {
  assert.equal(chipLabel('src/app.py', 10, 20), 'app.py:10-20');
  assert.equal(chipLabel('src/app.py', 7, 7), 'app.py:7');
  assert.equal(chipLabel('src/app.py'), 'app.py');
  assert.equal(chipLabel('README.md'), 'README.md');
});

test('a file is taken relative to the working directory, "/"-separated; outside it is refused', () => {
  assert.equal(relativeInside('/ws', '/ws/src/app.py'), 'src/app.py');
  assert.equal(relativeInside('/ws', '/ws/..x/a'), '..x/a'); // a name starting with two dots is inside
  assert.equal(relativeInside('/ws', '/ws'), undefined);
  assert.equal(relativeInside('/ws', '/other/a.py'), undefined);
  assert.equal(relativeInside('/ws', '/ws/../etc/passwd'), undefined);
  assert.equal(relativeInside('/ws/sub', '/ws/a.py'), undefined);
  // Windows paths: backslashes become "/", another drive is outside
  assert.equal(relativeInside('C:\\ws', 'C:\\ws\\src\\app.py', path.win32), 'src/app.py');
  assert.equal(relativeInside('C:\\ws', 'D:\\ws\\app.py', path.win32), undefined);
});

test('selection lines are 1-based; a selection ending at the start of a line leaves that line out', () => {
  assert.deepEqual(selectionLines({ line: 9, character: 4 }, { line: 19, character: 2 }), { startLine: 10, endLine: 20 });
  assert.deepEqual(selectionLines({ line: 9, character: 0 }, { line: 12, character: 0 }), { startLine: 10, endLine: 12 });
  assert.deepEqual(selectionLines({ line: 3, character: 2 }, { line: 3, character: 8 }), { startLine: 4, endLine: 4 });
});

test('chips: added in order, the same lines again replace, removed by id, taken by the turn', () => {
  const c = new ContextChips();
  const a = c.add({ path: 'src/app.py', startLine: 10, endLine: 20, text: 'def f():\n    pass' });
  const b = c.add({ path: 'README.md' });
  assert.ok(a.ok && b.ok);
  assert.deepEqual(c.views().map((v) => v.label), ['app.py:10-20', 'README.md']);
  assert.equal(c.views()[0].title, 'src/app.py (lines 10-20) — as the editor shows it');
  assert.equal(c.views()[1].title, 'README.md');
  // the same file and lines: the newer text, same place and id
  const again = c.add({ path: 'src/app.py', startLine: 10, endLine: 20, text: 'def g():\n    pass' });
  assert.ok(again.ok && again.replaced && a.ok && again.chip.id === a.chip.id);
  assert.equal(c.size, 2);
  assert.deepEqual(toContextItems(c.list()), [
    { path: 'src/app.py', startLine: 10, endLine: 20, text: 'def g():\n    pass' },
    { path: 'README.md' },
  ]);
  assert.ok(b.ok && c.remove(b.chip.id));
  assert.equal(c.remove('nope'), false);
  const taken = c.take();
  assert.equal(taken.length, 1);
  assert.equal(c.size, 0);
  // refused by the server: they come back in front of any added meanwhile
  c.add({ path: 'b.py' });
  c.restore(taken);
  assert.deepEqual(c.views().map((v) => v.label), ['app.py:10-20', 'b.py']);
});

test('chips: the server limits are said before anything is sent (UTF-8 bytes)', () => {
  const c = new ContextChips();
  // over 64 KiB an item is not refused: the server sends its first 64 KiB, so that is what counts
  const big = c.add({ path: 'big.txt', startLine: 1, endLine: 2, text: 'é'.repeat(MAX_ITEM_BYTES / 2 + 1) });
  assert.ok(big.ok, JSON.stringify(big));
  for (let i = 0; i < 3; i++) assert.ok(c.add({ path: `f${i}.txt`, text: 'x'.repeat(MAX_ITEM_BYTES * 2) }).ok);
  const over = c.add({ path: 'one-more.txt', text: 'x' });
  assert.ok(!over.ok && /256 KiB/.test(over.message), JSON.stringify(over));
  assert.equal(c.size, 4);
  assert.equal(MAX_TOTAL_BYTES, 4 * MAX_ITEM_BYTES);
  // files without text (the server reads them) count only towards the number of chips
  const many = new ContextChips();
  for (let i = 0; i < MAX_CHIPS; i++) assert.ok(many.add({ path: `f${i}.py` }).ok);
  const tooMany = many.add({ path: 'last.py' });
  assert.ok(!tooMany.ok && /At most/.test(tooMany.message));
});

test('image chips: pasted or attached, removable, sent as images; the limits said sooner', () => {
  const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
  const c = new ContextChips();
  c.add({ path: 'src/app.py' });
  const shot = c.addImage('shot.png', 'image/png', png);
  assert.ok(shot.ok && shot.chip.image?.bytes === 8, JSON.stringify(shot));
  assert.deepEqual(c.views()[1], { id: shot.chip.id, label: 'shot.png', title: 'shot.png — PNG image, 1 KiB', kind: 'image' });
  assert.deepEqual(toImageItems(c.list()), [{ mimeType: 'image/png', data: png, name: 'shot.png' }]);
  assert.deepEqual(toContextItems(c.list()), [{ path: 'src/app.py' }]); // an image is not a context item
  const svg = c.addImage('logo.svg', 'image/svg+xml', png);
  assert.ok(!svg.ok && /PNG, JPEG, GIF or WebP/.test(svg.message));
  const huge = c.addImage('huge.png', 'image/png', 'A'.repeat(8 * 1024 * 1024));
  assert.ok(!huge.ok && /6\.0 MiB; Mino takes images of at most 5\.0 MiB/.test(huge.message), JSON.stringify(huge));
  for (let i = 1; i < MAX_IMAGES; i++) assert.ok(c.addImage(`p${i}.png`, 'image/png', png).ok);
  const ninth = c.addImage('p9.png', 'image/png', png);
  assert.ok(!ninth.ok && /At most 8 images/.test(ninth.message));
  assert.ok(shot.ok && c.remove(shot.chip.id));
  assert.equal(toImageItems(c.list()).length, MAX_IMAGES - 1);
  // together they must fit one protocol message
  const big = new ContextChips();
  const four = 'A'.repeat(Math.floor((4 * 1024 * 1024 * 4) / 3));
  assert.ok(big.addImage('a.png', 'image/png', four).ok && big.addImage('b.png', 'image/png', four).ok);
  const third = big.addImage('c.png', 'image/png', four);
  assert.ok(!third.ok && /at most 11\.0 MiB of images/.test(third.message), JSON.stringify(third));
});

// ---- @ completion ------------------------------------------------------------------------------

test('the @word at the caret: at the start or after white space, not an e-mail, not while typing lines', () => {
  assert.deepEqual(mentionAt('@src/a', 6), { start: 0, prefix: 'src/a' });
  assert.deepEqual(mentionAt('look at @', 9), { start: 8, prefix: '' });
  assert.deepEqual(mentionAt('look at @RE and more', 11), { start: 8, prefix: 'RE' });
  assert.deepEqual(mentionAt('a\n@x', 4), { start: 2, prefix: 'x' });
  assert.equal(mentionAt('mail me@example.com', 19), undefined);
  assert.equal(mentionAt('look at @a.py:10-', 17), undefined);
  assert.equal(mentionAt('look at @a b', 12), undefined);
  assert.equal(mentionAt('', 0), undefined);
  assert.equal(mentionAt('@@x', 3), undefined);
});

test('choosing a file replaces the @word (the whole of it) and leaves the caret after one space', () => {
  const text = 'explain @sr please';
  const m = mentionAt(text, 11)!;
  assert.deepEqual(applyMention(text, 11, m, 'src/app.py'), { text: 'explain @src/app.py please', caret: 20 });
  // the caret in the middle of the word: the rest of the word goes too
  assert.deepEqual(applyMention('@sr_old', 3, mentionAt('@sr_old', 3)!, 'src/x.py'), { text: '@src/x.py ', caret: 10 });
  assert.deepEqual(applyMention('@', 1, mentionAt('@', 1)!, 'a.py'), { text: '@a.py ', caret: 6 });
  // a path `@` cannot spell goes to a chip: the word is taken out
  assert.equal(mentionable('docs/my notes.md'), false);
  assert.equal(mentionable('src/app.py'), true);
  assert.deepEqual(removeMention('see @my and', 7, mentionAt('see @my and', 7)!), { text: 'see  and', caret: 4 });
});

// ---- diffs -------------------------------------------------------------------------------------

const diff = (p: string, n = 10) => ({ path: p, before: 'a'.repeat(n), after: 'b'.repeat(n) });

test('diff titles and well-formed diffs', () => {
  assert.equal(diffTitle({ path: '/ws/src/app.py', before: null, after: '' }), "app.py ↔ Mino's proposal");
  assert.equal(baseName('C:\\ws\\app.py'), 'app.py');
  assert.ok(isFileDiff({ path: '/a', before: null, after: '' }));
  assert.ok(isFileDiff({ path: '/a', before: 'x', after: 'y' }));
  for (const bad of [undefined, null, {}, { path: '', before: null, after: '' }, { path: '/a', after: 1 }, { path: '/a', before: 2, after: '' }]) {
    assert.equal(isFileDiff(bad), false, JSON.stringify(bad));
  }
});

test('kept diffs: the oldest that ran go first over the budget; a pending approval is never dropped', () => {
  const s = new DiffStore(100);
  s.put('pending', diff('/p', 30), true); // 60
  s.put('old', diff('/o', 10), false); // 20
  s.put('new', diff('/n', 10), false); // 20 -> 100, within
  assert.equal(s.size, 3);
  s.put('newer', diff('/x', 10), false); // 120: 'old' goes
  assert.deepEqual([s.get('pending'), s.get('old'), s.get('new'), s.get('newer')].map((e) => !!e), [true, false, true, true]);
  assert.deepEqual(s.pendingKeys(), ['pending']);
  s.settle('pending'); // answered: dropped
  assert.equal(s.get('pending'), undefined);
  assert.deepEqual(s.pendingKeys(), []);
});

// ---- the panel ---------------------------------------------------------------------------------

test('the panel messages of protocol 2 are validated', () => {
  assert.deepEqual(parseWebviewMessage({ type: 'removeContext', id: 'ctx-1' }), { type: 'removeContext', id: 'ctx-1' });
  assert.deepEqual(parseWebviewMessage({ type: 'files', requestId: 3, prefix: 'sr' }), { type: 'files', requestId: 3, prefix: 'sr' });
  assert.deepEqual(parseWebviewMessage({ type: 'attachFile', path: 'a b.md' }), { type: 'attachFile', path: 'a b.md' });
  assert.deepEqual(parseWebviewMessage({ type: 'openDiff', turnId: 't', callId: 'c' }), { type: 'openDiff', turnId: 't', callId: 'c' });
  const image = { type: 'attachImage', name: 'shot.png', mimeType: 'image/png', data: 'iVBORw0KGgo=' };
  assert.deepEqual(parseWebviewMessage(image), image);
  for (const m of [
    { ...image, data: 'not base64!' },
    { ...image, data: 'A'.repeat(8 * 1024 * 1024 + 4) },
    { ...image, name: 'x'.repeat(201) },
    { ...image, mimeType: 1 },
    { type: 'removeContext' },
    { type: 'removeContext', id: 'x'.repeat(101) },
    { type: 'files', requestId: '3', prefix: '' },
    { type: 'files', requestId: 1.5, prefix: '' },
    { type: 'files', requestId: 1, prefix: 'x'.repeat(5000) },
    { type: 'attachFile', path: '' },
    { type: 'openDiff', turnId: 't' },
    { type: 'openDiff', turnId: 't', callId: '' },
  ]) {
    assert.equal(parseWebviewMessage(m), undefined, JSON.stringify(m).slice(0, 80));
  }
});

const writeCall = (decision: 'ask' | 'show', withDiff = true): Event => ({
  type: 'tool_call',
  turnId: 't1',
  callId: 'call_3',
  tool: 'edit_file',
  fields: [{ label: 'File', value: 'src/app.py' }],
  warning: null,
  decision,
  ...(withDiff ? { diff: { path: '/ws/src/app.py', before: 'x = 1\n', after: 'x = 2\n' } } : {}),
});

test('a write or edit call with a diff gets "Open diff" on its card (the texts stay in the host)', () => {
  const items: ChatItem[] = [];
  const t = new Transcript((ps) => ps.forEach((p) => p.op === 'upsert' && items.push(p.item)));
  t.applyEvent(writeCall('show'));
  const card = t.snapshot()[0];
  assert.ok(card.kind === 'tool' && card.hasDiff === true);
  assert.ok(!JSON.stringify(items).includes('x = 2'), 'no file text goes to the panel');
  const html = renderItem(card);
  assert.match(html, /<button type="button" class="btn secondary open-diff" data-action="open-diff" data-turn="t1" data-call="call_3"/);
  assert.match(html, />Open diff<\/button>/);
  // without a diff (a version-1 server, a file over 1 MiB): no button
  const t1 = new Transcript();
  t1.applyEvent(writeCall('show', false));
  assert.doesNotMatch(renderItem(t1.snapshot()[0]), /Open diff/);
  // a pending approval's card: Open diff beside Approve and Deny
  const t2 = new Transcript();
  t2.applyEvent(writeCall('ask'));
  const req: ApprovalRequest = {
    turnId: 't1',
    callId: 'call_3',
    tool: 'edit_file',
    fields: [],
    warning: null,
    question: 'Approve this operation?',
    workdir: '/ws',
    diff: { path: '/ws/src/app.py', before: 'x = 1\n', after: 'x = 2\n' },
  };
  t2.approvalRequested('key1', req);
  const pending = renderItem(t2.snapshot()[0]);
  assert.match(pending, /data-action="approve"[^]*data-action="deny"[^]*data-action="open-diff"/);
  t2.approvalSettled('call_3', 'denied');
  assert.match(renderItem(t2.snapshot()[0]), /state-denied[^]*Open diff/);
});

test('a sent message shows the chips that went with it, escaped', () => {
  const t = new Transcript();
  t.addUser('What does this do?', ['app.py:10-20', '<b>x</b>.md']);
  t.addUser('plain');
  const [withChips, plain] = t.snapshot();
  assert.ok(withChips.kind === 'user');
  assert.deepEqual(withChips.context, ['app.py:10-20', '<b>x</b>.md']);
  const html = renderItem(withChips);
  assert.match(html, /<div class="msg-context"><span class="chip sent" title="Sent with this message">app\.py:10-20<\/span>/);
  assert.ok(html.includes('&lt;b&gt;x&lt;/b&gt;.md') && !html.includes('<b>'), html);
  assert.ok(plain.kind === 'user' && plain.context === undefined);
  assert.doesNotMatch(renderItem(plain), /msg-context/);
});

test('Approve in the diff editor is a person\'s answer; the server ending it is not', async () => {
  const b = new ApprovalBroker(() => 'k1');
  const req: ApprovalRequest = { turnId: 't', callId: 'c', tool: 'write_file', fields: [], warning: null, question: 'q', workdir: '/w' };
  const p = b.request(req);
  assert.ok(b.answer('k1', true, 'diff'));
  assert.equal(await p, true);
  const b2 = new ApprovalBroker(() => 'k2');
  const p2 = b2.request(req);
  b2.resolvedByServer('c', 'approved');
  assert.equal(await p2, false);
  assert.equal(b2.answer('k2', true, 'diff'), false, 'already ended');
});

// ---- start-up ----------------------------------------------------------------------------------

test('initializationOptions: the mode and the window\'s last session, only a complete ID', () => {
  const id = '0123456789abcdef0123456789abcdef';
  assert.deepEqual(launchOptions('manual', id), { mode: 'manual', sessionId: id });
  assert.deepEqual(launchOptions(undefined, id), { sessionId: id });
  assert.deepEqual(launchOptions('bypass', undefined), { mode: 'bypass' });
  assert.deepEqual(launchOptions(undefined, 'not-an-id'), {});
  assert.deepEqual(launchOptions(undefined, id.toUpperCase()), {});
});
