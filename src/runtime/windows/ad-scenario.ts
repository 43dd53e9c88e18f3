import { createHash } from 'node:crypto';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import scenarioSchema from '../../../schemas/ad-scenario.schema.json' with { type: 'json' };
import nodeSchema from '../../../schemas/node.schema.json' with { type: 'json' };
import type { Logger } from '../../log.js';
import { RuntimeError } from '../errors.js';
import type { ActiveDirectoryDocument, DomainState, LiveDomain } from './live-domain.js';
import type { DomainControllerSpec, DomainSpec, GmsaSpec } from './node-file.js';
import { compileSchema, firstViolation } from './schema-validation.js';

/**
 * Scenarios: timed changes of a runtime's live domain (schemas/ad-scenario.schema.json), in the
 * spirit of kwok's stages. Each step names one change, applied through the domain's one apply
 * path when its time comes (`after`, plus up to `jitter` drawn from the seed); `for` sets the
 * domain back to what it was just before the step. The same seed gives the same times, so the
 * same sequence of states: a CI job's "the DC disappears for a minute" repeats exactly.
 */

type Change =
  | { dcDown: string }
  | { dcUp: string }
  | { dcUnreachableFrom: { dc: string; nodes: string[] } }
  | { clockSkew: { dc: string; seconds: number } }
  | { dnsFails: string }
  | { dnsResolves: string }
  | { rotatePassword: string }
  | { deleteGmsa: string }
  | { allowPrincipal: { gmsa: string; principal: string } }
  | { denyPrincipal: { gmsa: string; principal: string } }
  | { ccgPlugin: { pluginGuid: string; healthy: boolean } }
  | { domains: DomainSpec[] };

export type ScenarioStep = { after: string; for?: string; jitter?: string; name?: string } & Change;

export interface ScenarioDocument {
  steps: ScenarioStep[];
}

const CHANGE_KEYS = ['dcDown', 'dcUp', 'dcUnreachableFrom', 'clockSkew', 'dnsFails', 'dnsResolves', 'rotatePassword', 'deleteGmsa', 'allowPrincipal', 'denyPrincipal', 'ccgPlugin', 'domains'] as const;
type ChangeKey = (typeof CHANGE_KEYS)[number];

const validateScenario = compileSchema<ScenarioDocument>(scenarioSchema, [nodeSchema]);

/** One timed event of a plan: a step's change, or the end of its `for`. */
export interface PlannedEvent {
  /** Milliseconds from the scenario's start. */
  atMs: number;
  step: number;
  kind: 'change' | 'revert';
  /** `steps[0] dcDown dc1.contoso.com`, for logs and `ad get`. */
  label: string;
}

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A duration the schema accepted (`1m30s`), in milliseconds. */
function durationMs(text: string): number {
  let total = 0;
  for (const [, value, unit] of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)) total += Number(value) * UNIT_MS[unit!]!;
  return Math.round(total);
}

function changeKey(step: ScenarioStep): ChangeKey {
  return CHANGE_KEYS.find((k) => k in step)!;
}

function describe(step: ScenarioStep, index: number): string {
  const key = changeKey(step);
  const value = (step as Record<string, unknown>)[key];
  const what = key === 'domains' ? 'domains' : `${key} ${typeof value === 'string' ? value : JSON.stringify(value)}`;
  return `steps[${index}]${step.name === undefined ? '' : ` (${step.name})`} ${what}`;
}

/** Checks a parsed scenario: the schema, then exactly one change per step. Errors name the file and field. */
export function parseScenario(data: unknown, source: string): ScenarioDocument {
  const violation = firstViolation(validateScenario, data);
  if (violation !== undefined) {
    const got = violation.value !== undefined && typeof violation.value !== 'object' ? ` (got ${JSON.stringify(violation.value)})` : '';
    throw new RuntimeError('InvalidArgument', `${source}: ${violation.path === '' ? '(top level)' : violation.path}: ${violation.reason}${got}`);
  }
  const scenario = data as ScenarioDocument;
  scenario.steps.forEach((step, i) => {
    const keys = CHANGE_KEYS.filter((k) => k in step);
    if (keys.length !== 1) {
      throw new RuntimeError('InvalidArgument', `${source}: steps[${i}]: must name exactly one change (one of ${CHANGE_KEYS.join(', ')}), not ${keys.length === 0 ? 'none' : keys.join(' and ')}`);
    }
  });
  return scenario;
}

/** The times of the steps for a seed: one xoroshiro128+ stream per seed, one draw per step in order. */
export function planScenario(scenario: ScenarioDocument, seed: number): PlannedEvent[] {
  const digest = createHash('sha256').update(`ad-scenario\0${seed}`).digest();
  const rng = xoroshiro128plus(digest.readInt32BE(0));
  const events: PlannedEvent[] = [];
  scenario.steps.forEach((step, i) => {
    const jitter = step.jitter === undefined ? 0 : durationMs(step.jitter);
    const draw = uniformFloat64(rng);
    const atMs = durationMs(step.after) + Math.floor(draw * jitter);
    const label = describe(step, i);
    events.push({ atMs, step: i, kind: 'change', label });
    if (step.for !== undefined) events.push({ atMs: atMs + durationMs(step.for), step: i, kind: 'revert', label: `${label} ends` });
  });
  // Stable: events at one time keep the file's order, a step's end after its change.
  return events.map((e, order) => ({ e, order })).sort((a, b) => a.e.atMs - b.e.atMs || a.order - b.order).map(({ e }) => e);
}

function findController(domains: DomainSpec[], name: string, where: string): DomainControllerSpec {
  for (const d of domains) for (const dc of d.domainControllers) if (dc.name.toLowerCase() === name.toLowerCase()) return dc;
  throw new RuntimeError('FailedPrecondition', `${where}: no domain controller ${JSON.stringify(name)} in the domain`);
}

function findDomain(domains: DomainSpec[], name: string, where: string): DomainSpec {
  const found = domains.find((d) => d.dnsName.toLowerCase() === name.toLowerCase() || d.netbiosName.toLowerCase() === name.toLowerCase());
  if (found === undefined) throw new RuntimeError('FailedPrecondition', `${where}: no domain ${JSON.stringify(name)}`);
  return found;
}

function findGmsa(domains: DomainSpec[], name: string, where: string): { domain: DomainSpec; gmsa: GmsaSpec } {
  const bare = name.replace(/\$$/, '').toLowerCase();
  for (const domain of domains) for (const gmsa of domain.gmsas ?? []) if (gmsa.name.toLowerCase() === bare) return { domain, gmsa };
  throw new RuntimeError('FailedPrecondition', `${where}: no gMSA ${JSON.stringify(name)} in the domain`);
}

/** The document after `step`'s change of `state` (a copy; the state is frozen). */
export function changedDocument(state: DomainState, step: ScenarioStep, where: string): ActiveDirectoryDocument {
  const domains = structuredClone(state.domains) as DomainSpec[];
  let ccgPlugins = structuredClone(state.ccgPlugins) as { pluginGuid: string; healthy: boolean }[];
  if ('domains' in step) return { domains: structuredClone(step.domains), ccgPlugins };
  if ('dcDown' in step) findController(domains, step.dcDown, where).reachable = false;
  else if ('dcUp' in step) {
    const dc = findController(domains, step.dcUp, where);
    dc.reachable = true;
    delete dc.unreachableFrom;
  } else if ('dcUnreachableFrom' in step) findController(domains, step.dcUnreachableFrom.dc, where).unreachableFrom = [...step.dcUnreachableFrom.nodes];
  else if ('clockSkew' in step) findController(domains, step.clockSkew.dc, where).clockSkewSeconds = step.clockSkew.seconds;
  else if ('dnsFails' in step) findDomain(domains, step.dnsFails, where).dnsResolvable = false;
  else if ('dnsResolves' in step) findDomain(domains, step.dnsResolves, where).dnsResolvable = true;
  else if ('rotatePassword' in step) {
    const { gmsa } = findGmsa(domains, step.rotatePassword, where);
    gmsa.passwordVersion = (gmsa.passwordVersion ?? 1) + 1;
  } else if ('deleteGmsa' in step) {
    const { domain, gmsa } = findGmsa(domains, step.deleteGmsa, where);
    domain.gmsas = domain.gmsas!.filter((g) => g !== gmsa);
  } else if ('allowPrincipal' in step) {
    const { gmsa } = findGmsa(domains, step.allowPrincipal.gmsa, where);
    const p = step.allowPrincipal.principal;
    if (!gmsa.principalsAllowedToRetrieveManagedPassword.some((q) => q.toLowerCase() === p.toLowerCase())) gmsa.principalsAllowedToRetrieveManagedPassword.push(p);
  } else if ('denyPrincipal' in step) {
    const { gmsa } = findGmsa(domains, step.denyPrincipal.gmsa, where);
    const p = step.denyPrincipal.principal.toLowerCase();
    gmsa.principalsAllowedToRetrieveManagedPassword = gmsa.principalsAllowedToRetrieveManagedPassword.filter((q) => q.toLowerCase() !== p);
  } else if ('ccgPlugin' in step) {
    const guid = step.ccgPlugin.pluginGuid.toLowerCase();
    ccgPlugins = [...ccgPlugins.filter((c) => c.pluginGuid.toLowerCase() !== guid), { ...step.ccgPlugin }];
  }
  return { domains, ccgPlugins };
}

/** What a scenario did: one entry per event, in the order they happened. */
export interface ScenarioOutcome {
  label: string;
  /** The generation the event made, or the error that stopped it. */
  generation?: number;
  error?: string;
}

/**
 * A scenario running against a live domain: one timer per event, all of them the runner's and
 * cleared by `stop` (the runtime stops its scenario when it closes or starts another).
 */
export class ScenarioRunner {
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The document before each step's change, for its `for`. */
  private readonly before = new Map<number, ActiveDirectoryDocument>();
  readonly outcomes: ScenarioOutcome[] = [];
  private pending: number;

  constructor(
    private readonly domain: LiveDomain,
    private readonly scenario: ScenarioDocument,
    readonly source: string,
    readonly plan: readonly PlannedEvent[],
    private readonly logger: Logger,
  ) {
    this.pending = plan.length;
    // Every named thing must exist now: a typo is refused before anything is scheduled.
    scenario.steps.forEach((step, i) => changedDocument(domain.current, step, `${source}: steps[${i}]`));
    for (const event of plan) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.fire(event);
      }, event.atMs);
      this.timers.add(timer);
    }
  }

  /** Events not yet happened. */
  get remaining(): number {
    return this.pending;
  }

  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private fire(event: PlannedEvent): void {
    this.pending--;
    const step = this.scenario.steps[event.step]!;
    const source = `${this.source} ${event.label}`;
    try {
      let next: ActiveDirectoryDocument;
      if (event.kind === 'change') {
        const current = this.domain.current;
        this.before.set(event.step, { domains: structuredClone(current.domains) as DomainSpec[], ccgPlugins: structuredClone(current.ccgPlugins) as { pluginGuid: string; healthy: boolean }[] });
        next = changedDocument(current, step, `${this.source}: steps[${event.step}]`);
      } else {
        next = this.before.get(event.step)!;
      }
      const state = this.domain.apply(next, source);
      this.outcomes.push({ label: event.label, generation: state.generation });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.outcomes.push({ label: event.label, error: message });
      this.logger.warn({ scenario: this.source, event: event.label, err: message }, 'active directory scenario step failed');
    }
  }
}

/** `+30.000s steps[0] (dc outage) dcDown dc1.contoso.com`: a plan as `ad apply --scenario` prints it. */
export function formatPlan(plan: readonly PlannedEvent[]): string[] {
  return plan.map((e) => `+${(e.atMs / 1000).toFixed(3)}s ${e.label}`);
}
