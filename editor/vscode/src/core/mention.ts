/**
 * `@` completion in the chat box: which `@word` the caret is in, and the text once a file is
 * chosen. Pure and DOM-free (the webview and the unit tests share it).
 *
 * Mino's parser (the server's) reads `@path` and `@path:A-B` at the start of the text or after white
 * space, up to the next white space; a path with white space in it cannot be spelled that way, so
 * the panel attaches such a file as a chip instead.
 */

export interface Mention {
  /** index of the `@` */
  start: number;
  /** what follows the `@` up to the caret */
  prefix: string;
}

/** The `@word` the caret ends, if any (not an e-mail address, not one with a line range being typed). */
export function mentionAt(text: string, caret: number): Mention | undefined {
  if (caret < 1 || caret > text.length) return undefined;
  let s = caret;
  while (s > 0 && !/\s/u.test(text[s - 1])) s -= 1;
  if (text[s] !== '@') return undefined;
  const prefix = text.slice(s + 1, caret);
  if (prefix.includes('@')) return undefined;
  if (/:\d*(-\d*)?$/u.test(prefix)) return undefined; // `@a.py:10-2…`: the lines, not the name
  return { start: s, prefix };
}

/** Whether `@path` can name this file in typed text. */
export function mentionable(path: string): boolean {
  return path !== '' && !/\s/u.test(path);
}

/** The text with the `@word` at the caret replaced by `@path ` and where the caret goes. */
export function applyMention(text: string, caret: number, m: Mention, path: string): { text: string; caret: number } {
  let end = caret;
  while (end < text.length && !/\s/u.test(text[end])) end += 1; // the rest of the word being replaced
  const after = text.slice(end);
  const insert = `@${path}${after.startsWith(' ') ? '' : ' '}`;
  const next = text.slice(0, m.start) + insert + after;
  const at = m.start + insert.length + (after.startsWith(' ') ? 1 : 0);
  return { text: next, caret: at };
}

/** The text with the `@word` at the caret taken out (the file went to a chip instead). */
export function removeMention(text: string, caret: number, m: Mention): { text: string; caret: number } {
  let end = caret;
  while (end < text.length && !/\s/u.test(text[end])) end += 1;
  return { text: text.slice(0, m.start) + text.slice(end), caret: m.start };
}
