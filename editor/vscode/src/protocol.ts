/**
 * The Mino editor protocol: the generated types, constants and method table (protocol.generated.ts,
 * written from the Python classes by `python -m mino_server.server.docgen --write`), plus the few
 * helpers written by hand. Import the protocol from here.
 *
 * No imports but the generated file: this module is shared by the extension host, the webview bundle
 * and the tests.
 */
import { FIELD_PATTERNS } from './protocol.generated';

export * from './protocol.generated';

/** A complete session ID, as the server checks it. */
export const SESSION_ID_RE = new RegExp(FIELD_PATTERNS['ResumeParams.id']);
