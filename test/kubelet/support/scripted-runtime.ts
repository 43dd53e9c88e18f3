import * as grpc from '@grpc/grpc-js';
import { imageServiceDefinition, runtimeServiceDefinition } from '../../../src/cri/proto.js';
import type { ContainerConfig__Output } from '../../../src/generated/runtime/v1/ContainerConfig.js';

/**
 * A scripted CRI runtime on a temporary unix socket: it records what the kubelet sends and fails
 * where a test asks it to, so the worker's reasons can be checked at the wire.
 */
export class ScriptedRuntime {
  readonly calls: string[] = [];
  readonly created: ContainerConfig__Output[] = [];
  readonly images = new Map<string, string>([['nano:ltsc2022', 'ContainerUser'], ['servercore:ltsc2022', 'ContainerAdministrator']]);
  failSandbox = false;
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
      RunPodSandbox: handle('RunPodSandbox', () => {
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
      PullImage: handle('PullImage', (req) => {
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

