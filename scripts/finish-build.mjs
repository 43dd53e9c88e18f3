// The last step of `npm run build`: the node flags (src/tuning/node-flags.ts, the one place they
// are written) go into the `#!` line of dist/src/cli.js, which replaces the plain
// `#!/usr/bin/env node` of src/cli.ts (same line count, so the source map stays right), and the
// two commands become executable.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = (path) => fileURLToPath(new URL(`../dist/src/${path}`, import.meta.url));
const { nodeFlagsShebang } = await import(new URL('../dist/src/tuning/node-flags.js', import.meta.url).href);

const cli = dist('cli.js');
const text = readFileSync(cli, 'utf8');
const newline = text.indexOf('\n');
const first = text.slice(0, newline);
if (first !== '#!/usr/bin/env node') throw new Error(`dist/src/cli.js: expected "#!/usr/bin/env node" as its first line, found ${JSON.stringify(first)}`);
writeFileSync(cli, `${nodeFlagsShebang()}${text.slice(newline)}`);
for (const file of [cli, dist('launcher.js')]) chmodSync(file, 0o755);
