import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, statSync, writeSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileCallPolicy } from '../../src/tuning/file-calls.js';
import { RecycledFiles } from '../../src/tuning/recycled-files.js';
import { afterTidyUp } from '../support/tidy-up.js';

const errorCode = async (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    () => undefined,
    (err: NodeJS.ErrnoException) => err.code,
  );

describe('RecycledFiles: removed files keep their inodes for the next create', () => {
  let dir: string;
  let spareDir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-recycled-'));
    spareDir = join(dir, 'spares');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Creates `path` with `text` through the pool of files, as the credential spec hand-off does. */
  async function write(files: RecycledFiles, path: string, text: string): Promise<void> {
    const fd = await files.create(path);
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
  }

  it('creates a 0600 file when there is no spare, and refuses an existing one (EEXIST) as O_EXCL does', async () => {
    const files = await RecycledFiles.open(spareDir, 0o600, new FileCallPolicy());
    expect((await stat(spareDir)).mode & 0o777).to.equal(0o700);
    await write(files, join(dir, 'a.json'), 'A');
    expect((await stat(join(dir, 'a.json'))).mode & 0o777).to.equal(0o600);
    expect(await errorCode(files.create(join(dir, 'a.json')))).to.equal('EEXIST');
    expect(await readFile(join(dir, 'a.json'), 'utf8')).to.equal('A');
  });

  it('a removed file is gone by its name at once and emptied by tidy-up, and the next create takes its inode, empty', async () => {
    const files = await RecycledFiles.open(spareDir, 0o600, new FileCallPolicy());
    const first = join(dir, 'first.json');
    await write(files, first, 'the first spec, longer than the second');
    const inode = (await stat(first)).ino;
    expect(await files.remove(first)).to.equal(true);
    // Checked before the event loop turns (a thread-pool call may take longer than tidy-up waits):
    // the name is gone, and the file is not a spare before it is emptied.
    expect(existsSync(first)).to.equal(false);
    expect(files.spareCount).to.equal(0);
    await afterTidyUp();
    const spares = await readdir(spareDir);
    expect(spares).to.have.length(1);
    expect((await stat(join(spareDir, spares[0]!))).size).to.equal(0);
    expect(files.spareCount).to.equal(1);

    const second = join(dir, 'second.json');
    await write(files, second, 'second');
    // The spare's own name, a second link, goes as tidy-up (checked before the loop turns).
    expect(statSync(second).nlink).to.equal(2);
    await afterTidyUp();
    const made = await stat(second);
    expect([made.ino, made.mode & 0o777, made.nlink]).to.deep.equal([inode, 0o600, 1]);
    expect(await readFile(second, 'utf8')).to.equal('second');
    expect(await readdir(spareDir)).to.deep.equal([]);
    expect(files.spareCount).to.equal(0);
  });

  it('keeps the spare when the name is taken, and fails with EEXIST without touching the existing file', async () => {
    const files = await RecycledFiles.open(spareDir, 0o600, new FileCallPolicy());
    await write(files, join(dir, 'a.json'), 'A');
    await files.remove(join(dir, 'a.json'));
    await writeFile(join(dir, 'taken.json'), 'theirs');
    expect(await errorCode(files.create(join(dir, 'taken.json')))).to.equal('EEXIST');
    expect(await readFile(join(dir, 'taken.json'), 'utf8')).to.equal('theirs');
    expect(files.spareCount).to.equal(1);
    expect(await errorCode(files.create(join(dir, 'missing-dir', 'b.json')))).to.equal('ENOENT');
    expect(files.spareCount).to.equal(1);
  });

  it('answers false for a missing file and fails on a directory as unlink does, leaving it in place', async () => {
    const files = await RecycledFiles.open(spareDir, 0o600, new FileCallPolicy());
    expect(await files.remove(join(dir, 'nothing.json'))).to.equal(false);
    await mkdir(join(dir, 'busy.json', 'inside'), { recursive: true });
    expect(await errorCode(files.remove(join(dir, 'busy.json')))).to.be.oneOf(['EISDIR', 'EPERM']);
    expect((await stat(join(dir, 'busy.json', 'inside'))).isDirectory()).to.equal(true);
    expect(files.spareCount).to.equal(0);
  });

  it('removes a symbolic link without following it, and a FIFO without waiting on it, keeping neither as a spare', async () => {
    const files = await RecycledFiles.open(spareDir, 0o600, new FileCallPolicy());
    await writeFile(join(dir, 'target.json'), 'not ours to empty');
    await symlink(join(dir, 'target.json'), join(dir, 'link.json'));
    expect(await files.remove(join(dir, 'link.json'))).to.equal(true);
    expect(await errorCode(lstat(join(dir, 'link.json')))).to.equal('ENOENT');
    expect(await readFile(join(dir, 'target.json'), 'utf8')).to.equal('not ours to empty');
    if (spawnSync('mkfifo', [join(dir, 'fifo.json')]).status === 0) {
      expect(await files.remove(join(dir, 'fifo.json'))).to.equal(true);
      expect(await errorCode(lstat(join(dir, 'fifo.json')))).to.equal('ENOENT');
    }
    await afterTidyUp();
    expect(files.spareCount).to.equal(0);
    expect(await readdir(spareDir)).to.deep.equal([]);
  });

  it('unlinks what is removed beyond its capacity', async () => {
    const files = await RecycledFiles.open(spareDir, 0o600, new FileCallPolicy(), 2);
    for (const name of ['a', 'b', 'c']) await write(files, join(dir, name), name);
    // Files still being emptied count: the third removal finds the two before it and unlinks.
    for (const name of ['a', 'b', 'c']) expect(await files.remove(join(dir, name))).to.equal(true);
    await afterTidyUp();
    expect(files.spareCount).to.equal(2);
    expect(await readdir(spareDir)).to.have.length(2);
    expect((await readdir(dir)).sort()).to.deep.equal(['spares']);
  });

  it('empties a spare directory a crash left behind, and close unlinks every spare', async () => {
    await mkdir(spareDir, { recursive: true });
    await writeFile(join(spareDir, 'spare-7'), 'what a crashed runtime was emptying');
    const files = await RecycledFiles.open(spareDir, 0o600, new FileCallPolicy());
    expect(await readdir(spareDir)).to.deep.equal([]);
    await write(files, join(dir, 'a'), 'A');
    await write(files, join(dir, 'b'), 'B');
    await files.remove(join(dir, 'a'));
    await afterTidyUp();
    await files.remove(join(dir, 'b'));
    // One spare, and one removed file not yet emptied: close leaves neither.
    expect([files.spareCount, (await readdir(spareDir)).length]).to.deep.equal([1, 2]);
    await files.close();
    expect(await readdir(spareDir)).to.deep.equal([]);
    expect(files.spareCount).to.equal(0);
  });

  it('creates and unlinks as usual when the spare directory is on another file system (EXDEV)', async function () {
    // /dev/shm is a tmpfs on Linux; the test needs it on a different device from the temp dir.
    let shm: string;
    try {
      shm = await mkdtemp('/dev/shm/winsim-recycled-');
    } catch {
      this.skip();
    }
    try {
      if ((await stat(shm)).dev === (await stat(dir)).dev) this.skip();
      const files = await RecycledFiles.open(join(shm, 'spares'), 0o600, new FileCallPolicy());
      await write(files, join(dir, 'a'), 'A');
      expect(await files.remove(join(dir, 'a'))).to.equal(true);
      expect(files.spareCount).to.equal(0);
      expect(await readdir(join(shm, 'spares'))).to.deep.equal([]);
      expect(await readdir(dir)).to.deep.equal([]);
    } finally {
      await rm(shm, { recursive: true, force: true });
    }
  });
});
