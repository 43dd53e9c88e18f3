import { expect } from 'chai';
import { AdmissionError } from '../../src/apiserver/admission.js';
import { ManifestError } from '../../src/apiserver/manifests.js';
import { admissionErrorText, describeProbe, formatEvents, formatPodTable, manifestErrorTexts } from '../../src/kubectl/pod-printers.js';

describe('kubectl texts for refusals', () => {
  const cases: { name: string; error: AdmissionError; expected: string }[] = [
    {
      name: 'a webhook denial has no reason: "Error from server:"',
      error: new AdmissionError(403, 'service account "reporting" is not authorized to `use` GMSA cred spec "webapplication1"', 'gmsa-webhook'),
      expected:
        'Error from server: error when creating "p.yaml": admission webhook "admission-webhook.windows-gmsa.sigs.k8s.io" denied the request: service account "reporting" is not authorized to `use` GMSA cred spec "webapplication1"',
    },
    {
      name: 'a missing namespace is NotFound',
      error: new AdmissionError(404, 'namespaces "ghost" not found', 'NamespaceLifecycle'),
      expected: 'Error from server (NotFound): error when creating "p.yaml": namespaces "ghost" not found',
    },
    {
      name: 'the ServiceAccount plugin text already names the pod',
      error: new AdmissionError(403, 'pods "web" is forbidden: error looking up service account apps/sa: serviceaccount "sa" not found', 'ServiceAccount'),
      expected: 'Error from server (Forbidden): error when creating "p.yaml": pods "web" is forbidden: error looking up service account apps/sa: serviceaccount "sa" not found',
    },
    {
      name: 'an in-tree plugin refusal gets the `pods "x" is forbidden:` prefix',
      error: new AdmissionError(403, 'user "mallory" is not authorized to `use` GMSA ConfigMap "c" in namespace "apps"', 'GMSAAuthorizer'),
      expected: 'Error from server (Forbidden): error when creating "p.yaml": pods "web" is forbidden: user "mallory" is not authorized to `use` GMSA ConfigMap "c" in namespace "apps"',
    },
    {
      name: '422 is Invalid',
      error: new AdmissionError(422, 'the GMSA cred spec contents for pod "web" does not match the contents of GMSA ConfigMap "c" in namespace "apps"', 'GMSAAuthorizer'),
      expected: 'Error from server (Invalid): error when creating "p.yaml": the GMSA cred spec contents for pod "web" does not match the contents of GMSA ConfigMap "c" in namespace "apps"',
    },
  ];
  for (const c of cases) it(c.name, () => expect(admissionErrorText(c.error, 'web', 'p.yaml')).to.equal(c.expected));

  it('validation errors of one pod are grouped as "The Pod is invalid", other errors keep their own line', () => {
    const source = { file: 'pods.yaml', document: 2 };
    const lines = manifestErrorTexts([
      new ManifestError({ file: 'pods.yaml', document: 1 }, 'invalid YAML: bad (line 3, column 1)'),
      new ManifestError(source, { path: 'spec.containers[0].name', type: 'Required value', detail: '' }, { kind: 'Pod', name: 'web' }),
      new ManifestError(source, { path: 'spec.hostNetwork', type: 'Invalid value', value: false, detail: 'hostNetwork must be true if pod contains any hostProcess containers' }, { kind: 'Pod', name: 'web' }),
      new ManifestError({ file: 'one.yaml', document: 1 }, { path: 'spec.containers', type: 'Required value', detail: '' }, { kind: 'Pod', name: 'solo' }),
    ]);
    expect(lines).to.deep.equal([
      'error: pods.yaml: document 1: invalid YAML: bad (line 3, column 1)',
      'error: pods.yaml: document 2: The Pod "web" is invalid: \n* spec.containers[0].name: Required value\n* spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers',
      'error: one.yaml: document 1: The Pod "solo" is invalid: spec.containers: Required value',
    ]);
  });

  // kubectl v0.34.12 pkg/cmd/util/helpers.go statusCausesToAggrError.
  it('prints a repeated cause once, as kubectl does', () => {
    const source = { file: 'p.yaml', document: 1 };
    const field = { path: 'spec.tolerations[0].operator', type: 'Invalid value' as const, value: 'v', detail: "value must be empty when `operator` is 'Exists'" };
    const lines = manifestErrorTexts([new ManifestError(source, field, { kind: 'Pod', name: 'web' }), new ManifestError(source, field, { kind: 'Pod', name: 'web' })]);
    expect(lines).to.deep.equal(['error: p.yaml: document 1: The Pod "web" is invalid: spec.tolerations[0].operator: Invalid value: "v": value must be empty when `operator` is \'Exists\'']);
  });
});

describe('kubectl get pods table', () => {
  const now = Date.parse('2024-01-01T01:00:00Z');
  const row = { ready: '1/1', status: 'Running', restarts: 0, podIP: '127.10.0.2', startTime: '2024-01-01T00:58:30Z', nodeName: 'winnode1' };

  it('one namespace: no NAMESPACE column; columns three spaces apart', () => {
    expect(formatPodTable([{ ...row, namespace: 'default', name: 'web' }], { now })).to.equal('NAME   READY   STATUS    RESTARTS   AGE\nweb    1/1     Running   0          90s\n');
  });

  it('several namespaces, -o wide, restarts with the last restart age', () => {
    const text = formatPodTable(
      [
        { ...row, namespace: 'a', name: 'web' },
        { ...row, namespace: 'b', name: 'crash', status: 'CrashLoopBackOff', ready: '0/1', restarts: 3, lastRestart: '2024-01-01T00:59:50Z', podIP: '' },
      ],
      { now, wide: true },
    );
    expect(text).to.equal(
      'NAMESPACE   NAME    READY   STATUS             RESTARTS      AGE   IP           NODE\n' +
        'a           web     1/1     Running            0             90s   127.10.0.2   winnode1\n' +
        'b           crash   0/1     CrashLoopBackOff   3 (10s ago)   90s   <none>       winnode1\n',
    );
  });

  it('describe events: repeats show their count', () => {
    const lines = formatEvents(
      [{ type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container', count: 4, firstTimestamp: '2024-01-01T00:58:00Z', lastTimestamp: '2024-01-01T00:59:55Z' }],
      now,
    );
    expect(lines).to.deep.equal([
      'Events:',
      '  Type      Reason    Age               From      Message',
      '  ----      ------    ----              ----      -------',
      '  Warning   BackOff   5s (x4 over 2m)   kubelet   Back-off restarting failed container',
    ]);
  });
});

// kubectl v0.34.12 pkg/describe/describe.go DescribeProbe, on probes as the API server defaults them.
describe('kubectl describe: probe lines (DescribeProbe)', () => {
  const cases: [string, Parameters<typeof describeProbe>[0], string][] = [
    ['exec, defaults', { exec: { command: ['cmd', '/c', 'exit 1'] } }, 'exec [cmd /c exit 1] delay=0s timeout=1s period=10s #success=1 #failure=3'],
    ['http-get, named port', { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 }, 'http-get http://:http/healthz delay=0s timeout=1s period=1s #success=1 #failure=3'],
    ['http-get, host and scheme', { httpGet: { host: 'example.test', path: '/', port: 8443, scheme: 'HTTPS' }, initialDelaySeconds: 5 }, 'http-get https://example.test:8443/ delay=5s timeout=1s period=10s #success=1 #failure=3'],
    ['tcp-socket', { tcpSocket: { port: 8080 }, failureThreshold: 1 }, 'tcp-socket :8080 delay=0s timeout=1s period=10s #success=1 #failure=1'],
    ['grpc', { grpc: { port: 9090, service: 'db' }, timeoutSeconds: 2 }, 'grpc <pod>:9090 db delay=0s timeout=2s period=10s #success=1 #failure=3'],
  ];
  for (const [name, probe, expected] of cases) it(name, () => expect(describeProbe(probe)).to.equal(expected));
});
