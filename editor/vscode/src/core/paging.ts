/**
 * Earlier pages in the chat panel: when the webview asks for the page above, and where it scrolls
 * after the page went in. Pure, shared by the webview and the tests.
 */
import type { EarlierView } from './messages';

/** Within this many pixels of the top, the page above is asked for. */
export const EARLIER_MARGIN_PX = 400;

export interface ScrollBox {
  scrollTop: number;
  scrollHeight: number;
  clientHeight: number;
}

/** Ask for the page above: there is one, none is on its way, and the person is at the top (or
 *  everything shown fits without scrolling, so there is no scrolling up to wait for). */
export function shouldLoadEarlier(box: ScrollBox, earlier: EarlierView, asked: boolean): boolean {
  if (!earlier.more || earlier.loading || asked) return false;
  return box.scrollTop < EARLIER_MARGIN_PX || box.scrollHeight <= box.clientHeight;
}

/** The scrollTop that keeps what the person was reading in place after content went in above it:
 *  the distance from the bottom is what stays the same. */
export function keptScrollTop(before: ScrollBox, scrollHeightAfter: number): number {
  return Math.max(0, scrollHeightAfter - (before.scrollHeight - before.scrollTop));
}
