import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatUtc,
  instructionsText,
  mcpText,
  mcpTooltip,
  MODE_INFO,
  instructionsTooltip,
  memoryIndexLine,
  sessionPickItems,
  shortId,
  statusText,
  statusTooltip,
  usagePercent,
  usageText,
  usageTooltip,
} from '../../src/core/format';
import { MODE_HELP, MODES } from '../../src/protocol';
import { Backoff, classifyExit, resolveCommand } from '../../src/core/launch';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { State } from '../../src/protocol';

const A = 'a'.repeat(32);
const B = 'b'.repeat(32);

test('session QuickPick rows: short ID, local and UTC times, current marked', () => {
  const rows = sessionPickItems(
    [
      { id: B, updatedAt: '2026-11-30T09:23:05Z', active: false, openElsewhere: false },
      { id: A, updatedAt: '2026-11-29T23:59:59Z', active: true, openElsewhere: false },
    ],
    A,
  );
  assert.equal(rows[0].label, 'bbbbbbbb');
  assert.equal(rows[0].current, false);
  assert.ok(rows[0].detail.includes('2026-11-30 09:23:05 UTC'), rows[0].detail);
  assert.equal(rows[0].id, B);
  assert.match(rows[0].detail, /Last update \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(UTC[+-]\d\d:\d\d\)/);
  assert.equal(rows[1].label, '$(check) aaaaaaaa');
  assert.equal(rows[1].description, 'current session');
  assert.equal(rows[1].current, true);
});

test('sessions open in another window are marked (a version-1 server sends no mark)', () => {
  const C = 'c'.repeat(32);
  const rows = sessionPickItems(
    [
      { id: B, updatedAt: '2026-11-30T09:23:05Z', active: false, openElsewhere: true },
      { id: A, updatedAt: '2026-11-29T23:59:59Z', active: true, openElsewhere: false },
      { id: C, updatedAt: '2026-11-28T23:59:59Z', active: false } as never,
    ],
    A,
  );
  assert.equal(rows[0].label, '$(window) bbbbbbbb');
  assert.equal(rows[0].description, 'open in another window');
  assert.equal(rows[0].openElsewhere, true);
  assert.equal(rows[1].label, '$(check) aaaaaaaa');
  assert.equal(rows[1].openElsewhere, false);
  assert.equal(rows[2].label, 'cccccccc');
  assert.equal(rows[2].openElsewhere, false);
});

test('bad dates do not throw', () => {
  const rows = sessionPickItems([{ id: A, updatedAt: 'garbage', active: false, openElsewhere: false }], null);
  assert.equal(rows[0].detail, 'Last update garbage');
});

test('formatUtc and shortId', () => {
  assert.equal(formatUtc(new Date('2026-01-02T03:04:05Z')), '2026-01-02 03:04:05 UTC');
  assert.equal(shortId(A), 'aaaaaaaa');
  assert.equal(shortId(null), '—');
});

test('status bar text: mode and short session ID', () => {
  const s = { sessionId: A, mode: 'manual', busy: false } as State;
  assert.equal(statusText(s, 'running'), 'Mino: manual · aaaaaaaa');
  assert.equal(statusText({ ...s, sessionId: null }, 'running'), 'Mino: manual · no session');
  assert.match(statusText(s, 'failed'), /stopped/);
});

test('context usage: a whole percentage, "<1%" for a little, nothing when unknown', () => {
  assert.equal(usageText({ inputTokens: 52_340, contextWindow: 128_000 }), '41%');
  assert.equal(usagePercent({ inputTokens: 52_340, contextWindow: 128_000 }), 41);
  assert.equal(usageText({ inputTokens: 10, contextWindow: 128_000 }), '<1%');
  assert.equal(usageText({ inputTokens: 0, contextWindow: 128_000 }), '0%');
  assert.equal(usageText({ inputTokens: 140_000, contextWindow: 128_000 }), '109%'); // over the budget: said as it is
  // unknown: no usage (a version-1 server's State has none), no window, nonsense
  assert.equal(usageText(null), '');
  assert.equal(usageText(undefined), '');
  assert.equal(usageText({ inputTokens: 5, contextWindow: 0 }), '');
  assert.equal(usageText({ inputTokens: Number.NaN, contextWindow: 10 }), '');
  assert.equal(usageText({ inputTokens: -1, contextWindow: 10 }), '');
  assert.equal(usageText({} as never), '');
});

test('context usage in the status bar: the figure after mode and session, the numbers in the tooltip', () => {
  const s = { sessionId: A, mode: 'manual', busy: false, model: 'm', workdir: '/w', sandbox: null, memory: { dir: '/m', count: 0, problems: [] } } as unknown as State;
  const used = { ...s, usage: { inputTokens: 52_340, contextWindow: 128_000 } };
  assert.equal(statusText(used, 'running'), 'Mino: manual · aaaaaaaa · 41%');
  assert.equal(statusText({ ...s, usage: null }, 'running'), 'Mino: manual · aaaaaaaa');
  const tip = statusTooltip(used, 812);
  assert.ok(tip.includes('Context: 41% full — 52,340 of 128,000 tokens at the latest model request; its answer used 812.'), tip);
  assert.ok(statusTooltip({ ...s, usage: null }).includes('Context: not known yet'), 'unknown said so');
  assert.equal(usageTooltip(used.usage), 'Context: 41% full — 52,340 of 128,000 tokens at the latest model request.');
  assert.equal(
    usageTooltip(used.usage, 812, { cachedTokens: 51_200, reasoningTokens: 300 }),
    "Context: 41% full — 52,340 of 128,000 tokens at the latest model request (51,200 from the server's prompt cache); its answer used 812, 300 of them thinking.",
  );
  assert.ok(statusTooltip({ ...used, reasoningEffort: 'high' }).includes('Reasoning effort: high'));
  assert.ok(tip.includes('Reasoning effort: model default'), tip);
});

test('memory index lines', () => {
  assert.equal(memoryIndexLine({ name: 'uses-pnpm', type: 'project', summary: 'pnpm', details: true, path: '/x' }), '- [project] uses-pnpm: pnpm (+details)');
  assert.equal(memoryIndexLine({ name: 'n', type: 'user', summary: 's', details: false, path: '/x' }), '- [user] n: s');
});

test('resolveCommand finds executables on PATH and by path, and explains when it cannot', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mino-cmd-'));
  const exe = path.join(dir, 'mino');
  fs.writeFileSync(exe, '#!/bin/sh\n');
  fs.chmodSync(exe, 0o755);
  const plain = path.join(dir, 'plain');
  fs.writeFileSync(plain, 'x');
  assert.deepEqual(resolveCommand('mino', `/nonexistent${path.delimiter}${dir}`, '/'), { ok: true, path: exe });
  assert.deepEqual(resolveCommand(exe, '', '/'), { ok: true, path: exe });
  assert.deepEqual(resolveCommand('./mino', '', dir), { ok: true, path: exe });
  const missing = resolveCommand('mino-does-not-exist', dir, '/');
  assert.equal(missing.ok, false);
  assert.match(!missing.ok ? missing.message : '', /not found on PATH/);
  assert.equal(resolveCommand(plain, '', '/').ok, false);
  assert.equal(resolveCommand('  ', dir, '/').ok, false);
  fs.rmSync(dir, { recursive: true });
});

test('classifyExit recognises the store lock and otherwise reports the exit', () => {
  const locked = classifyExit({ code: 1, signal: null }, ['Error: the session store is in use by another Mino (pid 4242).'], [], 'Mino stopped.');
  assert.equal(locked.kind, 'locked');
  assert.match(locked.message, /pid 4242/);
  const crashed = classifyExit({ code: 3, signal: null }, ['Traceback (most recent call last):', 'ValueError: boom'], [], 'Mino stopped unexpectedly.');
  assert.equal(crashed.kind, 'exited');
  assert.equal(crashed.message, 'Mino stopped unexpectedly (exit code 3). Last message: ValueError: boom');
  const killed = classifyExit({ code: null, signal: 'SIGKILL' }, ['Session: abc', 'Sandbox: bwrap'], [], 'Mino stopped unexpectedly.');
  assert.equal(killed.message, 'Mino stopped unexpectedly (signal SIGKILL).');
});

test('backoff grows and gives up, reset starts over', () => {
  const b = new Backoff([1, 2, 4]);
  assert.deepEqual([b.next(), b.next(), b.next(), b.next()], [1, 2, 4, undefined]);
  b.reset();
  assert.equal(b.next(), 1);
});

test('instructionsText: which AGENTS.md files are in use', () => {
  assert.equal(instructionsText(undefined), '');
  assert.equal(instructionsText([]), '');
  assert.equal(instructionsText([{ path: '/r/AGENTS.md', accepted: true }]), 'AGENTS.md');
  const two = [
    { path: '/r/AGENTS.md', accepted: false },
    { path: '/r/sub/AGENTS.md', accepted: false },
  ];
  assert.equal(instructionsText(two), 'AGENTS.md ×2 (not sent)');
  assert.match(instructionsTooltip(two), /not sent.*\n✗ not sent: \/r\/AGENTS\.md\n✗ not sent: \/r\/sub\/AGENTS\.md$/s);
});

test('mcpText: the MCP servers and their state', () => {
  assert.equal(mcpText(undefined), '');
  assert.equal(mcpText([]), '');
  const two = [
    { name: 'fixture', state: 'ready' as const, tools: 7 },
    { name: 'missing', state: 'failed' as const, tools: 0, error: 'cannot start the program' },
  ];
  assert.equal(mcpText(two), 'MCP fixture ✓ missing ✗');
  assert.equal(
    mcpTooltip(two),
    'MCP servers (/mcp lists their tools):\n✓ fixture: ready, 7 tools\n✗ missing: failed (cannot start the program)',
  );
  const many = ['a', 'b', 'c', 'd'].map((name, i) => ({ name, state: i ? ('ready' as const) : ('starting' as const), tools: 1 }));
  assert.equal(mcpText(many), 'MCP 3/4 ready');
});

test('the mode picker says what the core says of each mode, for every mode', () => {
  assert.deepEqual(Object.keys(MODE_INFO).sort(), [...MODES].sort());
  for (const m of MODES) {
    assert.equal(MODE_INFO[m].label, m);
    assert.equal(MODE_INFO[m].detail.toLowerCase(), `${MODE_HELP[m]}.`.toLowerCase());
  }
});
