// The Mino end-to-end scenario in a real VS Code (code-server), driven by playwright-core and
// Debian chromium. Started by e2e/run.sh; usage: node drive.js URL
// env: MINO_HOME (the server's home, to check memory and session files), SHOT_DIR, CHROMIUM.
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

const URL_ = process.argv[2];
const HOME = process.env.MINO_HOME;
const SHOT_DIR = process.env.SHOT_DIR || os.tmpdir();
const t0 = Date.now();
const secs = (t = t0) => ((Date.now() - t) / 1000).toFixed(2);
const step = (s) => console.log(`[drive ${secs()}s] ${s}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const timings = {};

function assert(cond, msg) {
  if (!cond) throw new Error('assertion failed: ' + msg);
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
    // another Mino holds the store: said once, with Restart Mino and Show log; status bar says stopped
    const locked = toast(page, 'in use by another Mino process');
    await locked.first().waitFor({ timeout: 60000 });
    await page.locator('.statusbar-item', { hasText: 'Mino: stopped' }).first().waitFor({ timeout: 10000 });
    timings.workbenchAndServerUpS = Number(secs());
    step('store locked by another Mino: ' + (await locked.first().locator('.notification-list-item-message').innerText()));
    await shot(page, '00-store-locked.png');
    process.kill(Number(process.env.MINO_LOCK_HOLDER_PID), 'SIGTERM');
    await sleep(300);
    await locked.first().getByRole('button', { name: 'Restart Mino' }).click();
    await page.locator('.statusbar-item', { hasText: 'Mino: manual · no session' }).first().waitFor({ timeout: 30000 });
    timings.workbenchAndServerReadyS = Number(secs());
    step('the other Mino stopped; Restart Mino started ours');
    step('status bar: no session (two saved sessions, none selected)');
    await openMinoView(page);
    let frame = await chatFrame(page);
    const banner = frame.locator('.banner.warning', { hasText: 'Cannot restore the active session' });
    await banner.waitFor({ timeout: 10000 });
    step('panel shows the restore problem: ' + (await banner.locator('.banner-text').innerText()));
    await shot(page, '00-restore-problem-panel.png');
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
    const pid = Number(fs.readFileSync(path.join(HOME, 'sessions', 'sessions.lock'), 'utf8').trim());
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
    await page.locator('.quick-input-widget .monaco-list-row').nth(2).waitFor({ timeout: 10000 });
    const modeRows = await page.locator('.quick-input-widget .monaco-list-row').allInnerTexts();
    assert(modeRows.length === 3 && /manual/.test(modeRows[0]) && /accept-edits/.test(modeRows[1]) && /bypass/.test(modeRows[2]), 'three modes: ' + modeRows.join(' / '));
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
