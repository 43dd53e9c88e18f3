/**
 * /stats/summary (the Summary API from CRI stats) and /metrics, /metrics/resource (Prometheus
 * text), as server.go and pkg/kubelet/metrics/collectors serve them.
 */
import { grpcErrorString } from '../../cri-errors.js';
import { json, text } from '../http-replies.js';
import type { Route } from '../route-context.js';
import { resourceMetricsText, resourceScrapeErrorText } from '../server-metrics.js';
import { statsSummary } from '../stats-summary.js';

export const statsRoute: Route = {
  root: 'stats',
  methods: ['GET', 'POST'],
  matches: (rest) => rest.length === 1 && rest[0] === 'summary',
  async handle(ctx, { res, query }) {
    const onlyCpuAndMemory = query.getAll('only_cpu_and_memory').length === 1 && query.get('only_cpu_and_memory') === 'true';
    const node = { nodeName: ctx.nodeName, startTime: ctx.nodeStartTime, ...(ctx.memoryCapacityBytes !== undefined ? { memoryCapacityBytes: ctx.memoryCapacityBytes } : {}) };
    try {
      json(res, await statsSummary(ctx.cri, node, ctx.callTimeoutMs, onlyCpuAndMemory));
    } catch (err) {
      text(res, 500, `Internal Error: ${grpcErrorString(err)}`);
    }
  },
};

export const metricsRoute: Route = {
  root: 'metrics',
  matches: (rest) => rest.length === 0 || (rest.length === 1 && ['', 'resource', 'cadvisor', 'probes'].includes(rest[0]!)),
  async handle(ctx, { res, rest }) {
    const sub = rest[0] ?? '';
    if (sub === '') {
      res.writeHead(200, { 'Content-Type': ctx.metrics.registry.contentType });
      return void res.end(await ctx.metrics.registry.metrics());
    }
    if (sub === 'resource') {
      let body: string;
      try {
        body = resourceMetricsText(await statsSummary(ctx.cri, { nodeName: ctx.nodeName, startTime: ctx.nodeStartTime }, ctx.callTimeoutMs, true));
      } catch (err) {
        ctx.log.warn({ err }, 'resource metrics: no stats summary');
        body = resourceScrapeErrorText();
      }
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
      return void res.end(body);
    }
    // Our own text: what a simulated node does not have.
    text(res, 501, `/metrics/${sub} is not implemented by cri-winsim: a simulated node has no cAdvisor or probers; use /metrics/resource and /stats/summary\n`);
  },
};
