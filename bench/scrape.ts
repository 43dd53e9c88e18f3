/**
 * Reads the runtime's own handler timing from its Prometheus endpoint (runtime started with
 * --metrics-addr): the time inside the handlers, without the wire and the client. Set against the
 * client-side latency it shows where a list's time goes.
 */
const DURATION = 'cri_winsim_runtime_operations_duration_seconds';

export interface HandlerTotals {
  /** Seconds spent in the handler, summed over calls. */
  sum: number;
  count: number;
}

/** Sum and count of the duration histogram for one operation_type from exposition text (zeros when absent). */
export function handlerTotals(exposition: string, operationType: string): HandlerTotals {
  const label = `{operation_type="${operationType}"}`;
  let sum = 0;
  let count = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith(`${DURATION}_sum${label} `)) sum = Number(line.slice(line.lastIndexOf(' ') + 1));
    else if (line.startsWith(`${DURATION}_count${label} `)) count = Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return { sum, count };
}

export async function scrapeHandlerTotals(url: string, operationType: string): Promise<HandlerTotals> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return handlerTotals(await res.text(), operationType);
}

/** Mean handler time in ms between two scrapes; null when no call happened in between. */
export function meanHandlerMs(before: HandlerTotals, after: HandlerTotals): number | null {
  const calls = after.count - before.count;
  return calls > 0 ? ((after.sum - before.sum) / calls) * 1000 : null;
}

/**
 * The runtime process's own figures from prom-client's default metrics (prefixed cri_winsim_):
 * CPU seconds, GC seconds by kind, event-loop lag percentiles. Evidence for where time went.
 */
export function processFigures(exposition: string): Record<string, number> {
  const wanted = [
    /^cri_winsim_process_cpu_seconds_total /,
    /^cri_winsim_nodejs_gc_duration_seconds_sum\{kind="[a-z]+"\} /,
    /^cri_winsim_nodejs_eventloop_lag_(p50|p90|p99|max)_seconds /,
    /^cri_winsim_nodejs_heap_size_used_bytes /,
    /^cri_winsim_process_resident_memory_bytes /,
  ];
  const out: Record<string, number> = {};
  for (const line of exposition.split('\n')) {
    if (!wanted.some((w) => w.test(line))) continue;
    const at = line.lastIndexOf(' ');
    out[line.slice(0, at).replace(/^cri_winsim_/, '')] = Number(line.slice(at + 1));
  }
  return out;
}

export async function scrapeProcessFigures(url: string): Promise<Record<string, number>> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return processFigures(await res.text());
}
