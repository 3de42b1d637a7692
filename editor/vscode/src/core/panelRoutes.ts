/**
 * The chat panel's messages, routed by feature: each feature module (the chat's turns, approvals,
 * editor context, rewind, the palette, …) says which webview messages it answers with a
 * `PanelRoutes` table, and `PanelRouter` hands each validated message to its one owner. A message
 * type no feature answers, or that two answer, is a mistake: the compiler names it when the
 * features are listed (`PanelRouter.of`), and the router refuses it at start as well.
 *
 * Adding a panel message: its shape in `WebviewToHost` and its check in `parseWebviewMessage`
 * (core/messages.ts), its name in `WEBVIEW_MESSAGE_TYPES`, and one entry in the `panelRoutes()` of
 * the feature that answers it. Nothing else changes.
 */
import { WEBVIEW_MESSAGE_TYPES, type WebviewToHost } from './messages';

export type PanelMessageType = WebviewToHost['type'];
export type PanelMessage<K extends PanelMessageType> = Extract<WebviewToHost, { type: K }>;
export type PanelHandler<K extends PanelMessageType> = (m: PanelMessage<K>) => void | Promise<void>;

/** The messages one feature answers, each with its handler. */
export type PanelRoutes = { [K in PanelMessageType]?: PanelHandler<K> };

/** The message types some feature of `F` answers. */
type Answered<F> = { [N in keyof F]: keyof F[N] }[keyof F];
/** `F` unless a message type is answered by none of its features: then a type naming those. */
type EveryMessageAnswered<F> = [Exclude<PanelMessageType, Answered<F>>] extends [never]
  ? F
  : { unanswered: Exclude<PanelMessageType, Answered<F>> };

type AnyHandler = (m: WebviewToHost) => void | Promise<void>;

export class PanelRouter {
  private readonly owners = new Map<PanelMessageType, { feature: string; handler: AnyHandler }>();

  /**
   * The router of these features (feature name → its routes). Each feature's routes should be
   * written `{ … } satisfies PanelRoutes`, so the compiler sees which messages it answers and
   * reports one that none does.
   */
  static of<F extends Record<string, PanelRoutes>>(features: F & EveryMessageAnswered<F>): PanelRouter {
    return new PanelRouter(features);
  }

  /** Throws naming the message type when two features answer it, or none does. */
  constructor(features: Record<string, PanelRoutes>) {
    for (const [feature, routes] of Object.entries(features)) {
      for (const [type, handler] of Object.entries(routes) as [PanelMessageType, AnyHandler | undefined][]) {
        if (!handler) continue;
        const other = this.owners.get(type);
        if (other) throw new Error(`panel message "${type}" is answered by both ${other.feature} and ${feature}`);
        this.owners.set(type, { feature, handler });
      }
    }
    const missing = WEBVIEW_MESSAGE_TYPES.filter((t) => !this.owners.has(t));
    if (missing.length) throw new Error(`no feature answers the panel message(s) ${missing.join(', ')}`);
  }

  /** The feature that answers this message type. */
  owner(type: PanelMessageType): string | undefined {
    return this.owners.get(type)?.feature;
  }

  /** Hands a validated message to the feature that answers it. */
  async dispatch(m: WebviewToHost): Promise<void> {
    await this.owners.get(m.type)?.handler(m);
  }
}
