import { expect } from 'chai';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { closeLater, tidyUpLater, tidyUpNow } from '../src/tidy-up.js';
import { afterTidyUp } from './support/tidy-up.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('tidy-up: work a call need not wait for', () => {
  it('runs two turns of the event loop after it was queued, in the order queued', async () => {
    const ran: string[] = [];
    tidyUpLater(() => ran.push('first'));
    tidyUpLater(() => ran.push('second'));
    await Promise.resolve();
    expect(ran).to.deep.equal([]);
    await turn();
    expect(ran).to.deep.equal([]); // a reply's trailers go out in this turn
    await turn();
    expect(ran).to.deep.equal(['first', 'second']);
  });

  it('tidyUpNow runs what is queued at once, and nothing runs twice', async () => {
    const ran: string[] = [];
    tidyUpLater(() => ran.push('a'));
    tidyUpNow();
    expect(ran).to.deep.equal(['a']);
    tidyUpLater(() => ran.push('b'));
    await afterTidyUp();
    await afterTidyUp();
    expect(ran).to.deep.equal(['a', 'b']);
  });

  it('closeLater closes the descriptor once tidy-up runs', async () => {
    const fd = openSync('/dev/null', 'r');
    closeLater(fd);
    expect(fstatSync(fd).isCharacterDevice()).to.equal(true);
    await afterTidyUp();
    expect(() => fstatSync(fd)).to.throw(/EBADF/);
  });

  it('closeLater does not mind a descriptor that is already closed', async () => {
    const fd = openSync('/dev/null', 'r');
    closeSync(fd);
    closeLater(fd);
    await afterTidyUp();
  });
});
