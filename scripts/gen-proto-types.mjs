// Generates TypeScript types for the CRI v1 API from proto/ into src/generated/.
// The build runs this first, so the types can never drift from the .proto files.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'src', 'generated');
rmSync(out, { recursive: true, force: true });
const bin = join(root, 'node_modules', '.bin', 'proto-loader-gen-types');
const res = spawnSync(bin, [
  '--keepCase', '--longs=String', '--enums=Number', '--defaults', '--oneofs',
  '--grpcLib=@grpc/grpc-js', '--importFileExtension=.js',
  '-I', join(root, 'proto'), '-O', out, 'runtime/v1/api.proto',
], { stdio: 'inherit' });
process.exit(res.status ?? 1);
