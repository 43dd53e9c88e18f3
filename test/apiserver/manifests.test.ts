import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectoryClusterSource, KubeconfigClusterSource } from '../../src/apiserver/cluster.js';
import { loadPodFiles, loadPodManifest, ManifestErrors } from '../../src/apiserver/manifests.js';
import { tempDirPerTest } from '../support/temp-dir.js';

const pod = (name: string, containerName = 'app') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
    - name: ${containerName}
      image: mcr.microsoft.com/windows/nanoserver:ltsc2022
`;

describe('pod manifests', () => {
  it('reads every Pod of a multi-document file, in the default namespace, with a stable UID', () => {
    const text = `${pod('a')}---\n${pod('b')}`;
    const first = loadPodManifest('pods/web.yaml', text);
    expect(first.errors).to.deep.equal([]);
    expect(first.pods.map((p) => [p.pod.metadata!.name, p.pod.metadata!.namespace, p.source.document])).to.deep.equal([
      ['a', 'default', 1],
      ['b', 'default', 2],
    ]);
    expect(first.pods[0]!.pod.metadata!.uid).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(loadPodManifest('pods/web.yaml', text).pods[0]!.pod.metadata!.uid).to.equal(first.pods[0]!.pod.metadata!.uid);
  });

  it('keeps a UID the manifest sets', () => {
    const { pods } = loadPodManifest('p.yaml', pod('a').replace('  name: a', '  name: a\n  uid: "1234"'));
    expect(pods[0]!.pod.metadata!.uid).to.equal('1234');
  });

  it('names a pod that only has generateName', () => {
    const { pods, errors } = loadPodManifest('p.yaml', pod('a').replace('  name: a', '  generateName: web-'));
    expect(errors).to.deep.equal([]);
    expect(pods[0]!.pod.metadata!.name).to.match(/^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('takes the pod template of Deployments and Jobs, named after the workload', () => {
    const text = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: apps }
spec:
  replicas: 3
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: iis, image: iis }]
---
apiVersion: batch/v1
kind: Job
metadata: { name: report }
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{ name: report, image: nano }]
`;
    const { pods, errors } = loadPodManifest('w.yaml', text);
    expect(errors).to.deep.equal([]);
    expect(pods.map((p) => p.pod.metadata!.namespace)).to.deep.equal(['apps', 'default']);
    expect(pods[0]!.pod.metadata!.name).to.match(/^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(pods[0]!.pod.metadata!.labels).to.deep.equal({ app: 'web' });
    expect(pods[1]!.pod.spec!.containers[0]!.name).to.equal('report');
  });

  const errorCases: { name: string; text: string; expected: string[]; pods: number }[] = [
    {
      name: 'a missing container name, reported with file, document and field; the other document still loads',
      text: `${pod('a')}---\n${pod('b', '""')}`,
      expected: ['pods/web.yaml: document 2: spec.containers[0].name: Required value'],
      pods: 1,
    },
    {
      name: 'malformed YAML',
      text: `${pod('a')}---\nkind: Pod\nmetadata: {name: [\n`,
      expected: ['pods/web.yaml: document 2: invalid YAML: '],
      pods: 1,
    },
    {
      name: 'an unknown kind',
      text: 'apiVersion: v1\nkind: Service\nmetadata: { name: s }\n',
      expected: ['pods/web.yaml: document 1: kind: Unsupported value: "Service": supported values: "Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"'],
      pods: 0,
    },
    { name: 'no kind', text: 'metadata: { name: x }\n', expected: ['pods/web.yaml: document 1: kind: Required value'], pods: 0 },
    {
      name: 'a field of the wrong type',
      text: 'apiVersion: v1\nkind: Pod\nmetadata: { name: x }\nspec:\n  containers:\n    - name: a\n      image: i\n      command: "ping -t localhost"\n',
      expected: ['pods/web.yaml: document 1: spec.containers[0].command: Invalid value: "ping -t localhost": must be an array, not string'],
      pods: 0,
    },
    {
      name: 'a Windows validation error',
      text: 'apiVersion: v1\nkind: Pod\nmetadata: { name: x }\nspec:\n  securityContext: { windowsOptions: { runAsUserName: "a\\\\b\\\\c" } }\n  containers: [{ name: a, image: i }]\n',
      expected: ['pods/web.yaml: document 1: spec.securityContext.windowsOptions.runAsUserName: Invalid value: "a\\\\b\\\\c": runAsUserName cannot contain more than one backslash'],
      pods: 0,
    },
    {
      name: 'an error inside a Deployment template names the template path',
      text: 'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web }\nspec:\n  template:\n    spec:\n      containers: [{ name: iis }]\n',
      expected: ['pods/web.yaml: document 1: spec.template.spec.containers[0].image: Required value'],
      pods: 0,
    },
    {
      name: 'the same pod twice: the second is refused',
      text: `${pod('a')}---\n${pod('a')}`,
      expected: ['pods/web.yaml: document 2: metadata.name: Duplicate value: "a": already defined in pods/web.yaml document 1'],
      pods: 1,
    },
  ];
  for (const c of errorCases) {
    it(`reports ${c.name}`, () => {
      const { pods, errors } = loadPodManifest('pods/web.yaml', c.text);
      expect(errors).to.have.length(c.expected.length);
      errors.forEach((e, i) => expect(e.message.startsWith(c.expected[i]!), `${e.message}\n does not start with\n${c.expected[i]}`).to.equal(true));
      expect(pods).to.have.length(c.pods);
    });
  }

  it('refuses the same pod named in two files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'winsim-pods-'));
    try {
      await writeFile(join(dir, 'a.yaml'), pod('web'));
      await writeFile(join(dir, 'b.yaml'), pod('web'));
      const { pods, errors } = await loadPodFiles([join(dir, 'a.yaml'), join(dir, 'b.yaml')]);
      expect(pods.map((p) => p.source.file)).to.deep.equal([join(dir, 'a.yaml')]);
      expect(errors.map((e) => e.message)).to.deep.equal([
        `${join(dir, 'b.yaml')}: document 1: metadata.name: Duplicate value: "web": already defined in ${join(dir, 'a.yaml')} document 1`,
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reports an unreadable file by name', async () => {
    const { pods, errors } = await loadPodFiles(['does/not/exist.yaml']);
    expect(pods).to.deep.equal([]);
    expect(errors.map((e) => e.message)[0]).to.match(/^does\/not\/exist\.yaml: ENOENT/);
  });
});

// Strict field validation as the API server applies it for kubectl's --validate (default strict);
// the text is apimachinery's strict decoding error, kubernetes v1.34.
describe('unknown fields (fieldValidation)', () => {
  const misspelt = `apiVersion: v1
kind: Pod
metadata: { name: web }
spec:
  securityContext:
    windowsOptions: { runAsUsername: "NT AUTHORITY\\NETWORK SERVICE" }
  containers:
  - { name: iis, image: iis, imagePullPolice: Always }
`;
  it('refuses a mistyped field under Strict, naming every unknown field', () => {
    const { pods, errors } = loadPodManifest('web.yaml', misspelt);
    expect(pods).to.deep.equal([]);
    expect(errors.map((e) => e.message)).to.deep.equal([
      'web.yaml: document 1: Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.securityContext.windowsOptions.runAsUsername", unknown field "spec.containers[0].imagePullPolice"',
    ]);
  });
  it('names the workload kind and its version for a pod template', () => {
    const text = 'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web }\nspec:\n  template:\n    spec:\n      containers: [{ name: c, image: i, foo: 1 }]\n';
    expect(loadPodManifest('d.yaml', text).errors.map((e) => e.message)).to.deep.equal([
      'd.yaml: document 1: Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.template.spec.containers[0].foo"',
    ]);
  });
  it('warns under Warn and runs the pod without the fields', () => {
    const warnings: string[] = [];
    const { pods, errors } = loadPodManifest('web.yaml', misspelt, { fieldValidation: 'Warn', onWarning: (w) => warnings.push(w) });
    expect(errors).to.deep.equal([]);
    expect(pods).to.have.length(1);
    expect(pods[0]!.pod.spec!.securityContext!.windowsOptions!.runAsUserName).to.equal(undefined);
    expect(warnings).to.deep.equal([
      'web.yaml: document 1: unknown field "spec.securityContext.windowsOptions.runAsUsername"',
      'web.yaml: document 1: unknown field "spec.containers[0].imagePullPolice"',
    ]);
  });
  it('says nothing under Ignore', () => {
    const warnings: string[] = [];
    const { pods, errors } = loadPodManifest('web.yaml', misspelt, { fieldValidation: 'Ignore', onWarning: (w) => warnings.push(w) });
    expect([pods.length, errors.length, warnings.length]).to.deep.equal([1, 0, 0]);
  });
  it('decodes YAML nulls as Go does: unset fields, zero-value list elements', () => {
    const text = 'apiVersion: v1\nkind: Pod\nmetadata: { name: p, namespace: null }\nspec:\n  os: null\n  securityContext: { windowsOptions: { gmsaCredentialSpecName: null, runAsUserName: null } }\n  containers:\n  - { name: c, image: i, args: [null], securityContext: null }\n  - null\n';
    const { pods, errors } = loadPodManifest('p.yaml', text);
    expect(pods).to.deep.equal([]);
    expect(errors.map((e) => e.message)).to.deep.equal([
      'p.yaml: document 1: spec.containers[1].name: Required value',
      'p.yaml: document 1: spec.containers[1].image: Required value',
    ]);
    const valid = loadPodManifest('p.yaml', text.replace('  - null\n', ''));
    expect(valid.errors).to.deep.equal([]);
    expect(valid.pods[0]!.pod.spec!.containers[0]).to.deep.equal({ name: 'c', image: 'i', args: [''] });
    expect(valid.pods[0]!.pod.spec!.securityContext).to.deep.equal({ windowsOptions: {} });
  });
  it('does not look inside labels, annotations or free-form values', () => {
    const text = 'apiVersion: v1\nkind: Pod\nmetadata: { name: p, labels: { anything: x }, annotations: { a.b/c: d } }\nspec:\n  containers: [{ name: c, image: i, resources: { limits: { cpu: "1" } } }]\n';
    expect(loadPodManifest('p.yaml', text).errors).to.deep.equal([]);
  });
});

describe('cluster directory', () => {
  const dir = tempDirPerTest('winsim-cluster-');

  it('reads every kind from nested files, Lists included', async () => {
    await mkdir(join(dir(), 'rbac'));
    await writeFile(
      join(dir(), 'base.yaml'),
      `apiVersion: v1
kind: Namespace
metadata: { name: apps }
---
apiVersion: v1
kind: List
items:
  - { apiVersion: v1, kind: ServiceAccount, metadata: { name: web, namespace: apps } }
  - { apiVersion: v1, kind: ConfigMap, metadata: { name: cm }, data: { gmsa-cred-spec: "{}" } }
---
apiVersion: windows.k8s.io/v1alpha1
kind: GMSACredentialSpec
metadata: { name: webapp }
credspec: { CmsPlugins: [ActiveDirectory] }
`,
    );
    await writeFile(
      join(dir(), 'rbac', 'roles.yml'),
      `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: r }
rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: b }
subjects: [{ kind: Group, name: g, apiGroup: rbac.authorization.k8s.io }]
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r }
`,
    );
    await writeFile(join(dir(), 'README.md'), 'not a manifest');
    const snapshot = await new DirectoryClusterSource(dir()).load();
    expect(snapshot.namespaces.map((n) => n.metadata!.name)).to.deep.equal(['apps']);
    expect(snapshot.serviceAccounts.map((s) => s.metadata!.name)).to.deep.equal(['web']);
    expect(snapshot.configMaps.map((c) => c.metadata!.namespace)).to.deep.equal(['default']);
    expect(snapshot.gmsaCredentialSpecs.map((g) => g.metadata.name)).to.deep.equal(['webapp']);
    expect(snapshot.clusterRoles).to.have.length(1);
    expect(snapshot.clusterRoleBindings).to.have.length(1);
  });

  const broken: { name: string; text: string; message: string }[] = [
    { name: 'an unknown kind', text: 'apiVersion: v1\nkind: Pod\nmetadata: { name: p }\n', message: 'document 1: kind: Unsupported value: "Pod": supported values: "Namespace", "ServiceAccount", "ConfigMap", "Secret", "GMSACredentialSpec", "RuntimeClass", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"' },
    { name: 'a wrong apiVersion', text: 'apiVersion: windows.k8s.io/v2\nkind: GMSACredentialSpec\nmetadata: { name: g }\n', message: 'document 1: apiVersion: Unsupported value: "windows.k8s.io/v2": supported values: "windows.k8s.io/v1", "windows.k8s.io/v1alpha1"' },
    // ValidateRuntimeClass (pkg/apis/node/validation, v1.34): handler is required, a DNS-1123 label.
    { name: 'a RuntimeClass without a handler', text: 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: { name: r }\n', message: 'document 1: handler: Required value' },
    // Our own text: the value of a secret is never echoed.
    { name: 'secret data that is not base64', text: 'apiVersion: v1\nkind: Secret\nmetadata: { name: s }\ndata: { k: "not base64!" }\n', message: 'document 1: data[k]: Invalid value: "<secret data>": must be base64-encoded' },
    { name: 'a nameless object', text: 'apiVersion: v1\nkind: ServiceAccount\nmetadata: {}\n', message: 'document 1: metadata.name: Required value: name or generateName is required' },
    { name: 'a namespace nobody declared', text: 'apiVersion: v1\nkind: ServiceAccount\nmetadata: { name: s, namespace: ghost }\n', message: 'document 1: metadata.namespace: Not found: "ghost": namespace is not defined in the cluster manifests' },
    {
      name: 'a RoleBinding to something that is not a role',
      text: 'apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: { name: b }\nroleRef: { apiGroup: rbac.authorization.k8s.io, kind: Pod, name: x }\n',
      message: 'document 1: roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole"',
    },
    { name: 'ConfigMap data that is not a map', text: 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\ndata: [a]\n', message: 'document 1: data: Invalid value: ["a"]: must be an object, not array' },
    { name: 'malformed YAML', text: 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: [\n', message: 'document 1: invalid YAML: ' },
  ];
  for (const b of broken) {
    it(`refuses the whole directory for ${b.name}, naming file, document and field`, async () => {
      await writeFile(join(dir(), 'good.yaml'), 'apiVersion: v1\nkind: ServiceAccount\nmetadata: { name: fine }\n');
      await writeFile(join(dir(), 'bad.yaml'), b.text);
      const err = await new DirectoryClusterSource(dir()).load().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(ManifestErrors);
      const messages = (err as ManifestErrors).errors.map((e) => e.message);
      expect(messages).to.have.length(1);
      expect(messages[0]!.startsWith(`${join(dir(), 'bad.yaml')}: ${b.message}`), messages[0]).to.equal(true);
    });
  }

  it('refuses the same object defined twice', async () => {
    await writeFile(join(dir(), 'a.yaml'), 'apiVersion: v1\nkind: ServiceAccount\nmetadata: { name: s }\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: { name: s, namespace: default }\n');
    const err = (await new DirectoryClusterSource(dir()).load().catch((e: unknown) => e)) as ManifestErrors;
    expect(err.errors.map((e) => e.message)).to.deep.equal([`${join(dir(), 'a.yaml')}: document 2: metadata.name: Duplicate value: "s": ServiceAccount already defined in ${join(dir(), 'a.yaml')} document 1`]);
  });

  it('names a missing directory', async () => {
    const missing = join(dir(), 'nope');
    const err = (await new DirectoryClusterSource(missing).load().catch((e: unknown) => e)) as Error;
    expect(err.message).to.equal(`cluster directory ${missing}: does not exist`);
  });
});

describe('kubeconfig cluster source', () => {
  it('names the kubeconfig when it cannot be used', async () => {
    const err = (await new KubeconfigClusterSource('/nonexistent/kubeconfig').load().catch((e: unknown) => e)) as Error;
    expect(err.message.startsWith('kubeconfig /nonexistent/kubeconfig: ')).to.equal(true);
  });
});
