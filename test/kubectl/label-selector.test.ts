// Label selectors as k8s.io/apimachinery/pkg/labels v0.34.12 parses and matches them: every row
// was printed by a Go program calling labels.Parse and Selector.Matches on the labels below.
import { expect } from 'chai';
import { parseLabelSelector, selectorMatches } from '../../src/kubectl/label-selector.js';

const labels = { app: 'web', tier: 'front', version: '3' };

/** [selector, matches] or [selector, error text]. */
const rows: readonly (readonly [string, boolean | string])[] = [
  ["app=web", true],
  ["app==web", true],
  ["app!=web", false],
  ["app", true],
  ["!app", false],
  ["!missing", true],
  ["app in (web,db)", true],
  ["app notin (web,db)", false],
  ["tier in (back)", false],
  ["app=web,tier=front", true],
  ["app=web, tier!=front", false],
  [" app = web ", true],
  ["version>2", true],
  ["version<2", false],
  ["missing!=x", true],
  ["missing notin (a)", true],
  ["app in ()", false],
  ["app in (web", "unable to parse requirement: found '', expected: ',' or ')'"],
  ["app=", false],
  ["=web", "found '=', expected: !, identifier, or 'end of string'"],
  ["app=web=x", "found '=', expected: ',' or 'end of string'"],
  ["a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"],
  ["app in web", "unable to parse requirement: found 'web' expected: '('"],
  ["version>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"],
  ["-bad=1", "unable to parse requirement: <nil>: Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"],
  ["app=has space", "found 'space', expected: ',' or 'end of string'"],
  ["", true],
  ["app,!tier", false],
  ["x/y=z", false],
  ["app=we$b", "unable to parse requirement: values[0][app]: Invalid value: \"we$b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"],
  ["app in (web,,db)", true],
];

describe('label selectors (-l, --selector)', () => {
  for (const [selector, expected] of rows) {
    if (typeof expected === 'boolean') {
      it(`${JSON.stringify(selector)} ${expected ? 'selects' : 'does not select'} app=web,tier=front,version=3`, () => {
        expect(selectorMatches(parseLabelSelector(selector), labels)).to.equal(expected);
      });
    } else {
      it(`${JSON.stringify(selector)} is refused: ${expected.slice(0, 60)}`, () => {
        expect(() => parseLabelSelector(selector)).to.throw(expected);
      });
    }
  }
});
