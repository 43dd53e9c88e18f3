/**
 * How `cri-winsim explain` prints an identity explanation (src/kubelet/explain): a table of hops
 * per pod and container for people, the object itself for machines (`-o json`, `-o yaml`). The
 * layout is cri-winsim's own: no upstream tool explains a credential spec's path.
 */
import { stringify as toYaml } from 'yaml';
import type { Hop, IdentityExplanation } from '../kubelet/explain/identity-explanation.js';

export type ExplainOutput = 'table' | 'json' | 'yaml';

/** `-o` of explain; anything else is refused with kubectl's wording for an unknown format. */
export function parseExplainOutput(value: string | undefined): ExplainOutput {
  if (value === undefined || value === '' || value === 'wide') return 'table';
  if (value === 'json' || value === 'yaml') return value;
  throw new Error(`unable to match a printer suitable for the output format "${value}", allowed formats are: json,yaml`);
}

const HOP_WIDTH = 28;
const VERDICT_WIDTH = 12;
const pad = (s: string, n: number): string => (s.length >= n ? `${s} ` : s.padEnd(n));

function hopLines(hops: readonly Hop[], indent: string): string[] {
  const lines = [`${indent}${pad('HOP', HOP_WIDTH)}${pad('VERDICT', VERDICT_WIDTH)}WHAT`];
  const cont = `${indent}${' '.repeat(HOP_WIDTH + VERDICT_WIDTH)}`;
  for (const h of hops) {
    const what: string[] = [];
    if (h.received !== '') what.push(`received: ${h.received}`);
    if (h.changed !== '') what.push(`changed:  ${h.changed}`);
    if (h.detail !== undefined && h.detail !== '') what.push(`detail:   ${h.detail}`);
    if (h.docs !== undefined) what.push(`see:      ${h.docs}`);
    const [first = '', ...others] = what;
    lines.push(`${indent}${pad(h.hop, HOP_WIDTH)}${pad(h.verdict, VERDICT_WIDTH)}${first}`.trimEnd());
    for (const o of others) lines.push(`${cont}${o}`);
  }
  return lines;
}

export function printExplanation(explanation: IdentityExplanation, output: ExplainOutput): string {
  if (output === 'json') return `${JSON.stringify(explanation, null, 2)}\n`;
  if (output === 'yaml') return toYaml(explanation);
  const { pod, broken } = explanation;
  const lines = [`Pod: ${pod.namespace}/${pod.name}${pod.uid === '' ? '' : ` (${pod.uid})`}`];
  if (broken === undefined) {
    lines.push('Broken: none');
  } else {
    lines.push(`Broken: ${broken.hop}${broken.container === undefined ? '' : ` (container ${broken.container})`}: ${broken.detail}`);
    if (broken.docs !== undefined) lines.push(`  See ${broken.docs}`);
  }
  lines.push('', ...hopLines(explanation.hops, ''));
  for (const c of explanation.containers) {
    lines.push('', `Container ${c.name}${c.containerId === undefined ? '' : ` (${c.containerId.slice(0, 13)})`}:`, ...hopLines(c.hops, '  '));
  }
  return `${lines.join('\n')}\n`;
}
