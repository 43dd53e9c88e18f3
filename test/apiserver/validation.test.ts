import { expect } from 'chai';
import type { V1Container, V1Pod, V1WindowsSecurityContextOptions } from '@kubernetes/client-node';
import { formatFieldError } from '../../src/apiserver/field-errors.js';
import { validatePod, validateWindowsOptions } from '../../src/apiserver/validation.js';

const path = 'spec.containers[0].securityContext.windowsOptions';
const messages = (options: V1WindowsSecurityContextOptions): string[] => validateWindowsOptions(options, path).map(formatFieldError);
const userNameError = (value: string, detail: string): string => `${path}.runAsUserName: Invalid value: ${JSON.stringify(value)}: ${detail}`;

describe('windowsOptions validation (validateWindowsSecurityContextOptions)', () => {
  const subdomainDetail =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  const cases: { name: string; options: V1WindowsSecurityContextOptions; expected: string[] }[] = [
    { name: 'valid name, spec and domain user', options: { gmsaCredentialSpecName: 'webapplication1', gmsaCredentialSpec: '{}', runAsUserName: 'DEMO\\WebApp' }, expected: [] },
    { name: 'user without domain', options: { runAsUserName: 'ContainerUser' }, expected: [] },
    { name: 'DNS domain', options: { runAsUserName: 'contoso.com\\svc-web' }, expected: [] },
    { name: 'NetBIOS domain with a space', options: { runAsUserName: 'NT AUTHORITY\\NETWORK SERVICE' }, expected: [] },
    {
      name: 'gmsaCredentialSpecName must be a DNS-1123 subdomain',
      options: { gmsaCredentialSpecName: 'WebApplication1' },
      expected: [`${path}.gmsaCredentialSpecName: Invalid value: "WebApplication1": ${subdomainDetail}`],
    },
    {
      name: 'gmsaCredentialSpecName longer than 253',
      options: { gmsaCredentialSpecName: 'a'.repeat(254) },
      expected: [`${path}.gmsaCredentialSpecName: Invalid value: "${'a'.repeat(254)}": must be no more than 253 characters`],
    },
    { name: 'empty gmsaCredentialSpec', options: { gmsaCredentialSpec: '' }, expected: [`${path}.gmsaCredentialSpec: Invalid value: "": gmsaCredentialSpec cannot be an empty string`] },
    { name: 'gmsaCredentialSpec of exactly 64 KiB is accepted', options: { gmsaCredentialSpec: 'x'.repeat(65536) }, expected: [] },
    {
      name: 'gmsaCredentialSpec over 64 KiB',
      options: { gmsaCredentialSpec: 'x'.repeat(65537) },
      expected: [`${path}.gmsaCredentialSpec: Invalid value: "${'x'.repeat(65537)}": gmsaCredentialSpec size must be under 64 KiB`],
    },
    { name: 'empty runAsUserName', options: { runAsUserName: '' }, expected: [userNameError('', 'runAsUserName cannot be an empty string')] },
    { name: 'control characters (and nothing else is checked)', options: { runAsUserName: 'a\tb\\c\\d' }, expected: [userNameError('a\tb\\c\\d', 'runAsUserName cannot contain control characters')] },
    { name: 'more than one backslash (and nothing else is checked)', options: { runAsUserName: 'a\\b\\' }, expected: [userNameError('a\\b\\', 'runAsUserName cannot contain more than one backslash')] },
    {
      name: 'domain of 256 bytes is too long and matches neither format',
      options: { runAsUserName: `${'d'.repeat(256)}\\user` },
      expected: [
        userNameError(`${'d'.repeat(256)}\\user`, "runAsUserName's Domain length must be under 256 characters"),
        userNameError(`${'d'.repeat(256)}\\user`, "runAsUserName's Domain doesn't match the NetBios nor the DNS format"),
      ],
    },
    { name: 'domain starting with a dot', options: { runAsUserName: '.demo\\user' }, expected: [userNameError('.demo\\user', "runAsUserName's Domain doesn't match the NetBios nor the DNS format")] },
    { name: 'empty domain before the backslash', options: { runAsUserName: '\\user' }, expected: [userNameError('\\user', "runAsUserName's Domain doesn't match the NetBios nor the DNS format")] },
    { name: 'empty user after the backslash', options: { runAsUserName: 'DEMO\\' }, expected: [userNameError('DEMO\\', "runAsUserName's User cannot be empty")] },
    {
      name: 'user longer than 104 bytes',
      options: { runAsUserName: 'u'.repeat(105) },
      expected: [userNameError('u'.repeat(105), "runAsUserName's User length must not be longer than 104 characters")],
    },
    {
      name: 'length is counted in bytes: 53 two-byte characters are too long',
      options: { runAsUserName: 'é'.repeat(53) },
      expected: [userNameError('é'.repeat(53), "runAsUserName's User length must not be longer than 104 characters")],
    },
    { name: 'user of only periods and spaces', options: { runAsUserName: 'DEMO\\. .' }, expected: [userNameError('DEMO\\. .', "runAsUserName's User cannot contain only periods or spaces")] },
    ...['"', '/', ':', ';', '|', '=', ',', '+', '*', '?', '<', '>', '@', '[', ']'].map((ch) => ({
      name: `user containing ${ch}`,
      options: { runAsUserName: `web${ch}app` },
      expected: [userNameError(`web${ch}app`, `runAsUserName's User cannot contain the following characters: "/\\:;|=,+*?<>@[]`)],
    })),
    {
      name: 'every field wrong at once: all errors, in order',
      options: { gmsaCredentialSpecName: 'Bad_Name', gmsaCredentialSpec: '', runAsUserName: 'DEMO\\' },
      expected: [
        `${path}.gmsaCredentialSpecName: Invalid value: "Bad_Name": ${subdomainDetail}`,
        `${path}.gmsaCredentialSpec: Invalid value: "": gmsaCredentialSpec cannot be an empty string`,
        userNameError('DEMO\\', "runAsUserName's User cannot be empty"),
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(messages(c.options)).to.deep.equal(c.expected);
    });
  }
});

const container = (name: string, hostProcess?: boolean): V1Container => ({
  name,
  image: 'mcr.microsoft.com/windows/nanoserver:ltsc2022',
  ...(hostProcess === undefined ? {} : { securityContext: { windowsOptions: { hostProcess } } }),
});
const pod = (spec: Partial<V1Pod['spec']> & { containers: V1Container[] }): V1Pod => ({ metadata: { name: 'web', namespace: 'default' }, spec });
const podErrors = (p: V1Pod, allowPrivileged = true): string[] => validatePod(p, { allowPrivileged }).map(formatFieldError);

describe('hostProcess validation (validateWindowsHostProcessPod)', () => {
  const cases: { name: string; pod: V1Pod; allowPrivileged?: boolean; expected: string[] }[] = [
    { name: 'all HostProcess with hostNetwork', pod: pod({ hostNetwork: true, securityContext: { windowsOptions: { hostProcess: true } }, containers: [container('a'), container('b')] }), expected: [] },
    {
      name: 'container disagrees with the pod while another inherits it',
      pod: pod({ hostNetwork: true, securityContext: { windowsOptions: { hostProcess: true } }, containers: [container('a', false), container('b')] }),
      expected: [
        'spec.containers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true',
        'spec: Invalid value: "": If pod contains any hostProcess containers then all containers must be HostProcess containers',
      ],
    },
    {
      name: 'container disagrees with the pod and is the only one: only the mismatch',
      pod: pod({ hostNetwork: true, securityContext: { windowsOptions: { hostProcess: true } }, containers: [container('a', false)] }),
      expected: ['spec.containers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true'],
    },
    {
      name: 'one HostProcess container among others',
      pod: pod({ hostNetwork: true, containers: [container('a', true), container('b')] }),
      expected: ['spec: Invalid value: "": If pod contains any hostProcess containers then all containers must be HostProcess containers'],
    },
    {
      name: 'init containers count',
      pod: pod({ hostNetwork: true, initContainers: [container('init')], containers: [container('a', true)] }),
      expected: ['spec: Invalid value: "": If pod contains any hostProcess containers then all containers must be HostProcess containers'],
    },
    {
      name: 'hostNetwork missing',
      pod: pod({ containers: [container('a', true)] }),
      expected: ['spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers'],
    },
    {
      name: 'disallowed by cluster policy without --allow-privileged',
      pod: pod({ hostNetwork: true, containers: [container('a', true)] }),
      allowPrivileged: false,
      expected: ['spec: Forbidden: hostProcess containers are disallowed by cluster policy'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(podErrors(c.pod, c.allowPrivileged)).to.deep.equal(c.expected);
    });
  }
});

describe('pod validation (the fields the node path relies on)', () => {
  const cases: { name: string; pod: V1Pod; expected: string[] }[] = [
    { name: 'a minimal pod is valid', pod: pod({ containers: [container('a')] }), expected: [] },
    { name: 'no name', pod: { metadata: {}, spec: { containers: [container('a')] } }, expected: ['metadata.name: Required value: name or generateName is required'] },
    { name: 'no containers', pod: pod({ containers: [] }), expected: ['spec.containers: Required value'] },
    { name: 'container without name or image', pod: pod({ containers: [{ name: '' }] }), expected: ['spec.containers[0].name: Required value', 'spec.containers[0].image: Required value'] },
    { name: 'duplicate container names (init and regular share one namespace)', pod: pod({ containers: [container('a')], initContainers: [container('a')] }), expected: ['spec.initContainers[0].name: Duplicate value: "a"'] },
    {
      name: 'windowsOptions checked at pod and container level with their paths',
      pod: pod({ securityContext: { windowsOptions: { runAsUserName: '' } }, containers: [{ ...container('a'), securityContext: { windowsOptions: { gmsaCredentialSpec: '' } } }] }),
      expected: [
        'spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpec: Invalid value: "": gmsaCredentialSpec cannot be an empty string',
        'spec.securityContext.windowsOptions.runAsUserName: Invalid value: "": runAsUserName cannot be an empty string',
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(podErrors(c.pod)).to.deep.equal(c.expected);
    });
  }
});

// validateOS / validateLinux / validateWindows and ValidatePodCreate's ephemeral-container rule,
// pkg/apis/core/validation/validation.go of kubernetes v1.34.12.
describe('os.name validation (validateOS, validateLinux, validateWindows)', () => {
  const windowsPod = (spec: Partial<V1Pod['spec']>): V1Pod => ({
    metadata: { name: 'p' },
    spec: { os: { name: 'windows' }, containers: [{ name: 'c', image: 'nanoserver' }], ...spec },
  });
  const errors = (pod: V1Pod): string[] => validatePod(pod).map(formatFieldError);
  const cases: { name: string; pod: V1Pod; expected: string[] }[] = [
    { name: 'a windows pod with windowsOptions only is valid', pod: windowsPod({ securityContext: { windowsOptions: { runAsUserName: 'ContainerUser' } } }), expected: [] },
    {
      name: 'windows options on a linux pod, pod and container level',
      pod: {
        metadata: { name: 'p' },
        spec: {
          os: { name: 'linux' },
          securityContext: { windowsOptions: { runAsUserName: 'ContainerUser' } },
          containers: [{ name: 'c', image: 'busybox', securityContext: { windowsOptions: { runAsUserName: 'ContainerUser' } } }],
        },
      },
      expected: [
        'spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod',
        'spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod',
      ],
    },
    {
      name: 'linux pod fields on a windows pod, in upstream order',
      pod: windowsPod({
        hostPID: true,
        shareProcessNamespace: false,
        hostUsers: true,
        securityContext: { runAsUser: 1000, fsGroup: 2000, seccompProfile: { type: 'RuntimeDefault' }, sysctls: [{ name: 'kernel.shm_rmid_forced', value: '0' }] },
      }),
      expected: [
        'spec.hostUsers: Forbidden: cannot be set for a windows pod',
        'spec.hostPID: Forbidden: cannot be set for a windows pod',
        'spec.securityContext.seccompProfile: Forbidden: cannot be set for a windows pod',
        'spec.securityContext.fsGroup: Forbidden: cannot be set for a windows pod',
        'spec.securityContext.sysctls: Forbidden: cannot be set for a windows pod',
        'spec.shareProcessNamespace: Forbidden: cannot be set for a windows pod',
        'spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod',
      ],
    },
    {
      name: 'linux container fields on a windows pod, init containers first',
      pod: windowsPod({
        initContainers: [{ name: 'init', image: 'nanoserver', securityContext: { privileged: false } }],
        containers: [{ name: 'c', image: 'nanoserver', securityContext: { capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true, runAsGroup: 3 } }],
      }),
      expected: [
        'spec.initContainers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod',
        'spec.containers[0].securityContext.capabilities: Forbidden: cannot be set for a windows pod',
        'spec.containers[0].securityContext.readOnlyRootFilesystem: Forbidden: cannot be set for a windows pod',
        'spec.containers[0].securityContext.runAsGroup: Forbidden: cannot be set for a windows pod',
      ],
    },
    { name: 'an empty os.name is required', pod: windowsPod({ os: { name: '' } }), expected: ['spec.os.name: Required value: cannot be empty'] },
    { name: 'an unknown os.name', pod: windowsPod({ os: { name: 'darwin' } }), expected: ['spec.os: Unsupported value: "darwin": supported values: "linux", "windows"'] },
    {
      name: 'ephemeral containers: windowsOptions validated, and refused on create',
      pod: windowsPod({ ephemeralContainers: [{ name: 'debug', image: 'nanoserver', securityContext: { windowsOptions: { runAsUserName: '' } } }] }),
      expected: [
        'spec.ephemeralContainers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "": runAsUserName cannot be an empty string',
        'spec.ephemeralContainers: Forbidden: cannot be set on create',
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(errors(c.pod)).to.deep.equal(c.expected);
    });
  }

});

// kubernetes v1.34.12 pkg/apis/core/validation/validation.go ValidateTolerations (run by
// ValidatePodSpec on create and update), apimachinery v0.34.12 IsQualifiedName, IsValidLabelValue.
describe('tolerations validation (ValidateTolerations)', () => {
  const pod = (tolerations: NonNullable<V1Pod['spec']>['tolerations']): V1Pod => ({ metadata: { name: 'web' }, spec: { containers: [{ name: 'c', image: 'x' }], tolerations } });
  const cases: [string, NonNullable<V1Pod['spec']>['tolerations'], string[]][] = [
    ['match everything', [{ operator: 'Exists' }], []],
    ['a NoExecute toleration with seconds', [{ key: 'example.com/k', operator: 'Equal', value: 'v', effect: 'NoExecute', tolerationSeconds: 30 }], []],
    ['an empty key needs Exists', [{ value: 'v' }], ['spec.tolerations[0].operator: Invalid value: "": operator must be Exists when `key` is empty, which means "match all values and all keys"']],
    [
      'a key with an empty prefix, a value too long for a label',
      [{ key: '/k', value: 'v'.repeat(64) }],
      [
        'spec.tolerations[0].key: Invalid value: "/k": prefix part must be non-empty',
        `spec.tolerations[0].operator: Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`,
      ],
    ],
    [
      'a value that is not a label value',
      [{ key: 'k', value: '-x' }],
      ["spec.tolerations[0].operator: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"],
    ],
  ];
  for (const [name, tolerations, expected] of cases) {
    it(name, () => expect(validatePod(pod(tolerations)).map(formatFieldError)).to.deep.equal(expected));
  }
});

// validateProbe, validateHandler, validateLivenessProbe/ReadinessProbe/StartupProbe, ValidatePortNumOrName
// (pkg/apis/core/validation/validation.go, kubernetes v1.34.12; apimachinery v0.34.12 util/validation).
describe('probe validation (validateProbe)', () => {
  const probed = (extra: Partial<V1Container>, init = false): V1Pod => ({
    metadata: { name: 'web', namespace: 'apps' },
    spec: init ? { containers: [{ name: 'app', image: 'img' }], initContainers: [{ name: 'setup', image: 'img', ...extra }] } : { containers: [{ name: 'app', image: 'img', ...extra }] },
  });
  const errors = (pod: V1Pod): string[] => validatePod(pod).map(formatFieldError);
  const p = 'spec.containers[0]';
  const cases: { name: string; container: Partial<V1Container>; init?: boolean; expected: string[] }[] = [
    { name: 'a valid probe of each kind, defaults unset', container: { livenessProbe: { exec: { command: ['cmd', '/c', 'exit 0'] } }, readinessProbe: { httpGet: { path: '/', port: 'http' } }, startupProbe: { tcpSocket: { port: 80 } } }, expected: [] },
    { name: 'no handler', container: { readinessProbe: { periodSeconds: 1 } }, expected: [`${p}.readinessProbe: Required value: must specify a handler type`] },
    {
      name: 'two handlers',
      container: { livenessProbe: { exec: { command: ['x'] }, tcpSocket: { port: 80 } } },
      expected: [`${p}.livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type`],
    },
    { name: 'exec without a command', container: { livenessProbe: { exec: { command: [] } } }, expected: [`${p}.livenessProbe.exec.command: Required value`] },
    {
      name: 'negative timings',
      container: { readinessProbe: { grpc: { port: 9090 }, periodSeconds: -1, timeoutSeconds: -2 } },
      expected: [`${p}.readinessProbe.timeoutSeconds: Invalid value: -2: must be greater than or equal to 0`, `${p}.readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0`],
    },
    { name: 'liveness successThreshold other than 1', container: { livenessProbe: { tcpSocket: { port: 80 }, successThreshold: 2 } }, expected: [`${p}.livenessProbe.successThreshold: Invalid value: 2: must be 1`] },
    { name: 'readiness successThreshold 3 is fine', container: { readinessProbe: { tcpSocket: { port: 80 }, successThreshold: 3 } }, expected: [] },
    {
      name: 'terminationGracePeriodSeconds on a readiness probe',
      container: { readinessProbe: { tcpSocket: { port: 80 }, terminationGracePeriodSeconds: 5 } },
      expected: [`${p}.readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes`],
    },
    {
      name: 'ports out of range or badly named, an unsupported scheme, a bad header',
      container: {
        livenessProbe: { httpGet: { path: '/', port: 0, scheme: 'http', httpHeaders: [{ name: 'X_Bad', value: '1' }] } },
        readinessProbe: { tcpSocket: { port: 'Web--1' } },
      },
      expected: [
        `${p}.livenessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive`,
        `${p}.livenessProbe.httpGet.scheme: Unsupported value: "http": supported values: "HTTP", "HTTPS"`,
        `${p}.livenessProbe.httpGet.httpHeaders: Invalid value: "X_Bad": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`,
        `${p}.readinessProbe.tcpSocket.port: Invalid value: "Web--1": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
        `${p}.readinessProbe.tcpSocket.port: Invalid value: "Web--1": must not contain consecutive hyphens`,
      ],
    },
    {
      name: 'probes on an init container',
      init: true,
      container: { readinessProbe: { tcpSocket: { port: 80 } } },
      expected: ['spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always'],
    },
    { name: 'probes on a sidecar (restartPolicy Always) are validated', init: true, container: { restartPolicy: 'Always', startupProbe: { tcpSocket: { port: 80 } } }, expected: [] },
  ];
  for (const c of cases) it(c.name, () => expect(errors(probed(c.container, c.init))).to.deep.equal(c.expected));
});
