/**
 * The expected-outcome manifest of a runnable example (`expect.yaml`): which node and cluster
 * the example runs on, which pod files the fake kubelet runs (as which requesting user), and what
 * must come out — per pod and container the kubelet's outcome, a message fragment, the effective
 * user and gMSA the runtime reports, and identity commands to run inside. `cri-winsim demo` and
 * the examples test read the same file, so the documentation of an example cannot drift from
 * what it does.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { MAX_YAML_NESTING, yamlNestingDepth } from '../yaml-nesting.js';
import { defaultGmsaDesign, gmsaDesigns, type GmsaDesign } from '../apiserver/admission.js';
import { AD_MODE_CHOICES, DEFAULT_AD_MODE } from '../runtime/windows/ad-mode.js';
import { DEFAULT_RUNTIME_FLAVOR, RUNTIME_FLAVORS, type RuntimeFlavorName } from '../runtime/flavors/flavor.js';

/** An `--ad-mode` value (ad-mode.ts): windows-server, gmsa-kep, or a deprecated alias. */
export type AdMode = string;

/** An identity command to run in a started container, and what it must print. */
export interface ExecExpectation {
  /** argv, e.g. `[cmd, /c, nltest /parentdomain]`. */
  readonly command: readonly string[];
  /** Default 0. */
  readonly exitCode: number;
  /** Fragment the output (stdout, then stderr) must contain. */
  readonly output?: string;
}

export interface OutcomeExpectation {
  /** The pod's name; for a file refused before decoding gave a name, the file's base name. */
  readonly pod: string;
  /** Absent: the pod as a whole (refused at admission, bad manifest, no sandbox). */
  readonly container?: string;
  /**
   * `Running` for a started container; otherwise the kubelet's waiting reason
   * (`RunContainerError`, `CreateContainerError`, …), or the admission refusal's HTTP reason
   * (`Forbidden`, `NotFound`, `Invalid`, …) for a pod that never reached the node.
   */
  readonly outcome: string;
  /** Fragment of the kubelet's message (or the admission refusal). */
  readonly message?: string;
  /** Fragment the container's log must contain (what its own command printed). */
  readonly log?: string;
  /** The effective run-as user in the runtime's OCI spec (`process.user.username`). */
  readonly user?: string;
  /** `NETBIOS\Account` of the credential spec in the runtime's OCI spec, or `none`. */
  readonly gmsa?: string;
  readonly exec: readonly ExecExpectation[];
}

/** One `kubelet run`: pod files and the user who submits them. */
export interface ExampleRun {
  /** Absolute paths of the pod files. */
  readonly pods: readonly string[];
  /** Requesting user (`--as`); absent: kubectl's admin (system:masters). */
  readonly as?: string;
  readonly groups: readonly string[];
  /** The cluster's GMSA design for this run (`--gmsa-design`); `webhook`, the shipped one, when not given. */
  readonly gmsaDesign: GmsaDesign;
  readonly expect: readonly OutcomeExpectation[];
}

export interface ExampleManifest {
  /** The expect.yaml file itself (absolute). */
  readonly file: string;
  /** The example's directory (absolute). */
  readonly directory: string;
  readonly title: string;
  /** Absolute path of the node file; absent: the embedded WINNODE1. */
  readonly node?: string;
  readonly adMode: AdMode;
  /** The runtime the example's node reproduces (`--runtime-flavor`); dockershim-kep when not given. */
  readonly runtimeFlavor: RuntimeFlavorName;
  /** Absolute path of the cluster directory. */
  readonly cluster: string;
  readonly runs: readonly ExampleRun[];
}

const execSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['command'],
  properties: {
    command: { type: 'array', minItems: 1, maxItems: 32, items: { type: 'string', minLength: 1 } },
    exitCode: { type: 'integer', minimum: 0, maximum: 255 },
    output: { type: 'string', minLength: 1 },
  },
} as const;

const expectationSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['pod', 'outcome'],
  properties: {
    pod: { type: 'string', minLength: 1 },
    container: { type: 'string', minLength: 1 },
    outcome: { type: 'string', pattern: '^[A-Za-z:0-9/]+$' },
    message: { type: 'string', minLength: 1 },
    log: { type: 'string', minLength: 1 },
    user: { type: 'string', minLength: 1 },
    gmsa: { type: 'string', minLength: 1 },
    exec: { type: 'array', maxItems: 16, items: execSchema },
  },
} as const;

const manifestSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['title', 'cluster', 'runs'],
  properties: {
    title: { type: 'string', minLength: 1 },
    node: { type: 'string', minLength: 1 },
    adMode: { enum: [...AD_MODE_CHOICES] },
    runtimeFlavor: { enum: [...RUNTIME_FLAVORS] },
    cluster: { type: 'string', minLength: 1 },
    runs: {
      type: 'array',
      minItems: 1,
      maxItems: 16,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['pods', 'expect'],
        properties: {
          pods: { type: 'array', minItems: 1, maxItems: 32, items: { type: 'string', minLength: 1 } },
          as: { type: 'string', minLength: 1 },
          groups: { type: 'array', maxItems: 16, items: { type: 'string', minLength: 1 } },
          gmsaDesign: { enum: [...gmsaDesigns] },
          expect: { type: 'array', minItems: 1, maxItems: 64, items: expectationSchema },
        },
      },
    },
  },
} as const;

const validateManifest = new Ajv({ allErrors: false, strict: true }).compile(manifestSchema);

function describeSchemaError(e: ErrorObject): string {
  const where = e.instancePath === '' ? '' : e.instancePath.slice(1).replace(/\/(\d+)/g, '[$1]').replace(/\//g, '.');
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    return `${where === '' ? '' : `${where}.`}${extra}: unknown field`;
  }
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    return `${where === '' ? '' : `${where}.`}${missing}: is required`;
  }
  return `${where === '' ? '(document)' : where}: ${e.message ?? 'is invalid'}`;
}

/** A manifest that cannot be used, naming the file and the field. */
export class ExampleManifestError extends Error {
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`${file}: ${detail}`);
    this.name = 'ExampleManifestError';
  }
}

async function mustExist(file: string, field: string, path: string, kind: 'file' | 'directory'): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) throw new ExampleManifestError(file, `${field}: ${path} does not exist`);
  if (kind === 'directory' ? !info.isDirectory() : !info.isFile()) throw new ExampleManifestError(file, `${field}: ${path} is not a ${kind}`);
}

interface RawManifest {
  title: string;
  node?: string;
  adMode?: AdMode;
  runtimeFlavor?: RuntimeFlavorName;
  cluster: string;
  runs: Array<{
    pods: string[];
    as?: string;
    groups?: string[];
    gmsaDesign?: GmsaDesign;
    expect: Array<Omit<OutcomeExpectation, 'exec'> & { exec?: Array<{ command: string[]; exitCode?: number; output?: string }> }>;
  }>;
}

/** Parses and checks an expect.yaml text; paths are resolved against the file's directory. */
export async function parseExampleManifest(file: string, text: string): Promise<ExampleManifest> {
  let data: unknown;
  if (yamlNestingDepth(text) > MAX_YAML_NESTING) throw new ExampleManifestError(file, `not valid YAML: nested more than ${MAX_YAML_NESTING} levels deep`);
  try {
    data = parseYaml(text);
  } catch (err) {
    throw new ExampleManifestError(file, `not valid YAML: ${(err as Error).message}`);
  }
  if (!validateManifest(data)) throw new ExampleManifestError(file, describeSchemaError(validateManifest.errors![0]!));
  const raw = data as unknown as RawManifest;
  const directory = dirname(file);
  const node = raw.node === undefined ? undefined : resolve(directory, raw.node);
  if (node !== undefined) await mustExist(file, 'node', node, 'file');
  const cluster = resolve(directory, raw.cluster);
  await mustExist(file, 'cluster', cluster, 'directory');
  const runs: ExampleRun[] = [];
  for (const [i, run] of raw.runs.entries()) {
    const pods = run.pods.map((p) => resolve(directory, p));
    for (const [j, pod] of pods.entries()) await mustExist(file, `runs[${i}].pods[${j}]`, pod, 'file');
    const seen = new Set<string>();
    for (const [j, e] of run.expect.entries()) {
      const key = `${e.pod}/${e.container ?? ''}`;
      if (seen.has(key)) throw new ExampleManifestError(file, `runs[${i}].expect[${j}]: pod ${e.pod}${e.container === undefined ? '' : ` container ${e.container}`} is expected twice`);
      seen.add(key);
      if (e.exec !== undefined && e.exec.length > 0 && e.outcome !== 'Running') {
        throw new ExampleManifestError(file, `runs[${i}].expect[${j}].exec: commands can only run in a Running container, not ${e.outcome}`);
      }
      if (e.log !== undefined && e.container === undefined) {
        throw new ExampleManifestError(file, `runs[${i}].expect[${j}].log: only a container has a log; name the container`);
      }
    }
    runs.push({
      pods,
      ...(run.as === undefined ? {} : { as: run.as }),
      groups: run.groups ?? [],
      gmsaDesign: run.gmsaDesign ?? defaultGmsaDesign,
      expect: run.expect.map((e) => ({
        ...e,
        exec: (e.exec ?? []).map((x) => ({ command: x.command, exitCode: x.exitCode ?? 0, ...(x.output === undefined ? {} : { output: x.output }) })),
      })),
    });
  }
  return { file, directory, title: raw.title, ...(node === undefined ? {} : { node }), adMode: raw.adMode ?? DEFAULT_AD_MODE, runtimeFlavor: raw.runtimeFlavor ?? DEFAULT_RUNTIME_FLAVOR, cluster, runs };
}

/** Reads an example: its expect.yaml, or a directory that holds one. */
export async function loadExampleManifest(path: string): Promise<ExampleManifest> {
  const absolute = resolve(path);
  const info = await stat(absolute).catch(() => undefined);
  if (info === undefined) throw new ExampleManifestError(absolute, 'does not exist');
  const file = info.isDirectory() ? resolve(absolute, 'expect.yaml') : absolute;
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new ExampleManifestError(file, err.code === 'ENOENT' ? 'does not exist' : err.message);
  });
  return parseExampleManifest(file, text);
}
