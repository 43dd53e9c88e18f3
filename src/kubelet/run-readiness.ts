/**
 * `kubelet run --wait-ready` with probes: while the command waits, the readiness and startup
 * probes of the pods it started run (prober.ts), so "ready" means what it means to the kubelet:
 * the readiness probe succeeded. What the prober found is written to each pod's record (started,
 * ready, its Unhealthy events), so `kubelet get` and `describe` show it afterwards. Liveness
 * probes are not run here: `kubelet run` makes one pass and restarts nothing; the static-pod loop
 * and node mode do.
 */
import type { CriClient } from '../cri/proto.js';
import { runInContainer } from './container-exec.js';
import { TimerWheel } from './node/timer-wheel.js';
import { mergeEvents, type PodRecordStore, type ProbeSnapshot } from './pod-records.js';
import { computePodStatus, podFailed, podSettled, type ProbeStatus } from './pod-status.js';
import type { PodView } from './pod-views.js';
import { ProbeManager, probedPod } from './prober.js';

export class RunReadiness {
  private readonly wheel = new TimerWheel();
  private readonly probes: ProbeManager;
  private writes: Promise<void> = Promise.resolve();

  constructor(
    cri: CriClient,
    private readonly records: PodRecordStore,
    callTimeoutMs: number,
  ) {
    this.probes = new ProbeManager({
      scheduler: this.wheel,
      exec: runInContainer(cri, callTimeoutMs),
      types: ['Startup', 'Readiness'],
      triggerReadiness: false,
      onResult: () => {},
      onEvent: (pod, event) => {
        const uid = pod.metadata?.uid ?? '';
        const at = new Date();
        this.writes = this.writes.then(() => this.records.update(uid, (r) => ({ ...r, events: mergeEvents(r.events, [event], at) })).catch(() => undefined));
      },
    });
  }

  /** Hands the prober the pods as just read, and records what it says of each probed one. */
  async observe(views: readonly PodView[]): Promise<void> {
    for (const view of views) {
      const uid = view.pod.metadata?.uid ?? '';
      this.probes.addPod(view.pod);
      if (!this.probes.probes(uid)) continue;
      this.probes.setPodStatus(uid, probedPod(view.status, view.nodePod));
      const live: ProbeStatus = { started: (name, id) => this.probes.isStarted(uid, name, id), ready: (name, id) => this.probes.isReady(uid, name, id) };
      const status = computePodStatus(view.pod, view.nodePod, view.record, live);
      const snapshot: Record<string, ProbeSnapshot> = {};
      for (const s of status.containerStatuses) {
        const id = s.containerID?.replace(/^[a-z-]+:\/\//, '');
        if (id !== undefined && s.state.running !== undefined) snapshot[s.name] = { containerId: id, started: s.started, ready: s.ready };
      }
      if (JSON.stringify(view.record?.probes) !== JSON.stringify(snapshot)) {
        this.writes = this.writes.then(() => this.records.update(uid, (r) => ({ ...r, probes: snapshot })).catch(() => undefined));
      }
    }
    await this.writes;
  }

  /** Done waiting for a pod: failed, completed, or settled and (with readiness or startup probes) Ready. */
  done(view: PodView): boolean {
    if (podFailed(view.status, view.record) || view.status.phase === 'Succeeded') return true;
    if (!podSettled(view.status, view.record)) return false;
    if (!(view.pod.spec?.containers ?? []).some((c) => c.readinessProbe != null || c.startupProbe != null)) return true;
    return view.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
  }

  async stop(): Promise<void> {
    this.probes.stop();
    this.wheel.stop();
    await this.writes;
  }
}
