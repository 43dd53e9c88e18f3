// docker-compose.yml is checked here as `docker compose config` would check it (there is no
// Docker engine in CI): against the Compose specification's JSON schema, then for the things the
// schema cannot say (dependencies, volumes, the shared socket, exec-form commands). Each check is
// also run on a broken copy, so a check that cannot fail would show.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeFlagsShebang } from '../../src/tuning/node-flags.js';
import { repoRoot } from '../support/paths.js';
import {
  composeFilePath,
  composeProblems,
  composeSchemaErrors,
  dockerfileStage,
  dockerfileStages,
  loadComposeFile,
  parseComposeText,
  serviceArgv,
  startOrder,
  type ComposeFile,
} from './compose-file.js';

const SOCKET = 'unix:///run/cri-winsim/cri.sock';

/** A deep copy of the project's compose file to break. */
const copy = (): ComposeFile => structuredClone(loadComposeFile());

describe('docker-compose.yml', function () {
  it('is valid against the Compose specification schema', function () {
    expect(composeSchemaErrors(loadComposeFile())).to.deep.equal([]);
  });

  it('the schema check rejects what the specification rejects', function () {
    const unknownKey = copy();
    unknownKey.services.runtime!.helthcheck = { test: ['CMD', 'true'] };
    expect(composeSchemaErrors(unknownKey).join('\n')).to.match(/\/services\/runtime must NOT have additional properties.*helthcheck/);

    const badCondition = copy();
    badCondition.services.kubelet!.depends_on = { runtime: { condition: 'service_ready' } };
    expect(composeSchemaErrors(badCondition).join('\n')).to.include('/services/kubelet/depends_on');

    const badDuration = copy();
    badDuration.services.runtime!.healthcheck!.interval = 'two seconds';
    expect(composeSchemaErrors(badDuration).join('\n')).to.include('/services/runtime/healthcheck/interval must match format "duration"');
  });

  it('passes the checks docker compose config makes beyond the schema', function () {
    expect(composeProblems(loadComposeFile())).to.deep.equal([]);
  });

  it('names the problem when a dependency, a volume or the socket is wrong', function () {
    const unknownDependency = copy();
    unknownDependency.services.crictl!.depends_on = { runtiem: { condition: 'service_healthy' } };
    expect(composeProblems(unknownDependency)).to.include('service crictl depends on undefined service runtiem');

    const cycle = copy();
    cycle.services.runtime!.depends_on = { crictl: { condition: 'service_started' } };
    expect(composeProblems(cycle)).to.include('dependency cycle: runtime -> crictl -> runtime');

    const noHealthcheck = copy();
    delete noHealthcheck.services.runtime!.healthcheck;
    expect(composeProblems(noHealthcheck)).to.include('service kubelet waits for runtime to be healthy, but runtime has no healthcheck');

    const undeclared = copy();
    delete undeclared.volumes!['pod-logs'];
    expect(composeProblems(undeclared)).to.include('service runtime uses undeclared volume pod-logs');

    const notShared = copy();
    notShared.services.kubelet!.volumes = ['pod-logs:/var/log/pods'];
    expect(composeProblems(notShared)).to.include(`service kubelet uses ${SOCKET} but does not mount volume cri-socket at /run/cri-winsim`);

    const otherSocket = copy();
    otherSocket.services.tests!.command = ['--runtime-endpoint', 'unix:///run/other.sock'];
    expect(composeProblems(otherSocket)).to.include(`service tests uses unix:///run/other.sock, not the runtime's socket ${SOCKET}`);

    const shellForm = copy();
    shellForm.services.kubelet!.command = `kubelet run x.yaml --runtime-endpoint ${SOCKET}`;
    expect(composeProblems(shellForm)).to.include(
      `service kubelet: command must be an array of strings (exec form), not ${JSON.stringify(shellForm.services.kubelet!.command)}`,
    );
  });

  it('has the four services, started runtime first, and every client waits for a healthy runtime', function () {
    const file = loadComposeFile();
    expect(Object.keys(file.services).sort()).to.deep.equal(['crictl', 'kubelet', 'runtime', 'tests']);
    expect(startOrder(file)).to.deep.equal(['runtime', 'kubelet', 'crictl', 'tests']);
    for (const client of ['kubelet', 'crictl', 'tests']) {
      expect(file.services[client]!.depends_on, client).to.deep.include({ runtime: { condition: 'service_healthy' } });
    }
    // crictl lists what the kubelet created, so it waits for the kubelet to finish.
    expect(file.services.crictl!.depends_on).to.deep.include({ kubelet: { condition: 'service_completed_successfully' } });
  });

  it('applies YAML merge keys as Compose does', function () {
    const text = readFileSync(composeFilePath, 'utf8');
    expect(text).to.include('<<: *app');
    const runtime = parseComposeText(text).services.runtime!;
    expect(runtime.build).to.deep.equal({ context: '.', target: 'app', network: 'host' });
    expect(runtime.image).to.equal('cri-winsim:dev');
  });

  it('gives no service a network (the socket volume connects them) and builds on the host network', function () {
    // A container on a bridge network has an address on a private range and sends packets from
    // it; these services need none. The clients of the runtime's streaming server and pod IPs
    // share its loopback. Builds reach the package registries as the host does.
    const file = loadComposeFile();
    const sharesRuntimeLoopback = new Set(['crictl', 'tests']);
    for (const [name, service] of Object.entries(file.services)) {
      expect(service.network_mode, `service ${name} network_mode`).to.equal(sharesRuntimeLoopback.has(name) ? 'service:runtime' : 'none');
      expect(service.networks, `service ${name} networks`).to.equal(undefined);
      expect(service.build, `service ${name} build`).to.include({ network: 'host' });
    }
    expect(file.networks, 'top-level networks').to.equal(undefined);
  });
});

describe('Dockerfile', function () {
  it('ends the app stage with ENTRYPOINT dist/src/cli.js in /app: its #! line carries the node flags', function () {
    const app = dockerfileStage('app');
    expect(app.entrypoint).to.deep.equal(['dist/src/cli.js']);
    expect(readFileSync(join(repoRoot, 'dist', 'src', 'cli.js'), 'utf8').split('\n', 1)[0]).to.equal(nodeFlagsShebang());
    expect(app.workdir).to.equal('/app');
  });

  it('has the stages the compose file builds, and the cri-tools stage runs the install script', function () {
    const text = readFileSync(composeFilePath.replace(/docker-compose\.yml$/, 'Dockerfile'), 'utf8');
    const names = dockerfileStages(text).map((s) => s.name);
    expect(names).to.include.members(['cri-tools', 'build', 'crictl', 'app']);
    expect(text).to.match(/^RUN node scripts\/install-tools\.mjs cri-tools /m);
    expect(text).to.match(/^RUN npm ci\b/m);
    expect(text).to.match(/^RUN npm run build$/m);
  });

  it('refuses a shell-form ENTRYPOINT (the compose command would be ignored)', function () {
    expect(() => dockerfileStages('FROM x AS app\nENTRYPOINT node dist/src/cli.js\n')).to.throw(
      'Dockerfile stage app: ENTRYPOINT must be in exec form (a JSON array): node dist/src/cli.js',
    );
  });

  it('gives every service an argv: image entrypoint + compose command', function () {
    const file = loadComposeFile();
    expect(serviceArgv(file, 'runtime').argv.slice(0, 3)).to.deep.equal(['dist/src/cli.js', 'runtime', '--listen']);
    expect(serviceArgv(file, 'crictl').argv[0]).to.equal('crictl');
    expect(serviceArgv(file, 'tests').argv.slice(0, 2)).to.deep.equal(['node', 'dist/test/compose/critest-service.js']);
  });
});
