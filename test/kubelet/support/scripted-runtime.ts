import * as grpc from '@grpc/grpc-js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCriClient, imageServiceDefinition, runtimeServiceDefinition, type CriClient } from '../../../src/cri/proto.js';
import type { ContainerConfig__Output } from '../../../src/generated/runtime/v1/ContainerConfig.js';

/**
 * A scripted CRI runtime on a temporary unix socket: it records what the kubelet sends and fails
 * where a test asks it to, so the worker's reasons can be checked at the wire.
 */
export class ScriptedRuntime {
  readonly calls: string[] = [];
  readonly created: ContainerConfig__Output[] = [];
  /** The ExecSync requests: command and timeout. */
  readonly execs: { cmd: string[]; timeout: number }[] = [];
  readonly images = new Map<string, string>([['nano:ltsc2022', 'ContainerUser'], ['servercore:ltsc2022', 'ContainerAdministrator']]);
  failSandbox = false;
  /** RunPodSandbox's runtime_handler, per call. */
  readonly sandboxHandlers: string[] = [];
  /** PullImage's auth per call: the user name and whether a password came (never the password). */
  readonly pullAuths: ({ username: string; password: boolean } | null)[] = [];
  private readonly exits = new Map<string, number>();
  private readonly names = new Map<string, string>();
  private server = new grpc.Server();

  async listen(socket: string): Promise<void> {
    const fail = (code: grpc.status, details: string) => Object.assign(new Error(details), { code, details });
    // A test double: it reads the decoded requests loosely.
    type Request = any;
    const handle =
      (name: string, fn: (req: Request) => unknown): grpc.handleUnaryCall<Request, unknown> =>
      (call, callback) => {
        this.calls.push(name);
        try {
          callback(null, fn(call.request));
        } catch (err) {
          callback(err as grpc.ServiceError);
        }
      };
    this.server.addService(runtimeServiceDefinition(), {
      RunPodSandbox: handle('RunPodSandbox', (req) => {
        this.sandboxHandlers.push(req.runtime_handler);
        if (req.runtime_handler === 'missing-handler') throw fail(grpc.status.UNKNOWN, `failed to get sandbox runtime: no runtime for "missing-handler" is configured`);
        if (this.failSandbox) throw fail(grpc.status.UNKNOWN, 'failed to set up sandbox network');
        return { pod_sandbox_id: 'sandbox-1' };
      }),
      CreateContainer: handle('CreateContainer', (req) => {
        const config = req.config as ContainerConfig__Output;
        const credentialSpec = config.windows?.security_context?.credential_spec ?? '';
        if (credentialSpec.includes('broken') || (credentialSpec.includes('DomainJoinConfig') && !credentialSpec.includes('"Sid"'))) {
          throw fail(grpc.status.INVALID_ARGUMENT, 'invalid credential spec: missing DomainJoinConfig.Sid');
        }
        this.created.push(config);
        const id = `ctr-${config.metadata!.name}`;
        this.names.set(id, config.metadata!.name);
        this.exits.set(id, config.command[0] === 'exit' ? Number(config.command[1]) : 0);
        return { container_id: id };
      }),
      StartContainer: handle('StartContainer', (req) => {
        if (this.names.get(req.container_id) === 'crash') throw fail(grpc.status.UNKNOWN, 'The user name or password is incorrect.');
        return {};
      }),
      // ExecSync: `slow` outlives its timeout, `gone` names no container, `exit N` exits N with output.
      ExecSync: handle('ExecSync', (req) => {
        this.execs.push({ cmd: req.cmd, timeout: Number(req.timeout) });
        if (req.cmd[0] === 'slow') throw fail(grpc.status.DEADLINE_EXCEEDED, 'command timed out');
        if (req.cmd[0] === 'gone') throw fail(grpc.status.NOT_FOUND, `container ${req.container_id} not found`);
        return { stdout: Buffer.from('out;'), stderr: Buffer.from('err'), exit_code: req.cmd[0] === 'exit' ? Number(req.cmd[1]) : 0 };
      }),
      // The node starts empty: nothing runs that the kubelet did not start here.
      ListPodSandbox: handle('ListPodSandbox', () => ({ items: [] })),
      ListContainers: handle('ListContainers', () => ({ containers: [] })),
      ContainerStatus: handle('ContainerStatus', (req) => ({
        status: { id: req.container_id, state: 2, exit_code: this.exits.get(req.container_id) ?? 0, reason: '', message: '' },
      })),
    });
    this.server.addService(imageServiceDefinition(), {
      ImageStatus: handle('ImageStatus', (req) => {
        const user = this.images.get(req.image.image);
        return { image: user === undefined ? null : { id: `sha256:${req.image.image}`, username: user, size: '1' } };
      }),
      // private.example.com wants robot/hunter2; other registries take anyone.
      PullImage: handle('PullImage', (req) => {
        this.pullAuths.push(req.auth === null ? null : { username: req.auth.username, password: req.auth.password !== '' });
        if (String(req.image.image).startsWith('private.example.com/') && (req.auth?.username !== 'robot' || req.auth?.password !== 'hunter2')) {
          throw fail(grpc.status.UNKNOWN, `failed to pull and unpack image "${req.image.image}": 401 Unauthorized`);
        }
        if (String(req.image.image).startsWith('missing')) throw fail(grpc.status.NOT_FOUND, `image ${req.image.image} not found`);
        this.images.set(req.image.image, 'ContainerUser');
        return { image_ref: req.image.image };
      }),
    });
    await new Promise<void>((resolve, reject) =>
      this.server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
  }

  stop(): void {
    this.server.forceShutdown();
  }
}


/** What each test of a suite gets from useScriptedRuntime (set before each test). */
export interface ScriptedRuntimeFixture {
  /** A fresh temporary directory (removed after the test). */
  dir: string;
  runtime: ScriptedRuntime;
  cri: CriClient;
}

/**
 * For every test of the calling suite: a ScriptedRuntime on a socket in a fresh temporary
 * directory and a CRI client for it, all closed and removed after the test.
 */
export function useScriptedRuntime(prefix: string): ScriptedRuntimeFixture {
  const fx = {} as ScriptedRuntimeFixture;
  beforeEach(async () => {
    fx.dir = await mkdtemp(join(tmpdir(), prefix));
    fx.runtime = new ScriptedRuntime();
    await fx.runtime.listen(join(fx.dir, 'cri.sock'));
    fx.cri = createCriClient(`unix://${join(fx.dir, 'cri.sock')}`);
  });
  afterEach(async () => {
    fx.cri.close();
    fx.runtime.stop();
    await rm(fx.dir, { recursive: true, force: true });
  });
  return fx;
}
