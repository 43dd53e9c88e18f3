// The order in which the API server runs a pod CREATE (apiserver v0.34.12
// pkg/endpoints/handlers/create.go, pkg/registry/generic/registry/store.go Create): mutating
// admission (NamespaceLifecycle, ServiceAccount, then the mutating webhooks), the strategy's field
// validation of the mutated pod (kubernetes v1.34.12 pkg/apis/core/validation/validation.go), then
// validating admission (the validating webhooks). Each case makes two stages fail and pins the
// one a real API server answers with. Plus the windows-gmsa webhook's RANDOM_HOSTNAME option
// (kubernetes-sigs/windows-gmsa 993de21 admission-webhook/webhook.go mutateCreateRequest).
import { expect } from 'chai';
import type { V1Pod } from '@kubernetes/client-node';
import { admitPod, randomGmsaHostname, type AdmissionContext } from '../../src/apiserver/admission.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { gmsaAdmissionCluster } from '../support/gmsa-cluster.js';

// A GMSACredentialSpec whose credspec marshals to more than 64 KiB (65,536 bytes).
const padding = 'x'.repeat(70_000);
// Namespace apps, its service accounts web and batch, web allowed to use every GMSACredentialSpec,
// and these documents.
const cluster = gmsaAdmissionCluster(`
apiVersion: windows.k8s.io/v1
kind: GMSACredentialSpec
metadata: { name: huge }
credspec: { CmsPlugins: [ActiveDirectory], Padding: ${padding} }
---
apiVersion: windows.k8s.io/v1
kind: GMSACredentialSpec
metadata: { name: webapp }
credspec: { CmsPlugins: [ActiveDirectory] }
`);
const hugeJson = `{"CmsPlugins":["ActiveDirectory"],"Padding":"${padding}"}`;

const context = (extra: Partial<AdmissionContext> = {}): AdmissionContext => ({ cluster, user: requestingUser('alice'), design: 'webhook', ...extra });

function pod(options: { namespace?: string; serviceAccount?: string; windowsOptions?: Record<string, string>; hostname?: string; containerOptions?: Record<string, string> }): V1Pod {
  return {
    metadata: { name: 'web', namespace: options.namespace ?? 'apps' },
    spec: {
      ...(options.serviceAccount === undefined ? {} : { serviceAccountName: options.serviceAccount }),
      ...(options.hostname === undefined ? {} : { hostname: options.hostname }),
      ...(options.windowsOptions === undefined ? {} : { securityContext: { windowsOptions: options.windowsOptions } }),
      containers: [{ name: 'iis', image: 'iis', ...(options.containerOptions === undefined ? {} : { securityContext: { windowsOptions: options.containerOptions } }) }],
    },
  };
}

function refusal(p: V1Pod, ctx = context()): { code: number; by: string; message: string } {
  const result = admitPod(p, ctx);
  if (result.allowed) throw new Error('expected a refusal, the pod was admitted');
  return { code: result.error.code, by: result.error.by, message: result.error.message };
}

describe('API server create order: mutating admission → validation of the mutated pod → validating admission', () => {
  it('an inlined credential spec over 64 KiB is a 422 at creation, before the validating webhook could refuse the service account', () => {
    // Two stages would fail: validation (the inlined spec is too big) and the validating webhook
    // (service account "batch" may not `use` GMSA "huge"). The API server validates first.
    const r = refusal(pod({ serviceAccount: 'batch', windowsOptions: { gmsaCredentialSpecName: 'huge' } }));
    expect(r).to.deep.equal({
      code: 422,
      by: 'validation',
      message: `Pod "web" is invalid: spec.securityContext.windowsOptions.gmsaCredentialSpec: Invalid value: ${JSON.stringify(hugeJson)}: gmsaCredentialSpec size must be under 64 KiB`,
    });
  });

  it('the same oversized spec with an authorised service account is still the 422 (validation of what the webhook inlined)', () => {
    const r = refusal(pod({ serviceAccount: 'web', containerOptions: { gmsaCredentialSpecName: 'huge' } }));
    expect(r.code).to.equal(422);
    expect(r.message).to.match(/^Pod "web" is invalid: spec\.containers\[0\]\.securityContext\.windowsOptions\.gmsaCredentialSpec: Invalid value: ".*": gmsaCredentialSpec size must be under 64 KiB$/s);
  });

  it('the mutating webhook refuses before validation: a missing GMSACredentialSpec beats an invalid runAsUserName', () => {
    const r = refusal(pod({ serviceAccount: 'web', windowsOptions: { gmsaCredentialSpecName: 'missing', runAsUserName: 'a\\b\\c' } }));
    expect(r).to.deep.equal({ code: 404, by: 'gmsa-webhook', message: 'cred spec missing does not exist' });
  });

  it('NamespaceLifecycle refuses before validation: a missing namespace beats an invalid runAsUserName', () => {
    const r = refusal(pod({ namespace: 'nowhere', windowsOptions: { runAsUserName: 'a\\b\\c' } }));
    expect(r).to.deep.equal({ code: 404, by: 'NamespaceLifecycle', message: 'namespaces "nowhere" not found' });
  });

  it('validation refuses before the validating webhook: an invalid runAsUserName beats an unauthorised service account', () => {
    const r = refusal(pod({ serviceAccount: 'batch', windowsOptions: { gmsaCredentialSpecName: 'webapp', runAsUserName: 'a\\b\\c' } }));
    expect(r).to.deep.equal({
      code: 422,
      by: 'validation',
      message: 'Pod "web" is invalid: spec.securityContext.windowsOptions.runAsUserName: Invalid value: "a\\\\b\\\\c": runAsUserName cannot contain more than one backslash',
    });
  });

  it('several field errors: the aggregate in brackets, joined by ", " (apimachinery errors.NewInvalid)', () => {
    const p = pod({ serviceAccount: 'web', windowsOptions: { runAsUserName: '' } });
    p.spec!.containers.push({ name: 'IIS', image: 'x' });
    const r = refusal(p);
    expect(r.message).to.equal(
      'Pod "web" is invalid: [spec.containers[1].name: Invalid value: "IIS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\', and must start and end with an alphanumeric character (e.g. \'my-name\',  or \'123-abc\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?\'), spec.securityContext.windowsOptions.runAsUserName: Invalid value: "": runAsUserName cannot be an empty string]',
    );
  });

  it('with nothing wrong, the validating webhook still has the last word: 403 for the service account', () => {
    const r = refusal(pod({ serviceAccount: 'batch', windowsOptions: { gmsaCredentialSpecName: 'webapp' } }));
    expect(r).to.deep.equal({ code: 403, by: 'gmsa-webhook', message: 'service account "batch" is not authorized to `use` GMSA cred spec "webapp"' });
  });
});

describe('windows-gmsa RANDOM_HOSTNAME (EnableRandomHostName)', () => {
  const uuid = () => '3F2504E0-4F89-41D3-9A0C-0305E82C3301';

  it('is the first 15 characters of a lowercase UUID', () => {
    expect(randomGmsaHostname(uuid)).to.equal('3f2504e0-4f89-4');
    expect(randomGmsaHostname()).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]$/);
  });

  const admitted = (p: V1Pod, extra: Partial<AdmissionContext>): V1Pod => {
    const result = admitPod(p, context({ uuid, ...extra }));
    if (!result.allowed) throw new Error(result.error.message);
    return result.pod;
  };

  it('off (the chart default): the hostname stays unset', () => {
    expect(admitted(pod({ serviceAccount: 'web', windowsOptions: { gmsaCredentialSpecName: 'webapp' } }), {}).spec!.hostname).to.equal(undefined);
  });

  it('on: a pod with a pod-level gMSA name and no hostname gets one', () => {
    expect(admitted(pod({ serviceAccount: 'web', windowsOptions: { gmsaCredentialSpecName: 'webapp' } }), { randomHostname: true }).spec!.hostname).to.equal('3f2504e0-4f89-4');
  });

  it('on: a container-level gMSA name counts too', () => {
    expect(admitted(pod({ serviceAccount: 'web', containerOptions: { gmsaCredentialSpecName: 'webapp' } }), { randomHostname: true }).spec!.hostname).to.equal('3f2504e0-4f89-4');
  });

  it('on: a hostname the pod sets is kept', () => {
    expect(admitted(pod({ serviceAccount: 'web', hostname: 'iis01', windowsOptions: { gmsaCredentialSpecName: 'webapp' } }), { randomHostname: true }).spec!.hostname).to.equal('iis01');
  });

  it('on: a pod without a gMSA name keeps no hostname', () => {
    expect(admitted(pod({ serviceAccount: 'web', windowsOptions: { runAsUserName: 'ContainerUser' } }), { randomHostname: true }).spec!.hostname).to.equal(undefined);
  });

  it('only the shipped webhook has the option: other designs ignore it', () => {
    const p = pod({ serviceAccount: 'web', windowsOptions: { gmsaCredentialSpecName: 'webapp' } });
    expect(admitted(p, { randomHostname: true, design: 'alpha-1.14' }).spec!.hostname).to.equal(undefined);
  });
});
