/** Small pure helpers for what the palette commands and the status bar show. */
import { MODE_HELP, MODES } from '../protocol';
import type { ContextUsage, McpServerStatus, MemoryInfo, Mode, ProjectInstructions, SessionInfo, State } from '../protocol';
import type { ConnectionStatus } from './messages';

export function shortId(id: string | null | undefined): string {
  return id ? id.slice(0, 8) : '—';
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** "2026-11-30 10:23" in the local time zone, with its UTC offset. */
export function formatLocal(d: Date): string {
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  const a = Math.abs(off);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` +
    ` (UTC${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)})`
  );
}

/** "2026-11-30 09:23:00 UTC" */
export function formatUtc(d: Date): string {
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
}

export interface SessionPickItem {
  label: string;
  description: string;
  detail: string;
  id: string;
  current: boolean;
  /** open in another window or terminal: picking it explains, and resumes nothing */
  openElsewhere: boolean;
}

/**
 * QuickPick rows for Resume Session: short ID (current marked; sessions open in another window or
 * terminal marked too), last update local and UTC.
 */
export function sessionPickItems(sessions: SessionInfo[], currentId: string | null): SessionPickItem[] {
  return sessions.map((s) => {
    const current = s.active || s.id === currentId;
    const elsewhere = !current && s.openElsewhere === true; // a version-1 server sends no such field
    const d = new Date(s.updatedAt);
    const valid = !Number.isNaN(d.getTime());
    return {
      label: `${current ? '$(check) ' : elsewhere ? '$(window) ' : ''}${shortId(s.id)}`,
      description: current ? 'current session' : elsewhere ? 'open in another window' : '',
      detail: valid ? `Last update ${formatLocal(d)} · ${formatUtc(d)}` : `Last update ${s.updatedAt}`,
      id: s.id,
      current,
      openElsewhere: elsewhere,
    };
  });
}

/** The mode picker's words: the core's own description of each mode (`/mode` lists the same). */
export const MODE_INFO: Record<Mode, { label: string; detail: string }> = Object.fromEntries(
  MODES.map((m) => [m, { label: m, detail: `${MODE_HELP[m].charAt(0).toUpperCase()}${MODE_HELP[m].slice(1)}.` }]),
) as Record<Mode, { label: string; detail: string }>;

/** `manual · 0123abcd` (or `manual · no session`): the status bar's words, also under the chat box. */
export function modeAndSession(state: State): string {
  return `${state.mode} · ${state.sessionId ? shortId(state.sessionId) : 'no session'}`;
}

export function statusText(state: State | null, status: ConnectionStatus): string {
  if (status === 'starting') return '$(loading~spin) Mino';
  if (status !== 'running' || !state) return '$(error) Mino: stopped';
  const usage = usageText(state.usage);
  return `${state.busy ? '$(loading~spin) ' : ''}Mino: ${modeAndSession(state)}${usage ? ` · ${usage}` : ''}`;
}

/** How full the context is, as a whole percentage; undefined when unknown (no usage, no window). */
export function usagePercent(u: ContextUsage | null | undefined): number | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const { inputTokens, contextWindow } = u;
  if (!Number.isFinite(inputTokens) || !Number.isFinite(contextWindow) || inputTokens < 0 || contextWindow <= 0) return undefined;
  return Math.round((100 * inputTokens) / contextWindow);
}

/** "41%" ("<1%" for a little, "" when unknown): the status bar's and the panel's figure. */
export function usageText(u: ContextUsage | null | undefined): string {
  const p = usagePercent(u);
  if (p === undefined) return '';
  return p === 0 && u!.inputTokens > 0 ? '<1%' : `${p}%`;
}

const count = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The numbers behind the figure, for tooltips; `outputTokens` is the latest answer's, when known. */
/** What the latest usage event said beyond the context figure (each only when the server reported it). */
export interface UsageDetail {
  cachedTokens?: number;
  reasoningTokens?: number;
}

export function usageTooltip(u: ContextUsage | null | undefined, outputTokens?: number, detail?: UsageDetail): string {
  const text = usageText(u);
  if (!text || !u) return 'Context: not known yet (the model has not reported a token count).';
  let line = `Context: ${text} full — ${count(u.inputTokens)} of ${count(u.contextWindow)} tokens at the latest model request`;
  const known = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  if (known(detail?.cachedTokens)) line += ` (${count(detail.cachedTokens)} from the server's prompt cache)`;
  if (known(outputTokens)) {
    line += `; its answer used ${count(outputTokens)}`;
    if (known(detail?.reasoningTokens)) line += `, ${count(detail.reasoningTokens)} of them thinking`;
  }
  return `${line}.`;
}

export function statusTooltip(state: State | null, outputTokens?: number, detail?: UsageDetail): string {
  if (!state) return 'Mino is not running. Click to resume a session.';
  const lines = [
    `Session: ${state.sessionId ?? '(none)'}`,
    usageTooltip(state.usage, outputTokens, detail),
    `Permission mode: ${state.mode}`,
    `Model: ${state.model}`,
    `Reasoning effort: ${state.reasoningEffort ?? 'model default'}`,
    `Working directory: ${state.workdir}`,
    `Sandbox: ${state.sandbox ?? 'none'}`,
    `Memories: ${state.memory?.count ?? 0}`,
  ];
  if (state.restoreProblem) lines.push(`Problem: ${state.restoreProblem}`);
  lines.push('Click to resume another session.');
  return lines.join('\n');
}

/** A memory as the index line the model sees: `- [type] name: summary (+details)`. */
export function memoryIndexLine(m: MemoryInfo): string {
  return `- [${m.type}] ${m.name}: ${m.summary}${m.details ? ' (+details)' : ''}`;
}

/**
 * Which project instructions (AGENTS.md) are in use, for the panel's status line: '' when the
 * working directory has none, "AGENTS.md" when they are sent, "AGENTS.md (not sent)" when not
 * accepted (Mino asks at the next turn). The tooltip lists each file.
 */
export function instructionsText(files: readonly ProjectInstructions[] | null | undefined): string {
  if (!files || files.length === 0) return '';
  const n = files.length > 1 ? ` ×${files.length}` : '';
  return files.every((f) => f.accepted) ? `AGENTS.md${n}` : `AGENTS.md${n} (not sent)`;
}

export function instructionsTooltip(files: readonly ProjectInstructions[] | null | undefined): string {
  if (!files || files.length === 0) return '';
  const lines = files.map((f) => `${f.accepted ? '✓ sent' : '✗ not sent'}: ${f.path}`);
  const head = files.every((f) => f.accepted)
    ? 'Project instructions sent to the model with every request:'
    : 'Project instructions not sent (not accepted; Mino asks before the next turn sends them):';
  return [head, ...lines].join('\n');
}

const MCP_MARK: Record<McpServerStatus['state'], string> = { ready: '✓', starting: '…', failed: '✗' };

/** The MCP servers on the panel's status line: each name with its state (a count past three). */
export function mcpText(servers: readonly McpServerStatus[] | null | undefined): string {
  if (!servers || servers.length === 0) return '';
  if (servers.length > 3) {
    const ready = servers.filter((s) => s.state === 'ready').length;
    return `MCP ${ready}/${servers.length} ready`;
  }
  return 'MCP ' + servers.map((s) => `${s.name} ${MCP_MARK[s.state]}`).join(' ');
}

/** One line per server: state, tools, and why it failed (the server's words, shown as text). */
export function mcpTooltip(servers: readonly McpServerStatus[] | null | undefined): string {
  if (!servers || servers.length === 0) return '';
  const lines = servers.map((s) => {
    const what = s.state === 'ready' ? `ready, ${s.tools} tool${s.tools === 1 ? '' : 's'}` : s.state;
    return `${MCP_MARK[s.state]} ${s.name}: ${what}${s.error ? ` (${s.error})` : ''}`;
  });
  return ['MCP servers (/mcp lists their tools):', ...lines].join('\n');
}
