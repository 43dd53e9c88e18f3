import { expect } from 'chai';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { TidyUp } from '../src/tidy-up.js';
import { afterTidyUp } from './support/tidy-up.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('tidy-up: work a call need not wait for', () => {
  let tidyUp: TidyUp;
  beforeEach(() => {
    tidyUp = new TidyUp();
  });

  it('runs two turns of the event loop after it was queued, in the order queued', async () => {
    const ran: string[] = [];
    tidyUp.later(() => ran.push('first'));
    tidyUp.later(() => ran.push('second'));
    await Promise.resolve();
    expect(ran).to.deep.equal([]);
    await turn();
    expect(ran).to.deep.equal([]); // a reply's trailers go out in this turn
    await turn();
    expect(ran).to.deep.equal(['first', 'second']);
  });

  it('now() runs what is queued at once, and nothing runs twice', async () => {
    const ran: string[] = [];
    tidyUp.later(() => ran.push('a'));
    tidyUp.now();
    expect(ran).to.deep.equal(['a']);
    tidyUp.later(() => ran.push('b'));
    await afterTidyUp();
    await afterTidyUp();
    expect(ran).to.deep.equal(['a', 'b']);
  });

  it('closeLater closes the descriptor once tidy-up runs', async () => {
    const fd = openSync('/dev/null', 'r');
    tidyUp.closeLater(fd);
    expect(fstatSync(fd).isCharacterDevice()).to.equal(true);
    await afterTidyUp();
    expect(() => fstatSync(fd)).to.throw(/EBADF/);
  });

  it('closeLater does not mind a descriptor that is already closed', async () => {
    const fd = openSync('/dev/null', 'r');
    closeSync(fd);
    tidyUp.closeLater(fd);
    await afterTidyUp();
  });

  it("two queues share nothing: running one does not run the other's jobs", async () => {
    const other = new TidyUp();
    const ran: string[] = [];
    tidyUp.later(() => ran.push('mine'));
    other.later(() => ran.push('other'));
    tidyUp.now();
    expect(ran).to.deep.equal(['mine']);
    await afterTidyUp();
    expect(ran).to.deep.equal(['mine', 'other']);
  });
});
