import { expect } from 'chai';
import type { V1Pod } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import {
  admitPod,
  alphaCredentialSpecFor,
  describeRejection,
  goJsonMarshal,
  readAlphaCredentialSpecs,
  validateGmsaAlphaWebhookUpdate,
  validateGmsaWebhookUpdate,
  AdmissionError,
  type AdmissionContext,
  type GmsaDesign,
} from '../../src/apiserver/admission.js';
import { DirectoryClusterSource, type ClusterSnapshot } from '../../src/apiserver/cluster.js';
import { loadPodFiles } from '../../src/apiserver/manifests.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { gmsaAdmissionCluster } from '../support/gmsa-cluster.js';

// Namespace apps, its service accounts web and batch, web allowed to use every GMSACredentialSpec,
// and these documents.
const cluster = gmsaAdmissionCluster(
  `
apiVersion: windows.k8s.io/v1
kind: GMSACredentialSpec
metadata: { name: webapp }
credspec:
  DomainJoinConfig: { Sid: S-1-5-21-1, MachineAccountName: WebApp, DnsName: "contoso.com<&>" }
  CmsPlugins: [ActiveDirectory]
---
apiVersion: windows.k8s.io/v1alpha1
kind: GMSACredentialSpec
metadata: { name: logger }
credspec: { CmsPlugins: [ActiveDirectory], DomainJoinConfig: { MachineAccountName: Logger } }
---
apiVersion: windows.k8s.io/v1
kind: GMSACredentialSpec
metadata: { name: empty }
`,
  `
apiVersion: v1
kind: ConfigMap
metadata: { name: webserver-credspec, namespace: apps }
data: { gmsa-cred-spec: '{"CmsPlugins":["ActiveDirectory"]}' }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: no-key, namespace: apps }
data: { other: x }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: credspec-cm, namespace: apps }
rules: [{ apiGroups: [""], resources: [configmaps], verbs: [use] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: credspec-cm, namespace: apps }
subjects:
  - { kind: ServiceAccount, name: web }
  - { kind: User, apiGroup: rbac.authorization.k8s.io, name: alice }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: credspec-cm }
`,
);

const webappJson = '{"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"DnsName":"contoso.com\\u003c\\u0026\\u003e","MachineAccountName":"WebApp","Sid":"S-1-5-21-1"}}';
const loggerJson = '{"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"MachineAccountName":"Logger"}}';

interface PodShape {
  serviceAccount?: string;
  namespace?: string;
  pod?: Record<string, string>;
  container?: Record<string, string>;
  annotations?: Record<string, string>;
}
const makePod = (s: PodShape): V1Pod => ({
  metadata: { name: 'web', namespace: s.namespace ?? 'apps', ...(s.annotations ? { annotations: s.annotations } : {}) },
  spec: {
    ...(s.serviceAccount === undefined ? {} : { serviceAccountName: s.serviceAccount }),
    ...(s.pod ? { securityContext: { windowsOptions: s.pod } } : {}),
    containers: [
      { name: 'iis', image: 'iis', ...(s.container ? { securityContext: { windowsOptions: s.container } } : {}) },
      { name: 'sidecar', image: 'nano' },
    ],
  },
});

const context = (user = requestingUser('alice'), c: ClusterSnapshot = cluster, design: GmsaDesign = 'webhook'): AdmissionContext => ({ cluster: c, user, design });

function rejection(pod: V1Pod, ctx = context()): { code: number; message: string } {
  const result = admitPod(pod, ctx);
  if (result.allowed) throw new Error('expected a rejection, the pod was admitted');
  return { code: result.error.code, message: result.error.message };
}

describe('GMSA admission: the shipped webhook', () => {
  it('inlines the resource as compact JSON with sorted keys at pod level', () => {
    const result = admitPod(makePod({ serviceAccount: 'web', pod: { gmsaCredentialSpecName: 'webapp' } }), context());
    expect(result.allowed).to.equal(true);
    if (!result.allowed) return;
    expect(result.pod.spec!.securityContext!.windowsOptions!.gmsaCredentialSpec).to.equal(webappJson);
  });

  it('inlines at container level, for regular containers only', () => {
    const pod = makePod({ serviceAccount: 'web', container: { gmsaCredentialSpecName: 'logger' } });
    pod.spec!.initContainers = [{ name: 'init', image: 'nano', securityContext: { windowsOptions: { gmsaCredentialSpecName: 'logger' } } }];
    const result = admitPod(pod, context());
    if (!result.allowed) throw result.error;
    expect(result.pod.spec!.containers[0]!.securityContext!.windowsOptions!.gmsaCredentialSpec).to.equal(loggerJson);
    expect(result.pod.spec!.initContainers![0]!.securityContext!.windowsOptions!.gmsaCredentialSpec).to.equal(undefined);
  });

  it('never overwrites contents the user set, and accepts them when they match as JSON', () => {
    const preset = '{ "DomainJoinConfig": {"Sid":"S-1-5-21-1","MachineAccountName":"WebApp","DnsName":"contoso.com<&>"}, "CmsPlugins":["ActiveDirectory"] }';
    const result = admitPod(makePod({ serviceAccount: 'web', pod: { gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: preset } }), context());
    if (!result.allowed) throw result.error;
    expect(result.pod.spec!.securityContext!.windowsOptions!.gmsaCredentialSpec).to.equal(preset);
  });

  it('does not modify the pod it was given', () => {
    const pod = makePod({ serviceAccount: 'web', pod: { gmsaCredentialSpecName: 'webapp' } });
    const before = JSON.stringify(pod);
    admitPod(pod, context());
    expect(JSON.stringify(pod)).to.equal(before);
  });

  it('admits a pod without any GMSA untouched apart from the default service account', () => {
    const result = admitPod(makePod({}), context());
    if (!result.allowed) throw result.error;
    expect(result.pod.spec!.serviceAccountName).to.equal('default');
    expect(result.pod.spec!.securityContext).to.equal(undefined);
  });

  const refusals: { name: string; pod: V1Pod; code: number; message: string }[] = [
    {
      name: 'service account not authorised',
      pod: makePod({ serviceAccount: 'batch', pod: { gmsaCredentialSpecName: 'webapp' } }),
      code: 403,
      message: 'service account "batch" is not authorized to `use` GMSA cred spec "webapp"',
    },
    {
      name: 'the default service account is checked too',
      pod: makePod({ container: { gmsaCredentialSpecName: 'logger' } }),
      code: 403,
      message: 'service account "default" is not authorized to `use` GMSA cred spec "logger"',
    },
    { name: 'resource missing', pod: makePod({ serviceAccount: 'web', pod: { gmsaCredentialSpecName: 'nope' } }), code: 404, message: 'cred spec nope does not exist' },
    { name: 'resource without a credspec key', pod: makePod({ serviceAccount: 'web', pod: { gmsaCredentialSpecName: 'empty' } }), code: 417, message: 'cred spec empty does not have a credspec key' },
    {
      name: 'contents that do not match the resource (container)',
      pod: makePod({ serviceAccount: 'web', container: { gmsaCredentialSpecName: 'logger', gmsaCredentialSpec: '{"CmsPlugins":[]}' } }),
      code: 422,
      message: 'the GMSA cred spec contents for container "iis" does not match the contents of GMSA resource "logger"',
    },
    {
      name: 'contents that are not a JSON object',
      pod: makePod({ serviceAccount: 'web', pod: { gmsaCredentialSpecName: 'logger', gmsaCredentialSpec: '[1]' } }),
      code: 422,
      message:
        'the GMSA cred spec contents for pod "web" does not match the contents of GMSA resource "logger": unable to parse "[1]" as a JSON object: json: cannot unmarshal array into Go value of type map[string]interface {}',
    },
    {
      name: 'contents without a name (pod)',
      pod: makePod({ serviceAccount: 'web', pod: { gmsaCredentialSpec: loggerJson } }),
      code: 422,
      message: 'pod "web" has a GMSA cred spec set, but does not define the name of the corresponding resource',
    },
    {
      name: 'contents without a name (container)',
      pod: makePod({ serviceAccount: 'web', container: { gmsaCredentialSpec: loggerJson } }),
      code: 422,
      message: 'container "iis" has a GMSA cred spec set, but does not define the name of the corresponding resource',
    },
    { name: 'namespace missing', pod: makePod({ namespace: 'nowhere' }), code: 404, message: 'namespaces "nowhere" not found' },
    {
      name: 'service account missing',
      pod: makePod({ serviceAccount: 'ghost' }),
      code: 403,
      message: 'pods "web" is forbidden: error looking up service account apps/ghost: serviceaccount "ghost" not found',
    },
  ];
  for (const r of refusals) {
    it(`refuses with ${r.code}: ${r.name}`, () => {
      expect(rejection(r.pod)).to.deep.equal({ code: r.code, message: r.message });
    });
  }

  it('shows webhook refusals as kubectl does', () => {
    const result = admitPod(makePod({ serviceAccount: 'batch', pod: { gmsaCredentialSpecName: 'webapp' } }), context());
    if (result.allowed) throw new Error('admitted');
    expect(describeRejection(result.error)).to.equal(
      'admission webhook "admission-webhook.windows-gmsa.sigs.k8s.io" denied the request: service account "batch" is not authorized to `use` GMSA cred spec "webapp"',
    );
  });
});

describe('GMSA admission: update rules of the validating webhook', () => {
  const old = makePod({ pod: { gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: webappJson }, container: { gmsaCredentialSpecName: 'logger', gmsaCredentialSpec: loggerJson } });
  const cases: { name: string; change: (p: V1Pod) => void; message?: string }[] = [
    { name: 'no GMSA change is allowed', change: (p) => (p.metadata!.labels = { a: 'b' }) },
    {
      name: 'pod name and contents changed',
      change: (p) => (p.spec!.securityContext!.windowsOptions = { gmsaCredentialSpecName: 'logger', gmsaCredentialSpec: loggerJson }),
      message: `cannot update an existing pod's GMSA settings (GMSA name and contents modified on pod "web")`,
    },
    {
      name: 'container contents changed',
      change: (p) => (p.spec!.containers[0]!.securityContext!.windowsOptions!.gmsaCredentialSpec = webappJson),
      message: `cannot update an existing pod's GMSA settings (GMSA contents modified on container "iis")`,
    },
    {
      name: 'GMSA added to a container that had none',
      change: (p) => (p.spec!.containers[1]!.securityContext = { windowsOptions: { gmsaCredentialSpecName: 'webapp' } }),
      message: `cannot update an existing pod's GMSA settings (GMSA name modified on container "sidecar")`,
    },
  ];
  for (const c of cases) {
    it(c.message === undefined ? `allows: ${c.name}` : `refuses with 403: ${c.name}`, () => {
      const updated = structuredClone(old);
      c.change(updated);
      if (c.message === undefined) {
        expect(() => validateGmsaWebhookUpdate(updated, old)).not.to.throw();
      } else {
        expect(() => validateGmsaWebhookUpdate(updated, old))
          .to.throw(AdmissionError, c.message)
          .with.property('code', 403);
      }
    });
  }
});

describe('GMSA admission: the KEP ConfigMap design (GMSAAuthorizer, --gmsa-design kep-configmap)', () => {
  const kep = (user = requestingUser('alice')) => context(user, cluster, 'kep-configmap');
  const annotated = (name: string, prefix = 'pod.alpha', serviceAccount = 'web') =>
    makePod({ serviceAccount, annotations: { [`${prefix}.kubernetes.io/windows-gmsa-config-map`]: name } });

  for (const prefix of ['pod.alpha', 'pod.beta']) {
    it(`${prefix} annotation: the ConfigMap key becomes the pod credential spec`, () => {
      const result = admitPod(annotated('webserver-credspec', prefix), kep());
      if (!result.allowed) throw result.error;
      expect(result.pod.spec!.securityContext!.windowsOptions!.gmsaCredentialSpec).to.equal('{"CmsPlugins":["ActiveDirectory"]}');
    });
  }

  const refusals: { name: string; pod: V1Pod; user?: string; code: number; message: string }[] = [
    {
      name: 'requesting user not authorised',
      pod: annotated('webserver-credspec'),
      user: 'mallory',
      code: 403,
      message: 'user "mallory" is not authorized to `use` GMSA ConfigMap "webserver-credspec" in namespace "apps"',
    },
    {
      name: 'service account not authorised',
      pod: annotated('webserver-credspec', 'pod.alpha', 'batch'),
      code: 403,
      message: 'service account "batch" is not authorized to `use` GMSA ConfigMap "webserver-credspec" in namespace "apps"',
    },
    { name: 'ConfigMap missing', pod: annotated('nope'), code: 404, message: 'GMSA ConfigMap "nope" in namespace "apps" does not exist' },
    { name: 'no gmsa-cred-spec key', pod: annotated('no-key'), code: 417, message: 'GMSA ConfigMap "no-key" in namespace "apps" does not have a gmsa-cred-spec key' },
  ];
  for (const r of refusals) {
    it(`refuses with ${r.code}: ${r.name}`, () => {
      expect(rejection(r.pod, kep(requestingUser(r.user ?? 'alice')))).to.deep.equal({ code: r.code, message: r.message });
    });
  }

  it('means nothing under the shipped webhook design: the pod runs without a gMSA', () => {
    const result = admitPod(annotated('webserver-credspec'), context());
    if (!result.allowed) throw result.error;
    expect(result.pod.spec!.securityContext?.windowsOptions).to.equal(undefined);
  });
});

// The alpha windows-gmsa webhook (admission-webhook/webhook.go before the GMSA fields, 1.14) and
// the 1.14 kubelet's reading of its annotations, container before pod.
describe('GMSA admission: the 1.14 alpha design (--gmsa-design alpha-1.14)', () => {
  const alpha = () => context(requestingUser('alice'), cluster, 'alpha-1.14');
  const podName = 'pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name';
  const podContents = 'pod.alpha.windows.kubernetes.io/gmsa-credential-spec';
  const iisName = 'iis.container.alpha.windows.kubernetes.io/gmsa-credential-spec-name';
  const iisContents = 'iis.container.alpha.windows.kubernetes.io/gmsa-credential-spec';

  it('inlines the named resource into the contents annotation; the fields stay as they are', () => {
    const result = admitPod(makePod({ serviceAccount: 'web', annotations: { [podName]: 'webapp', [iisName]: 'logger' } }), alpha());
    if (!result.allowed) throw result.error;
    expect(result.pod.metadata!.annotations![podContents]).to.equal(webappJson);
    expect(result.pod.metadata!.annotations![iisContents]).to.equal(loggerJson);
    expect(result.pod.spec!.securityContext?.windowsOptions).to.equal(undefined);
  });

  it('the kubelet reads the container annotation before the pod one', () => {
    const result = admitPod(makePod({ serviceAccount: 'web', annotations: { [podName]: 'webapp', [iisName]: 'logger' } }), alpha());
    if (!result.allowed) throw result.error;
    const read = readAlphaCredentialSpecs(result.pod);
    expect(read.spec!.containers.map((c) => c.securityContext?.windowsOptions?.gmsaCredentialSpec)).to.deep.equal([loggerJson, webappJson]);
    expect(alphaCredentialSpecFor(result.pod, 'iis')).to.equal(loggerJson);
  });

  const refusals: { name: string; annotations: Record<string, string>; serviceAccount?: string; code: number; message: string }[] = [
    { name: 'a contents annotation set by the user', annotations: { [podContents]: loggerJson }, code: 403, message: `cannot pre-set a pod's gMSA content annotation (annotation ${podContents} present)` },
    { name: 'a service account without use', annotations: { [iisName]: 'webapp' }, serviceAccount: 'batch', code: 403, message: 'the service account used for this pod does not have `use` access to the webapp gMSA cred spec' },
    { name: 'a missing resource', annotations: { [podName]: 'nope' }, code: 404, message: 'cred spec nope does not exist' },
  ];
  for (const r of refusals) {
    it(`refuses with ${r.code}: ${r.name}`, () => {
      expect(rejection(makePod({ serviceAccount: r.serviceAccount ?? 'web', annotations: r.annotations }), alpha())).to.deep.equal({ code: r.code, message: r.message });
    });
  }

  it('refuses an update that changes a GMSA annotation', () => {
    const old = makePod({ serviceAccount: 'web', annotations: { [podName]: 'webapp', [podContents]: webappJson } });
    const updated = makePod({ serviceAccount: 'web', annotations: { [podName]: 'logger', [podContents]: webappJson } });
    expect(() => validateGmsaAlphaWebhookUpdate(updated, old))
      .to.throw(AdmissionError, `cannot update an existing pod's gMSA annotation (annotation ${podName} changed)`)
      .with.property('code', 403);
    expect(() => validateGmsaAlphaWebhookUpdate(old, old)).not.to.throw();
  });

  it('means nothing under the shipped webhook design', () => {
    const result = admitPod(makePod({ serviceAccount: 'web', annotations: { [podName]: 'webapp' } }), context());
    if (!result.allowed) throw result.error;
    expect(result.pod.metadata!.annotations![podContents]).to.equal(undefined);
  });
});

describe('Go JSON encoding of credential specs', () => {
  it('sorts keys at every level and escapes HTML characters', () => {
    expect(goJsonMarshal({ b: 1, a: { d: ['<x>'], c: '&' } })).to.equal('{"a":{"c":"\\u0026","d":["\\u003cx\\u003e"]},"b":1}');
  });
});

describe('the bundled examples (examples/cluster, examples/pods)', () => {
  const root = fileURLToPath(new URL('../../../examples/', import.meta.url));
  let examples: ClusterSnapshot;
  before(async () => {
    examples = await new DirectoryClusterSource(`${root}cluster`).load();
  });

  const expectations: { file: string; admitted: boolean; message?: string }[] = [
    { file: 'gmsa-pod-level.yaml', admitted: true },
    { file: 'gmsa-container-level.yaml', admitted: true },
    { file: 'gmsa-invalid-credspec.yaml', admitted: true },
    { file: 'gmsa-node-not-authorised.yaml', admitted: true },
    { file: 'gmsa-service-account-not-authorised.yaml', admitted: false, message: 'service account "reporting" is not authorized to `use` GMSA cred spec "webapplication1"' },
    { file: 'gmsa-configmap-design.yaml', admitted: true },
    { file: 'run-as-username-pod.yaml', admitted: true },
    { file: 'run-as-username-container.yaml', admitted: true },
  ];
  for (const e of expectations) {
    it(`${e.file}: ${e.admitted ? 'admitted' : 'refused'}`, async () => {
      const { pods, errors } = await loadPodFiles([`${root}pods/${e.file}`]);
      expect(errors).to.deep.equal([]);
      const result = admitPod(pods[0]!.pod, { cluster: examples, user: requestingUser('alice') });
      expect(result.allowed).to.equal(e.admitted);
      if (!result.allowed) expect(result.error.message).to.equal(e.message);
    });
  }
});
