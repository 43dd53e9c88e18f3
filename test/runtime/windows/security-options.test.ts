import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { RuntimeError } from '../../../src/runtime/errors.js';
import { CredentialSpecHandoff } from '../../../src/runtime/windows/credential-spec-handoff.js';
import { credentialSpecFromSecurityOptions, type SecurityOptionContext } from '../../../src/runtime/windows/security-options.js';
import { afterTidyUp } from '../../support/tidy-up.js';

// moby daemon/oci_windows.go at v24.0.0 (same texts and checks through v28.5.2):
// setWindowsCredentialSpec, readCredentialSpecFile, readCredentialSpecRegistry.
describe("security options (moby's credentialspec= rules, moby v24.0.0 daemon/oci_windows.go)", () => {
  let stateDir: string;
  let context: SecurityOptionContext;
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'winsim-secopt-'));
    const handoff = await CredentialSpecHandoff.open(stateDir);
    context = { containerId: 'c1', credentialSpecDirectory: handoff.directory, registry: handoff.registry };
    await writeFile(join(handoff.directory, 'WebApplication1.json'), '{"from":"file"}');
    await mkdir(join(handoff.directory, 'sub'));
    await writeFile(join(handoff.directory, 'sub', 'spec.json'), '{"from":"sub"}');
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  async function rejection(options: string[], ctx = context): Promise<RuntimeError> {
    const outcome = await credentialSpecFromSecurityOptions(options, ctx).then(
      () => undefined,
      (err: unknown) => err as RuntimeError,
    );
    if (outcome === undefined) throw new Error('expected the security options to be rejected');
    expect(outcome).to.be.instanceOf(RuntimeError);
    expect(outcome.code).to.equal('InvalidArgument');
    return outcome;
  }

  const accepted: Array<[string, string[], string | undefined]> = [
    ['file:// relative to the credential spec directory', ['credentialspec=file://WebApplication1.json'], '{"from":"file"}'],
    ['a case-insensitive key and scheme', ['CredentialSpec=FILE://WebApplication1.json'], '{"from":"file"}'],
    ['a path that cleans to inside the directory', ['credentialspec=file://sub/../sub/./spec.json'], '{"from":"sub"}'],
    ['Windows separators', ['credentialspec=file://sub\\spec.json'], '{"from":"sub"}'],
    ['a rooted path without a drive (joined, as on Windows)', ['credentialspec=file://\\WebApplication1.json'], '{"from":"file"}'],
    ['raw:// verbatim', ['credentialspec=raw://{"a": 1}'], '{"a": 1}'],
    ['the last of several options', ['credentialspec=raw://{"first":1}', 'credentialspec=file://WebApplication1.json'], '{"from":"file"}'],
    ['no options', [], undefined],
  ];
  for (const [name, options, expected] of accepted) {
    it(`accepts ${name}`, async () => {
      expect(await credentialSpecFromSecurityOptions(options, context)).to.equal(expected);
    });
  }

  const invalidOption =
    "invalid credential spec security option - value must be prefixed by 'file://', 'registry://', or 'raw://' followed by a non-empty value";
  const rejected: Array<[string, string[], string | ((ctx: SecurityOptionContext) => string)]> = [
    ['an option without =', ['credentialspec'], 'invalid security option: no equals sign in supplied value credentialspec'],
    ['another option', ['seccomp=unconfined'], 'security option not supported: seccomp'],
    ['a value without a scheme', ['credentialspec=WebApplication1.json'], invalidOption],
    ['an empty value after the scheme', ['credentialspec=file://'], invalidOption],
    ['an unknown scheme', ['credentialspec=http://x'], invalidOption],
    ['config:// outside swarm', ['credentialspec=config://abc'], invalidOption],
    ['an absolute path', ['credentialspec=file://C:\\ProgramData\\docker\\CredentialSpecs\\x.json'], 'invalid credential spec: file:// path cannot be absolute'],
    ['a UNC path', ['credentialspec=file://\\\\server\\share\\x.json'], 'invalid credential spec: file:// path cannot be absolute'],
    ['traversal out of the directory', ['credentialspec=file://..\\registry\\registry.json'], (ctx) => `invalid credential spec: file:// path must be under ${ctx.credentialSpecDirectory}`],
    ['traversal to the parent itself', ['credentialspec=file://..'], (ctx) => `invalid credential spec: file:// path must be under ${ctx.credentialSpecDirectory}`],
    ['a valid option followed by a bad one', ['credentialspec=raw://{}', 'apparmor=x'], 'security option not supported: apparmor'],
  ];
  for (const [name, options, message] of rejected) {
    it(`rejects ${name} with moby's text`, async () => {
      const err = await rejection(options);
      expect(err.message).to.equal(typeof message === 'function' ? message(context) : message);
    });
  }

  it('reports an unreadable file with moby\'s text and the Windows reason', async () => {
    const err = await rejection(['credentialspec=file://missing.json']);
    const full = join(context.credentialSpecDirectory, 'missing.json');
    expect(err.message).to.equal(
      `failed to load credential spec for container c1: open ${full}: The system cannot find the file specified.`,
    );
  });

  it('reads a file of any size whole, multi-byte characters included', async () => {
    // Around the 16 KiB of the first read: under it, exactly it, over it, well over it.
    for (const bytes of [16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 200 * 1024]) {
      const euros = Math.floor((bytes - 9) / 3); // 3 bytes each, 9 for `{"n":""}` and the newline
      const text = `{"n":"${' '.repeat(bytes - 9 - 3 * euros)}${'€'.repeat(euros)}"}\n`;
      expect(Buffer.byteLength(text)).to.equal(bytes);
      await writeFile(join(context.credentialSpecDirectory, 'big.json'), text);
      expect(await credentialSpecFromSecurityOptions(['credentialspec=file://big.json'], context)).to.equal(text, `${bytes} bytes`);
    }
  });

  it('closes the file it read once tidy-up runs, also after a failed read', async () => {
    const openFiles = (): number => readdirSync('/proc/self/fd').length;
    const before = openFiles();
    await credentialSpecFromSecurityOptions(['credentialspec=file://WebApplication1.json'], context);
    await rejection(['credentialspec=file://sub']);
    await afterTidyUp();
    expect(openFiles()).to.equal(before);
  });

  it('reports a directory with the Windows reason', async () => {
    const err = await rejection(['credentialspec=file://sub']);
    const full = join(context.credentialSpecDirectory, 'sub');
    expect(err.message).to.equal(`failed to load credential spec for container c1: open ${full}: Is a directory.`);
  });

  it('keeps a relative state dir relative in messages', async () => {
    const given = relative(process.cwd(), context.credentialSpecDirectory);
    const err = await rejection(['credentialspec=file://../x.json'], { ...context, credentialSpecDirectory: given });
    expect(err.message).to.equal(`invalid credential spec: file:// path must be under ${given}`);
  });

  it("checks the directory as a string prefix, as moby does: a sibling whose name starts the same passes the check", async () => {
    // moby: strings.HasPrefix(filepath.Join(base, location), base). `..\CredentialSpecsX\a.json`
    // joins to `<root>\CredentialSpecsX\a.json`, which starts with `<root>\CredentialSpecs`: no
    // "must be under" error; the file is read from there.
    const sibling = `${context.credentialSpecDirectory}X`;
    await mkdir(sibling);
    try {
      await writeFile(join(sibling, 'a.json'), '{"from":"sibling"}');
      expect(await credentialSpecFromSecurityOptions(['credentialspec=file://..\\CredentialSpecsX\\a.json'], context)).to.equal('{"from":"sibling"}');
      const err = await rejection(['credentialspec=file://../CredentialSpecsX/missing.json']);
      expect(err.message).to.equal(`failed to load credential spec for container c1: open ${join(sibling, 'missing.json')}: The system cannot find the file specified.`);
    } finally {
      await rm(sibling, { recursive: true, force: true });
    }
  });
});
