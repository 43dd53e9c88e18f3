// A real Kubernetes control plane for the node-mode suites: etcd, kube-apiserver,
// kube-scheduler and kube-controller-manager built from the pinned modules under tools/
// (scripts/install-tools.mjs), started on loopback with random free ports in a fresh temporary
// directory, and stopped again leaving no process and no file behind.
//
// The API server runs with the flags a user's cluster has (kubeadm's set, less what only a
// multi-host cluster needs) and otherwise kube-apiserver's defaults: in particular the default
// --kubelet-preferred-address-types (Hostname first) and all default admission plugins,
// TaintNodesByCondition included, so the tests meet the clusters users run. The controller
// manager runs as kubeadm runs it: it creates every namespace's `default` ServiceAccount and
// `kube-root-ca.crt`, runs Deployments, ReplicaSets and Jobs, garbage-collects, finishes namespace
// deletion, and its node lifecycle controller lifts the not-ready taint of Ready nodes — and
// taints and evicts from nodes whose heartbeats stop (50 s grace, then NoExecute with the
// DefaultTolerationSeconds admission plugin's 300 s toleration).
//
// Authentication is a static token file (written once at start: the API server reads it only
// then), so every identity a suite will use must be known up front:
//   - the admin, user `cri-winsim-admin` in `system:masters`;
//   - one token per node name, user `system:node:<name>` in `system:nodes` — what the Node
//     authorizer and the NodeRestriction admission plugin recognise as that node's kubelet;
//   - kube-scheduler, user `system:kube-scheduler`, and kube-controller-manager, user
//     `system:kube-controller-manager` (bootstrap RBAC binds their roles).
// Authorization is `Node,RBAC`, as kubeadm sets it up.
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { toolsBinDir } from './paths.js';
import { runProcess, type ProcessResult } from './process.js';
import { slotRange, workerSlot } from './worker-slot.js';

/** The programs this harness runs, all in .tools/bin. */
export const CONTROL_PLANE_TOOLS = ['etcd', 'kube-apiserver', 'kube-scheduler', 'kube-controller-manager', 'kubectl'] as const;
export type ControlPlaneTool = (typeof CONTROL_PLANE_TOOLS)[number];

/** The Kubernetes release pinned in tools/kubernetes/go.mod (what `kubectl version` reports). */
export const KUBERNETES_VERSION = 'v1.34.12';

/** `PREFIX-1` … `PREFIX-N`, the names `cri-winsim node --nodes N --node-name-prefix PREFIX` gives its nodes. */
export function numberedNodeNames(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${i + 1}`);
}

/** Node names that get a token when start() is given none: `winsim-1` … `winsim-16`. */
export const DEFAULT_NODE_NAMES: readonly string[] = numberedNodeNames('winsim', 16);

export const ADMIN_USER = 'cri-winsim-admin';

export interface ControlPlaneOptions {
  /**
   * The node names that get a token (user `system:node:<name>`, group `system:nodes`), and so
   * a nodeKubeconfig(). Fixed for the control plane's life. Default: DEFAULT_NODE_NAMES.
   */
  nodeNames?: readonly string[];
  /** Start kube-scheduler (default true). */
  scheduler?: boolean;
  /** How long start() and startApiServer() wait for readiness (default 90 s). */
  readyTimeoutMs?: number;
  /** Extra kube-apiserver flags, after the harness's own (a later flag wins). */
  apiServerArgs?: readonly string[];
  /**
   * `--service-cluster-ip-range` (default 127.96.0.0/16: ClusterIPs are allocated from it and
   * never contacted; loopback, like every address the tests hand out).
   */
  serviceClusterIpRange?: string;
  /** A label for messages (defaults to the temp dir's name). */
  name?: string;
}

/** An RBAC rule (rbac.authorization.k8s.io/v1 PolicyRule). */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
  verbs: string[];
}

export interface KubectlOptions {
  /** Written to kubectl's standard input (e.g. a manifest for `apply -f -`). */
  input?: string;
  /** SIGKILL after this long (default 60 s); the result then has timedOut: true. */
  timeoutMs?: number;
  /** The kubeconfig to use (default: the admin's). */
  kubeconfig?: string;
}

/** What kubectl did: its command line is shown as `kubectl <args>`. */
export type KubectlResult = ProcessResult;

export interface ControlPlane {
  readonly name: string;
  /** The temporary directory holding etcd's data, certificates, token file and kubeconfigs. */
  readonly dir: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** PEM of the CA that signed the API server's serving certificate (self-generated). */
  readonly caData: string;
  /** Kubeconfig file of the admin (`system:masters`). */
  readonly adminKubeconfig: string;
  readonly adminToken: string;
  /** The node names that have a token. */
  readonly nodeNames: readonly string[];
  /**
   * The CA file a kubelet's `--client-ca-file` takes: it signed the client certificate the API
   * server presents to kubelets (`kubectl logs`, exec, …): CN `kube-apiserver-kubelet-client`,
   * O `system:masters`.
   */
  readonly kubeletClientCaFile: string;
  /** `http://127.0.0.1:<port>`, etcd's client URL. */
  readonly etcdUrl: string;
  /** Kubeconfig file (token auth) of node `name`; written on first call. Throws for a name without a token. */
  nodeKubeconfig(name: string): Promise<string>;
  /** The bearer token of node `name`. Throws for a name without a token. */
  nodeToken(name: string): string;
  /** Runs the built kubectl with the admin kubeconfig (or opts.kubeconfig). Never throws on a non-zero exit. */
  kubectl(args: readonly string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /** As kubectl(), but throws (with stderr) unless it exits 0; returns stdout. */
  kubectlOk(args: readonly string[], opts?: KubectlOptions): Promise<string>;
  /** `kubectl apply -f -` of a manifest (YAML/JSON text, or an object sent as JSON). */
  apply(manifest: string | object): Promise<string>;
  /**
   * Creates namespace `ns` if absent and the ServiceAccounts named other than `default`, then
   * waits until kube-controller-manager has created the namespace's `default` ServiceAccount
   * and `kube-root-ca.crt` ConfigMap (a pod created before its ServiceAccount exists is
   * refused by the ServiceAccount admission plugin). Idempotent.
   */
  ensureNamespace(ns: string, serviceAccounts?: readonly string[]): Promise<void>;
  /**
   * RBAC beyond what the Node authorizer grants a node: ClusterRole `name` with these rules,
   * bound (ClusterRoleBinding `name`) to the group `system:nodes`. Idempotent.
   */
  grantToNodes(name: string, rules: readonly PolicyRule[]): Promise<void>;
  /** Recent output of one component (last lines kept). */
  logs(component: Component): string;
  /** Process ids of the running components (for leak checks). */
  pids(): Partial<Record<Component, number>>;
  /** Whether the API server process is running. */
  apiServerRunning(): boolean;
  /**
   * Stops the API server alone: SIGTERM, then SIGKILL after opts.graceMs (default 5 s). etcd,
   * the scheduler and the controller manager keep running. While clients hold watches open, kube-apiserver's own
   * graceful shutdown waits for them up to its request timeout (60 s), hence the bound.
   */
  stopApiServer(opts?: { graceMs?: number }): Promise<void>;
  /** Starts the API server again (same port, flags, certificates and tokens) and waits for /readyz. */
  startApiServer(): Promise<void>;
  /** stopApiServer(opts) then startApiServer(). */
  restartApiServer(opts?: { graceMs?: number }): Promise<void>;
  /** Stops every process (each in its own process group) and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
}

export type Component = 'etcd' | 'kube-apiserver' | 'kube-scheduler' | 'kube-controller-manager';

const LINES_KEPT = 300;
/** How long the API server may take over a SIGTERM before it is killed. */
const API_SERVER_GRACE_MS = 5_000;
/** What the root hook needs of a control plane that was started (or is starting). */
export interface LiveControlPlane {
  readonly name: string;
  stop(): Promise<void>;
}
const live = new Set<LiveControlPlane>();

/**
 * Control planes started (or still starting) and not yet stopped: the root hook stops them and
 * fails the run.
 */
export function liveControlPlanes(): LiveControlPlane[] {
  return [...live];
}

/** Absolute path of each control-plane program, or the names of those not built. */
export function controlPlaneTools(): { paths: Record<ControlPlaneTool, string>; missing: ControlPlaneTool[] } {
  const paths = Object.fromEntries(CONTROL_PLANE_TOOLS.map((t) => [t, join(toolsBinDir, t)])) as Record<ControlPlaneTool, string>;
  return { paths, missing: CONTROL_PLANE_TOOLS.filter((t) => !existsSync(paths[t])) };
}

/**
 * For a suite's before(): skips it (saying why) outside CI when the control-plane programs were
 * not built; in CI (CI=true) that is a failure, because CI must run it.
 */
export function requireControlPlaneTools(ctx: Mocha.Context): void {
  const { missing } = controlPlaneTools();
  if (missing.length === 0) return;
  const why = `${missing.join(', ')} not installed in .tools/bin (run \`node scripts/install-tools.mjs\`; it needs Go)`;
  if (process.env.CI === 'true') throw new Error(`${why}; CI must run the control-plane suites`);
  process.stderr.write(`    skipping the control-plane suite: ${why}\n`);
  ctx.skip();
}

/**
 * Ports for a parallel worker's servers: 20000–31999 lies below the kernel's ephemeral range
 * (32768–60999 by default), so no port-0 bind or outgoing connection takes one of them between
 * freePort() and the bind; each worker probes only its own part (worker-slot.ts).
 */
const WORKER_PORTS = slotRange(20_000, 12_000);
let nextWorkerPort = Math.floor(Math.random() * WORKER_PORTS.count);

function portFree(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(undefined) : reject(err)));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      const addr = srv.address();
      srv.close(() => (addr !== null && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: one the kernel picks (port 0), or in a
 * parallel worker the next free one of the worker's own range.
 */
export async function freePort(): Promise<number> {
  if (workerSlot() === undefined) return (await portFree(0))!;
  for (let tries = 0; tries < WORKER_PORTS.count; tries++) {
    const port = await portFree(WORKER_PORTS.first + (nextWorkerPort++ % WORKER_PORTS.count));
    if (port !== undefined) return port;
  }
  throw new Error(`no free port in ${WORKER_PORTS.first}–${WORKER_PORTS.first + WORKER_PORTS.count - 1} (worker ${process.env['MOCHA_WORKER_ID']})`);
}

interface Proc {
  child: ChildProcess;
  lines: string[];
  exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  exit: Promise<void>;
}

function launch(program: string, args: readonly string[], cwd: string): Proc {
  // detached: its own process group, so stop() can signal the group.
  const child = spawn(program, args, { cwd, env: process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const proc: Proc = { child, lines: [], exited: undefined, exit: Promise.resolve() };
  proc.exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => { proc.exited ??= { code, signal }; resolve(); });
    child.once('error', (err) => { proc.lines.push(`spawn error: ${err.message}`); proc.exited ??= { code: null, signal: null }; resolve(); });
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    // Drained for the child's whole life so it never blocks on a full pipe.
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      proc.lines.push(line);
      if (proc.lines.length > LINES_KEPT) proc.lines.shift();
    });
  }
  return proc;
}

function signalGroup(proc: Proc, signal: NodeJS.Signals): void {
  if (proc.exited !== undefined || proc.child.pid === undefined) return;
  try {
    process.kill(-proc.child.pid, signal);
  } catch {
    try { proc.child.kill(signal); } catch { /* already gone */ }
  }
}

async function terminate(proc: Proc | undefined, graceMs: number): Promise<void> {
  if (!proc) return;
  if (proc.exited === undefined) {
    signalGroup(proc, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(proc, 'SIGKILL'), graceMs);
    try { await proc.exit; } finally { clearTimeout(timer); }
  }
  // Whatever else is left in its group.
  if (proc.child.pid !== undefined) {
    try { process.kill(-proc.child.pid, 'SIGKILL'); } catch { /* group empty */ }
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** GET https://…path with a bearer token; the status code, or undefined when unreachable. */
function httpsGet(url: string, token: string, ca: string | undefined): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = request(url, {
      method: 'GET',
      headers: { Authorization: `Bearer ${token}` },
      ...(ca === undefined ? { rejectUnauthorized: false } : { ca }),
      timeout: 5_000,
    }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => { body += c; }).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

function tail(proc: Proc | undefined, n = 40): string {
  if (!proc) return '(not started)';
  return proc.lines.slice(-n).join('\n') || '(no output)';
}

function kubeconfigText(server: string, caData: string, user: string, token: string): string {
  // JSON is YAML: kubectl, client-go and @kubernetes/client-node read it.
  return `${JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'cri-winsim-test', cluster: { server, 'certificate-authority-data': Buffer.from(caData).toString('base64') } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'cri-winsim-test', context: { cluster: 'cri-winsim-test', user } }],
    'current-context': 'cri-winsim-test',
  }, null, 2)}\n`;
}

/** A CSV field of the token file: quoted when it holds a comma. */
const csv = (s: string) => (s.includes(',') ? `"${s}"` : s);

/** openssl, for the kubelet-client CA and certificate (test set-up only). */
async function openssl(args: readonly string[], cwd: string): Promise<void> {
  const child = spawn('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c; });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`openssl ${args.join(' ')} failed (exit ${code}): ${err.trim()}`);
}

/**
 * A self-signed serving certificate for 127.0.0.1 (key and certificate PEM files in dir), for a
 * test's stand-in servers.
 */
export async function selfSignedServingCertificate(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert,
    '-days', '2', '-subj', `/CN=${name}`, '-addext', 'subjectAltName=IP:127.0.0.1'], dir);
  return { cert, key };
}

async function kubeletClientCertificate(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const ca = join(dir, 'kubelet-client-ca.crt');
  const caKey = join(dir, 'kubelet-client-ca.key');
  const cert = join(dir, 'apiserver-kubelet-client.crt');
  const key = join(dir, 'apiserver-kubelet-client.key');
  const csr = join(dir, 'apiserver-kubelet-client.csr');
  const ext = join(dir, 'client.ext');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await openssl(['req', '-x509', ...ec, '-keyout', caKey, '-out', ca, '-days', '2', '-subj', '/CN=cri-winsim-test-kubelet-client-ca'], dir);
  await openssl(['req', '-new', ...ec, '-keyout', key, '-out', csr, '-subj', '/O=system:masters/CN=kube-apiserver-kubelet-client'], dir);
  await writeFile(ext, 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  await openssl(['x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', ext], dir);
  return { ca, cert, key };
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const { paths, missing } = controlPlaneTools();
  if (missing.length > 0) throw new Error(`${missing.join(', ')} not installed in .tools/bin (run \`node scripts/install-tools.mjs\`)`);
  const nodeNames = [...(opts.nodeNames ?? DEFAULT_NODE_NAMES)];
  for (const n of nodeNames) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(n)) throw new Error(`node name ${JSON.stringify(n)} is not a DNS subdomain`);
  }
  const readyTimeoutMs = opts.readyTimeoutMs ?? 90_000;
  const dir = await mkdtemp(join(tmpdir(), 'cri-winsim-cp-'));
  const name = opts.name ?? dir;

  const procs: Partial<Record<Component, Proc>> = {};
  // If this process exits without stop() (an uncaught error, Ctrl-C), take the children and
  // the temp dir along. Synchronous: 'exit' handlers cannot wait.
  const onExit = () => {
    for (const p of Object.values(procs)) if (p) signalGroup(p, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  // SIGINT/SIGTERM (Ctrl-C, a CI time-out) end node without running 'exit' handlers: do the
  // same tidy-up, then let the signal do what it would have done.
  const onSignal = (signal: NodeJS.Signals) => {
    onExit();
    unhook();
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  const onSigint = () => onSignal('SIGINT');
  const onSigterm = () => onSignal('SIGTERM');
  const unhook = () => {
    process.removeListener('exit', onExit);
    process.removeListener('SIGINT', onSigint);
    process.removeListener('SIGTERM', onSigterm);
  };
  process.once('exit', onExit);
  process.once('SIGINT', onSigint);
  process.once('SIGTERM', onSigterm);

  let stopping: Promise<void> | undefined;
  const stopAll = () => {
    stopping ??= (async () => {
      try {
        await Promise.all([terminate(procs['kube-controller-manager'], 5_000), terminate(procs['kube-scheduler'], 5_000)]);
        await terminate(procs['kube-apiserver'], API_SERVER_GRACE_MS);
        await terminate(procs.etcd, 5_000);
      } finally {
        unhook();
        live.delete(entry);
        await rm(dir, { recursive: true, force: true });
      }
    })();
    return stopping;
  };
  // Registered before anything can fail, so the root hook also sees one still starting (a
  // before() hook that timed out).
  const entry: LiveControlPlane = { name, stop: stopAll };
  live.add(entry);

  try {
    const certDir = join(dir, 'pki');
    await mkdir(certDir);
    await mkdir(join(dir, 'etcd'), { mode: 0o700 });

    // Identities: a static token file (read by the API server at start only).
    const token = () => randomBytes(24).toString('hex');
    const adminToken = token();
    const schedulerToken = token();
    const controllerManagerToken = token();
    const nodeTokens = new Map(nodeNames.map((n) => [n, token()]));
    const tokenLines = [
      [adminToken, ADMIN_USER, 'uid-admin', 'system:masters'],
      [schedulerToken, 'system:kube-scheduler', 'uid-kube-scheduler', ''],
      [controllerManagerToken, 'system:kube-controller-manager', 'uid-kube-controller-manager', ''],
      ...nodeNames.map((n) => [nodeTokens.get(n) as string, `system:node:${n}`, `uid-node-${n}`, 'system:nodes']),
    ];
    const tokenFile = join(dir, 'tokens.csv');
    await writeFile(tokenFile, `${tokenLines.map((l) => l.map(csv).join(',')).join('\n')}\n`, { mode: 0o600 });

    // Service-account token signing key.
    const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const saKey = join(certDir, 'sa.key');
    const saPub = join(certDir, 'sa.pub');
    await writeFile(saKey, sa.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
    await writeFile(saPub, sa.publicKey.export({ type: 'spki', format: 'pem' }) as string);

    const kubeletClient = await kubeletClientCertificate(certDir);

    // etcd: single member, loopback; the peer listener takes any free port (nothing joins it).
    const etcdUrl = await onFreePort(() => procs.etcd, async (etcdPort) => {
      const url = `http://127.0.0.1:${etcdPort}`;
      procs.etcd = launch(paths.etcd, [
        '--name', 'default',
        '--data-dir', join(dir, 'etcd'),
        '--listen-client-urls', url,
        '--advertise-client-urls', url,
        '--listen-peer-urls', 'http://127.0.0.1:0',
        '--initial-advertise-peer-urls', 'http://127.0.0.1:0',
        '--initial-cluster', 'default=http://127.0.0.1:0',
        '--log-level', 'warn',
        // Throw-away data: no fsync keeps it fast on a busy disk.
        '--unsafe-no-fsync',
      ], dir);
      await waitFor(`etcd at ${url}`, readyTimeoutMs, procs.etcd, async () => {
        const res = await httpGet(`${url}/health`);
        return res !== undefined && res.status === 200 && /"health":\s*"true"/.test(res.body);
      });
      return url;
    });

    // kube-apiserver.
    const apiServerArgs = (port: number) => [
      '--etcd-servers', etcdUrl,
      '--bind-address', '127.0.0.1',
      '--advertise-address', '127.0.0.1',
      '--secure-port', String(port),
      // Self-generated serving certificate (its CA is in apiserver.crt after the leaf).
      '--cert-dir', certDir,
      '--token-auth-file', tokenFile,
      '--authorization-mode', 'Node,RBAC',
      '--service-account-issuer', 'https://kubernetes.default.svc.cluster.local',
      '--service-account-key-file', saPub,
      '--service-account-signing-key-file', saKey,
      '--service-cluster-ip-range', opts.serviceClusterIpRange ?? '127.96.0.0/16',
      // The default admission plugins plus NodeRestriction, as kubeadm.
      '--enable-admission-plugins', 'NodeRestriction',
      '--allow-privileged=true',
      // The client certificate the API server presents to kubelets (logs, exec, …), as
      // kubeadm. The address it dials follows the default --kubelet-preferred-address-types.
      '--kubelet-client-certificate', kubeletClient.cert,
      '--kubelet-client-key', kubeletClient.key,
      // The default endpoint reconciler stays: it cannot publish the `kubernetes` Service's
      // endpoint (127.0.0.1, which Endpoints validation refuses as loopback) and logs that every
      // 10 s, and the API server works on; nothing here reaches it through that Service.
      ...(opts.apiServerArgs ?? []),
    ];
    const startApi = async (port: number) => {
      const url = `https://127.0.0.1:${port}`;
      procs['kube-apiserver'] = launch(paths['kube-apiserver'], apiServerArgs(port), dir);
      const proc = procs['kube-apiserver'];
      await waitFor(`kube-apiserver at ${url}`, readyTimeoutMs, proc, async () => {
        const res = await httpsGet(`${url}/readyz`, adminToken, undefined);
        return res?.status === 200;
      });
      return port;
    };
    // A restart keeps the port: clients (nodes) reconnect to the address they know.
    const apiPort = await onFreePort(() => procs['kube-apiserver'], startApi);
    const server = `https://127.0.0.1:${apiPort}`;
    const caData = await servingCa(join(certDir, 'apiserver.crt'));

    const adminKubeconfig = join(dir, 'admin.kubeconfig');
    await writeFile(adminKubeconfig, kubeconfigText(server, caData, ADMIN_USER, adminToken), { mode: 0o600 });
    const schedulerKubeconfig = join(dir, 'kube-scheduler.kubeconfig');
    await writeFile(schedulerKubeconfig, kubeconfigText(server, caData, 'system:kube-scheduler', schedulerToken), { mode: 0o600 });
    const controllerManagerKubeconfig = join(dir, 'kube-controller-manager.kubeconfig');
    await writeFile(controllerManagerKubeconfig, kubeconfigText(server, caData, 'system:kube-controller-manager', controllerManagerToken), { mode: 0o600 });
    // What the root-ca-cert-publisher controller publishes as `kube-root-ca.crt` in every
    // namespace: the CA of the API server's serving certificate (kubeadm: its cluster CA).
    const rootCaFile = join(certDir, 'ca.crt');
    await writeFile(rootCaFile, caData);

    const kubectl = async (args: readonly string[], kopts: KubectlOptions = {}): Promise<KubectlResult> => {
      // --cache-dir: kubectl's discovery and HTTP caches stay in the temp dir instead of ~/.kube.
      const fullArgs = ['--kubeconfig', kopts.kubeconfig ?? adminKubeconfig, '--cache-dir', join(dir, 'kubectl-cache'), ...args];
      return runProcess(paths.kubectl, fullArgs, {
        command: ['kubectl', ...args].join(' '),
        cwd: dir,
        killAfterMs: kopts.timeoutMs ?? 60_000,
        input: kopts.input,
      });
    };
    const kubectlOk = async (args: readonly string[], kopts?: KubectlOptions): Promise<string> => {
      const res = await kubectl(args, kopts);
      if (res.code !== 0) {
        throw new Error(`\`${res.command}\` failed (${res.timedOut ? 'timed out' : `exit ${res.code}`}): ${res.stderr.trim() || res.stdout.trim()}`);
      }
      return res.stdout;
    };
    const apply = (manifest: string | object) => kubectlOk(['apply', '-f', '-'], { input: typeof manifest === 'string' ? manifest : JSON.stringify(manifest) });

    /**
     * Until kube-controller-manager's service-account and root-ca-cert-publisher controllers
     * have created `default` and `kube-root-ca.crt` in ns: the token volume the ServiceAccount
     * admission plugin adds to every pod projects that ConfigMap.
     */
    const namespaceReady = (ns: string) => waitFor(`the default ServiceAccount and kube-root-ca.crt of namespace ${ns} (kube-controller-manager)`,
      readyTimeoutMs, procs['kube-controller-manager'], async () => {
        const res = await kubectl(['get', 'serviceaccount/default', 'configmap/kube-root-ca.crt', '-n', ns, '-o', 'name'], { timeoutMs: 15_000 });
        return res.code === 0;
      });
    const ensureNamespace = async (ns: string, serviceAccounts: readonly string[] = ['default']) => {
      // `default` is the controller's to create; others are the suite's own, as a user's.
      const items: object[] = [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
        ...serviceAccounts.filter((sa) => sa !== 'default').map((sa) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: ns } })),
      ];
      await apply({ apiVersion: 'v1', kind: 'List', items });
      await namespaceReady(ns);
    };

    const startScheduler = async () => {
      if (!(opts.scheduler ?? true)) return;
      await onFreePort(() => procs['kube-scheduler'], async (schedulerPort) => {
        procs['kube-scheduler'] = launch(paths['kube-scheduler'], [
          '--kubeconfig', schedulerKubeconfig,
          '--authentication-kubeconfig', schedulerKubeconfig,
          '--authorization-kubeconfig', schedulerKubeconfig,
          '--bind-address', '127.0.0.1',
          '--secure-port', String(schedulerPort),
          // One scheduler: no leader election, so an API server restart longer than the renew
          // deadline does not make it exit.
          '--leader-elect=false',
        ], dir);
        await waitFor(`kube-scheduler on 127.0.0.1:${schedulerPort}`, readyTimeoutMs, procs['kube-scheduler'], async () => {
          const res = await httpsGet(`https://127.0.0.1:${schedulerPort}/readyz`, schedulerToken, undefined);
          return res?.status === 200;
        });
      });
    };
    // Started as kubeadm starts it (cmd/kubeadm/app/phases/controlplane/manifests.go
    // getControllerManagerCommand, v1.34), less the front-proxy and cluster-signing files: no
    // aggregated API server here, and no kubelet asks for a certificate (nodes use tokens), so
    // the csrsigning controller is skipped, which it logs.
    const startControllerManager = () => onFreePort(() => procs['kube-controller-manager'], async (port) => {
      procs['kube-controller-manager'] = launch(paths['kube-controller-manager'], [
        '--kubeconfig', controllerManagerKubeconfig,
        '--authentication-kubeconfig', controllerManagerKubeconfig,
        '--authorization-kubeconfig', controllerManagerKubeconfig,
        '--bind-address', '127.0.0.1',
        '--secure-port', String(port),
        '--root-ca-file', rootCaFile,
        '--service-account-private-key-file', saKey,
        '--use-service-account-credentials=true',
        '--controllers', '*,bootstrapsigner,tokencleaner',
        // One controller manager: no leader election, so an API server restart longer than the
        // renew deadline (10 s) does not make it exit.
        '--leader-elect=false',
      ], dir);
      await waitFor(`kube-controller-manager on 127.0.0.1:${port}`, readyTimeoutMs, procs['kube-controller-manager'], async () => {
        // /healthz is readable without authorization (its always-allowed paths).
        const res = await httpsGet(`https://127.0.0.1:${port}/healthz`, controllerManagerToken, undefined);
        return res?.status === 200;
      });
    });

    // The API server creates kube-system, kube-public, kube-node-lease and default just after
    // it reports ready; node leases need kube-node-lease. The scheduler and the controller
    // manager start meanwhile, side by side: start-up is most of a suite's set-up time.
    await Promise.all([
      waitFor('the system namespaces', readyTimeoutMs, procs['kube-apiserver'], async () => {
        const res = await kubectl(['get', 'namespace', 'default', 'kube-system', 'kube-node-lease', '-o', 'name'], { timeoutMs: 15_000 });
        return res.code === 0;
      }),
      startScheduler(),
      startControllerManager(),
    ]);
    await namespaceReady('default');

    const nodeToken = (n: string): string => {
      const t = nodeTokens.get(n);
      if (t === undefined) {
        throw new Error(`node ${JSON.stringify(n)} has no token: the control plane was started with node names ${nodeNames.join(', ')}`);
      }
      return t;
    };
    const written = new Map<string, string>();

    const handle: ControlPlane = {
      name,
      dir,
      server,
      caData,
      adminKubeconfig,
      adminToken,
      nodeNames,
      kubeletClientCaFile: kubeletClient.ca,
      etcdUrl,
      nodeToken,
      async nodeKubeconfig(n: string) {
        const t = nodeToken(n);
        const done = written.get(n);
        if (done !== undefined) return done;
        const file = join(dir, `node-${n}.kubeconfig`);
        await writeFile(file, kubeconfigText(server, caData, `system:node:${n}`, t), { mode: 0o600 });
        written.set(n, file);
        return file;
      },
      kubectl,
      kubectlOk,
      apply,
      ensureNamespace,
      async grantToNodes(roleName, rules) {
        const rbac = 'rbac.authorization.k8s.io/v1';
        await apply({
          apiVersion: 'v1',
          kind: 'List',
          items: [
            { apiVersion: rbac, kind: 'ClusterRole', metadata: { name: roleName }, rules },
            {
              apiVersion: rbac,
              kind: 'ClusterRoleBinding',
              metadata: { name: roleName },
              roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
              subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }],
            },
          ],
        });
      },
      logs: (c) => (procs[c]?.lines ?? []).join('\n'),
      pids: () => Object.fromEntries(Object.entries(procs)
        .filter(([, p]) => p?.exited === undefined && p.child.pid !== undefined)
        .map(([c, p]) => [c, p?.child.pid])) as Partial<Record<Component, number>>,
      apiServerRunning: () => procs['kube-apiserver']?.exited === undefined,
      async stopApiServer(o = {}) {
        await terminate(procs['kube-apiserver'], o.graceMs ?? API_SERVER_GRACE_MS);
      },
      async startApiServer() {
        if (procs['kube-apiserver']?.exited === undefined) throw new Error('kube-apiserver is already running');
        await startApi(apiPort);
      },
      async restartApiServer(o = {}) {
        await terminate(procs['kube-apiserver'], o.graceMs ?? API_SERVER_GRACE_MS);
        await startApi(apiPort);
      },
      stop: stopAll,
    };
    return handle;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * start(port) on a port that was free a moment ago; when the program exits because another
 * process took that port meanwhile, again on another (three tries).
 */
async function onFreePort<T>(proc: () => Proc | undefined, start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    try {
      return await start(port);
    } catch (err) {
      const p = proc();
      const taken = p?.exited !== undefined && /address already in use/.test(p.lines.join('\n'));
      if (!taken || attempt >= 3) throw err;
    }
  }
}

/** Polls check() every 250 ms until it holds; fails early when proc exits, late after timeoutMs. */
async function waitFor(what: string, timeoutMs: number, proc: Proc | undefined, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc?.exited !== undefined) {
      throw new Error(`${what}: the process exited (code ${proc.exited.code}, signal ${proc.exited.signal}) before it was ready; its output:\n${tail(proc)}`);
    }
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} was not ready within ${timeoutMs} ms; its output:\n${tail(proc)}`);
    await sleep(250);
  }
}

function httpGet(url: string): Promise<{ status: number; body: string } | undefined> {
  return fetch(url, { signal: AbortSignal.timeout(5_000) })
    .then(async (res) => ({ status: res.status, body: await res.text() }))
    .catch(() => undefined);
}

/** The CA certificate of the API server's self-generated bundle (leaf first, then its CA). */
async function servingCa(file: string): Promise<string> {
  const pem = await readFile(file, 'utf8');
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
  if (blocks.length === 0) throw new Error(`${file} holds no certificate`);
  // With a CA after the leaf, trust the CA; a lone self-signed certificate is its own CA.
  return blocks.length > 1 ? blocks.slice(1).join('') : (blocks[0] as string);
}
