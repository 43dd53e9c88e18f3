// -o of kubelet get in kubectl's shapes (k8s.io/cli-runtime v0.34.12 printers: tabwriter with
// min width 6, padding 3 and RememberWidths; the YAML printer's `---` between objects; kubectl's
// custom-columns and -o parsing texts).
import { expect } from 'chai';
import { OutputFormatError, parseOutputFormat, PodPrinter, type PrintablePod } from '../../src/kubectl/pod-output.js';

const now = Date.parse('2026-11-25T12:00:00Z');
const pod = (name: string, status: string, namespace = 'default'): PrintablePod => ({
  object: { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels: { app: name } }, status: { phase: 'Running' } },
  row: { namespace, name, ready: '1/1', status, restarts: 0, podIP: '127.10.0.2', startTime: '2026-11-25T11:59:00Z', nodeName: 'winnode1' },
  labels: { app: name },
});

describe('kubelet get -o (src/kubectl/pod-output.ts)', () => {
  it('parses every format and refuses others with kubectl\'s texts', () => {
    expect(parseOutputFormat(undefined)).to.deep.equal({ kind: 'table', wide: false });
    expect(parseOutputFormat('wide')).to.deep.equal({ kind: 'table', wide: true });
    expect(parseOutputFormat('name')).to.deep.equal({ kind: 'name' });
    expect(() => parseOutputFormat('jsonpath')).to.throw(OutputFormatError, 'template format specified but no template given');
    expect(() => parseOutputFormat('custom-columns=')).to.throw('custom-columns format specified but no custom columns given');
    expect(() => parseOutputFormat('custom-columns=NAME')).to.throw('unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>');
    expect(() => parseOutputFormat('yaml=x')).to.throw('unable to match a printer suitable for the output format "yaml=x", allowed formats are: custom-columns,json,jsonpath,name,wide,yaml');
  });

  it('a watch keeps the column widths already printed (RememberWidths) and prints the header once', () => {
    const printer = new PodPrinter(parseOutputFormat(undefined), { now: () => now });
    expect(printer.print([pod('web', 'Running')], true)).to.equal('NAME   READY   STATUS    RESTARTS   AGE\nweb    1/1     Running   0          60s\n');
    // A wider STATUS widens that column from here on; the earlier columns keep their widths.
    expect(printer.print([pod('web', 'ContainerCreating')], false)).to.equal('web    1/1     ContainerCreating   0          60s\n');
    expect(printer.print([pod('web', 'Running')], false)).to.equal('web    1/1     Running             0          60s\n');
  });

  it('-A adds NAMESPACE; --show-labels LABELS; --no-headers drops the header', () => {
    const printer = new PodPrinter(parseOutputFormat(undefined), { now: () => now, namespaceColumn: true, showLabels: true, noHeaders: true });
    expect(printer.print([pod('web', 'Running', 'contoso-apps')], true)).to.equal('contoso-apps   web   1/1   Running   0     60s   app=web\n');
  });

  it('yaml separates the objects of a watch with ---; json prints a List for a listing', () => {
    const yaml = new PodPrinter(parseOutputFormat('yaml'));
    expect(yaml.print([pod('a', 'Running')], false)).to.match(/^apiVersion: v1\nkind: Pod\n/);
    expect(yaml.print([pod('b', 'Running')], false)).to.match(/^---\napiVersion: v1\n/);
    const json = JSON.parse(new PodPrinter(parseOutputFormat('json')).print([pod('a', 'Running')], true)) as { kind: string; items: unknown[]; metadata: unknown };
    expect([json.kind, json.items.length, json.metadata]).to.deep.equal(['List', 1, { resourceVersion: '' }]);
  });

  it('custom-columns: columns at least 6 wide, <none> for nothing, several values joined by commas', () => {
    const printer = new PodPrinter(parseOutputFormat('custom-columns=N:.metadata.name,L:.metadata.labels,X:.spec.x'));
    expect(printer.print([pod('a', 'Running')], true)).to.equal('N     L            X\na     map[app:a]   <none>\n');
  });
});
