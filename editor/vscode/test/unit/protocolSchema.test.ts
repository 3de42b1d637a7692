/**
 * Checks src/protocol.generated.ts against docs/protocol.schema.json (repo root). One command writes
 * both from the Python classes, and tests/test_server.py fails when either is out of date; this test
 * checks the two writers against each other, and the TypeScript the way the extension sees it: the
 * declarations through the TypeScript parser (every type, field, optional mark, vocabulary and method
 * map that tsc checks the extension against), the run-time tables by importing the module. A hand edit
 * of the generated file, or a generator that writes TypeScript the schema disagrees with, fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import type * as TS from 'typescript';
import { SESSION_ID_RE } from '../../src/protocol';
import * as generated from '../../src/protocol.generated';
import { declarations, defs, deref, eventTypes, fieldsOf, members, refName, schemaMethods, schemaType, tsType } from './schema';

// Loaded at run time rather than bundled into the test: the compiler is 10 MB of JavaScript.
const ts = createRequire(__filename)('typescript') as typeof TS;

// out/test/unit -> editor/vscode -> repo root
const extensionRoot = path.resolve(__dirname, '..', '..', '..');
const schemaPath = process.env.MINO_PROTOCOL_SCHEMA ?? path.join(extensionRoot, '..', '..', 'docs', 'protocol.schema.json');
const generatedPath = path.join(extensionRoot, 'src', 'protocol.generated.ts');
const schema: unknown = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const source = ts.createSourceFile(generatedPath, fs.readFileSync(generatedPath, 'utf8'), ts.ScriptTarget.ES2022, true);
const decls = declarations(ts, source);

/** The generated interfaces that map method names to their params and result, by sender and kind. */
const METHOD_MAPS: Record<string, [sender: string, kind: string]> = {
  ClientRequests: ['client', 'request'],
  ClientNotifications: ['client', 'notification'],
  ServerRequests: ['server', 'request'],
  ServerNotifications: ['server', 'notification'],
};
/** Generated interfaces that are not protocol types. */
const HELPER_INTERFACES = new Set([...Object.keys(METHOD_MAPS), 'MethodInfo']);

function typeText(node: TS.TypeNode | undefined): string {
  return node ? tsType(ts, decls, node) : '(none)';
}

test('every type of the schema is declared with the same fields, optional marks and types', () => {
  const problems: string[] = [];
  const types = Object.entries(defs(schema)).filter(([name]) => !name.includes('.'));
  assert.ok(types.length > 10, 'no types found in the schema');
  for (const [name, def] of types) {
    const d = deref(schema, def) as { oneOf?: unknown; properties?: Record<string, unknown>; required?: string[] };
    if (d.oneOf !== undefined) {
      const alias = decls.aliases.get(name);
      if (!alias) problems.push(`${name}: a union in the schema, no type ${name} in TypeScript`);
      else if (typeText(alias.type) !== schemaType(schema, def)) problems.push(`${name}: ${typeText(alias.type)} in TypeScript, ${schemaType(schema, def)} in the schema`);
      continue;
    }
    const props = d.properties ?? {};
    const required = new Set(d.required ?? []);
    const iface = decls.interfaces.get(name);
    if (!iface) {
      const empty = Object.keys(props).length === 0 && decls.aliases.get(name)?.type.getText(source) === 'Record<string, never>';
      if (!empty) problems.push(`${name}: no interface ${name} in TypeScript`);
      continue;
    }
    const fields = members(ts, iface);
    if ([...fields.keys()].join(', ') !== Object.keys(props).join(', ')) {
      problems.push(`${name}: fields ${[...fields.keys()].join(', ')} in TypeScript, ${Object.keys(props).join(', ')} in the schema`);
    }
    for (const [field, prop] of Object.entries(props)) {
      const f = fields.get(field);
      if (!f) continue;
      if (f.optional === required.has(field)) problems.push(`${name}.${field}: ${f.optional ? 'optional' : 'required'} in TypeScript, not in the schema`);
      const ours = typeText(f.type);
      const theirs = schemaType(schema, prop);
      if (ours !== theirs) problems.push(`${name}.${field}: ${ours} in TypeScript, ${theirs} in the schema`);
    }
  }
  for (const name of decls.interfaces.keys()) {
    if (!HELPER_INTERFACES.has(name) && !(name in defs(schema))) problems.push(`interface ${name}: not a type of the schema`);
  }
  assert.deepEqual(problems, []);
});

test('every method is in the map of its sender and kind, with the params and result of the schema', () => {
  const problems: string[] = [];
  const methods = schemaMethods(schema);
  assert.ok(methods.size > 10, 'no methods found in the schema');
  const maps = Object.keys(METHOD_MAPS).map((name) => {
    const iface = decls.interfaces.get(name);
    assert.ok(iface, `no interface ${name} in TypeScript`);
    return { name, entries: members(ts, iface) };
  });
  for (const [method, m] of methods) {
    const holders = maps.filter((map) => map.entries.has(method)).map((map) => map.name);
    const want = Object.keys(METHOD_MAPS).find((name) => METHOD_MAPS[name].join() === [m.sender, m.kind].join());
    if (holders.join() !== want) {
      problems.push(`${method}: a ${m.sender} ${m.kind} in the schema, in ${holders.join(' and ') || 'no map'} in TypeScript`);
      continue;
    }
    const entry = maps.find((map) => map.name === want)!.entries.get(method)!;
    if (!entry.type || !ts.isTypeLiteralNode(entry.type)) {
      problems.push(`${method}: not a { params, result } type in TypeScript`);
      continue;
    }
    const cells = members(ts, entry.type);
    const params = m.params === undefined ? 'undefined' : schemaType(schema, m.params);
    if (typeText(cells.get('params')?.type) !== params) problems.push(`${method}: params ${typeText(cells.get('params')?.type)} in TypeScript, ${params} in the schema`);
    const result = m.kind === 'request' ? schemaType(schema, m.result) : '(none)';
    if (typeText(cells.get('result')?.type) !== result) problems.push(`${method}: result ${typeText(cells.get('result')?.type)} in TypeScript, ${result} in the schema`);
  }
  for (const map of maps) for (const method of map.entries.keys()) if (!methods.has(method)) problems.push(`${map.name}: ${method} is not in the schema`);
  assert.deepEqual(problems, []);
});

test('the run-time tables agree with the schema: methods, event types, field patterns, error codes, version', () => {
  const methods = schemaMethods(schema);
  // the table's params and result name the schema's definitions; null where the schema has none (or null)
  const oneLevel = (s: unknown): string | null => {
    const name = refName(s);
    return name === undefined ? null : (refName(defs(schema)[name]) ?? null);
  };
  const fromSchema = Object.fromEntries(
    [...methods].map(([name, m]) => [name, { sender: m.sender, kind: m.kind, params: oneLevel(m.params), result: oneLevel(m.result) }]),
  );
  assert.deepEqual(generated.METHOD_TABLE, fromSchema);
  assert.deepEqual(Object.values(generated.Methods).sort(), [...methods.keys()].sort());

  assert.deepEqual(generated.EVENT_TYPES, Object.fromEntries(eventTypes(schema)));

  const patterns: Record<string, string> = {};
  for (const [name, def] of Object.entries(defs(schema))) {
    const props = (def as { properties?: Record<string, { pattern?: string }> }).properties ?? {};
    for (const [field, prop] of Object.entries(props)) if (prop.pattern !== undefined) patterns[`${name}.${field}`] = prop.pattern;
  }
  assert.deepEqual(generated.FIELD_PATTERNS, patterns);
  assert.match('0123456789abcdef0123456789abcdef', SESSION_ID_RE);
  assert.doesNotMatch('0123456789ABCDEF0123456789abcdef', SESSION_ID_RE);

  const s = schema as { 'x-protocolVersion': unknown; 'x-maxMessageBytes': unknown; 'x-errorCodes': Record<string, string> };
  assert.equal(generated.PROTOCOL_VERSION, s['x-protocolVersion']);
  assert.equal(generated.MAX_MESSAGE_BYTES, s['x-maxMessageBytes']);
  // "invalid params" -> invalidParams
  const camel = (name: string) => name.replace(/ (\w)/g, (_, c: string) => c.toUpperCase());
  const codes = Object.fromEntries(Object.entries(s['x-errorCodes']).map(([code, name]) => [camel(name), Number(code)]));
  assert.deepEqual(generated.ErrorCodes, codes);
});

test("each vocabulary's run-time list holds the values of its type, in order", () => {
  const runtime = generated as unknown as Record<string, unknown>;
  const lists: string[] = [];
  for (const [name, d] of decls.consts) {
    // export const MODES: readonly Mode[] = [...]
    const t = d.type;
    if (!t || !ts.isTypeOperatorNode(t) || !ts.isArrayTypeNode(t.type) || !ts.isTypeReferenceNode(t.type.elementType)) continue;
    const alias = decls.aliases.get(t.type.elementType.typeName.getText(source));
    assert.ok(alias, `${name}: its element type is not declared`);
    const values = (ts.isUnionTypeNode(alias.type) ? [...alias.type.types] : [alias.type]).map((v) => JSON.parse(typeText(v)) as unknown);
    assert.deepEqual(runtime[name], values, name);
    lists.push(name);
  }
  assert.ok(lists.includes('MODES'), `vocabulary lists found: ${lists.join(', ')}`);
});

test('the generated file imports nothing', () => {
  assert.deepEqual(decls.imports, []);
});

test('the readers: $refs, unions, normal forms', () => {
  const root = {
    'x-methods': {
      'mino/state': { sender: 'client', kind: 'request', params: { $ref: '#/$defs/mino~1state.params' }, result: { $ref: '#/$defs/mino~1state.result' } },
      'mino/event': { sender: 'server', kind: 'notification', params: { $ref: '#/$defs/mino~1event.params' } },
    },
    $defs: {
      'mino/state.params': { $ref: '#/$defs/Empty' },
      'mino/state.result': { $ref: '#/$defs/State' },
      'mino/event.params': { $ref: '#/$defs/Event' },
      Empty: { type: 'object', properties: {} },
      State: {
        type: 'object',
        properties: { sessionId: { type: ['string', 'null'] }, mode: { enum: ['b', 'a'] }, n: { type: 'integer' }, xs: { type: 'array', items: { anyOf: [{ $ref: '#/$defs/A' }, { type: 'null' }] } } },
        required: ['sessionId'],
      },
      Event: { oneOf: [{ $ref: '#/$defs/A' }, { $ref: '#/$defs/B' }] },
      A: { type: 'object', properties: { type: { const: 'a' }, turnId: {}, x: {} }, required: ['type', 'turnId', 'x'] },
      B: { type: 'object', properties: { type: { const: 'b' }, turnId: {} }, required: ['type'] },
    },
  };
  const methods = schemaMethods(root);
  const state = methods.get('mino/state')!;
  assert.deepEqual([state.sender, state.kind], ['client', 'request']);
  assert.equal(schemaType(root, state.params), 'Empty');
  assert.equal(schemaType(root, state.result), 'State');
  assert.equal(schemaType(root, methods.get('mino/event')!.params), 'A | B');
  const props = root.$defs.State.properties;
  assert.equal(schemaType(root, props.sessionId), 'null | string');
  assert.equal(schemaType(root, props.mode), '"a" | "b"');
  assert.equal(schemaType(root, props.n), 'number');
  assert.equal(schemaType(root, props.xs), 'Array<A | null>');
  assert.equal(schemaType(root, {}), 'unknown');
  assert.equal(refName({ $ref: '#/$defs/mino~1state.result' }), 'mino/state.result');
  assert.deepEqual([...eventTypes(root)], [['a', 'A'], ['b', 'B']]);
  const events = fieldsOf(root, { $ref: '#/$defs/Event' });
  assert.deepEqual([[...events.all].sort(), [...events.required]], [['turnId', 'type', 'x'], ['type']]);

  const file = ts.createSourceFile(
    'x.ts',
    "import x from 'y';\nexport type M = 'b' | 'a';\nexport type U = A | B;\nexport type E = Record<string, never>;\n" +
      "export interface A { s?: string; m: M; xs: (A | null)[]; u: U; e: E; n: number | null; 'q': undefined }\nexport const L: readonly M[] = ['b', 'a'];",
    ts.ScriptTarget.ES2022,
    true,
  );
  const d = declarations(ts, file);
  assert.deepEqual(d.imports, ["import x from 'y';"]);
  assert.deepEqual([...d.consts.keys()], ['L']);
  const a = members(ts, d.interfaces.get('A')!);
  const text = (name: string) => tsType(ts, d, a.get(name)!.type!);
  assert.deepEqual(
    ['s', 'm', 'xs', 'u', 'e', 'n', 'q'].map((n) => [n, a.get(n)!.optional, text(n)]),
    [
      ['s', true, 'string'],
      ['m', false, '"a" | "b"'],
      ['xs', false, 'Array<A | null>'],
      ['u', false, 'A | B'],
      ['e', false, 'E'],
      ['n', false, 'null | number'],
      ['q', false, 'undefined'],
    ],
  );
});
