/**
 * `cri-winsim ad get|apply`: the simulated Active Directory of a running runtime, read and changed
 * over its CRI socket (the ActiveDirectory service, proto/criwinsim/ad/v1). The documents are the
 * node file's `domains:` shape (schemas/active-directory.schema.json); the runtime validates them,
 * so a bad file is refused with its name and field and the domain stays as it was.
 */
import { Command, Option } from 'commander';
import * as grpc from '@grpc/grpc-js';
import { stringify as yamlStringify } from 'yaml';
import type { ActiveDirectoryClient } from '../cri/ad-proto.js';
import { unixSocketPath } from '../cri/endpoint.js';
import { parseUserYaml, readUserFile } from '../runtime/validation/user-file.js';
import { integerFlag, positiveDurationFlag, runtimeCallFailedText, unreachableRuntimeText, UsageError } from './cli-errors.js';
import { durationMs } from './go-duration.js';
import { withExamples } from './help-examples.js';
import { DEFAULT_ENDPOINT } from './runtime-defaults.js';

interface ConnectionFlags {
  runtimeEndpoint: string;
  timeout: string;
}

type Method = 'Get' | 'Apply' | 'StartScenario';

/** One unary call of the ActiveDirectory service, with the flags' deadline; errors in a user's words. */
async function call<T>(flags: ConnectionFlags, method: Method, request: object): Promise<T> {
  const timeoutNs = positiveDurationFlag('--timeout', flags.timeout);
  // Loaded on demand: other commands do not parse the service's proto.
  const { createActiveDirectoryClient } = await import('../cri/ad-proto.js');
  let client: ActiveDirectoryClient;
  try {
    client = createActiveDirectoryClient(flags.runtimeEndpoint);
  } catch (err) {
    throw new UsageError(`--runtime-endpoint: ${(err as Error).message}`);
  }
  try {
    return await new Promise<T>((resolve, reject) => {
      const fn = client[method] as unknown as (r: object, m: grpc.Metadata, o: grpc.CallOptions, cb: grpc.requestCallback<T>) => void;
      fn.call(client, request, new grpc.Metadata(), { deadline: Date.now() + durationMs(timeoutNs) }, (err, response) => (err ? reject(err) : resolve(response as T)));
    });
  } catch (err) {
    const grpcErr = err as Partial<grpc.ServiceError>;
    // The document's own errors read as the runtime wrote them: `ad.yaml: domains[0].sid: …`.
    if (grpcErr.code === grpc.status.INVALID_ARGUMENT || grpcErr.code === grpc.status.ABORTED) throw new Error(grpcErr.details ?? String(err), { cause: err });
    if (grpcErr.code === grpc.status.UNAVAILABLE || grpcErr.code === grpc.status.DEADLINE_EXCEEDED) {
      const socketPath = unixSocketPath(flags.runtimeEndpoint);
      throw new Error(unreachableRuntimeText(err, { endpoint: flags.runtimeEndpoint, socketPath, timeoutNs, endpointFlag: '--runtime-endpoint' }), { cause: err });
    }
    throw new Error(runtimeCallFailedText(err, flags.runtimeEndpoint) ?? String(err), { cause: err });
  } finally {
    client.close();
  }
}

interface DomainStateMessage {
  generation: string;
  document_json: string;
  source: string;
  applied_at: string;
  scenario: string;
}

function addConnectionFlags(command: Command): Command {
  return command
    // crictl's flag and environment variable (CONTAINER_RUNTIME_ENDPOINT).
    .option('--runtime-endpoint <endpoint>', 'the runtime\'s CRI socket (unix:///path; default $CONTAINER_RUNTIME_ENDPOINT, else the runtime\'s default)', process.env.CONTAINER_RUNTIME_ENDPOINT || DEFAULT_ENDPOINT)
    .option('--timeout <duration>', 'how long to wait for the runtime (Go duration)', '10s');
}

async function adGet(flags: ConnectionFlags & { output: 'yaml' | 'json' }): Promise<void> {
  const { state } = await call<{ state: DomainStateMessage }>(flags, 'Get', {});
  const document = JSON.parse(state.document_json) as object;
  process.stdout.write(flags.output === 'json' ? `${JSON.stringify(document, null, 2)}\n` : yamlStringify(document));
}

async function adApply(flags: ConnectionFlags & { filename?: string; scenario?: string; seed?: string }): Promise<void> {
  if ((flags.filename === undefined) === (flags.scenario === undefined)) throw new UsageError('give either -f FILE (a domain document) or --scenario FILE');
  if (flags.filename !== undefined) {
    if (flags.seed !== undefined) throw new UsageError('--seed goes with --scenario');
    const source = flags.filename;
    const document = parseUserYaml(await readUserFile(source, 'Active Directory document'), source);
    const { state } = await call<{ state: DomainStateMessage }>(flags, 'Apply', { document_json: JSON.stringify(document ?? null), source });
    // Our own text (kubectl prints `<kind>/<name> configured`).
    process.stdout.write(`active directory configured: generation ${state.generation} (${state.source})\n`);
    return;
  }
  const source = flags.scenario!;
  const seed = flags.seed === undefined ? 0 : integerFlag('--seed', flags.seed, { min: 0, max: 4294967295 });
  const scenario = parseUserYaml(await readUserFile(source, 'Active Directory scenario'), source);
  const { plan } = await call<{ plan: string[] }>(flags, 'StartScenario', { scenario_json: JSON.stringify(scenario ?? null), source, seed });
  process.stdout.write(`active directory scenario started: ${source} (seed ${seed})\n${plan.map((p) => `  ${p}\n`).join('')}`);
}

export function adCommand(): Command {
  const ad = new Command('ad').description('Read and change the simulated Active Directory of a running runtime (over its CRI socket)');
  const get = addConnectionFlags(
    new Command('get')
      .description('Print the domain as it is now: its generation, where it came from, the domains (the node file\'s domains: shape)')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml')),
  ).action((flags: ConnectionFlags & { output: 'yaml' | 'json' }) => adGet(flags));
  const apply = addConnectionFlags(
    new Command('apply')
      .description('Make a document the domain\'s state (all of it, or nothing when it is invalid), or start a scenario of timed changes')
      .option('-f, --filename <file>', 'the desired domains (YAML or JSON, the node file\'s domains: shape)')
      .option('--scenario <file>', 'a scenario: timed changes of the domain (docs/active-directory.md)')
      .option('--seed <n>', 'seed of the scenario\'s jitter: the same seed, the same timings'),
  ).action((flags: ConnectionFlags & { filename?: string; scenario?: string; seed?: string }) => adApply(flags));
  ad.addCommand(withExamples(get, [['The domain of the runtime on /tmp/cri.sock, as YAML to edit and apply', 'cri-winsim ad get --runtime-endpoint unix:///tmp/cri.sock > ad.yaml']]));
  ad.addCommand(
    withExamples(apply, [
      ['Take the domain controller down (reachable: false in ad.yaml)', 'cri-winsim ad apply -f ad.yaml --runtime-endpoint unix:///tmp/cri.sock'],
      ['The domain controller goes away for a minute, 30 s from now, the same way on every run', 'cri-winsim ad apply --scenario examples/ad/dc-outage.yaml --seed 7 --runtime-endpoint unix:///tmp/cri.sock'],
    ]),
  );
  return withExamples(ad, [
    ['Print the domain of the runtime that CONTAINER_RUNTIME_ENDPOINT names', 'cri-winsim ad get'],
    ['Apply a changed copy of it', 'cri-winsim ad apply -f ad.yaml'],
  ]);
}
