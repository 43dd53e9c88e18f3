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
