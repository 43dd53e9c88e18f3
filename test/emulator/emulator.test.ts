import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMMAND_NOT_FOUND } from '../../src/emulator/command-registry.js';
import { evaluateArithmetic, parseShellScript, ShellSyntaxError } from '../../src/emulator/shell/index.js';
import { CommandNotFoundError } from '../../src/emulator/simulated-process.js';
import { waitUntil } from '../support/wait.js';
import { run, start, testRegistry, testTarget } from './emulator-harness.js';

describe('command emulator', () => {
  describe('programs', () => {
    it('echo prints its arguments; -n drops the newline', async () => {
      expect(await run(['echo', 'hello', 'World'])).to.deep.include({ stdout: 'hello World\n', exitCode: 0 });
      expect((await run(['/bin/echo', '-n', 'hello'])).stdout).to.equal('hello');
      expect((await run(['echo', '-e', 'a\\tb'])).stdout).to.equal('a\tb\n');
    });

    it('sleep waits for the given time and rejects a bad number', async () => {
      const t0 = Date.now();
      expect((await run(['sleep', '0.2'])).exitCode).to.equal(0);
      expect(Date.now() - t0).to.be.within(180, 1000);
      expect(await run(['sleep', 'x'])).to.deep.include({ exitCode: 1, stderr: "sleep: invalid number 'x'\n" });
    });

    it('an unknown program is refused at start, naming it', () => {
      expect(() => start(['nope'])).to.throw(CommandNotFoundError, 'exec: "nope": executable file not found in $PATH');
    });

    it('pgrep finds running processes of the container and nothing once they are gone', async () => {
      const target = testTarget();
      const registry = testRegistry();
      const sleeper = start(['sleep', '100'], { target, registry });
      const found = await run(['sh', '-c', 'pgrep sleep || true'], { target, registry });
      expect(found.stdout.trim()).to.equal(String(sleeper.process.pid));
      sleeper.process.kill('SIGKILL');
      expect((await sleeper.process.exited).exitCode).to.equal(137);
      const none = await run(['sh', '-c', 'pgrep sleep || true'], { target, registry });
      expect(none).to.deep.include({ stdout: '', stderr: '', exitCode: 0 });
    });

    it('cat and ls read host files through bind mounts', async () => {
      const host = await mkdtemp(join(tmpdir(), 'emu-'));
      try {
        await writeFile(join(host, 'flag.txt'), 'mounted\n');
        const target = testTarget('linux', [{ destination: '/data', source: host, type: 'bind' }]);
        expect((await run(['ls', '-A', '/data'], { target })).stdout).to.equal('flag.txt\n');
        expect((await run(['cat', '/data/flag.txt'], { target })).stdout).to.equal('mounted\n');
        expect((await run(['cat', '/etc/hostname'], { target })).stdout).to.equal('web-0\n');
        expect((await run(['cat', '/nope'], { target })).exitCode).to.equal(1);
      } finally {
        await rm(host, { recursive: true, force: true });
      }
    });
  });

  describe('sh -c', () => {
    const sh = (script: string) => run(['sh', '-c', script]);

    it('runs ; && || and exit N', async () => {
      expect(await sh('echo a; echo b')).to.deep.include({ stdout: 'a\nb\n', exitCode: 0 });
      expect((await sh('false && echo no || echo yes')).stdout).to.equal('yes\n');
      expect((await sh('true && echo yes')).stdout).to.equal('yes\n');
      expect(await sh('echo before; exit 7; echo after')).to.deep.include({ stdout: 'before\n', exitCode: 7 });
      expect((await sh('exit 300')).exitCode).to.equal(44);
    });

    it('expands variables, $?, command substitution and arithmetic', async () => {
      expect((await sh('X=1; Y="$X two"; echo "$Y" ${Z:-dflt}')).stdout).to.equal('1 two dflt\n');
      expect((await sh('false; echo $?')).stdout).to.equal('1\n');
      expect((await sh('echo "host: $(hostname)"')).stdout).to.equal('host: web-0\n');
      expect((await sh('i=3; echo $((i * 2 + 1))')).stdout).to.equal('7\n');
      expect((await sh("echo 'single $X' \"double\"")).stdout).to.equal('single $X double\n');
    });

    it('runs while, until, for and if', async () => {
      expect((await sh('i=0; while [ $i -lt 3 ]; do echo $i; i=$((i+1)); done')).stdout).to.equal('0\n1\n2\n');
      expect((await sh('i=0; until [ $i -ge 2 ]; do i=$((i+1)); done; echo $i')).stdout).to.equal('2\n');
      expect((await sh('for x in a b c; do echo -n $x; done')).stdout).to.equal('abc');
      expect((await sh('for x in $(seq 1 3); do echo $x; done')).stdout).to.equal('1\n2\n3\n');
      expect((await sh('if [ "a" = "b" ]; then echo same; elif true; then echo elif; else echo other; fi')).stdout).to.equal('elif\n');
    });

    it('redirects to stderr, to /dev/null and into container files', async () => {
      expect(await sh('echo err >&2; echo out')).to.deep.include({ stdout: 'out\n', stderr: 'err\n' });
      expect(await sh('echo gone > /dev/null')).to.deep.include({ stdout: '' });
      expect((await sh('echo one > /tmp/f; echo two >> /tmp/f; cat /tmp/f')).stdout).to.equal('one\ntwo\n');
      expect((await sh('nope 2>&1')).stdout).to.equal('sh: nope: not found\n');
    });

    it('pipes output between commands', async () => {
      expect((await sh('echo -e "a\\nbb\\nc" | grep b')).stdout).to.equal('bb\n');
    });

    it('reports an unknown command with 127 and a syntax error with 2', async () => {
      expect(await sh('nope')).to.deep.include({ exitCode: 127, stderr: 'sh: nope: not found\n' });
      const bad = await sh('while true; do echo');
      expect(bad.exitCode).to.equal(2);
      expect(bad.stderr).to.contain('syntax error');
    });

    it('a loop ends when the process is killed', async () => {
      const ticks = (): number => out.stdout.split('\n').filter((l) => l === 'tick').length;
      const began = Date.now();
      const { process, out } = start(['sh', '-c', 'while true; do echo tick; sleep 0.05; done']);
      await waitUntil('three ticks', () => ticks() >= 3);
      // Two sleeps of 50 ms lie between the first tick and the third.
      expect(Date.now() - began).to.be.at.least(95);
      process.kill('SIGKILL');
      const exit = await process.exited;
      expect(exit.exitCode).to.equal(137);
      const atExit = ticks();
      await new Promise((r) => setTimeout(r, 150));
      expect(ticks()).to.equal(atExit);
    });

    it('parses nested structures and rejects unbalanced ones', () => {
      expect(parseShellScript('for i in 1 2; do if true; then echo $i; fi; done')).to.have.length(1);
      expect(() => parseShellScript('if true; then echo')).to.throw(ShellSyntaxError);
      expect(() => parseShellScript('echo "open')).to.throw(ShellSyntaxError, 'unterminated');
    });

    it('evaluates arithmetic with precedence and refuses division by zero', () => {
      expect(evaluateArithmetic('2+3*4', () => undefined)).to.equal(14);
      expect(evaluateArithmetic('(2+3)*4 % 7', () => undefined)).to.equal(6);
      expect(evaluateArithmetic('n>2&&n<5', () => '3')).to.equal(1);
      expect(() => evaluateArithmetic('1/0', () => undefined)).to.throw(ShellSyntaxError);
    });
  });

  describe('signals', () => {
    it('PID 1 ignores SIGTERM it does not handle; SIGKILL ends it with 137', async () => {
      const { process } = start(['sleep', '100'], { init: true });
      process.kill('SIGTERM');
      const raced = await Promise.race([process.exited.then(() => 'exited'), new Promise((r) => setTimeout(() => r('running'), 100))]);
      expect(raced).to.equal('running');
      process.kill('SIGKILL');
      expect((await process.exited).exitCode).to.equal(137);
    });

    it('a non-init process ends on SIGTERM with 143; top handles it even as PID 1', async () => {
      const plain = start(['sleep', '100']);
      plain.process.kill('SIGTERM');
      expect(await plain.process.exited).to.deep.include({ exitCode: 143, signal: 'SIGTERM' });
      const top = start(['top'], { init: true });
      top.process.kill('SIGTERM');
      expect((await top.process.exited).exitCode).to.equal(143);
    });

    it('sh -c with one command execs it, so the command handles signals as PID 1', async () => {
      const { process } = start(['sh', '-c', 'top'], { init: true });
      await new Promise((r) => setTimeout(r, 20));
      process.kill('SIGTERM');
      expect((await process.exited).exitCode).to.equal(143);
    });

    describe('programs that wait for a signal (untilSignal)', () => {
      const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 20));

      it('pause as PID 1: SIGWINCH and SIGHUP change nothing, SIGTERM prints its shutdown line and exits 0', async () => {
        const { process, out } = start(['pause'], { init: true });
        await settle();
        process.kill('SIGWINCH');
        process.kill('SIGHUP');
        await settle();
        expect(process.hasExited).to.equal(false);
        process.kill('SIGTERM');
        expect(await process.exited).to.deep.include({ exitCode: 0 });
        expect(out.stderr).to.equal('Shutting down, got signal: Terminated\n');
      });

      it('sleep infinity: 143 on SIGTERM outside PID 1, ignored as PID 1 until SIGKILL (137)', async () => {
        const plain = start(['sleep', 'infinity']);
        await settle();
        plain.process.kill('TERM');
        expect(await plain.process.exited).to.deep.include({ exitCode: 143, signal: 'SIGTERM' });
        const init = start(['sleep', 'infinity'], { init: true });
        await settle();
        init.process.kill('SIGTERM');
        await settle();
        expect(init.process.hasExited).to.equal(false);
        init.process.kill('SIGKILL');
        expect(await init.process.exited).to.deep.include({ exitCode: 137, signal: 'SIGKILL' });
      });

      it('ServiceMonitor prints its start lines, stays in ps, and exits 0 on a stop signal (Windows)', async () => {
        const target = testTarget('windows');
        const { process, out } = start(['C:\\ServiceMonitor.exe', 'w3svc'], { target, init: true });
        await settle();
        expect(out.stdout).to.equal("\r\n Service 'w3svc' has been stopped\r\n\r\n Service 'w3svc' started\r\n");
        expect(target.processes.list().map((p) => p.comm)).to.deep.equal(['servicemonitor']);
        process.kill('SIGINT');
        expect((await process.exited).exitCode).to.equal(0);
        expect(target.processes.size).to.equal(0);
      });

      it('a signal before the program reached its wait is the one it waited for', async () => {
        const { process, out } = start(['pause'], { init: true });
        process.kill('SIGINT');
        expect((await process.exited).exitCode).to.equal(0);
        expect(out.stderr).to.equal('Shutting down, got signal: Interrupt\n');
      });

      it('exec into a waiting program (sh -c "exec pause") waits in it; the exit listeners run once', async () => {
        const { process, out } = start(['sh', '-c', 'echo up; exec pause'], { init: true });
        await settle();
        expect(out.stdout).to.equal('up\n');
        expect(process.comm).to.equal('pause');
        const seen: number[] = [];
        process.onExit((exit) => seen.push(exit.exitCode));
        process.kill('SIGTERM');
        process.kill('SIGKILL');
        expect((await process.exited).exitCode).to.equal(0);
        expect(seen).to.deep.equal([0]);
        expect(out.stderr).to.equal('Shutting down, got signal: Terminated\n');
      });
    });

    it('httpd logs its start and shuts down on SIGTERM with 0', async () => {
      const { process, out } = start(['httpd-foreground'], { init: true });
      await waitUntil('httpd to log its start', () => out.stderr.includes('httpd'));
      process.kill('SIGTERM');
      expect((await process.exited).exitCode).to.equal(0);
      expect(out.stderr).to.contain('caught SIGTERM, shutting down');
    });
  });

  describe('Windows shells', () => {
    const win = testTarget('windows');

    it('cmd /c runs & && || separated statements with %VAR% expansion and exit codes', async () => {
      expect((await run(['cmd', '/c', 'echo hello & echo %USERNAME%'], { target: win, env: { USERNAME: 'ContainerUser' } })).stdout)
        .to.equal('hello \r\nContainerUser\r\n');
      expect((await run(['cmd.exe', '/S', '/C', '"exit /b 5"'], { target: win })).exitCode).to.equal(5);
      expect((await run(['cmd', '/c', 'nope || echo fallback'], { target: win })).stdout).to.equal('fallback\r\n');
      const missing = await run(['cmd', '/c', 'nope'], { target: win });
      expect(missing.exitCode).to.equal(9009);
      expect(missing.stderr).to.contain("'nope' is not recognized as an internal or external command");
    });

    it('powershell -c runs echo, $env:, exit and loops', async () => {
      expect((await run(['powershell', '-c', "echo 'hello World'"], { target: win })).stdout).to.equal('hello World\r\n');
      expect((await run(['powershell', '/c', '$env:computername'], { target: win, env: { COMPUTERNAME: 'WEB-0' } })).stdout).to.equal('WEB-0\r\n');
      expect((await run(['powershell', '-Command', 'echo a; exit 4'], { target: win })).exitCode).to.equal(4);
      const { process, out } = start(['powershell', '-c', "while($true) { echo 'tick'; sleep -m 30; }"], { target: win });
      await waitUntil('two ticks', () => out.stdout.split('\r\n').filter((l) => l === 'tick').length >= 2);
      process.kill('SIGTERM');
      await process.exited;
      const check = await run(['powershell', '-c', 'get-process | findstr sleep; exit 0'], { target: win });
      expect(check).to.deep.include({ stdout: '', exitCode: 0 });
    });

    it('ping -t localhost replies every second until stopped (Windows has no PID 1 rule)', async () => {
      const { process, out } = start(['cmd', '/c', 'ping -t localhost'], { target: win, init: true });
      await waitUntil('the first reply', () => out.stdout.includes('Reply from ::1'));
      process.kill('SIGTERM');
      expect((await process.exited).exitCode).to.not.equal(0);
    });
  });

  describe('command registry', () => {
    it('finds programs by base name, case-insensitively and without .exe; later registrations replace', async () => {
      const registry = testRegistry();
      expect(registry.lookup('C:\\Windows\\System32\\CMD.EXE')?.name).to.equal('cmd');
      registry.register('whoami', (ctx) => {
        ctx.stdout('contoso\\webapp1$\n');
        return 0;
      });
      expect((await run(['whoami'], { registry })).stdout).to.equal('contoso\\webapp1$\n');
      registry.registerDefault('whoami', () => 9);
      expect((await run(['whoami'], { registry })).exitCode).to.equal(0);
    });

    it('spawn reports an unknown child command instead of throwing', async () => {
      const registry = testRegistry();
      let seen: unknown;
      registry.register('probe', async (ctx) => {
        seen = await ctx.spawn(['missing'], { stdout: ctx.stdout, stderr: ctx.stderr });
        return 0;
      });
      await run(['probe'], { registry });
      expect(seen).to.equal(COMMAND_NOT_FOUND);
    });
  });
});
