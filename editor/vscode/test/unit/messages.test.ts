import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyInput, parseWebviewMessage } from '../../src/core/messages';

test('webview messages are validated', () => {
  assert.deepEqual(parseWebviewMessage({ type: 'ready' }), { type: 'ready' });
  assert.deepEqual(parseWebviewMessage({ type: 'submit', text: 'hi' }), { type: 'submit', text: 'hi' });
  assert.deepEqual(parseWebviewMessage({ type: 'stop', extra: 1 }), { type: 'stop' });
  assert.deepEqual(parseWebviewMessage({ type: 'loadEarlier', before: 3 }), { type: 'loadEarlier' });
  assert.deepEqual(parseWebviewMessage({ type: 'approval', key: 'k', approved: false }), { type: 'approval', key: 'k', approved: false });
  assert.deepEqual(parseWebviewMessage({ type: 'command', command: 'mino.resumeSession' }), { type: 'command', command: 'mino.resumeSession' });
  // the first-run banner's actions (State.setup)
  assert.deepEqual(parseWebviewMessage({ type: 'command', command: 'mino.openSettings' }), { type: 'command', command: 'mino.openSettings' });
  assert.deepEqual(parseWebviewMessage({ type: 'command', command: 'mino.openFirstRun' }), { type: 'command', command: 'mino.openFirstRun' });
});

test('malformed or unexpected webview messages are dropped', () => {
  for (const m of [
    null,
    undefined,
    'ready',
    42,
    [],
    {},
    { type: 'submit' },
    { type: 'submit', text: 5 },
    { type: 'approval', key: 'k' },
    { type: 'approval', key: 'k', approved: 'true' },
    { type: 'approval', key: 'k', approved: 1 },
    { type: 'approval', approved: true },
    { type: 'command', command: 'workbench.action.terminal.new' },
    { type: 'command', command: 'mino.answerApproval' },
    { type: 'eval', code: 'x' },
  ]) {
    assert.equal(parseWebviewMessage(m), undefined, JSON.stringify(m));
  }
});

test('input: plain text is a turn, trailing blank space trimmed', () => {
  assert.deepEqual(classifyInput('What is this?\n'), { kind: 'turn', text: 'What is this?' });
  assert.deepEqual(classifyInput('line 1\nline 2'), { kind: 'turn', text: 'line 1\nline 2' });
  assert.deepEqual(classifyInput('a /b'), { kind: 'turn', text: 'a /b' });
});

test('input: empty and blank do nothing', () => {
  assert.deepEqual(classifyInput(''), { kind: 'empty' });
  assert.deepEqual(classifyInput('  \n\t '), { kind: 'empty' });
});

test('input: lines starting with / are commands', () => {
  assert.deepEqual(classifyInput('/sessions'), { kind: 'command', line: '/sessions' });
  assert.deepEqual(classifyInput('  /resume abc  '), { kind: 'command', line: '/resume abc' });
  assert.deepEqual(classifyInput('/help'), { kind: 'command', line: '/help' });
  assert.deepEqual(classifyInput('/clearance'), { kind: 'command', line: '/clearance' });
});

test('input: /clear is intercepted (the Clear Session command asks for the ID)', () => {
  assert.deepEqual(classifyInput('/clear'), { kind: 'clear' });
  assert.deepEqual(classifyInput(' /clear '), { kind: 'clear' });
  assert.deepEqual(classifyInput('/clear 0123456789abcdef0123456789abcdef'), { kind: 'clear' });
});

test('"Rewind to here" sends a turn ID, and only one that looks like one', () => {
  assert.deepEqual(parseWebviewMessage({ type: 'rewind', turnId: '0123abcd' }), { type: 'rewind', turnId: '0123abcd' });
  assert.equal(parseWebviewMessage({ type: 'rewind', turnId: '' }), undefined);
  assert.equal(parseWebviewMessage({ type: 'rewind', turnId: '../x' }), undefined);
  assert.equal(parseWebviewMessage({ type: 'rewind', turnId: 7 }), undefined);
});

test('the panel\'s Always in this project: always only as strictly true, and only with a yes', () => {
  assert.deepEqual(parseWebviewMessage({ type: 'approval', key: 'k', approved: true, always: true }), {
    type: 'approval',
    key: 'k',
    approved: true,
    always: true,
  });
  assert.deepEqual(parseWebviewMessage({ type: 'approval', key: 'k', approved: false, always: true }), { type: 'approval', key: 'k', approved: false });
  assert.deepEqual(parseWebviewMessage({ type: 'approval', key: 'k', approved: true, always: 'yes' }), { type: 'approval', key: 'k', approved: true });
});
