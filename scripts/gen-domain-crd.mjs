// Writes examples/cluster-mode/domain-crd.yaml, the CustomResourceDefinition of SimulatedDomain,
// from schemas/active-directory.schema.json (src/kubelet/node/domain-resource.ts does the
// translation). Run after `npm run build` whenever the schema changes; test/node/domain-resource
// fails until the file is made again.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { simulatedDomainCrd } = await import(join(root, 'dist', 'src', 'kubelet', 'node', 'domain-resource.js'));
const header = [
  '# The SimulatedDomain resource: the simulated Active Directory shared by every cri-winsim node of',
  '# the cluster (docs/node-mode.md, "The domain as a cluster resource"). Generated from',
  '# schemas/active-directory.schema.json by scripts/gen-domain-crd.mjs: do not edit by hand.',
  '',
].join('\n');
writeFileSync(join(root, 'examples', 'cluster-mode', 'domain-crd.yaml'), header + stringify(simulatedDomainCrd(), { lineWidth: 0 }));
