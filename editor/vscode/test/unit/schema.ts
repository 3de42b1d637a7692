/**
 * Readers for the protocol schema test: one for docs/protocol.schema.json, one for the declarations in
 * src/protocol.generated.ts. Both describe a type in the same normal form, so the test can compare
 * them as strings: the members of a union sorted and joined by " | ", each one of `string`, `number`,
 * `boolean`, `null`, `undefined`, `unknown`, a JSON literal (`"manual"`), `Array<...>`, or the name of
 * an object type (`State`). Vocabularies (`Mode`) and unions of objects (`Event`) are spelled out, so
 * a name that the schema does not have (it inlines vocabularies) does not matter, only the values.
 *
 * The schema's layout: `x-methods` gives each method's sender, kind and `$ref`s to its params and
 * result in `$defs`; an object's fields are its `properties`, the always-present ones its `required`;
 * the events of `mino/event` are a `oneOf` whose branches name their `type` with `const`.
 */
import type * as TS from 'typescript';

type Json = unknown;

function isObj(x: Json): x is Record<string, Json> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** The members of a type in the normal form (a " | " inside `Array<...>` belongs to the array). */
function topLevel(type: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < type.length; i++) {
    if (type[i] === '<') depth++;
    else if (type[i] === '>') depth--;
    else if (depth === 0 && type.startsWith(' | ', i)) {
      out.push(type.slice(start, i));
      start = i + 3;
    }
  }
  return [...out, type.slice(start)];
}

function union(members: string[]): string {
  return [...new Set(members.flatMap(topLevel))].sort().join(' | ');
}

// ---- the JSON Schema ---------------------------------------------------------------------------

export interface Fields {
  /** every field the object may have */
  all: Set<string>;
  /** the ones that are always present */
  required: Set<string>;
}

export interface SchemaMethod {
  sender: string;
  kind: string;
  /** the params' and result's schemas (`$ref`s into `$defs`); undefined when there are none */
  params: Json;
  result: Json;
}

/** The name a `$ref` points to, e.g. `mino/state.result` for `#/$defs/mino~1state.result`. */
export function refName(schema: Json): string | undefined {
  if (!isObj(schema) || typeof schema.$ref !== 'string') return undefined;
  const parts = schema.$ref.split('/');
  return parts[parts.length - 1].replace(/~1/g, '/').replace(/~0/g, '~');
}

/** The schema a (chain of) `$ref` points to. */
export function deref(root: Json, schema: Json): Json {
  while (isObj(schema) && typeof schema.$ref === 'string') {
    let cur: Json = root;
    for (const part of schema.$ref.replace(/^#\//, '').split('/')) {
      cur = isObj(cur) ? cur[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    }
    schema = cur;
  }
  return schema;
}

export function defs(root: Json): Record<string, Json> {
  return isObj(root) && isObj(root.$defs) ? root.$defs : {};
}

/** The fields of an object schema; of a `oneOf`, all fields of any branch and those every branch requires. */
export function fieldsOf(root: Json, schema: Json): Fields {
  const s = deref(root, schema);
  if (isObj(s) && Array.isArray(s.oneOf)) {
    const branches = s.oneOf.map((b) => fieldsOf(root, b));
    return {
      all: new Set(branches.flatMap((b) => [...b.all])),
      required: new Set([...(branches[0]?.required ?? [])].filter((f) => branches.every((b) => b.required.has(f)))),
    };
  }
  const strings = (x: Json): string[] => (Array.isArray(x) ? x.filter((k): k is string => typeof k === 'string') : []);
  return {
    all: new Set(isObj(s) && isObj(s.properties) ? Object.keys(s.properties) : []),
    required: new Set(isObj(s) ? strings(s.required) : []),
  };
}

export function schemaMethods(root: Json): Map<string, SchemaMethod> {
  const out = new Map<string, SchemaMethod>();
  const methods = isObj(root) ? root['x-methods'] : undefined;
  if (!isObj(methods)) return out;
  for (const [name, m] of Object.entries(methods)) {
    if (!isObj(m)) continue;
    out.set(name, { sender: String(m.sender), kind: String(m.kind), params: m.params, result: m.result });
  }
  return out;
}

/** Event type -> the name of its definition, from the `oneOf` branches of `mino/event`'s params. */
export function eventTypes(root: Json): Map<string, string> {
  const out = new Map<string, string>();
  const event = schemaMethods(root).get('mino/event');
  const events = deref(root, event?.params);
  for (const branch of isObj(events) && Array.isArray(events.oneOf) ? events.oneOf : []) {
    const b = deref(root, branch);
    const type = isObj(b) && isObj(b.properties) && isObj(b.properties.type) ? b.properties.type.const : undefined;
    const name = refName(branch);
    if (typeof type === 'string' && name !== undefined) out.set(type, name);
  }
  return out;
}

/**
 * A schema's type in the normal form. A `$ref` to an object is its name; to a union (`oneOf`) or
 * to another `$ref` (a method's params), what it holds.
 */
export function schemaType(root: Json, schema: Json): string {
  if (!isObj(schema)) return 'unknown';
  const name = refName(schema);
  if (name !== undefined) {
    const target = defs(root)[name];
    if (isObj(target) && target.type === 'object') return name;
    return schemaType(root, target);
  }
  const kinds: string[] = [];
  if (Array.isArray(schema.oneOf)) kinds.push(...schema.oneOf.map((s) => schemaType(root, s)));
  if (Array.isArray(schema.anyOf)) kinds.push(...schema.anyOf.map((s) => schemaType(root, s)));
  if (Array.isArray(schema.enum)) kinds.push(...schema.enum.map((v) => JSON.stringify(v)));
  if ('const' in schema) kinds.push(JSON.stringify(schema.const));
  for (const t of Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]) {
    if (t === 'array') kinds.push(`Array<${schemaType(root, schema.items)}>`);
    else if (t === 'integer') kinds.push('number');
    else kinds.push(String(t));
  }
  return kinds.length ? union(kinds) : 'unknown';
}

// ---- the generated TypeScript ------------------------------------------------------------------

export interface Declarations {
  interfaces: Map<string, TS.InterfaceDeclaration>;
  aliases: Map<string, TS.TypeAliasDeclaration>;
  /** exported consts, with their declared type when they have one */
  consts: Map<string, TS.VariableDeclaration>;
  /** import and export-from statements, by their text (the file must have none) */
  imports: string[];
}

export function declarations(ts: typeof TS, source: TS.SourceFile): Declarations {
  const out: Declarations = { interfaces: new Map(), aliases: new Map(), consts: new Map(), imports: [] };
  for (const node of source.statements) {
    if (ts.isInterfaceDeclaration(node)) out.interfaces.set(node.name.text, node);
    else if (ts.isTypeAliasDeclaration(node)) out.aliases.set(node.name.text, node);
    else if (ts.isVariableStatement(node)) {
      for (const d of node.declarationList.declarations) if (ts.isIdentifier(d.name)) out.consts.set(d.name.text, d);
    } else if (ts.isImportDeclaration(node) || ts.isImportEqualsDeclaration(node) || (ts.isExportDeclaration(node) && node.moduleSpecifier)) {
      out.imports.push(node.getText(source));
    }
  }
  return out;
}

/**
 * A TypeScript type in the normal form. A reference to a type alias that is a union or a literal (a
 * vocabulary, the events) is spelled out; a reference to an interface or to another alias is its name.
 */
export function tsType(ts: typeof TS, decls: Declarations, node: TS.TypeNode): string {
  if (ts.isUnionTypeNode(node)) return union(node.types.map((t) => tsType(ts, decls, t)));
  if (ts.isParenthesizedTypeNode(node)) return tsType(ts, decls, node.type);
  if (ts.isArrayTypeNode(node)) return `Array<${tsType(ts, decls, node.elementType)}>`;
  if (ts.isLiteralTypeNode(node)) {
    const lit = node.literal;
    if (lit.kind === ts.SyntaxKind.NullKeyword) return 'null';
    if (lit.kind === ts.SyntaxKind.TrueKeyword) return 'true';
    if (lit.kind === ts.SyntaxKind.FalseKeyword) return 'false';
    if (ts.isStringLiteral(lit)) return JSON.stringify(lit.text);
    if (ts.isNumericLiteral(lit)) return lit.text;
  }
  if (ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName) && !node.typeArguments) {
    const alias = decls.aliases.get(node.typeName.text);
    if (alias && (ts.isUnionTypeNode(alias.type) || ts.isLiteralTypeNode(alias.type))) return tsType(ts, decls, alias.type);
    return node.typeName.text;
  }
  const keywords: Partial<Record<TS.SyntaxKind, string>> = {
    [ts.SyntaxKind.StringKeyword]: 'string',
    [ts.SyntaxKind.NumberKeyword]: 'number',
    [ts.SyntaxKind.BooleanKeyword]: 'boolean',
    [ts.SyntaxKind.UnknownKeyword]: 'unknown',
    [ts.SyntaxKind.UndefinedKeyword]: 'undefined',
    [ts.SyntaxKind.NullKeyword]: 'null',
  };
  return keywords[node.kind] ?? `<${ts.SyntaxKind[node.kind]}>`;
}

/** The members of an interface or a type literal: name -> whether it is optional, and its type node. */
export function members(ts: typeof TS, node: TS.InterfaceDeclaration | TS.TypeLiteralNode): Map<string, { optional: boolean; type: TS.TypeNode | undefined }> {
  const out = new Map<string, { optional: boolean; type: TS.TypeNode | undefined }>();
  for (const m of node.members) {
    if (!ts.isPropertySignature(m) || !(ts.isIdentifier(m.name) || ts.isStringLiteral(m.name))) continue;
    out.set(m.name.text, { optional: m.questionToken !== undefined, type: m.type });
  }
  return out;
}
