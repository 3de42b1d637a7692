import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderMarkdown, escapeHtml, renderItem } from '../../src/webview/render';

test('script tags are escaped, never emitted', () => {
  const html = renderMarkdown('Hello <script>alert(1)</script> world\n\n<script>\nalert(2)\n</script>');
  assert.ok(!/<script/i.test(html), html);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
});

test('raw HTML blocks and inline HTML are escaped', () => {
  const html = renderMarkdown('<div onclick="x()">hi</div>\n\ntext <img src=x onerror=alert(1)> <iframe src="https://evil.example"></iframe> <b>b</b>');
  assert.ok(!/<(div|img|iframe|b)[\s>]/i.test(html), html);
  assert.match(html, /&lt;div onclick=&quot;x\(\)&quot;&gt;/);
  assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
});

test('javascript:, vbscript:, data: and file: links are not links', () => {
  for (const href of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', ' javascript:alert(1)', 'vbscript:msgbox(1)', 'data:text/html;base64,PHNjcmlwdD4=', 'file:///etc/passwd', 'command:mino.answerApproval']) {
    const html = renderMarkdown(`[click](${href}) and <${href}>`);
    assert.ok(!/<a\s/i.test(html), `${href} -> ${html}`);
  }
  // entity-encoded scheme
  const enc = renderMarkdown('[x](&#106;avascript:alert(1))');
  assert.ok(!/<a\s/i.test(enc), enc);
});

test('http(s) and mailto links are kept, with rel and title', () => {
  const html = renderMarkdown('[docs](https://example.com/a?b=1&c=2) <mailto:a@example.com>');
  assert.match(html, /<a href="https:\/\/example\.com\/a\?b=1&amp;c=2" title="https:\/\/example\.com\/a\?b=1&amp;c=2" rel="noopener noreferrer">docs<\/a>/);
  assert.match(html, /href="mailto:a@example\.com"/);
});

test('images are never loaded: shown as text', () => {
  const html = renderMarkdown('![a chart](https://tracker.example/pixel.png "t") and ![](http://x.example/y.gif)');
  assert.ok(!/<img/i.test(html), html);
  assert.match(html, /\[image: a chart\]/);
  assert.match(html, /\[image: http:\/\/x\.example\/y\.gif\]/);
});

test('attribute injection through link titles and text is escaped', () => {
  const html = renderMarkdown('[a" onmouseover="alert(1)](https://e.example/"onmouseover="x "ti\\"tle")');
  assert.ok(!/<[^>]*\sonmouseover=/i.test(html), html);
  assert.ok(html.includes('a&quot; onmouseover=&quot;alert(1)</a>'), html);
});

test('code blocks keep their text escaped', () => {
  const html = renderMarkdown('```html\n<script>x</script>\n```');
  assert.match(html, /<pre><code class="language-html">&lt;script&gt;x&lt;\/script&gt;\n<\/code><\/pre>/);
});

test('ordinary Markdown renders', () => {
  const html = renderMarkdown('# Title\n\n- **bold** and `code`\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |');
  assert.match(html, /<h1>Title<\/h1>/);
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<code>code<\/code>/);
  assert.match(html, /<table>/);
});

test('escapeHtml escapes the five characters', () => {
  assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
});

test('user messages, notices and command output are plain text, never Markdown or HTML', () => {
  const evil = '**not bold** <script>alert(1)</script> [x](https://e.example)';
  for (const item of [
    { kind: 'user' as const, id: 'u1', text: evil },
    { kind: 'notice' as const, id: 'n1', level: 'info' as const, text: evil },
    { kind: 'command' as const, id: 'c1', line: '/help', output: [evil] },
  ]) {
    const html = renderItem(item);
    assert.ok(!/<script|<strong|<a\s/i.test(html), html);
    assert.ok(html.includes('**not bold** &lt;script&gt;alert(1)&lt;/script&gt; [x](https://e.example)'), html);
  }
});
