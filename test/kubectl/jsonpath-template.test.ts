// kubectl JSONPath templates: every expected text below was printed by a Go program running the
// template through k8s.io/client-go/util/jsonpath v0.34.12 (AllowMissingKeys(true), as kubectl
// does) on this List. Rows kubectl answers differently are the documented dialect differences.
import { expect } from 'chai';
import { executeJsonPathTemplate, parseJsonPathTemplate, relaxedJsonPathExpression } from '../../src/kubectl/jsonpath-template.js';

const list = {"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","labels":{"app":"web","tier":"front"}},"spec":{"containers":[{"name":"iis","image":"mcr.microsoft.com/windows/servercore/iis:ltsc2022"},{"name":"logger","image":"nano:1"}]},"status":{"phase":"Running","podIP":"127.10.0.2","containerStatuses":[{"name":"iis","ready":true,"restartCount":0},{"name":"logger","ready":false,"restartCount":2}]}},{"apiVersion":"v1","kind":"Pod","metadata":{"name":"job","namespace":"batch","labels":{"app":"job"}},"spec":{"containers":[{"name":"run","image":"nano:1"}]},"status":{"phase":"Succeeded","containerStatuses":[{"name":"run","ready":false,"restartCount":0}]}}]};

const same: readonly (readonly [string, string])[] = [
  ["{.items[*].metadata.name}", "web job"],
  ["{range .items[*]}{.metadata.name}{\"\\t\"}{.status.phase}{\"\\n\"}{end}", "web\tRunning\njob\tSucceeded\n"],
  ["{.items[0].metadata.labels}", "{\"app\":\"web\",\"tier\":\"front\"}"],
  ["{.items[*].spec.containers[*].name}", "iis logger run"],
  ["{.items[?(@.status.phase==\"Running\")].metadata.name}", "web"],
  ["{.items[-1:].metadata.name}", "job"],
  ["{.items[0].status.containerStatuses[1].restartCount}", "2"],
  ["{.items[0].status.containerStatuses[0].ready}", "true"],
  ["{.items[*].status.podIP}", "127.10.0.2"],
  ["{.items[0].metadata['name','namespace']}", "web default"],
  ["{..image}", "mcr.microsoft.com/windows/servercore/iis:ltsc2022 nano:1 nano:1"],
  ["names: {.items[*].metadata.name} end", "names: web job end"],
  ["{.items[0].spec.containers}", "[{\"image\":\"mcr.microsoft.com/windows/servercore/iis:ltsc2022\",\"name\":\"iis\"},{\"image\":\"nano:1\",\"name\":\"logger\"}]"],
  ["{.missing}", ""],
  ["{range .items[*]}[{.metadata.name}]{end}", "[web][job]"],
  ["{range .items[*]}{.metadata.name}", "webjob"],
  ["{.kind}{'\\n'}", "List\n"],
  ["{@.kind}", "List"],
  ["{.items[0].metadata.labels.app}", "web"],
  ["{.metadata}", "{\"resourceVersion\":\"\"}"],
  ["{.items[0].metadata['name','namespace']}", "web default"],
  ["{.items[0]['kind']}", "Pod"],
  ["{range .items[*]}{.metadata.name}{':'}{range .spec.containers[*]}{.name},{end}{'\\n'}{end}", "web:iis,logger,\njob:run,\n"],
  ["{.items[?(@.metadata.namespace!=\"default\")].metadata.name}", "job"],
  ["{.items[0:1].metadata.name}", "web"],
  ["{.items[0].metadata.labels.*}", "web front"],
  ["{.items[*].metadata.labels.app}", "web job"],
];

describe('kubectl JSONPath templates (-o jsonpath=…)', () => {
  for (const [template, expected] of same) {
    it(`${template} prints ${JSON.stringify(expected)}`, () => {
      expect(executeJsonPathTemplate(parseJsonPathTemplate(template), list)).to.equal(expected);
    });
  }
  it('an unclosed action is refused with kubectl\'s text', () => {
    expect(() => parseJsonPathTemplate('{.items[*].metadata.name')).to.throw('unclosed action');
  });
  it('{end} outside a range is refused', () => {
    expect(() => parseJsonPathTemplate('{.kind}{end}')).to.throw('not in range, nothing to end');
  });
  // Differences of the dialect (docs/cli.md): a quoted key is one key, however many dots it has;
  // a filter compares as JavaScript does where kubectl refuses an int/float comparison.
  it('differs from kubectl where documented: quoted keys with dots, numeric filters', () => {
    expect(executeJsonPathTemplate(parseJsonPathTemplate("{.items[*]['metadata.name']}"), list)).to.equal('');
    expect(executeJsonPathTemplate(parseJsonPathTemplate('{.items[*].status.containerStatuses[?(@.restartCount>1)].name}'), list)).to.equal('logger');
  });
  it('custom-columns accepts the four relaxed spellings of a path (RelaxedJSONPathExpression)', () => {
    for (const spelling of ['metadata.name', '.metadata.name', '{metadata.name}', '{.metadata.name}']) expect(relaxedJsonPathExpression(spelling)).to.equal('{.metadata.name}');
    expect(() => relaxedJsonPathExpression('{a}{b}')).to.throw("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'");
  });
});
