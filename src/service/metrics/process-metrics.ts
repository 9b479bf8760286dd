/**
 * Process and Node metrics under the names prom-client gives them, so that dashboards made for it
 * work: true values read from the process when scraped (/proc on Linux, process.memoryUsage, the
 * event loop's delay as perf_hooks samples it). Loaded only when metrics are on: the event-loop
 * monitor, and perf_hooks with it, cost nothing to a server without them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { CollectedMetric, single } from '../../lib/metrics/collected.js';
import type { Sample } from '../../lib/metrics/exposition.js';
import type { MetricsRegistry } from '../../lib/metrics/registry.js';
import { errorCode } from '../../lib/system-error.js';

type Reader = () => readonly Sample[] | Promise<readonly Sample[]>;

/** How often the event loop's delay is sampled, in milliseconds (prom-client's default too). */
const RESOLUTION_MS = 10;
// The monitor records the time between its timer's runs, the interval itself included: the delay is what is beyond it.
const late = (nanos: number): number => Math.max(0, nanos - RESOLUTION_MS * 1e6);
/** The event loop's delay figures, in the order their families are added; the first read in a scrape takes them all. */
const DELAY_FIGURES: ReadonlyArray<readonly [string, (h: IntervalHistogram) => number]> = [
  ['min', (h) => late(h.min)],
  ['max', (h) => late(h.max)],
  ['mean', (h) => late(h.mean)],
  ['stddev', (h) => h.stddev],
  ['p50', (h) => late(h.percentile(50))],
  ['p90', (h) => late(h.percentile(90))],
  ['p99', (h) => late(h.percentile(99))],
];

/** Adds a family read at each scrape. */
type Add = (type: 'counter' | 'gauge', name: string, help: string, read: Reader, labels?: readonly string[]) => void;

export class ProcessMetrics {
  readonly #delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });

  constructor(registry: MetricsRegistry) {
    const add: Add = (type, name, help, read, labels = []) => {
      registry.add(new CollectedMetric(type, name, help, labels, read));
    };
    addProcessFamilies(add);
    addNodeFamilies(add);
    this.#delay.enable();
    this.#addDelayFamilies(add);
    addVersionFamily(add);
  }

  /** Stops the event-loop monitor. */
  close(): void {
    this.#delay.disable();
  }

  /** The event loop's delay since the previous scrape, one family per figure. */
  #addDelayFamilies(add: Add): void {
    let taken: number[] = [];
    for (const [i, [figure]] of DELAY_FIGURES.entries()) {
      add(
        'gauge',
        `nodejs_eventloop_lag_${figure}_seconds`,
        `The event loop's delay beyond the monitor's ${RESOLUTION_MS} ms interval since the previous scrape, ` +
          `${figure}, in seconds`,
        () => {
          // The registry reads its families in order in one go: the first takes every figure and starts the next
          // interval.
          if (i === 0) {
            taken = this.#delay.count === 0 ? [] : DELAY_FIGURES.map(([, f]) => f(this.#delay) / 1e9);
            this.#delay.reset();
          }
          return taken.length === 0 ? [] : single(taken[i] as number);
        },
      );
    }
  }
}

/** The process's CPU time, start, memory and descriptors. */
function addProcessFamilies(add: Add): void {
  add('counter', 'process_cpu_user_seconds_total', 'User CPU time spent, in seconds', () =>
    single(process.cpuUsage().user / 1e6),
  );
  add('counter', 'process_cpu_system_seconds_total', 'System CPU time spent, in seconds', () =>
    single(process.cpuUsage().system / 1e6),
  );
  add('counter', 'process_cpu_seconds_total', 'User and system CPU time spent, in seconds', () => {
    const { user, system } = process.cpuUsage();
    return single((user + system) / 1e6);
  });
  const started = startTime() ?? Date.now() / 1000 - process.uptime();
  add('gauge', 'process_start_time_seconds', 'Start time of the process since the Unix epoch, in seconds', () =>
    single(started),
  );
  add('gauge', 'process_resident_memory_bytes', 'Resident memory size, in bytes', () =>
    single(process.memoryUsage.rss()),
  );
  add('gauge', 'process_virtual_memory_bytes', 'Virtual memory size, in bytes', () => statusField('VmSize'));
  add('gauge', 'process_heap_bytes', 'Process heap (data segment) size, in bytes', () => statusField('VmData'));
  add('gauge', 'process_open_fds', 'Open file descriptors', openFds);
  add('gauge', 'process_max_fds', 'Open file descriptors at most (the soft limit)', maxFds);
}

/** V8's heap, the memory outside it, and how late a callback runs at the scrape. */
function addNodeFamilies(add: Add): void {
  add('gauge', 'nodejs_heap_size_total_bytes', 'V8 heap size, in bytes', () => single(process.memoryUsage().heapTotal));
  add('gauge', 'nodejs_heap_size_used_bytes', 'V8 heap used, in bytes', () => single(process.memoryUsage().heapUsed));
  add(
    'gauge',
    'nodejs_external_memory_bytes',
    'Memory of C++ objects bound to JavaScript objects (Buffers among them), in bytes',
    () => single(process.memoryUsage().external),
  );
  add(
    'gauge',
    'nodejs_eventloop_lag_seconds',
    'How late a callback queued now runs, measured at the scrape, in seconds',
    eventLoopLag,
  );
}

function addVersionFamily(add: Add): void {
  const [major, minor, patch] = process.versions.node.split('.');
  add(
    'gauge',
    'nodejs_version_info',
    'The version of Node running the server',
    () => [[[process.version, major ?? '', minor ?? '', patch ?? ''], 1]],
    ['version', 'major', 'minor', 'patch'],
  );
}

function eventLoopLag(): Promise<readonly Sample[]> {
  const queued = process.hrtime.bigint();
  return new Promise((resolve) => setImmediate(() => resolve(single(Number(process.hrtime.bigint() - queued) / 1e9))));
}

/*
 * The /proc files are read synchronously, a few microseconds each: read asynchronously, a scrape
 * held its own descriptors open while the fd directory was listed and counted them (26 for 23).
 */

/** A field of /proc/self/status in bytes (it gives kB); no sample where there is no /proc. */
function statusField(name: string): readonly Sample[] {
  const status = procFile('self/status');
  const kb = status === undefined ? undefined : new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1];
  return kb === undefined ? [] : single(Number(kb) * 1024);
}

function openFds(): readonly Sample[] {
  try {
    // The listing itself holds one descriptor open while it reads.
    return single(readdirSync('/proc/self/fd').length - 1);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
}

function maxFds(): readonly Sample[] {
  const limits = procFile('self/limits');
  const soft = limits === undefined ? undefined : /^Max open files\s+(\d+|unlimited)\s/m.exec(limits)?.[1];
  return soft === undefined ? [] : single(soft === 'unlimited' ? Infinity : Number(soft));
}

// USER_HZ, the unit of /proc's clock ticks: 100 on every Linux architecture Node runs on.
const TICKS_PER_SECOND = 100;

/**
 * When the kernel started this process (its exec), from /proc/self/stat's starttime (field 22, in
 * ticks since boot) and /proc/uptime: process.uptime() counts from Node's own start-up, later by
 * the time it takes (half a second on a small board). Undefined where there is no /proc.
 */
function startTime(): number | undefined {
  const stat = procFile('self/stat');
  const uptime = procFile('uptime');
  if (stat === undefined || uptime === undefined) return undefined;
  // The command name, field 2, is in parentheses and may hold spaces: the fields are counted after its last ')'.
  const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  const sinceBoot = Number(uptime.split(' ')[0]);
  return Number.isFinite(ticks) && Number.isFinite(sinceBoot)
    ? Date.now() / 1000 - sinceBoot + ticks / TICKS_PER_SECOND
    : undefined;
}

/** /proc/<name>, or undefined on a system without /proc. */
function procFile(name: string): string | undefined {
  try {
    return readFileSync(`/proc/${name}`, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}
