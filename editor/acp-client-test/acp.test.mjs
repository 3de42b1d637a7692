// The official ACP TypeScript SDK's client (@agentclientprotocol/sdk) driving a real `mino --acp`
// against the scripted model (a real HTTP server on 127.0.0.1), as an editor would.
//
// The SDK parses every session/update and session/request_permission with its generated schemas
// before a handler sees it, so a message Mino gets wrong fails here as it would in an editor.
//
// env: MINO_COMMAND  the mino executable (default <repo>/.venv/bin/mino)
//      MINO_PYTHON   the Python that runs the scripted model (default <repo>/.venv/bin/python)
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { afterEach, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import * as acp from "@agentclientprotocol/sdk";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const MINO = process.env.MINO_COMMAND || path.join(REPO, ".venv/bin/mino");
const PYTHON = process.env.MINO_PYTHON || path.join(REPO, ".venv/bin/python");
const APPROVE = { outcome: { outcome: "selected", optionId: "allow_once" } };

const cleanups = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()();
});

/** A scripted model serving `replies` (JSON is YAML) on 127.0.0.1; resolves to its base URL. */
async function scriptedModel(dir, replies) {
  const file = path.join(dir, "replies.yaml");
  writeFileSync(file, JSON.stringify(replies));
  const proc = spawn(PYTHON, ["-m", "mino_server.testing.scripted_model", "--replies", file], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  cleanups.push(async () => {
    proc.kill("SIGINT");
    await new Promise((resolve) => proc.once("exit", resolve));
    assert.equal(stderr.includes("error:"), false, `scripted model: ${stderr}`);
  });
  return await new Promise((resolve, reject) => {
    let out = "";
    proc.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(out.trim());
    });
    proc.once("exit", (code) => reject(new Error(`scripted model exited ${code}: ${stderr}`)));
  });
}

/** A fresh home and workspace, a scripted model, and a `mino --acp` on pipes. */
async function setUp(replies, args = [], config = "") {
  const dir = mkdtempSync(path.join(tmpdir(), "mino-acp-"));
  const home = path.join(dir, "home");
  const ws = path.join(dir, "ws");
  mkdirSync(home);
  mkdirSync(ws);
  writeFileSync(path.join(home, "config.yaml"), 'sandbox: "off"\n' + config);
  writeFileSync(path.join(ws, "notes.txt"), "alpha\nbeta\ngamma\n");
  const baseUrl = await scriptedModel(dir, replies);
  const env = { ...process.env, MINO_HOME: home, MINO_BASE_URL: baseUrl, MINO_API_KEY: "test" };
  delete env.MINO_MODEL;
  const agent = spawnAgent(env, ws, args);
  return { dir, home, ws, env, agent };
}

function spawnAgent(env, cwd, args = []) {
  const proc = spawn(MINO, ["--acp", ...args], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => proc.once("exit", (code) => resolve(code)));
  let stopped = null;
  // EOF on stdin is how an editor ends an agent; it must exit 0 and never print a traceback.
  const stop = () =>
    (stopped ??= (async () => {
      proc.stdin.end();
      const code = await exited;
      assert.equal(code, 0, `mino --acp exited ${code}: ${stderr}`);
      assert.equal(stderr.includes("Traceback"), false, stderr);
    })());
  cleanups.push(stop);
  const stream = acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout));
  return { proc, stream, stop, stderr: () => stderr };
}

/** A client app that records every session/update and answers permissions with `permission`. */
function clientApp(permission = () => APPROVE, buffers = null) {
  const updates = [];
  const asked = [];
  const files = []; // [method, path] of every fs/* request
  let app = acp
    .client({ name: "mino-acp-client-test" })
    .onRequest(acp.CLIENT_METHODS.session_request_permission, async ({ params }) => {
      asked.push(params);
      return await permission(params);
    })
    .onNotification(acp.CLIENT_METHODS.session_update, ({ params }) => {
      updates.push(params);
    });
  if (buffers) {
    // an editor's unsaved buffers (path → text); a path without one is read from disk
    app = app
      .onRequest(acp.CLIENT_METHODS.fs_read_text_file, async ({ params }) => {
        files.push(["read", params.path]);
        return { content: buffers.has(params.path) ? buffers.get(params.path) : readFileSync(params.path, "utf8") };
      })
      .onRequest(acp.CLIENT_METHODS.fs_write_text_file, async ({ params }) => {
        files.push(["write", params.path]);
        buffers.set(params.path, params.content);
        return {};
      });
  }
  return { app, updates, asked, files };
}

async function initialize(ctx, clientCapabilities = {}) {
  return await ctx.request(acp.AGENT_METHODS.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities,
    clientInfo: { name: "mino-acp-client-test", version: "1" },
  });
}

function updatesOf(updates, sessionId, kind) {
  return updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind).map((u) => u.update);
}

function textOf(updates, sessionId, kind = "agent_message_chunk") {
  return updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind)
    .map((u) => u.update.content.text)
    .join("");
}

test("initialize, a new session, a streamed answer", async () => {
  const { agent, ws } = await setUp([{ text: "Hello from the scripted model", require: "say hello" }]);
  const { app } = clientApp();
  await app.connectWith(agent.stream, async (ctx) => {
    const init = await initialize(ctx);
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentInfo.name, "mino");
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities, { list: {}, resume: {}, close: {} });

    const session = await ctx.buildSession(ws).start();
    assert.match(session.sessionId, /^[0-9a-f]{32}$/);
    assert.equal(session.modes.currentModeId, "manual");
    assert.deepEqual(
      session.modes.availableModes.map((m) => m.id),
      ["manual", "accept-edits", "bypass", "plan"],
    );
    const prompt = session.prompt("please say hello");
    assert.equal(await session.readText(), "Hello from the scripted model");
    assert.equal((await prompt).stopReason, "end_turn");
    session.dispose();
  });
});

test("first run without a key: an agent auth method naming the variable, and a prompt is auth_required", async () => {
  const { env, ws } = await setUp([]);
  const bare = { ...env };
  delete bare.MINO_BASE_URL;
  delete bare.MINO_API_KEY;
  delete bare.OPENAI_API_KEY;
  const agent = spawnAgent(bare, ws);
  const { app } = clientApp();
  await app.connectWith(agent.stream, async (ctx) => {
    const init = await initialize(ctx);
    assert.equal(init.authMethods.length, 1);
    const [method] = init.authMethods;
    assert.equal(method.type, undefined); // the agent kind: the schema's default
    assert.equal(method.id, "api-key");
    assert.match(method.description, /^No API key: set OPENAI_API_KEY/);
    assert.deepEqual(await initialize(ctx), init); // a second initialize: the same answer
    const session = await ctx.buildSession(ws).start();
    await assert.rejects(session.prompt("hello"), (e) => e.code === -32000 && /No API key/.test(e.message));
    session.dispose();
  });
});

test("a tool call asks through session/request_permission and runs once approved", async () => {
  const write = { name: "write_file", arguments: { path: "out.txt", content: "from mino\n", mode: "create" } };
  const { agent, ws } = await setUp([{ calls: [write] }, { text: "written" }]);
  const { app, updates, asked } = clientApp();
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.buildSession(ws).start();
    const result = await session.prompt("write the file");
    assert.equal(result.stopReason, "end_turn");
    assert.equal(readFileSync(path.join(ws, "out.txt"), "utf8"), "from mino\n");
    assert.equal(asked.length, 1);
    assert.deepEqual(
      asked[0].options.map((o) => [o.optionId, o.kind]),
      [
        ["allow_once", "allow_once"],
        ["reject_once", "reject_once"],
        // a write inside the working directory can be covered by a rule (`write GLOB`)
        ["allow_always", "allow_always"],
        ["reject_always", "reject_always"],
      ],
    );
    assert.equal(asked[0].toolCall.kind, "edit");
    assert.deepEqual(asked[0].toolCall.locations, [{ path: path.join(ws, "out.txt") }]);
    assert.match(asked[0].toolCall.content[1].content.text, /Path: "out\.txt"/);
    // the whole file before and after, for the editor's diff view, first (some show only the first)
    assert.deepEqual(asked[0].toolCall.content[0], {
      type: "diff",
      path: path.join(ws, "out.txt"),
      oldText: null,
      newText: "from mino\n",
    });
    const mine = updates.filter((u) => u.sessionId === session.sessionId).map((u) => u.update);
    const start = mine.find((u) => u.sessionUpdate === "tool_call");
    assert.equal(start.status, "pending");
    assert.deepEqual(start.rawInput, write.arguments); // the model's arguments, as it sent them
    assert.deepEqual(start.locations, [{ path: path.join(ws, "out.txt") }]);
    assert.deepEqual(
      mine.filter((u) => u.sessionUpdate === "tool_call_update").map((u) => u.status),
      ["in_progress", "completed"],
    );
    session.dispose();
  });
});

test("session/cancel during an approval: denied at once, stopReason cancelled", async () => {
  const write = { name: "write_file", arguments: { path: "never.txt", content: "x", mode: "create" } };
  const { agent, ws } = await setUp([{ calls: [write] }]);
  let askedResolve;
  const askedOnce = new Promise((resolve) => (askedResolve = resolve));
  const { app } = clientApp(() => {
    askedResolve();
    return new Promise(() => {}); // never answered: the cancel must not wait for it
  });
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.buildSession(ws).start();
    const prompt = session.prompt("write it");
    await askedOnce;
    await ctx.notify(acp.AGENT_METHODS.session_cancel, { sessionId: session.sessionId });
    assert.equal((await prompt).stopReason, "cancelled");
    assert.equal(existsSync(path.join(ws, "never.txt")), false);
    session.dispose();
  });
});

test("modes, slash commands, context from a resource_link", async () => {
  const { agent, ws } = await setUp([{ text: "seen", require: ["Context: notes.txt (lines 2-3)", "beta\ngamma"] }]);
  const { app, updates } = clientApp();
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.buildSession(ws).start();
    const sid = session.sessionId;
    await ctx.request(acp.AGENT_METHODS.session_set_mode, { sessionId: sid, modeId: "accept-edits" });
    const help = session.prompt("/help");
    assert.match(await session.readText(), /\/compact/);
    assert.equal((await help).stopReason, "end_turn");
    const link = { type: "resource_link", uri: pathToFileURL(path.join(ws, "notes.txt")).href + "#L2-3", name: "notes.txt" };
    const turn = session.prompt([{ type: "text", text: "what is in these lines?" }, link]);
    assert.equal(await session.readText(), "seen");
    assert.equal((await turn).stopReason, "end_turn");
    const kinds = updates.filter((u) => u.sessionId === sid).map((u) => u.update.sessionUpdate);
    assert.ok(kinds.includes("available_commands_update"));
    assert.ok(kinds.includes("current_mode_update"));
    session.dispose();
  });
});

test("session/list and session/load replay an earlier session in a new process", async () => {
  const { agent, ws, env } = await setUp([{ text: "answer one" }, { text: "answer two", require: "question one" }]);
  let sid;
  const first = clientApp();
  await first.app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.buildSession(ws).start();
    sid = session.sessionId;
    assert.equal((await session.prompt("question one")).stopReason, "end_turn");
    session.dispose();
  });
  await agent.stop(); // the editor closed: its session is no longer open anywhere
  const second = clientApp();
  const again = spawnAgent(env, ws);
  await second.app.connectWith(again.stream, async (ctx) => {
    await initialize(ctx);
    const listed = await ctx.request(acp.AGENT_METHODS.session_list, { cwd: ws });
    assert.deepEqual(
      listed.sessions.map((s) => [s.sessionId, s.cwd, s.title]),
      [[sid, ws, "question one"]],
    );
    const loaded = await ctx.request(acp.AGENT_METHODS.session_load, { sessionId: sid, cwd: ws, mcpServers: [] });
    assert.equal(loaded.modes.currentModeId, "manual");
    // the replay came before the answer
    assert.equal(textOf(second.updates, sid, "user_message_chunk"), "question one");
    assert.equal(textOf(second.updates, sid), "answer one");
    const result = await ctx.request(acp.AGENT_METHODS.session_prompt, {
      sessionId: sid,
      prompt: [{ type: "text", text: "question two" }],
    });
    assert.equal(result.stopReason, "end_turn");
    assert.equal(textOf(second.updates, sid), "answer oneanswer two");
    await assert.rejects(
      ctx.request(acp.AGENT_METHODS.session_load, { sessionId: "0".repeat(32), cwd: ws, mcpServers: [] }),
      (err) => err.code === -32002,
    );
  });
});

test("the old approve option ID is a denial", async () => {
  const write = { name: "write_file", arguments: { path: "no.txt", content: "x", mode: "create" } };
  const { agent, ws } = await setUp([{ calls: [write] }, { text: "denied", require: "denied" }]);
  const { app } = clientApp(() => ({ outcome: { outcome: "selected", optionId: "approve" } }));
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.buildSession(ws).start();
    assert.equal((await session.prompt("write it")).stopReason, "end_turn");
    assert.equal(existsSync(path.join(ws, "no.txt")), false);
    session.dispose();
  });
});

test("config options pick the model and the mode; usage and the title come as updates", async () => {
  const { agent, ws } = await setUp(
    [{ text: "one", usage: { input_tokens: 900 } }],
    [],
    "model: small-model\nmodels: [large-model]\n",
  );
  const { app, updates } = clientApp();
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const created = await ctx.request(acp.AGENT_METHODS.session_new, { cwd: ws, mcpServers: [] });
    const sid = created.sessionId;
    assert.deepEqual(
      created.configOptions.map((o) => [o.id, o.category, o.currentValue, o.options.map((c) => c.value)]),
      [
        ["mode", "mode", "manual", ["manual", "accept-edits", "bypass", "plan"]],
        ["model", "model", "small-model", ["small-model", "large-model"]],
        ["thought_level", "thought_level", "default", ["default", "minimal", "low", "medium", "high"]],
      ],
    );
    const set = (configId, value) =>
      ctx.request(acp.AGENT_METHODS.session_set_config_option, { sessionId: sid, configId, value });
    assert.deepEqual((await set("model", "large-model")).configOptions.map((o) => o.currentValue), ["manual", "large-model", "default"]);
    assert.deepEqual((await set("mode", "accept-edits")).configOptions.map((o) => o.currentValue), ["accept-edits", "large-model", "default"]);
    await assert.rejects(set("model", "unknown-model"), (e) => e.code === -32602);
    const result = await ctx.request(acp.AGENT_METHODS.session_prompt, {
      sessionId: sid,
      prompt: [{ type: "text", text: "Title line\nmore" }],
    });
    assert.equal(result.stopReason, "end_turn");
    assert.deepEqual(updatesOf(updates, sid, "current_mode_update").map((u) => u.currentModeId), ["accept-edits"]);
    assert.deepEqual(updatesOf(updates, sid, "usage_update").map((u) => [u.used, u.size]), [[900, 128000]]);
    assert.deepEqual(updatesOf(updates, sid, "session_info_update").map((u) => u.title), ["Title line"]);
    const listed = await ctx.request(acp.AGENT_METHODS.session_list, {});
    assert.equal(listed.sessions.find((s) => s.sessionId === sid).title, "Title line");
  });
});

test("a client with fs: the model reads the unsaved buffer, and the edit is written through the client", async () => {
  const edit = { name: "edit_file", arguments: { path: "notes.txt", old_text: "unsaved", new_text: "edited" } };
  const { agent, ws } = await setUp([
    { calls: [{ name: "read_file", arguments: { path: "notes.txt" } }] },
    { calls: [edit], require: "unsaved buffer" },
    { text: "done" },
  ]);
  const notes = path.join(ws, "notes.txt");
  const buffers = new Map([[notes, "unsaved buffer\n"]]);
  const { app, asked, files } = clientApp(() => APPROVE, buffers);
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx, { fs: { readTextFile: true, writeTextFile: true } });
    const session = await ctx.buildSession(ws).start();
    assert.equal((await session.prompt("edit my notes")).stopReason, "end_turn");
    assert.equal(asked[0].toolCall.content[0].oldText, "unsaved buffer\n");
    assert.equal(buffers.get(notes), "edited buffer\n");
    assert.equal(readFileSync(notes, "utf8"), "alpha\nbeta\ngamma\n"); // the disk was not written
    assert.deepEqual(files.filter(([m]) => m === "write"), [["write", notes]]);
    assert.ok(files.filter(([m]) => m === "read").length >= 3);
    session.dispose();
  });
});

test("session/close frees the session for a second process at once; session/resume opens it without a replay", async () => {
  const write = { name: "write_file", arguments: { path: "never.txt", content: "x", mode: "create" } };
  const { agent, ws, env } = await setUp([{ calls: [write] }, { text: "resumed", require: "write it" }]);
  let askedResolve;
  const askedOnce = new Promise((resolve) => (askedResolve = resolve));
  const first = clientApp(() => {
    askedResolve();
    return new Promise(() => {});
  });
  let sid;
  const second = clientApp();
  await first.app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.buildSession(ws).start();
    sid = session.sessionId;
    const prompt = session.prompt("write it");
    await askedOnce;
    assert.deepEqual(await ctx.request(acp.AGENT_METHODS.session_close, { sessionId: sid }), {});
    assert.equal((await prompt).stopReason, "cancelled");
    // Mino answers -32002 for a session it does not have open; the SDK reads that as "closed"
    assert.deepEqual(await ctx.request(acp.AGENT_METHODS.session_close, { sessionId: sid }), {});
    await assert.rejects(
      ctx.request(acp.AGENT_METHODS.session_prompt, { sessionId: sid, prompt: [{ type: "text", text: "x" }] }),
      (e) => e.code === -32002,
    );
    // the first process still runs; a second one opens the session at once
    const again = spawnAgent(env, ws);
    await second.app.connectWith(again.stream, async (ctx2) => {
      await initialize(ctx2);
      const resumed = await ctx2.request(acp.AGENT_METHODS.session_resume, { sessionId: sid, cwd: ws });
      assert.equal(resumed.modes.currentModeId, "manual");
      assert.equal(textOf(second.updates, sid, "user_message_chunk"), ""); // no replay
      const result = await ctx2.request(acp.AGENT_METHODS.session_prompt, {
        sessionId: sid,
        prompt: [{ type: "text", text: "go on" }],
      });
      assert.equal(result.stopReason, "end_turn");
      assert.equal(textOf(second.updates, sid), "resumed");
    });
    session.dispose();
  });
});

// A 2×1 PNG (a real one: IHDR with its CRC, one IDAT, IEND).
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAD0lEQVR4nGPg5uHl4xcAAAERAFIruQFvAAAAAElFTkSuQmCC";

test("an image block reaches the model, and a session/load in a new process sends the same image", async () => {
  const url = `data:image/png;base64,${PNG}`;
  const { agent, ws, env } = await setUp([
    { text: "a tiny picture", require: [url, "what is this?"] },
    { text: "still the same picture", require: [url, "and now?"] },
  ]);
  let sid;
  const first = clientApp();
  await first.app.connectWith(agent.stream, async (ctx) => {
    const init = await initialize(ctx);
    assert.equal(init.agentCapabilities.promptCapabilities.image, true);
    const session = await ctx.buildSession(ws).start();
    sid = session.sessionId;
    const image = { type: "image", mimeType: "image/png", data: PNG, uri: "file:///tmp/shot.png" };
    const turn = session.prompt([{ type: "text", text: "what is this?" }, image]);
    assert.equal(await session.readText(), "a tiny picture");
    assert.equal((await turn).stopReason, "end_turn");
    // a PNG header on garbage is refused, naming the block
    await assert.rejects(
      ctx.request(acp.AGENT_METHODS.session_prompt, {
        sessionId: sid,
        prompt: [{ type: "text", text: "x" }, { type: "image", mimeType: "image/png", data: "iVBORw0KGgpnYXJiYWdlIGdhcmJhZ2U=" }],
      }),
      (err) => err.code === -32602 && /prompt\[1\]: .*header is damaged/.test(err.message),
    );
    session.dispose();
  });
  await agent.stop();
  const second = clientApp();
  const again = spawnAgent(env, ws);
  await second.app.connectWith(again.stream, async (ctx) => {
    await initialize(ctx);
    await ctx.request(acp.AGENT_METHODS.session_load, { sessionId: sid, cwd: ws, mcpServers: [] });
    assert.match(textOf(second.updates, sid, "user_message_chunk"), /what is this\?\n\[image: shot\.png, PNG 2×1, 72 bytes\]/);
    const result = await ctx.request(acp.AGENT_METHODS.session_prompt, {
      sessionId: sid,
      prompt: [{ type: "text", text: "and now?" }],
    });
    assert.equal(result.stopReason, "end_turn");
  });
});

test("cancel, then prompt: the partial answer is kept and the next prompt stands alone", async () => {
  const partial = "I am being very slow about this";
  const { agent, ws } = await setUp([
    { text: partial, hold: true },
    {
      text: "hello",
      // each its own message: the interrupted prompt, the partial answer with the line telling the
      // model it was interrupted, and the new prompt alone
      require: [
        '"content": "Please be SLOW."',
        `"content": "${partial}\\n\\n[The person interrupted this turn here. Do not carry it on unless they ask you to.]"`,
        '"content": "Please SAY hello after the cancel."',
      ],
    },
  ]);
  const { app, updates } = clientApp();
  await app.connectWith(agent.stream, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.buildSession(ws).start();
    const sid = session.sessionId;
    const first = ctx.request(acp.AGENT_METHODS.session_prompt, {
      sessionId: sid,
      prompt: [{ type: "text", text: "Please be SLOW." }],
    });
    while (!textOf(updates, sid).includes("slow about this")) await new Promise((r) => setTimeout(r, 20));
    await ctx.notify(acp.AGENT_METHODS.session_cancel, { sessionId: sid });
    assert.equal((await first).stopReason, "cancelled");
    const second = await ctx.request(acp.AGENT_METHODS.session_prompt, {
      sessionId: sid,
      prompt: [{ type: "text", text: "Please SAY hello after the cancel." }],
    });
    assert.equal(second.stopReason, "end_turn");
    assert.equal(textOf(updates, sid), partial + "hello");
    session.dispose();
  });
});
