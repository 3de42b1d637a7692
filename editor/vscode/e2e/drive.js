// The Mino end-to-end scenario in a real VS Code (code-server), driven by playwright-core and
// Debian chromium. Started by e2e/run.sh; usage: node drive.js URL
// env: MINO_HOME (the server's home, to check memory and session files), SHOT_DIR, CHROMIUM,
//      MINO_E2E_SETTINGS (the settings.json files, joined by ':').
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

const URL_ = process.argv[2];
const HOME = process.env.MINO_HOME;
const SHOT_DIR = process.env.SHOT_DIR || os.tmpdir();
// the settings files run.sh wrote (User, Machine): the first-run step rewrites mino.env
const SETTINGS = (process.env.MINO_E2E_SETTINGS || '').split(path.delimiter).filter(Boolean);
const t0 = Date.now();
const secs = (t = t0) => ((Date.now() - t) / 1000).toFixed(2);
const step = (s) => console.log(`[drive ${secs()}s] ${s}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const timings = {};

function assert(cond, msg) {
  if (!cond) throw new Error('assertion failed: ' + msg);
}

// The composer's row stays inside a narrow sidebar: Send and "+ Image" in view, nothing to scroll sideways.
async function assertComposerFits(frame, where) {
  const fit = await frame.locator('#send').evaluate((send) => {
    const attach = document.getElementById('attach');
    const width = document.documentElement.clientWidth;
    const scroll = Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);
    return { width, scroll, send: send.getBoundingClientRect().right, attach: attach.getBoundingClientRect().right };
  });
  assert(fit.scroll <= fit.width && fit.send <= fit.width && fit.attach <= fit.width, `${where}: the composer row overflows the panel: ${JSON.stringify(fit)}`);
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOT_DIR, name) });
  step(`screenshot ${name}`);
}

async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible' });
  await input.fill('>' + title);
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first().waitFor();
  await page.keyboard.press('Enter');
}

/**
 * The chat webview's inner frame (nested same-origin iframes: index.html -> fake.html), optionally
 * the one that shows `selector` (a hidden view's webview is re-created when shown again).
 */
async function chatFrame(page, selector = '#composer', timeout = 30000) {
  const end = Date.now() + timeout;
  while (Date.now() < end) {
    for (const f of page.frames()) {
      if (f.isDetached() || (!/fake\.html|index\.html/.test(f.url()) && f.name() !== 'active-frame')) continue;
      try {
        if ((await f.locator('#composer').count()) > 0 && (await f.locator(selector).count()) > 0) return f;
      } catch (e) {
        /* detached or not ready */
      }
    }
    await sleep(200);
  }
  throw new Error('the Mino chat webview did not appear' + (selector !== '#composer' ? ` with ${selector}` : ''));
}

function openMinoView(page) {
  return page.locator('.activitybar .action-item a[aria-label^="Mino"], .activitybar .action-item[aria-label^="Mino"]').first().click();
}

function toast(page, text) {
  return page.locator('.notifications-toasts .notification-toast', { hasText: text });
}

async function send(frame, text) {
  const input = frame.locator('#input');
  await input.fill(text);
  await input.press('Enter');
}

// A 2×1 PNG and a 4×5 GIF (well-formed headers: the server checks them).
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAD0lEQVR4nGPg5uHl4xcAAAERAFIruQFvAAAAAElFTkSuQmCC';
const GIF_B64 = 'R0lGODlhBAAFAAAAADs=';

function memoryFile(name) {
  return path.join(HOME, 'memory', name + '.md');
}

(async () => {
  const udd = fs.mkdtempSync(path.join(process.env.CHROME_UDD_BASE || os.tmpdir(), 'chromium-udd-'));
  const nonLoopback = [];
  const context = await chromium.launchPersistentContext(udd, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost',
    ],
  });
  // Webview resources have vscode-cdn.net addresses but are answered by the webview's service
  // worker from code-server on 127.0.0.1; anything else not on loopback would leave the machine
  // (chromium's host rules make it fail anyway).
  const fromServiceWorker = new Set();
  context.on('request', (r) => {
    const u = r.url();
    if (/^(https?|wss?):/.test(u) && !/^(https?|wss?):\/\/(127\.0\.0\.1|localhost)(:|\/)/.test(u)) nonLoopback.push(u);
  });
  context.on('response', (r) => {
    if (r.fromServiceWorker()) fromServiceWorker.add(r.url());
  });
  const page = context.pages()[0] || (await context.newPage());
  const consoleErrors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text().slice(0, 300));
  });
  let result = { ok: false };
  try {
    // ---------------------------------------------------------------- workbench up; the restore problem and its fix
    await page.goto(URL_);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    // a terminal Mino runs on the same home: many windows (and terminals) share one home, so the
    // extension's server starts beside it, with no "in use" refusal
    await page.locator('.statusbar-item', { hasText: 'Mino: manual · no session' }).first().waitFor({ timeout: 60000 });
    timings.workbenchAndServerReadyS = Number(secs());
    assert((await toast(page, 'in use by another Mino').count()) === 0, 'no "in use" refusal beside a terminal Mino');
    assert(process.kill(Number(process.env.MINO_TERMINAL_PID), 0), 'the terminal Mino still runs');
    step('started beside a terminal Mino on the same home: no "in use" refusal');
    step('status bar: no session (two saved sessions, none selected)');
    await openMinoView(page);
    let frame = await chatFrame(page);
    const banner = frame.locator('.banner.warning', { hasText: 'Cannot restore the active session' });
    await banner.waitFor({ timeout: 10000 });
    step('panel shows the restore problem: ' + (await banner.locator('.banner-text').innerText()));
    await shot(page, '00-restore-problem-panel.png'); // (beside the terminal Mino, not refused)
    await banner.getByRole('button', { name: 'Resume…' }).click();
    const pickRows = page.locator('.quick-input-widget .monaco-list-row');
    await pickRows.nth(1).waitFor({ timeout: 10000 });
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'fedcba98' }).click();
    await banner.waitFor({ state: 'detached', timeout: 10000 });
    const status = page.locator('.statusbar-item', { hasText: /Mino: manual · [0-9a-f]{8}/ });
    await status.first().waitFor({ timeout: 10000 });
    assert(/fedcba98/.test(await status.first().textContent()), 'resumed the picked session');
    step('Resume… fixed it: ' + (await status.first().textContent()).trim());

    // ---------------------------------------------------------------- a streamed answer
    let t = Date.now();
    // Shift+Enter is a new line, Enter sends
    const box0 = frame.locator('#input');
    await box0.click();
    await box0.pressSequentially('How do I run', { delay: 5 });
    await box0.press('Shift+Enter');
    await box0.pressSequentially('the tests here?', { delay: 5 });
    assert((await box0.inputValue()) === 'How do I run\nthe tests here?', 'Shift+Enter adds a line');
    await box0.press('Enter');
    await frame.locator('.msg.user', { hasText: 'the tests here?' }).waitFor({ timeout: 10000 });
    assert((await frame.locator('.msg.user').last().innerText()) === 'How do I run\nthe tests here?', 'sent with its line break');
    await frame.locator('#progress:not([hidden])').waitFor({ timeout: 10000 });
    const answer = frame.locator('.msg.assistant').last();
    await answer.locator('strong', { hasText: 'Markdown' }).waitFor({ timeout: 20000 });
    await frame.locator('.msg.assistant:not(.streaming)', { hasText: 'Raw HTML stays text' }).waitFor({ timeout: 20000 });
    await frame.locator('#progress[hidden]').waitFor({ state: 'attached', timeout: 10000 });
    timings.streamedAnswerS = Number(secs(t));
    // sanitised: the model's <script> and remote <img> are text, nothing was loaded
    const html = await answer.innerHTML();
    assert(!/<script|<img/i.test(html), 'no script or img element in the answer');
    assert(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'raw HTML shown as text');
    assert((await answer.locator('code', { hasText: 'inline code' }).count()) === 1, 'inline code rendered');
    assert((await answer.locator('a[href="https://example.com/docs"]').count()) === 1, 'https link rendered');
    step('streamed Markdown answer rendered and sanitised');
    await shot(page, '01-answer.png');

    // ---------------------------------------------------------------- approve from the notification
    t = Date.now();
    await send(frame, 'Remember that I use pnpm.');
    const approveToast = toast(page, 'Mino wants to run memory_save');
    await approveToast.waitFor({ timeout: 20000 });
    const card = frame.locator('.approval.state-pending');
    await card.waitFor({ timeout: 10000 });
    const cardText = await card.innerText();
    for (const s of ['[Tool: memory_save]', 'Memory: "uses-pnpm"', 'Type: "project"', 'Summary: "The user installs dependencies with pnpm, never npm."', 'Approve this operation?', 'Working directory:']) {
      assert(cardText.includes(s), `card shows ${s}: ${cardText}`);
    }
    // chapter 13's screen: Memory, Directory, Mode, Type, Summary, then the warning and the question right above the buttons
    const pos = (s) => cardText.indexOf(s);
    assert(pos("Memory:") < pos("Type:") && pos("Type:") < pos("Summary:") && pos("Summary:") < pos("Working directory:") && pos("Working directory:") < pos("Saved memories"), `card order: ${cardText}`);
    assert(pos("Saved memories") < pos("[Tool: memory_save] Approve this operation?"), `question last: ${cardText}`);
    assert(/Saved memories are shown to the model/.test(cardText), 'card shows the warning');
    // the view badge counts the pending approval
    const badge = page.locator('.activitybar .action-item', { has: page.locator('a[aria-label^="Mino"]') }).locator('.badge-content');
    const badgeText = (await badge.count()) ? (await badge.first().textContent()).trim() : '';
    step(`approval as notification and card (badge "${badgeText}")`);
    await page.locator('.notifications-toasts .notification-toast.notification-fade-in-done', { hasText: 'Mino wants to run memory_save' }).waitFor({ timeout: 5000 });
    await shot(page, '02-approval.png');
    // Enter in the chat box does not approve
    await frame.locator('#input').press('Enter');
    await sleep(300);
    assert((await frame.locator('.approval.state-pending').count()) === 1, 'still pending after Enter in the chat box');
    assert(!fs.existsSync(memoryFile('uses-pnpm')), 'nothing written before the answer');
    await approveToast.getByRole('link', { name: 'Approve', exact: true }).click();
    await frame.locator('.approval.state-approved').waitFor({ timeout: 10000 });
    await approveToast.waitFor({ state: 'detached', timeout: 10000 });
    await frame.locator('.msg.assistant', { hasText: 'Saved: from the next turn on' }).waitFor({ timeout: 20000 });
    assert(fs.existsSync(memoryFile('uses-pnpm')), 'memory file written: ' + memoryFile('uses-pnpm'));
    assert(/pnpm, never npm/.test(fs.readFileSync(memoryFile('uses-pnpm'), 'utf8')), 'memory file content');
    timings.approveRoundTripS = Number(secs(t));
    step('approved from the notification: card shows Approved, toast gone, memory file exists');
    await shot(page, '03-approved.png');

    // ---------------------------------------------------------------- deny from the card
    t = Date.now();
    await send(frame, 'Also remember this other thing.');
    // the person looks elsewhere: the panel is hidden, the notification still comes, the badge counts
    await page.locator('.activitybar .action-item a[aria-label^="Explorer"]').first().click();
    const denyToast = toast(page, 'Mino wants to run memory_save');
    await denyToast.waitFor({ timeout: 20000 });
    const minoBadge = page.locator('.activitybar .action-item', { has: page.locator('a[aria-label^="Mino"]') }).locator('.badge-content');
    await minoBadge.filter({ hasText: '1' }).first().waitFor({ timeout: 10000 });
    await shot(page, '04a-approval-panel-hidden.png');
    await denyToast.getByRole('link', { name: 'Show details', exact: true }).click();
    frame = await chatFrame(page, '.approval.state-pending');
    const pending = frame.locator('.approval.state-pending');
    await pending.waitFor({ timeout: 10000 });
    step('panel hidden: notification shown, badge 1; Show details brought the card back');
    await pending.getByRole('button', { name: 'Deny', exact: true }).click();
    await frame.locator('.approval.state-denied').waitFor({ timeout: 10000 });
    await denyToast.waitFor({ state: 'detached', timeout: 10000 }); // both surfaces are gone
    await minoBadge.first().waitFor({ state: 'hidden', timeout: 10000 }).catch(async () => {
      assert(!(await minoBadge.first().isVisible()) || (await minoBadge.first().textContent()).trim() === '', 'badge cleared');
    });
    await frame.locator('.msg.assistant', { hasText: 'Understood, nothing was saved.' }).waitFor({ timeout: 20000 });
    await frame.locator('.result-status', { hasText: '[Tool result: denied]' }).waitFor({ timeout: 5000 });
    assert(!fs.existsSync(memoryFile('not-saved')), 'denied: no memory file');
    timings.denyRoundTripS = Number(secs(t));
    step('denied from the card: notification gone, no memory file');
    await shot(page, '04-denied.png');

    // ---------------------------------------------------------------- Stop interrupts a turn
    t = Date.now();
    await send(frame, 'Tell me a long story.');
    await frame.locator('.msg.assistant.streaming', { hasText: 'very slow answer' }).waitFor({ timeout: 20000 });
    await frame.locator('#stop').click();
    await frame.locator('.notice', { hasText: 'Interrupted.' }).waitFor({ timeout: 15000 });
    await frame.locator('#send:not([hidden])').waitFor({ timeout: 5000 });
    timings.stopS = Number(secs(t));
    step('Stop interrupted the turn');

    // ---------------------------------------------------------------- slash command in the chat box
    await send(frame, '/sessions');
    await frame.locator('.command .command-output').last().waitFor({ timeout: 10000 });
    step('/sessions output: ' + (await frame.locator('.command .command-output').last().innerText()).replace(/\n/g, ' | '));

    // ---------------------------------------------------------------- window reload: the panel comes back from mino/history
    t = Date.now();
    const beforeReload = (await status.first().textContent()).match(/[0-9a-f]{8}/)[0];
    await page.reload();
    await page.locator('.statusbar-item', { hasText: `Mino: manual · ${beforeReload}` }).first().waitFor({ timeout: 60000 });
    if (!(await chatFrame(page, '#composer', 3000).catch(() => null))) await openMinoView(page);
    frame = await chatFrame(page, '.msg.user');
    await frame.locator('.msg.user', { hasText: 'Remember that I use pnpm.' }).waitFor({ timeout: 10000 });
    await frame.locator('.card .result-status', { hasText: '[Tool result: completed]' }).first().waitFor({ timeout: 10000 });
    await frame.locator('.msg.assistant', { hasText: 'Understood, nothing was saved.' }).waitFor({ timeout: 10000 });
    timings.reloadS = Number(secs(t));
    step('window reloaded: same session, transcript restored from mino/history');
    await shot(page, '04b-after-reload.png');

    // ---------------------------------------------------------------- New Session, then Resume Session
    const firstShort = (await status.first().textContent()).match(/[0-9a-f]{8}/)[0];
    await runCommand(page, 'Mino: New Session');
    await page.locator('.statusbar-item', { hasText: /Mino: manual · [0-9a-f]{8}/ }).filter({ hasNotText: firstShort }).first().waitFor({ timeout: 10000 });
    await frame.locator('.msg.user').first().waitFor({ state: 'detached', timeout: 10000 }); // empty transcript
    await frame.locator('.notice', { hasText: /^Session: [0-9a-f]{32}$/ }).filter({ hasNotText: firstShort }).waitFor({ timeout: 10000 });
    step('new session');
    t = Date.now();
    await runCommand(page, 'Mino: Resume Session');
    const rows = page.locator('.quick-input-widget .monaco-list-row');
    await rows.nth(2).waitFor({ timeout: 10000 });
    assert((await rows.count()) === 3, 'three sessions in the QuickPick (two seeded, one new)');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'current session' }).waitFor();
    const older = page.locator('.quick-input-widget .monaco-list-row', { hasText: firstShort });
    assert(/UTC/.test(await older.innerText()), 'times shown in UTC too');
    await shot(page, '05-resume-pick.png');
    await older.click();
    await page.locator('.statusbar-item', { hasText: `Mino: manual · ${firstShort}` }).first().waitFor({ timeout: 10000 });
    await frame.locator('.msg.user', { hasText: 'Remember that I use pnpm.' }).waitFor({ timeout: 10000 });
    timings.resumeS = Number(secs(t));
    step('resumed the first session: its history is back in the panel');
    await shot(page, '06-resumed.png');

    // ---------------------------------------------------------------- Clear Session: wrong ID, then the right one
    await runCommand(page, 'Mino: Clear Session');
    const title = page.locator('.quick-input-widget .quick-input-title');
    await title.waitFor({ timeout: 10000 });
    const fullId = (await title.textContent()).match(/[0-9a-f]{32}/)[0];
    assert(fullId.startsWith(firstShort), 'clear asks about the current session');
    const box = page.locator('.quick-input-widget .quick-input-box input');
    await box.fill('yes');
    await shot(page, '07-clear-prompt.png');
    await box.press('Enter');
    // an answered prompt stays on screen for about 0.2 s: wait until it is gone, so that the next
    // wait for a prompt cannot find this one
    await title.waitFor({ state: 'hidden', timeout: 10000 });
    await toast(page, 'Session was not cleared.').first().waitFor({ timeout: 10000 });
    await frame.locator('.msg.user', { hasText: 'Remember that I use pnpm.' }).waitFor({ timeout: 5000 });
    assert(fs.statSync(path.join(HOME, 'sessions', fullId + '.jsonl')).size > 0, 'wrong ID: the log is untouched');
    step('a wrong ID cleared nothing and said so');
    await runCommand(page, 'Mino: Clear Session');
    await title.waitFor({ timeout: 10000 });
    await box.fill(fullId);
    await box.press('Enter');
    await title.waitFor({ state: 'hidden', timeout: 10000 });
    await toast(page, `Cleared session: ${fullId}`).first().waitFor({ timeout: 10000 });
    await frame.locator('.msg.user').first().waitFor({ state: 'detached', timeout: 10000 });
    assert(fs.statSync(path.join(HOME, 'sessions', fullId + '.jsonl')).size === 0, 'right ID: the log is empty');
    step('the complete ID cleared the session');
    await shot(page, '08-cleared.png');

    // ---------------------------------------------------------------- /clear typed in the chat box opens the same prompt
    await send(frame, '/clear');
    await title.waitFor({ timeout: 10000 });
    assert(/Clear Session/.test(await title.textContent()), '/clear opens the Clear Session prompt');
    assert((await box.inputValue()) === '', 'a new, empty prompt (not the one answered above)');
    // the prompt has the keyboard: what is typed goes into it, not into the chat box behind
    await page.keyboard.type('x');
    assert((await box.inputValue()) === 'x', 'keys typed after /clear go into the Clear Session prompt');
    assert((await frame.locator('#input').inputValue()) === '', 'and not into the chat box');
    // (the click before Escape is what a person might do; the keys already reach the prompt)
    for (let i = 0; i < 5; i++) {
      await box.click();
      await page.keyboard.press('Escape');
      if (await title.waitFor({ state: 'hidden', timeout: 1000 }).then(() => true, () => false)) break;
    }
    await title.waitFor({ state: 'hidden', timeout: 5000 });
    step('/clear in the chat box runs Clear Session');

    // ---------------------------------------------------------------- the server crashes: restarted with backoff
    const sessionShort = (await status.first().textContent()).match(/[0-9a-f]{8}/)[0];
    // the session's lock note names the process that has it open: the extension's server
    // (read as Mino reads it: the first line is the note)
    const pid = Number(JSON.parse(fs.readFileSync(path.join(HOME, 'sessions', fullId + '.lock'), 'utf8').split('\n')[0]).pid);
    assert(/--stdio/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8')), `pid ${pid} is the extension's mino --stdio`);
    t = Date.now();
    await runCommand(page, 'Clear All Notifications'); // at most 3 toasts show at once
    await page.locator('.notifications-toasts .notification-toast').first().waitFor({ state: 'detached', timeout: 5000 });
    process.kill(pid, 'SIGKILL');
    await toast(page, 'Mino stopped unexpectedly').first().waitFor({ timeout: 15000 });
    await page.locator('.statusbar-item', { hasText: `Mino: manual · ${sessionShort}` }).first().waitFor({ timeout: 30000 });
    await frame.locator('#send:not([disabled])').waitFor({ timeout: 10000 });
    timings.crashRestartS = Number(secs(t));
    step(`killed mino --stdio (pid ${pid}); the extension restarted it on the same session`);
    await shot(page, '09-restarted.png');

    // ---------------------------------------------------------------- Set Permission Mode (bypass asks first)
    await runCommand(page, 'Mino: Set Permission Mode');
    await page.locator('.quick-input-widget .monaco-list-row').nth(3).waitFor({ timeout: 10000 });
    const modeRows = await page.locator('.quick-input-widget .monaco-list-row').allInnerTexts();
    assert(
      modeRows.length === 4 && /manual/.test(modeRows[0]) && /accept-edits/.test(modeRows[1]) && /bypass/.test(modeRows[2]) && /plan/.test(modeRows[3]),
      'four modes: ' + modeRows.join(' / '),
    );
    assert(modeRows.every((r) => r.split('\n').length >= 2), 'each mode has a one-line explanation');
    await shot(page, '10-mode-pick.png');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'bypass' }).click();
    const dialog = page.locator('.monaco-dialog-box', { hasText: 'Switch Mino to bypass mode?' });
    await dialog.waitFor({ timeout: 10000 });
    await shot(page, '11-bypass-confirm.png');
    await dialog.getByRole('button', { name: 'Use bypass' }).click();
    await page.locator('.statusbar-item', { hasText: `Mino: bypass · ${sessionShort}` }).first().waitFor({ timeout: 10000 });
    await runCommand(page, 'Mino: Set Permission Mode');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'manual' }).click();
    await page.locator('.statusbar-item', { hasText: `Mino: manual · ${sessionShort}` }).first().waitFor({ timeout: 10000 });
    step('permission mode: bypass after the confirmation, then manual again');

    // ---------------------------------------------------------------- Show Memories opens the memory file
    await runCommand(page, 'Mino: Show Memories');
    const memRow = page.locator('.quick-input-widget .monaco-list-row', { hasText: '- [project] uses-pnpm: The user installs dependencies with pnpm, never npm.' });
    await memRow.waitFor({ timeout: 10000 });
    await memRow.click();
    await page.locator('.tabs-container .tab', { hasText: 'uses-pnpm.md' }).waitFor({ timeout: 10000 });
    step('Show Memories opened uses-pnpm.md');
    await shot(page, '12-memory-file.png');

    // ---------------------------------------------------------------- Ask About Selection: the model request carries the lines
    await runCommand(page, 'Clear All Notifications');
    t = Date.now();
    await page.keyboard.press('Control+P');
    const quick = page.locator('.quick-input-widget .quick-input-box input');
    await quick.waitFor({ state: 'visible' });
    await quick.fill('src/app.py');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'app.py' }).first().waitFor({ timeout: 10000 });
    await page.keyboard.press('Enter');
    await page.locator('.tabs-container .tab.active', { hasText: 'app.py' }).waitFor({ timeout: 10000 });
    const editorText = page.locator('.editor-group-container.active .monaco-editor .view-lines').first();
    await editorText.waitFor({ timeout: 10000 });
    await editorText.click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.press('ArrowDown'); // line 2
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+ArrowDown'); // lines 2-3 (the selection ends at the start of line 4)
    // the editor context menu offers it
    await editorText.click({ button: 'right', position: { x: 60, y: 25 } });
    const menuItem = page.locator('.monaco-menu .action-item', { hasText: 'Ask About Selection' });
    await menuItem.first().waitFor({ timeout: 10000 });
    await shot(page, '13a-editor-context-menu.png');
    await page.keyboard.press('Escape');
    await menuItem.first().waitFor({ state: 'hidden', timeout: 5000 }).catch(() => {});
    // and the keybinding runs it
    await editorText.click({ position: { x: 60, y: 25 } }).catch(() => {}); // focus back in the editor…
    await page.keyboard.press('Control+Home');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+ArrowDown'); // …with the same lines selected again
    await page.keyboard.press('Control+Alt+K');
    frame = await chatFrame(page, '#chips .chip');
    const chip = frame.locator('#chips .chip', { hasText: 'app.py:2-3' });
    await chip.waitFor({ timeout: 10000 });
    assert((await frame.locator('#chips .chip').count()) === 1, 'one chip');
    assert(/src\/app\.py \(lines 2-3\)/.test(await chip.getAttribute('title')), 'the chip names the path and lines');
    // the keyboard is in the chat box: the question comes next
    await frame.locator('#input:focus').waitFor({ timeout: 5000 });
    step('Ctrl+Alt+K (Ask About Selection) put a chip above the chat box');
    await shot(page, '13-selection-chip.png');
    // `@` completes workspace files (mino/files)
    const box1 = frame.locator('#input');
    await box1.pressSequentially('@src/a', { delay: 20 });
    const row = frame.locator('#complete .complete-row', { hasText: 'app.py' });
    await row.first().waitFor({ timeout: 10000 });
    await shot(page, '13b-at-completion.png');
    await box1.press('Enter'); // chooses, does not send
    assert((await box1.inputValue()) === '@src/app.py ', 'the completion replaced the @word: ' + (await box1.inputValue()));
    assert((await frame.locator('.msg.user', { hasText: '@src/app.py' }).count()) === 0, 'Enter chose the file; nothing was sent');
    step('@ completed src/app.py from mino/files');
    await box1.fill('');
    // a chip can be removed: add the file too, then remove it
    await runCommand(page, 'Mino: Add File to Chat');
    await frame.locator('#chips .chip', { hasText: /^app\.py/ }).nth(1).waitFor({ timeout: 10000 });
    await frame.locator('#chips .chip').nth(1).locator('.chip-remove').click();
    await frame.locator('#chips .chip').nth(1).waitFor({ state: 'detached', timeout: 5000 });
    assert((await frame.locator('#chips .chip').count()) === 1, 'the removed chip is gone, the selection stays');
    step('Add File to Chat added a chip; its × removed it');
    // images: one pasted into the chat box, one chosen with the attach button (then removed)
    await frame.locator('#input').evaluate((el, b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], '', { type: 'image/png' })); // a screenshot on the clipboard has no name
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }, PNG_B64);
    await frame.locator('#chips .chip.chip-image', { hasText: 'pasted image' }).waitFor({ timeout: 10000 });
    assert((await frame.locator('#input').inputValue()) === '', 'a pasted image is not text');
    const [chooser] = await Promise.all([page.waitForEvent('filechooser', { timeout: 10000 }), frame.locator('#attach').click()]);
    await chooser.setFiles({ name: 'diagram.gif', mimeType: 'image/gif', buffer: Buffer.from(GIF_B64, 'base64') });
    const gifChip = frame.locator('#chips .chip.chip-image', { hasText: 'diagram.gif' });
    await gifChip.waitFor({ timeout: 10000 });
    assert(/GIF image/.test(await gifChip.getAttribute('title')), 'the image chip says what it is');
    assert((await frame.locator('#chips .chip').count()) === 3, 'the selection and two images');
    await assertComposerFits(frame, 'with image chips');
    await shot(page, '13c-image-chips.png');
    await gifChip.locator('.chip-remove').click();
    await gifChip.waitFor({ state: 'detached', timeout: 5000 });
    step('an image pasted into the chat box and one from the attach button became chips; × removed one');
    await send(frame, 'What does this do?');
    await frame.locator('.msg.user', { hasText: 'What does this do?' }).locator('.msg-context .chip', { hasText: 'app.py:2-3' }).waitFor({ timeout: 10000 });
    await frame.locator('#chips').waitFor({ state: 'hidden', timeout: 5000 });
    await frame.locator('.msg.assistant:not(.streaming)', { hasText: 'greet builds the greeting' }).waitFor({ timeout: 20000 });
    timings.askAboutSelectionS = Number(secs(t));
    step('the turn went with the selected lines and the pasted image (the scripted model required them)');
    const sent = fs
      .readdirSync(path.join(HOME, 'sessions'))
      .filter((f) => f.endsWith('.jsonl'))
      .flatMap((f) =>
        fs.readFileSync(path.join(HOME, 'sessions', f), 'utf8').split('\n').filter(Boolean).map((l) => ({ sid: f.slice(0, -6), r: JSON.parse(l) })),
      )
      .find(({ r }) => r.type === 'user_message' && r.text === 'What does this do?');
    const images = sent && sent.r.images;
    assert(images && images.length === 1 && images[0].name === 'pasted image', 'the log keeps one image by name: ' + JSON.stringify(images));
    assert(fs.existsSync(path.join(HOME, 'images', sent.sid, images[0].sha256)), 'its bytes are kept under MINO_HOME/images');
    await frame.locator('.msg.user', { hasText: 'What does this do?' }).locator('.msg-context .chip', { hasText: 'pasted image' }).waitFor({ timeout: 10000 });
    // ---------------------------------------------------------------- how full the context is
    const usageItem = page.locator('.statusbar-item', { hasText: /Mino: manual · [0-9a-f]{8} · 41%/ });
    await usageItem.first().waitFor({ timeout: 10000 });
    assert((await frame.locator('#usage .usage-text').innerText()).trim() === '41%', 'the panel shows 41%');
    assert(/52,340 of 128,000 tokens/.test(await frame.locator('#usage').getAttribute('title')), 'the panel tooltip has the numbers');
    await shot(page, '14-context-sent-usage.png');
    await usageItem.first().hover();
    const hover = page.locator('.workbench-hover, .monaco-hover', { hasText: 'Context: 41% full' });
    await hover.first().waitFor({ timeout: 10000 });
    assert(/52,340 of 128,000 tokens at the latest model request; its answer used 812/.test(await hover.first().innerText()), 'status bar tooltip numbers');
    step('status bar: "Mino: manual · … · 41%", the numbers in its tooltip');
    await shot(page, '15-usage-tooltip.png');
    await page.mouse.move(700, 400);
    await hover.first().waitFor({ state: 'hidden', timeout: 10000 }).catch(() => page.keyboard.press('Escape'));

    // ---------------------------------------------------------------- MCP servers on the panel's status line
    const mcp = frame.locator('#mcp');
    await frame.locator('#mcp', { hasText: 'MCP fixture ✓ missing ✗' }).waitFor({ timeout: 150000 });
    const mcpTitle = await mcp.getAttribute('title');
    assert(/✓ fixture: ready, 9 tools/.test(mcpTitle), 'the tooltip counts the ready server\'s tools: ' + mcpTitle);
    assert(/✗ missing: failed \(cannot start the program/.test(mcpTitle), 'the tooltip says why the other failed: ' + mcpTitle);
    assert(await mcp.evaluate((el) => el.classList.contains('off')), 'a failed server shows as a warning');
    await assertComposerFits(frame, 'with the MCP servers on the status line');
    step('MCP servers on the panel: "' + (await mcp.innerText()).trim() + '"');
    await shot(page, '15b-mcp-servers.png');

    // ---------------------------------------------------------------- an edit approval opens the diff editor
    t = Date.now();
    const appPy = path.join(process.env.MINO_E2E_WS, 'src', 'app.py');
    const original = fs.readFileSync(appPy, 'utf8');
    await send(frame, 'Change the greeting to Hi.');
    const editToast = toast(page, 'Mino wants to run edit_file');
    await editToast.waitFor({ timeout: 20000 });
    const diffTab = page.locator('.tabs-container .tab', { hasText: "app.py ↔ Mino's proposal" });
    await diffTab.waitFor({ timeout: 10000 });
    await frame.locator('.approval.state-pending', { hasText: '[Tool: edit_file]' }).waitFor({ timeout: 10000 });
    const approveAction = page.locator('.editor-group-container .editor-actions [aria-label^="Approve"]');
    const denyAction = page.locator('.editor-group-container .editor-actions [aria-label^="Deny"]');
    await approveAction.first().waitFor({ timeout: 10000 });
    assert((await denyAction.count()) >= 1, 'Deny in the diff title too');
    await page.locator('.monaco-diff-editor').first().waitFor({ timeout: 10000 });
    assert(fs.readFileSync(appPy, 'utf8') === original, 'the file is untouched while asked');
    timings.diffOpenedS = Number(secs(t));
    step("the approval opened VS Code's diff editor: app.py ↔ Mino's proposal, Approve and Deny in its title");
    await shot(page, '16-diff-approval.png');
    // closing the diff is not an answer
    await diffTab.hover();
    await diffTab.locator('.tab-actions .action-label').first().click();
    await diffTab.waitFor({ state: 'detached', timeout: 10000 });
    await sleep(500);
    assert((await frame.locator('.approval.state-pending', { hasText: '[Tool: edit_file]' }).count()) === 1, 'the card still asks');
    assert((await editToast.count()) === 1, 'the notification stays');
    assert(fs.readFileSync(appPy, 'utf8') === original, 'still untouched');
    step('closed the diff: the card and the notification still ask; the file is untouched');
    await shot(page, '17-diff-closed-still-pending.png');
    // the card opens it again; Approve in the diff title answers
    await frame.locator('.approval.state-pending .open-diff').click();
    await diffTab.waitFor({ timeout: 10000 });
    await approveAction.first().click();
    await frame.locator('.approval.state-approved', { hasText: '[Tool: edit_file]' }).waitFor({ timeout: 10000 });
    await diffTab.waitFor({ state: 'detached', timeout: 10000 });
    await editToast.waitFor({ state: 'detached', timeout: 10000 });
    await frame.locator('.msg.assistant', { hasText: 'Changed the greeting.' }).waitFor({ timeout: 20000 });
    const changed = fs.readFileSync(appPy, 'utf8');
    assert(changed.includes('"Hi, "') && !changed.includes('"Hello, "'), 'approved: the file changed: ' + changed);
    timings.diffApproveS = Number(secs(t));
    step('Approve in the diff title wrote the file; the diff, the card question and the notification went away');
    await shot(page, '18-diff-approved.png');

    // ---------------------------------------------------------------- Rewind to here: the diff, the question, the file back
    t = Date.now();
    const editMsg = frame.locator('.msg.user', { hasText: 'Change the greeting to Hi.' });
    const rewindButton = editMsg.locator('button.rewind', { hasText: 'Rewind to here' });
    await rewindButton.waitFor({ timeout: 10000 });
    await rewindButton.click();
    const rewindTab = page.locator('.tabs-container .tab', { hasText: 'app.py ↔ after the rewind' });
    await rewindTab.waitFor({ timeout: 10000 });
    const rewindDialog = page.locator('.monaco-dialog-box', { hasText: 'Rewind 1 file(s) to before turn' });
    await rewindDialog.waitFor({ timeout: 10000 });
    assert(/restore src\/app\.py/.test(await rewindDialog.innerText()), 'the question lists restore src/app.py');
    await page.locator('.monaco-diff-editor').first().waitFor({ timeout: 10000 });
    assert(fs.readFileSync(appPy, 'utf8') === changed, 'nothing is put back while asked');
    step('Rewind to here: the diff editor shows app.py as it is and after the rewind; the question lists each file');
    await shot(page, '18b-rewind-diff-and-question.png');
    await rewindDialog.getByRole('button', { name: 'Rewind' }).click();
    await rewindTab.waitFor({ state: 'detached', timeout: 10000 });
    await frame.locator('.msg.user.rewound', { hasText: 'Change the greeting to Hi.' }).waitFor({ timeout: 10000 });
    await frame.locator('.notice', { hasText: /Rewound 1 file\(s\); the conversation continues from before turn \d+\./ }).waitFor({ timeout: 10000 });
    assert(fs.readFileSync(appPy, 'utf8') === original, 'rewound: app.py is as it was before the turn');
    assert((await frame.locator('button.rewind').count()) === 0, 'nothing left to rewind');
    timings.rewindS = Number(secs(t));
    step('answered Rewind: app.py is back, the message is marked rewound, the diff closed');
    await shot(page, '18c-rewound.png');

    // ---------------------------------------------------------------- scrolling up loads earlier history
    t = Date.now();
    const longId = 'abcdef0123456789abcdef0123456789';
    const records = [];
    const at = '2026-10-21T10:00:00.000Z';
    const add = (r) => records.push(JSON.stringify({ seq: records.length + 1, ...r, at }));
    for (let n = 0; n < 150; n++) {
      const turn_id = n.toString(16).padStart(16, '0');
      add({ type: 'user_message', turn_id, text: `Question ${n} about the long project` });
      add({ type: 'assistant_message', turn_id, text: `Answer ${n}: the long project keeps its history in pages.` });
      add({ type: 'turn_end', turn_id, status: 'completed' });
    }
    fs.writeFileSync(path.join(HOME, 'sessions', `${longId}.jsonl`), records.join('\n') + '\n', { mode: 0o600 });
    await runCommand(page, 'Mino: Resume Session');
    const longRow = page.locator('.quick-input-widget .monaco-list-row', { hasText: longId.slice(0, 8) });
    await longRow.waitFor({ timeout: 10000 });
    await longRow.click();
    await frame.locator('.msg.user', { hasText: 'Question 149 about' }).waitFor({ timeout: 15000 });
    const items = frame.locator('#transcript > [data-id]');
    await sleep(500);
    const firstPage = await items.count();
    assert(firstPage <= 210, `the latest page only (${firstPage} items)`);
    assert((await frame.locator('.msg.user', { hasText: 'Question 0 about' }).count()) === 0, 'not the first question yet');
    const firstShown = await items.first().getAttribute('data-id');
    await shot(page, '19a-history-latest-page.png');
    // the person scrolls up to the top
    await frame.locator('#transcript').evaluate((el) => {
      el.scrollTop = 0;
      el.dispatchEvent(new Event('scroll'));
    });
    await frame.locator('.msg.user', { hasText: 'Question 0 about' }).waitFor({ timeout: 15000 });
    const allShown = await items.count();
    assert(allShown >= 300, `all 300 items after scrolling up (${allShown})`);
    // what was at the top is still where the person was looking (the new page went in above it)
    const kept = await frame.locator('#transcript').evaluate((el, id) => {
      const box = el.getBoundingClientRect();
      const it = el.querySelector(`[data-id="${CSS.escape(id)}"]`).getBoundingClientRect();
      return { itemTop: it.top - box.top, height: box.height, scrollTop: el.scrollTop };
    }, firstShown);
    assert(kept.scrollTop > 0 && kept.itemTop >= -5 && kept.itemTop < kept.height, 'the scroll position was kept: ' + JSON.stringify(kept));
    timings.earlierHistoryS = Number(secs(t));
    step(`scrolling up loaded the earlier page (${firstPage} -> ${allShown} items), the view stayed put`);
    await shot(page, '19-history-earlier-page.png');

    // ---------------------------------------------------------------- two windows on two folders, chatting at once
    t = Date.now();
    const page2 = await context.newPage();
    page2.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text().slice(0, 300));
    });
    await page2.goto(URL_.replace(/folder=[^&]*/, 'folder=' + encodeURIComponent(process.env.MINO_E2E_WS2)));
    await page2.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    // its start-up pick (the long session) is open in the first window: a new session, said once
    await toast(page2, 'so a new session was started').first().waitFor({ timeout: 60000 });
    const status2 = page2.locator('.statusbar-item', { hasText: /Mino: manual · [0-9a-f]{8}/ });
    await status2.first().waitFor({ timeout: 30000 });
    const short2 = (await status2.first().textContent()).match(/[0-9a-f]{8}/)[0];
    assert(short2 !== longId.slice(0, 8), 'the second window has its own session');
    step('second window on another folder: not refused; its own session, said in one line');
    await openMinoView(page2);
    const frame2 = await chatFrame(page2);
    await shot(page2, '20-second-window.png');
    // the Resume picker of the second window marks the session open in the first
    await runCommand(page2, 'Mino: Resume Session');
    const elsewhere = page2.locator('.quick-input-widget .monaco-list-row', { hasText: longId.slice(0, 8) });
    await elsewhere.waitFor({ timeout: 10000 });
    assert(/open in another window/.test(await elsewhere.innerText()), 'marked open in another window');
    await shot(page2, '20b-resume-marks-open-elsewhere.png');
    await elsewhere.click();
    await toast(page2, 'Nothing was changed').first().waitFor({ timeout: 10000 });
    assert((await status2.first().textContent()).includes(short2), 'nothing changed');
    step('Resume in the second window: the first window\'s session is marked; picking it explains and changes nothing');
    await runCommand(page2, 'Clear All Notifications');
    // both windows chat at the same time
    await Promise.all([send(frame, 'Hello from the first window.'), send(frame2, 'Hello from the second window.')]);
    await Promise.all([frame.locator('#progress:not([hidden])').waitFor({ timeout: 10000 }), frame2.locator('#progress:not([hidden])').waitFor({ timeout: 10000 })]);
    const [busy1, busy2] = await Promise.all([frame.locator('#progress').isVisible(), frame2.locator('#progress').isVisible()]);
    assert(busy1 && busy2, 'both turns run at the same moment');
    step('both windows are answering at once');
    await shot(page, '21a-two-windows-first-answering.png');
    await shot(page2, '22a-two-windows-second-answering.png');
    await Promise.all([
      frame.locator('.msg.assistant:not(.streaming)', { hasText: 'while the other window chats too' }).waitFor({ timeout: 30000 }),
      frame2.locator('.msg.assistant:not(.streaming)', { hasText: 'while the other window chats too' }).waitFor({ timeout: 30000 }),
    ]);
    const log1 = fs.readFileSync(path.join(HOME, 'sessions', `${longId}.jsonl`), 'utf8');
    const id2 = fs.readdirSync(path.join(HOME, 'sessions')).find((f) => f.startsWith(short2) && f.endsWith('.jsonl'));
    const log2 = fs.readFileSync(path.join(HOME, 'sessions', id2), 'utf8');
    assert(log1.includes('Hello from the first window.') && !log1.includes('Hello from the second window.'), 'window 1 logs only its own');
    assert(log2.includes('Hello from the second window.') && !log2.includes('Hello from the first window.'), 'window 2 logs only its own');
    timings.twoWindowsS = Number(secs(t));
    step('two windows answered at the same time, each in its own session');
    await shot(page, '21-two-windows-first.png');
    await shot(page2, '22-two-windows-second.png');

    // first run without a key: settings without MINO_BASE_URL and MINO_API_KEY (OpenAI's endpoint,
    // no key); after a restart the panel says what to set, with Open settings and Open README
    await runCommand(page, 'Clear All Notifications');
    await runCommand(page2, 'Clear All Notifications');
    for (const file of SETTINGS) {
      const s = JSON.parse(fs.readFileSync(file, 'utf8'));
      s['mino.env'] = { MINO_HOME: HOME, MINO_MODEL: 'scripted' };
      fs.writeFileSync(file, JSON.stringify(s, null, 2));
    }
    await toast(page, 'Mino settings changed').first().waitFor({ timeout: 30000 });
    await toast(page, 'Mino settings changed').first().locator('a.monaco-button', { hasText: 'Restart' }).click();
    const setup = (await chatFrame(page, '.banner.setup', 60000)).locator('.banner.setup');
    const said = await setup.locator('.banner-text').innerText();
    assert(/^No API key: set OPENAI_API_KEY \(or MINO_API_KEY\) to use https:\/\/api\.openai\.com\/v1/.test(said), 'the no-key line: ' + said);
    assert((await setup.locator('button').allInnerTexts()).join('|') === 'Open settings|Open README', 'its two actions');
    step('first run without a key: the panel says what to set, with Open settings and Open README');
    await shot(page, '23-first-run-no-key.png');
    await setup.locator('button', { hasText: 'Open README' }).click();
    await page.locator('.monaco-editor .view-line', { hasText: '## First run' }).first().waitFor({ timeout: 15000 });
    step("Open README opened Mino's README at \"First run\"");
    await shot(page, '24-first-run-readme.png');
    await setup.locator('button', { hasText: 'Open settings' }).click();
    await page.locator('.settings-editor .setting-item-contents', { hasText: 'Env' }).first().waitFor({ timeout: 15000 });
    step('Open settings showed the Mino: Env setting');

    result = { ok: true, totalS: Number(secs()), timings };
  } catch (e) {
    console.error('FAILED:', e);
    await page.screenshot({ path: path.join(SHOT_DIR, 'failure.png') }).catch(() => {});
    result = { ok: false, error: String(e), timings };
  } finally {
    result.nonLoopbackRequests = [...new Set(nonLoopback)].filter((u) => !fromServiceWorker.has(u));
    result.servedByWebviewServiceWorker = [...fromServiceWorker].filter((u) => !/^https?:\/\/(127\.0\.0\.1|localhost)/.test(u)).length;
    result.consoleErrors = consoleErrors.filter((e) => !/vsda|127\.0\.0\.1:9|ERR_CONNECTION_REFUSED|Content Security Policy/.test(e)).slice(0, 10);
    if (result.ok && result.nonLoopbackRequests.length) {
      result.ok = false;
      result.error = 'requests left the machine';
    }
    console.log(JSON.stringify(result, null, 2));
    await context.close();
    fs.rmSync(udd, { recursive: true, force: true });
    process.exit(result.ok ? 0 : 1);
  }
})();
