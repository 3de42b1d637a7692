/**
 * What "Mino: Ask About Selection" and "Mino: Add File to Chat" take from the editor: the file
 * relative to Mino's working directory, the selected lines, and the text as the editor shows it
 * (possibly unsaved). Each becomes a chip above the chat box (core/context.ts).
 */
import * as vscode from 'vscode';
import { relativeInside, selectionLines, type ContextChip } from './core/context';

export type ChipRequest = Omit<ContextChip, 'id' | 'label' | 'title'>;
export type Taken = { ok: true; items: ChipRequest[] } | { ok: false; message: string };

function outside(uri: vscode.Uri, workdir: string): string {
  if (uri.scheme !== 'file') {
    return 'Mino can attach only files inside its working directory: save this one in the workspace folder first.';
  }
  return `${vscode.workspace.asRelativePath(uri, false)} is outside Mino's working directory (${workdir}); Mino reads only files inside it.`;
}

/** The selected lines of the editor (each selection one item); the whole file when nothing is selected. */
export function fromSelection(editor: vscode.TextEditor, workdir: string): Taken {
  const doc = editor.document;
  const rel = doc.uri.scheme === 'file' ? relativeInside(workdir, doc.uri.fsPath) : undefined;
  if (!rel) return { ok: false, message: outside(doc.uri, workdir) };
  const selections = editor.selections.filter((s) => !s.isEmpty);
  if (!selections.length) return fromDocument(doc, rel);
  const items: ChipRequest[] = [];
  for (const s of [...selections].sort((a, b) => a.start.compareTo(b.start))) {
    const { startLine, endLine } = selectionLines(s.start, s.end);
    // whole lines: the model is told "lines A-B", so it gets exactly those lines
    const range = new vscode.Range(startLine - 1, 0, endLine - 1, doc.lineAt(endLine - 1).range.end.character);
    items.push({ path: rel, startLine, endLine, text: doc.getText(range) });
  }
  return { ok: true, items };
}

/** A whole file: what the editor shows when it has unsaved changes, else the server reads it from disk. */
function fromDocument(doc: vscode.TextDocument, rel: string): Taken {
  // unsaved text over 64 KiB goes too: the server sends the model its first 64 KiB and a note
  if (doc.isDirty) return { ok: true, items: [{ path: rel, text: doc.getText() }] };
  return { ok: true, items: [{ path: rel }] };
}

/** Files picked in the explorer (or the active editor's file). Folders are refused. */
export async function fromFiles(uris: vscode.Uri[], workdir: string): Promise<Taken> {
  const items: ChipRequest[] = [];
  for (const uri of uris) {
    const rel = uri.scheme === 'file' ? relativeInside(workdir, uri.fsPath) : undefined;
    if (!rel) return { ok: false, message: outside(uri, workdir) };
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) {
      const r = fromDocument(open, rel);
      if (!r.ok) return r;
      items.push(...r.items);
      continue;
    }
    try {
      const st = await vscode.workspace.fs.stat(uri);
      if (st.type & vscode.FileType.Directory) {
        return { ok: false, message: `${rel} is a folder; Mino attaches files. Pick the files in it, or type @ in the chat box.` };
      }
    } catch {
      return { ok: false, message: `${rel} does not exist.` };
    }
    items.push({ path: rel });
  }
  return { ok: true, items };
}
