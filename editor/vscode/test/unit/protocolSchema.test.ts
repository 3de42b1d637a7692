/**
 * Checks src/protocol.ts against the JSON Schema the Python side generates at
 * docs/protocol.schema.json (repo root): every method the extension uses exists there, and the
 * required param/result fields the extension relies on are there too. Skipped until the schema exists.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Methods, REQUIRED_FIELDS } from '../../src/protocol';
import { extractSchemaMethods } from '../../src/core/schema';

const repoRoot = path.resolve(__dirname, '..', '..', '..', '..');
const schemaPath = process.env.MINO_PROTOCOL_SCHEMA ?? path.join(repoRoot, 'docs', 'protocol.schema.json');
const haveSchema = fs.existsSync(schemaPath);
const skip = haveSchema ? false : `no protocol schema yet at ${schemaPath} (the Python side generates it)`;

test('protocol.ts agrees with docs/protocol.schema.json', { skip }, () => {
  const schema: unknown = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
  const methods = extractSchemaMethods(schema);
  assert.ok(methods.size > 0, 'no methods found in the schema');
  const problems: string[] = [];
  for (const method of Object.values(Methods)) {
    const m = methods.get(method);
    if (!m) {
      problems.push(`${method}: missing from the schema`);
      continue;
    }
    const want = REQUIRED_FIELDS[method];
    if (!want) continue;
    for (const f of want.params) if (!m.params.has(f)) problems.push(`${method}: params field "${f}" not in the schema (has ${[...m.params].join(', ')})`);
    for (const f of want.result ?? []) if (!m.result.has(f)) problems.push(`${method}: result field "${f}" not in the schema (has ${[...m.result].join(', ')})`);
  }
  for (const method of Object.keys(REQUIRED_FIELDS)) {
    assert.ok((Object.values(Methods) as string[]).includes(method), `REQUIRED_FIELDS names unknown method ${method}`);
  }
  assert.deepEqual(problems, []);
});

test('the schema reader understands the usual layouts', () => {
  const a = extractSchemaMethods({
    $defs: { State: { type: 'object', properties: { sessionId: {}, mode: {} }, required: ['sessionId'] } },
    methods: {
      'mino/state': { params: { type: 'object', properties: {} }, result: { $ref: '#/$defs/State' } },
      'mino/event': { params: { oneOf: [{ properties: { turnId: {}, type: {} } }, { properties: { text: {} } }] } },
    },
  });
  assert.deepEqual([...a.get('mino/state')!.result].sort(), ['mode', 'sessionId']);
  assert.deepEqual([...a.get('mino/event')!.params].sort(), ['text', 'turnId', 'type']);
  const b = extractSchemaMethods({
    methods: [{ name: 'mino/turn', params: [{ name: 'text', schema: { type: 'string' } }], result: { name: 'r', schema: { properties: { turnId: {}, status: {} } } } }],
  });
  assert.deepEqual([...b.get('mino/turn')!.params], ['text']);
  assert.deepEqual([...b.get('mino/turn')!.result].sort(), ['status', 'turnId']);
});
