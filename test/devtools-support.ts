/**
 * Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: the
 * browser reads commands on fd 3 and writes answers and events on fd 4, each message ending in NUL).
 * One page, attached to; what it logged and every request it made are kept for the test to read.
 */
import type { Readable, Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import { startChromium } from './browser-support.js';
import { within } from './support.js';

/** How long the browser may take over one call or a page's load, far beyond what any takes on a busy machine. */
const ANSWER_MS = 30_000;

export interface DevtoolsPage {
  /** Runs `expression` in the page (awaiting a promise) and returns its value. */
  evaluate(expression: string): Promise<unknown>;
  /** Console errors, uncaught exceptions and error log entries (CSP refusals, failed loads), as text with their source. */
  errors: Array<{ source: string; text: string }>;
  /** The URL of every request the page made. */
  requests: string[];
}

interface Message {
  id?: number;
  method?: string;
  sessionId?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
}

/**
 * Opens `url` in headless Chromium and resolves once it has loaded; the browser is killed after `t`. With `width`,
 * the page is laid out as a phone of that many CSS pixels shows it.
 */
export async function openPage(t: TestContext, url: string, width?: number): Promise<DevtoolsPage> {
  const browser = await startChromium(t, ['--remote-debugging-pipe'], ['ignore', 'ignore', 'ignore', 'pipe', 'pipe']);
  const toBrowser = browser.stdio[3] as Writable;
  const fromBrowser = browser.stdio[4] as Readable;
  const waiting = new Map<
    number,
    { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void }
  >();
  const listeners: Array<(message: Message) => void> = [];
  let pending = '';
  fromBrowser.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let end = pending.indexOf('\0'); end !== -1; end = pending.indexOf('\0')) {
      const message = JSON.parse(pending.slice(0, end)) as Message;
      pending = pending.slice(end + 1);
      const call = message.id === undefined ? undefined : waiting.get(message.id);
      if (call !== undefined) {
        waiting.delete(message.id as number);
        if (message.error !== undefined) call.reject(new Error(message.error.message));
        else call.resolve(message.result ?? {});
      }
      for (const listener of listeners) listener(message);
    }
  });
  let nextId = 1;
  // Every answer is bounded: a browser that stops answering fails the test with the call it hung on, instead of
  // holding the test file open (its after hooks, which kill the browser, wait for the test to end).
  const send = (
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
  ): Promise<Record<string, unknown>> => {
    const id = nextId++;
    toBrowser.write(`${JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) })}\0`);
    return within(
      new Promise((resolve, reject) => waiting.set(id, { resolve, reject })),
      ANSWER_MS,
      `Chromium's answer to ${method}`,
    );
  };

  const page: DevtoolsPage = { errors: [], requests: [], evaluate: async () => undefined };
  listeners.push((message) => {
    const params = message.params ?? {};
    if (message.method === 'Network.requestWillBeSent')
      page.requests.push(String((params.request as { url: string }).url));
    if (message.method === 'Runtime.exceptionThrown')
      page.errors.push({ source: 'exception', text: JSON.stringify(params.exceptionDetails) });
    if (message.method === 'Runtime.consoleAPICalled' && params.type === 'error')
      page.errors.push({ source: 'console', text: JSON.stringify(params.args) });
    const entry = params.entry as { level: string; source: string; text: string } | undefined;
    if (message.method === 'Log.entryAdded' && entry?.level === 'error')
      page.errors.push({ source: entry.source, text: entry.text });
  });
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const session = sessionId as string;
  for (const domain of ['Runtime', 'Log', 'Network', 'Page']) await send(`${domain}.enable`, {}, session);
  if (width !== undefined) {
    const metrics = { width, height: 2 * width, deviceScaleFactor: 1, mobile: false };
    await send('Emulation.setDeviceMetricsOverride', metrics, session);
  }
  const loaded = new Promise<void>((resolve) =>
    listeners.push((message) => message.method === 'Page.loadEventFired' && resolve()),
  );
  await send('Page.navigate', { url }, session);
  await within(loaded, ANSWER_MS, `Chromium's load of ${url}`);
  page.evaluate = async (expression) => {
    const { result, exceptionDetails } = await send(
      'Runtime.evaluate',
      { expression, awaitPromise: true, returnByValue: true },
      session,
    );
    if (exceptionDetails !== undefined) throw new Error(`in the page: ${JSON.stringify(exceptionDetails)}`);
    return (result as { value?: unknown }).value;
  };
  return page;
}
