/** The chat panel: a webview view in Mino's own activity-bar container. */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { parseWebviewMessage, type HostToWebview, type WebviewToHost } from './core/messages';

export const CHAT_VIEW_ID = 'mino.chatView';

export function chatHtml(webview: vscode.Webview, extensionUri: vscode.Uri): string {
  const nonce = randomBytes(16).toString('base64');
  const css = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', 'chat.css'));
  const js = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview.js'));
  // No remote content, no inline script, no eval: only our nonce'd bundle and our stylesheet.
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
    `img-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    "connect-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${css.toString()}">
<title>Mino</title>
</head>
<body>
<div id="banner" hidden></div>
<div id="transcript" role="log" aria-live="polite" aria-label="Mino chat"></div>
<div id="empty">Ask Mino about this workspace.<br><kbd>Enter</kbd> sends, <kbd>Shift</kbd>+<kbd>Enter</kbd> adds a line, <kbd>/help</kbd> lists commands.</div>
<div id="composer">
  <div id="progress" hidden role="progressbar" aria-label="Mino is working"><div class="bar"></div></div>
  <textarea id="input" rows="1" aria-label="Message to Mino" placeholder="Ask Mino, or type / for a command"></textarea>
  <div class="composer-row">
    <span id="hint" aria-live="polite"></span>
    <span id="usage" hidden><span class="meter" aria-hidden="true"><span class="fill"></span></span><span class="usage-text"></span></span>
    <span id="instructions" hidden></span>
    <span id="mcp" hidden></span>
    <span id="statusline"></span>
    <span class="actions">
      <button type="button" id="attach" class="btn secondary icon" title="Attach images (PNG, JPEG, GIF or WebP; or paste one into the chat box)" aria-label="Attach images">+ Image</button>
      <input type="file" id="attach-file" accept="image/png,image/jpeg,image/gif,image/webp" multiple hidden>
      <button type="button" id="stop" class="btn secondary" hidden title="Interrupt the running turn">Stop</button>
      <button type="button" id="send" class="btn" title="Send (Enter)">Send</button>
    </span>
  </div>
</div>
<script nonce="${nonce}" src="${js.toString()}"></script>
</body>
</html>`;
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private badgeCount = 0;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (m: WebviewToHost) => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    view.webview.options = {
      enableScripts: true,
      enableCommandUris: false,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'media'), vscode.Uri.joinPath(this.extensionUri, 'dist')],
    };
    view.webview.html = chatHtml(view.webview, this.extensionUri);
    this.disposables.push(
      view.webview.onDidReceiveMessage((raw) => {
        const m = parseWebviewMessage(raw);
        if (m) this.onMessage(m);
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
    );
    this.applyBadge();
  }

  post(m: HostToWebview): void {
    void this.view?.webview.postMessage(m);
  }

  setBadge(count: number): void {
    this.badgeCount = count;
    this.applyBadge();
  }

  private applyBadge(): void {
    if (!this.view) return;
    this.view.badge =
      this.badgeCount > 0
        ? { value: this.badgeCount, tooltip: `${this.badgeCount} Mino approval${this.badgeCount === 1 ? '' : 's'} waiting` }
        : undefined;
  }

  /** Opens the panel (resolving it if needed). */
  async reveal(preserveFocus = true): Promise<void> {
    if (this.view) {
      this.view.show(preserveFocus);
      return;
    }
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
