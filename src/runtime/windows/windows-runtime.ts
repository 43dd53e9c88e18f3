import type { Logger } from '../../log.js';
import { silentLogger } from '../../log.js';
import { FileCallPolicy, type FileCalls } from '../../tuning/file-calls.js';
import { withContext } from '../errors.js';
import { RandomSource } from '../ids.js';
import type { CommandRegistry } from '../../emulator/command-registry.js';
import { BoundedCache } from '../../bounded-cache.js';
import type { FlavorChoice } from '../flavors/flavor.js';
import { DEFAULT_AD_MODE, parseAdMode } from './ad-mode.js';
import { AccessChecks, type ContainerIdentity, type IdentityMode } from './container-identity.js';
import { CredentialSpecParser } from './credential-spec.js';
import { FileShareContents } from './file-shares.js';
import {
  CredentialSpecHandoff,
  stagedFromSecurityOption,
  type CredentialSpecHandoffObserver,
  type CredentialSpecTransportKind,
} from './credential-spec-handoff.js';
import { registerIdentityCommands, type AdOperationCounters } from './identity-command-registration.js';
import { formatPlan, parseScenario, planScenario, ScenarioRunner, type ScenarioDocument } from './ad-scenario.js';
import { LiveDomain } from './live-domain.js';
import { parseUserYaml, readUserFile } from '../validation/user-file.js';
import { LogonSession } from './logon-session.js';
import { IdentityJournal } from './identity-journal.js';
import { openNodeDirectory, type NodeDirectory } from './node-directory.js';
import { SmallFileReader } from './security-options.js';

/**
 * Counters of the credential spec hand-off (the runtime command passes the metrics endpoint's;
 * structurally the same as src/cri/metrics.ts CredentialSpecMetrics, without importing src/cri).
 */
export interface CredentialSpecCounters {
  onWritten(): void;
  onRemoved(): void;
}

/**
 * The steps between CreateContainer and a started process where a test may inject a failure:
 * - `credential-spec-write`: CreateContainer, instead of writing the credential spec (a write error);
 * - `credential-spec-written`: CreateContainer, right after the spec was written (any later create error);
 * - `credential-spec-read`: StartContainer, before the backend reads the spec back through the security option;
 * - `credential-spec-validate`: StartContainer, before the document is validated (a validation error);
 * - `identity`: StartContainer, before the node's AD access is decided (an AD denial);
 * - `process-start`: StartContainer, before the container's process is started (a process start error).
 */
export type WindowsFaultStep =
  | 'credential-spec-write'
  | 'credential-spec-written'
  | 'credential-spec-read'
  | 'credential-spec-validate'
  | 'identity'
  | 'process-start';

export const WINDOWS_FAULT_STEPS: readonly WindowsFaultStep[] = [
  'credential-spec-write',
  'credential-spec-written',
  'credential-spec-read',
  'credential-spec-validate',
  'identity',
  'process-start',
];

/**
 * Fault injection for tests, off unless given: `fail` is called at every step with the
 * container's id; an error it returns (or throws) fails the RPC at that step, as a real failure
 * there would. `securityOptions` may rewrite the options the backend reads (a malformed option
 * from a faulty dockershim layer).
 */
export interface WindowsFaultInjection {
  fail?(step: WindowsFaultStep, containerId: string): Error | undefined;
  securityOptions?(options: readonly string[], containerId: string): string[];
}

/** `NodeRuntimeOptions.windows`: what `cri-winsim runtime --node … --ad-mode … --credspec-transport …` sets. */
export interface WindowsRuntimeOptions {
  /** `--node FILE`; the embedded WINNODE1 when absent. */
  nodeFile?: string | undefined;
  /** An already loaded node (node mode derives one per simulated node); wins over nodeFile. */
  node?: NodeDirectory | undefined;
  /** `--ad-mode`: windows-server (default) or gmsa-kep (ad-mode.ts; old names strict, realistic). */
  adMode?: string | undefined;
  /** `--credspec-transport`: file or registry (the flavor's when absent). */
  credentialSpecTransport?: string | undefined;
  /** `--runtime-flavor`: dockershim-kep (default), cri-dockerd or containerd (flavors/). */
  runtimeFlavor?: string | undefined;
  credentialSpecMetrics?: CredentialSpecCounters | undefined;
  /** Counters of the identity operations that ask the domain (`cri_winsim_ad_operations_total`). */
  adOperationMetrics?: AdOperationCounters | undefined;
  /** `--ad-scenario FILE` (and `--seed`): timed changes of the domain, started when the runtime opens. */
  adScenario?: { file: string; seed?: number | undefined } | undefined;
  /** Tests only. */
  faults?: WindowsFaultInjection | undefined;
}

/** Checked options and the loaded node, before anything is created. */
export interface PreparedWindowsRuntime {
  node: NodeDirectory;
  mode: IdentityMode;
  /** The hand-off's transport: the flavor's (containerd stages nothing; its hand-off still sweeps files). */
  transport: CredentialSpecTransportKind;
  /** The runtime's flavor (chosen in NodeRuntime.open), for the log. */
  flavor: FlavorChoice;
  /** The `--ad-mode` name (windows-server or gmsa-kep), for the log. */
  adModeName?: string | undefined;
  /** A deprecated `--ad-mode` name was given: the warning `open` logs. */
  adModeDeprecation?: string | undefined;
  options: WindowsRuntimeOptions;
  /** The `--ad-scenario` file, checked. */
  scenario?: { document: ScenarioDocument; source: string; seed: number } | undefined;
}

/** How many started containers keep their identity object (the latest; a removed one at once). */
const IDENTITY_CACHE_SIZE = 256;

/**
 * The Windows path of one runtime instance: the simulated node and its AD, the identity mode,
 * the dockershim credential spec hand-off, and the test-only fault seam. Opened at start-up,
 * where a bad node file stops the runtime before it listens.
 */
export class WindowsRuntime {
  /** Reads credential spec files back at StartContainer (its buffer is this runtime's). */
  readonly fileReader: SmallFileReader;
  /** Accepted credential spec texts and their documents. */
  readonly credentialSpecs = new CredentialSpecParser();
  /** AD access checks that came out the same for every container of a credential spec. */
  readonly accessChecks: AccessChecks;
  /**
   * The identities of started containers as decided in a generation of the live domain, kept for
   * the latest (keyed by container record); for others, and after the domain changed, the
   * decision is made again (it depends on the domain, the container and its logon session only).
   */
  readonly identities = new BoundedCache<object, { generation: number; identity: ContainerIdentity }>(IDENTITY_CACHE_SIZE);
  /** How each container's start went and what its identity operations answered (`cri-winsim explain`). */
  readonly journal = new IdentityJournal();
  /** Started Windows containers' logon sessions: the password version held, the tickets cached. */
  private readonly sessions = new WeakMap<object, LogonSession>();
  /** The scenario running (its timers are this runtime's, stopped at close). */
  private scenario: ScenarioRunner | undefined;
  /** What the domain's file shares hold: one copy for every container of this runtime. */
  readonly fileShares = new FileShareContents();
  /** A container's last secure channel reset (nltest /sc_reset), by container record (shared-gmsa-trust.ts). */
  readonly channelLogons = new WeakMap<object, bigint>();

  private constructor(
    /** The node, reading its domains from `domain` at every lookup. */
    readonly node: NodeDirectory,
    /** The simulated AD as it is now: `domain.apply(desired, source)` changes it (live-domain.ts). */
    readonly domain: LiveDomain,
    readonly mode: IdentityMode,
    readonly handoff: CredentialSpecHandoff,
    private readonly faults: WindowsFaultInjection | undefined,
    private readonly logger: Logger,
    load: FileCalls,
  ) {
    this.fileReader = new SmallFileReader(load.tidyUp);
    this.accessChecks = new AccessChecks(node);
  }

  /**
   * Checks the options and loads the node file, creating nothing: a bad node file is refused
   * (`<file>: <field>: <reason>`) before the runtime touches its state directory. `flavor` is the
   * runtime's, already checked (flavors/select.ts): it says how credential specs are staged.
   */
  static async prepare(options: WindowsRuntimeOptions, flavor: FlavorChoice): Promise<PreparedWindowsRuntime> {
    const adMode = parseAdMode(options.adMode ?? DEFAULT_AD_MODE);
    const mode = adMode.identityMode;
    // containerd stages nothing; its hand-off is still opened, for the start-up sweep.
    const transport = flavor.transport ?? 'file';
    const node = options.node ?? (await openNodeDirectory(options.nodeFile));
    const file = options.adScenario?.file;
    const scenario = file === undefined
      ? undefined
      : { document: parseScenario(parseUserYaml(await readUserFile(file, 'Active Directory scenario'), file), file), source: file, seed: options.adScenario?.seed ?? 0 };
    return { node, mode, transport, flavor, adModeName: adMode.name, adModeDeprecation: adMode.deprecation, options, scenario };
  }

  /** Opens the credential spec hand-off under `stateDir`, sweeps leftovers, installs the identity commands. */
  static async open(
    prepared: PreparedWindowsRuntime,
    stateDir: string,
    commands: CommandRegistry,
    logger: Logger = silentLogger(),
    load: FileCalls = new FileCallPolicy(),
    random: RandomSource = new RandomSource(),
    /** False for a durable runtime: it sweeps once its records are reloaded (`handoff.sweep(keep)`). */
    sweepAtOpen = true,
  ): Promise<WindowsRuntime> {
    const { node, mode, transport, flavor, options } = prepared;
    const counters = options.credentialSpecMetrics;
    const observer: CredentialSpecHandoffObserver = {
      onWritten: () => counters?.onWritten(),
      onRemoved: () => counters?.onRemoved(),
    };
    const handoff = await CredentialSpecHandoff.open(stateDir, transport, logger, observer, load, random);
    // The runtime's own domain, starting from the node file's; the node reads it live.
    const domain = new LiveDomain(node.file.node, { domains: node.file.domains, source: node.source });
    domain.onChange((state) => logger.info({ generation: state.generation, source: state.source }, 'active directory changed'));
    const runtime = new WindowsRuntime(node.withDomainSource(domain), domain, mode, handoff, options.faults, logger, load);
    if (prepared.adModeDeprecation !== undefined) logger.warn(prepared.adModeDeprecation);
    // Start-up sweep (cri-dockerd does it at service start): nothing of a previous run is in use.
    const swept = sweepAtOpen ? await handoff.sweep() : [];
    registerIdentityCommands(commands, { metrics: options.adOperationMetrics, onAnswer: (containerId, argv, result) => runtime.journal.recordOperation(containerId, argv, result) });
    logger.info(
      { node: node.name, nodeSource: node.source, adMode: prepared.adModeName ?? mode, runtimeFlavor: flavor.name, credentialSpecTransport: flavor.transport ?? 'none', sweptCredentialSpecs: swept.length },
      'windows node ready',
    );
    return runtime;
  }

  /**
   * Starts a scenario of timed domain changes (ad-scenario.ts), stopping the one running; refused
   * whole (nothing scheduled) when it is invalid or names what the domain does not have.
   */
  startScenario(data: unknown, source: string, seed: number): ScenarioRunner {
    const document = parseScenario(data, source);
    const runner = new ScenarioRunner(this.domain, document, source, planScenario(document, seed), this.logger);
    this.scenario?.stop();
    this.scenario = runner;
    this.logger.info({ scenario: source, seed, plan: formatPlan(runner.plan) }, 'active directory scenario started');
    return runner;
  }

  /** The scenario started last (running or done), if any. */
  get currentScenario(): ScenarioRunner | undefined {
    return this.scenario;
  }

  /** A started container's logon session (made on first use; it goes with the record). */
  logonSession(container: object, now: () => number): LogonSession {
    let session = this.sessions.get(container);
    if (session === undefined) {
      session = new LogonSession(now);
      this.sessions.set(container, session);
    }
    return session;
  }

  /** Fails the current operation when a test injected a fault at this step. */
  checkFault(step: WindowsFaultStep, containerId: string): void {
    const err = this.faults?.fail?.(step, containerId);
    if (err !== undefined) throw withContext(err, `injected fault at ${step}`);
  }

  /** The security options the backend reads (the fault seam may rewrite them). */
  backendSecurityOptions(options: readonly string[], containerId: string): string[] {
    return this.faults?.securityOptions?.(options, containerId) ?? [...options];
  }

  /**
   * Staged credential specs that no live container refers to, which no later container operation
   * would remove (the next start-up sweep will): the leak gauge, counted when it is scraped.
   */
  async countLeaks(liveSecurityOptions: Iterable<readonly string[]>): Promise<number> {
    try {
      const referenced = new Set<string>();
      for (const options of liveSecurityOptions) {
        for (const option of options) {
          const staged = stagedFromSecurityOption(option);
          if (staged !== undefined) referenced.add(`${staged.transport}:${staged.name}`);
        }
      }
      return (await this.handoff.leftovers()).filter((s) => !referenced.has(`${s.transport}:${s.name}`)).length;
    } catch (err) {
      this.logger.warn({ err }, 'counting leftover credential specs failed');
      return 0;
    }
  }

  /** Shutdown: the containers die with the runtime's memory, so every staged spec goes. */
  async close(keep: Iterable<readonly string[]> = []): Promise<void> {
    this.scenario?.stop();
    await this.handoff.close(keep);
  }
}
