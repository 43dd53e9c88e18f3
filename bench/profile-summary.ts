/**
 * Top self-time functions of a V8 CPU profile (`node --cpu-prof`, which `npm run bench -- --cpu-prof`
 * passes to the runtime), with their share of sampled time and the files they live in:
 *
 *   node dist/bench/profile-summary.js bench/results/profiles/CPU.….cpuprofile [--top 25]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface HotSpot {
  /** `name (file:line)`; `(program)`, `(garbage collector)` and `(idle)` as V8 names them. */
  frame: string;
  selfMs: number;
  /** Share of all non-idle sampled time. */
  selfPercent: number;
}

function frameName(f: CallFrame): string {
  const name = f.functionName || '(anonymous)';
  if (!f.url) return name;
  const file = f.url.replace(/^file:\/\//, '').replace(/^.*?\/(dist|node_modules)\//, '$1/');
  return `${name} (${file}:${f.lineNumber + 1})`;
}

/** Self time per function, largest first; idle time is left out of the total. */
export function hotSpots(profile: CpuProfile, top: number): HotSpot[] {
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) byId.set(n.id, n);
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    if (node === undefined) continue;
    const delta = profile.timeDeltas[i] ?? 0;
    const name = frameName(node.callFrame);
    if (name === '(idle)') continue;
    totalUs += delta;
    selfUs.set(name, (selfUs.get(name) ?? 0) + delta);
  }
  return [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([frame, us]) => ({ frame, selfMs: Math.round(us / 10) / 100, selfPercent: totalUs > 0 ? Math.round((us / totalUs) * 1000) / 10 : 0 }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({ options: { top: { type: 'string', default: '25' } }, allowPositionals: true });
  if (positionals.length !== 1) {
    process.stderr.write('usage: profile-summary.js FILE.cpuprofile [--top N]\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(positionals[0], 'utf8')) as CpuProfile;
  for (const h of hotSpots(profile, Number(values.top))) {
    process.stdout.write(`${h.selfPercent.toFixed(1).padStart(5)}%  ${h.selfMs.toFixed(0).padStart(7)} ms  ${h.frame}\n`);
  }
}
