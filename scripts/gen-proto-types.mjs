// Generates TypeScript types for the CRI v1 API from proto/ into src/generated/.
// The build runs this first, so the types can never drift from the .proto files. The output is
// made again only when its inputs changed (the .proto files, the generator's version, its
// arguments): removing and rewriting a hundred files on every build is slow, and on ext4 without
// a journal every removed file makes the machine's file creates slower for a minute or more
// (see src/runtime/recycled-files.ts), which is what `npm run bench` measures right after.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'src', 'generated');
const stampPath = join(out, '.inputs-sha256');
const args = [
  '--keepCase', '--longs=String', '--enums=Number', '--defaults', '--oneofs',
  '--grpcLib=@grpc/grpc-js', '--importFileExtension=.js',
  '-I', join(root, 'proto'), '-O', out, 'runtime/v1/api.proto',
];

function protoFiles(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? protoFiles(join(dir, e.name)) : e.name.endsWith('.proto') ? [join(dir, e.name)] : []))
    .sort();
}

const hash = createHash('sha256');
hash.update(JSON.stringify(args.map((a) => (a.startsWith(root) ? relative(root, a) : a))));
hash.update(readFileSync(join(root, 'node_modules', '@grpc', 'proto-loader', 'package.json')));
for (const file of protoFiles(join(root, 'proto'))) hash.update(relative(root, file)).update(readFileSync(file));
const stamp = hash.digest('hex');

let previous;
try {
  previous = readFileSync(stampPath, 'utf8').trim();
} catch {
  previous = undefined;
}
if (previous === stamp && existsSync(join(out, 'api.ts'))) process.exit(0);

rmSync(out, { recursive: true, force: true });
const bin = join(root, 'node_modules', '.bin', 'proto-loader-gen-types');
const res = spawnSync(bin, args, { stdio: 'inherit' });
if (res.status === 0) writeFileSync(stampPath, `${stamp}\n`);
process.exit(res.status ?? 1);
