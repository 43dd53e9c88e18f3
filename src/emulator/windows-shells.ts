import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { merged } from '../tuning/merged.js';
import { COMMAND_NOT_FOUND, type CommandContext, type CommandIo, type CommandRegistry } from './command-registry.js';
import { MAX_LOOP_ITERATIONS } from './shell/index.js';
import { takeContainerStdin } from './container-stdin.js';
import { runBuiltinCmdlet } from './powershell-cmdlets.js';
import { cmdDirUnc, cmdRedirectToUnc, cmdTypeUnc, isUnc, unquotePath } from './smb-commands.js';
import { sessionOf } from './windows-identity.js';

/**
 * `cmd /c …` and `powershell -Command …`, reduced to what container commands use: statement
 * separators, echo, exit codes, variables, sleeps, `while($true) { … }`, pipes into findstr,
 * and everything else routed to the same command registry as Linux programs.
 */
export function registerWindowsShells(registry: CommandRegistry): void {
  registry.registerDefault('cmd', runCmd, { cpuLoad: 0.0005 });
  const ps = runPowerShell;
  registry.registerDefault('powershell', ps, { cpuLoad: 0.01 });
  registry.registerDefault('pwsh', ps, { cpuLoad: 0.01 });
}

const CRLF = '\r\n';

/** Splits on separators outside quotes, braces and parentheses. */
function splitTopLevel(text: string, separators: readonly string[]): { part: string; sep: string }[] {
  const out: { part: string; sep: string }[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      continue;
    }
    if (c === '{' || c === '(') depth++;
    else if (c === '}' || c === ')') depth = Math.max(0, depth - 1);
    if (depth > 0) continue;
    const sep = separators.find((s) => text.startsWith(s, i));
    if (sep !== undefined) {
      out.push({ part: text.slice(start, i), sep });
      i += sep.length - 1;
      start = i + 1;
    }
  }
  out.push({ part: text.slice(start), sep: '' });
  return out;
}

/** Splits a command line into arguments the way the Windows C runtime does for simple cases. */
function splitArgs(line: string): string[] {
  const args: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) args.push(m[1] ?? m[2] ?? m[3] ?? '');
  return args;
}


// ---------------------------------------------------------------------------------------------
// cmd.exe

async function runCmd(ctx: CommandContext): Promise<number> {
  const args = ctx.argv.slice(1);
  const at = args.findIndex((a) => /^\/[ck]$/i.test(a));
  if (at < 0) {
    // An interactive cmd with nothing to read exits; a main process with stdin reads lines.
    const stdin = takeContainerStdin(ctx);
    if (stdin === undefined) return 0;
    let status = 0;
    for (let line = await stdin.readLine(ctx.signal); line !== undefined; line = await stdin.readLine(ctx.signal)) {
      const exit = /^\s*exit(?:\s+(?:\/b\s+)?(-?\d+))?\s*$/i.exec(line);
      if (exit !== null) return exit[1] === undefined ? status : Number(exit[1]);
      if (line.trim() === '') continue;
      const code = await ctx.spawn(['cmd', '/c', line], { stdout: ctx.stdout, stderr: ctx.stderr });
      status = typeof code === 'number' ? code : 9009;
    }
    return status;
  }
  let line = args.slice(at + 1).join(' ');
  if (line.length >= 2 && line.startsWith('"') && line.endsWith('"')) line = line.slice(1, -1);
  const env = new Map(ctx.env);
  let status = 0;
  const statements = splitTopLevel(line, ['&&', '||', '&']);
  let skip = false;
  for (const { part, sep } of statements) {
    if (!skip) {
      // cmd keeps trailing blanks: `echo hello & echo x` prints "hello ".
      const result = await cmdStatement(part.replace(/^\s+/, ''), ctx, env);
      if (result.exit) return result.status;
      status = result.status;
    }
    skip = (sep === '&&' && status !== 0) || (sep === '||' && status === 0);
  }
  return status;
}

function expandPercent(text: string, env: Map<string, string>): string {
  return text.replace(/%([^%\s]+)%/g, (whole, name: string) => {
    for (const [k, v] of env) if (k.toLowerCase() === name.toLowerCase()) return v;
    return whole;
  });
}

async function cmdStatement(raw: string, ctx: CommandContext, env: Map<string, string>): Promise<{ status: number; exit?: boolean }> {
  if (raw.trim() === '') return { status: 0 };
  const text = expandPercent(raw, env);
  // `command > \\server\share\f.txt` (or `>>`): cmd keeps the blank before `>` in the output.
  const toFile = /(?<![&0-9])(1?)(>>?)\s*("[^"]+"|\S+)\s*$/.exec(text);
  if (toFile !== null && isUnc(unquotePath(toFile[3]!))) {
    let output = '';
    const capture: CommandIo = { stdout: (t) => (output += t), stderr: ctx.stderr };
    const result = await cmdStatementWith(text.slice(0, toFile.index), ctx, env, capture);
    if (result.exit) return result;
    const session = sessionOf(ctx);
    if (session === undefined) {
      ctx.stderr(`The network path was not found.${CRLF}`);
      return { status: 1 };
    }
    const written = cmdRedirectToUnc(session, unquotePath(toFile[3]!), output, toFile[2] === '>>', ctx);
    return { status: written !== 0 ? written : result.status };
  }
  return cmdStatementWith(text, ctx, env, ctx);
}

async function cmdStatementWith(expanded: string, ctx: CommandContext, env: Map<string, string>, baseIo: CommandIo): Promise<{ status: number; exit?: boolean }> {
  let text = expanded;
  let io: CommandIo = baseIo;
  const redirect = /\s*(1?>|2>)\s*(nul|NUL)\s*$/.exec(text) ?? /\s*(>&2|1>&2)\s*$/.exec(text);
  if (redirect !== null) {
    text = text.slice(0, redirect.index);
    if (redirect[1] === '2>') io = { stdout: baseIo.stdout, stderr: () => undefined };
    else if (redirect[1]?.includes('&2')) io = { stdout: baseIo.stderr, stderr: baseIo.stderr };
    else io = { stdout: () => undefined, stderr: baseIo.stderr };
  }
  const m = /^(\S+?)(?:(\s)(.*))?$/s.exec(text.startsWith('echo.') ? `echo.${text.slice(5)}` : text);
  const name = (m?.[1] ?? '').toLowerCase();
  const rest = m?.[3] ?? '';
  switch (name) {
    case 'echo':
      if (rest.trim().toLowerCase() === 'off' || rest.trim().toLowerCase() === 'on') return { status: 0 };
      io.stdout(rest === '' ? `ECHO is on.${CRLF}` : `${rest}${CRLF}`);
      return { status: 0 };
    case 'echo.':
      io.stdout(CRLF);
      return { status: 0 };
    case 'rem':
    case '@echo':
      return { status: 0 };
    case 'exit': {
      const parts = rest.trim().split(/\s+/).filter((p) => p.toLowerCase() !== '/b');
      const code = parts[0] === undefined || parts[0] === '' ? 0 : Number(parts[0]);
      return { status: Number.isFinite(code) ? code : 0, exit: true };
    }
    case 'set': {
      const eq = rest.indexOf('=');
      if (eq < 0) {
        const prefix = rest.trim().toLowerCase();
        const hits = [...env].filter(([k]) => k.toLowerCase().startsWith(prefix)).sort(([a], [b]) => a.localeCompare(b));
        if (hits.length === 0) {
          io.stdout(`Environment variable ${rest.trim()} not defined${CRLF}`);
          return { status: 1 };
        }
        for (const [k, v] of hits) io.stdout(`${k}=${v}${CRLF}`);
        return { status: 0 };
      }
      env.set(rest.slice(0, eq).trim(), rest.slice(eq + 1));
      return { status: 0 };
    }
    case 'ver':
      io.stdout(`${CRLF}Microsoft Windows [Version 10.0.20348.2849]${CRLF}`);
      return { status: 0 };
    case 'cd':
    case 'chdir':
      if (rest.trim() === '') io.stdout(`${ctx.target.ociSpec.process.cwd}${CRLF}`);
      return { status: 0 };
    case 'type': {
      const session = sessionOf(ctx);
      if (session !== undefined && isUnc(unquotePath(rest))) return { status: cmdTypeUnc(session, unquotePath(rest), io) };
      const content = ctx.target.files.get(rest.trim());
      if (content === undefined) {
        io.stderr(`The system cannot find the file specified.${CRLF}`);
        return { status: 1 };
      }
      io.stdout(content);
      return { status: 0 };
    }
    case 'dir': {
      const session = sessionOf(ctx);
      if (session !== undefined && isUnc(unquotePath(rest))) return { status: cmdDirUnc(session, unquotePath(rest), io) };
      break;
    }
  }
  const argv = splitArgs(text);
  const code = await ctx.spawn(argv, merged(io, { env }));
  if (code === COMMAND_NOT_FOUND) {
    io.stderr(`'${argv[0] ?? ''}' is not recognized as an internal or external command,${CRLF}operable program or batch file.${CRLF}`);
    return { status: 9009 };
  }
  return { status: code };
}

// ---------------------------------------------------------------------------------------------
// PowerShell

class PsExit {
  constructor(readonly code: number) {}
}

interface PsState {
  /** The script as given, for the position of error records. */
  script: string;
  env: Map<string, string>;
  vars: Map<string, string>;
  failed: boolean;
  lastExitCode: number;
}

async function runPowerShell(ctx: CommandContext): Promise<number> {
  const args = ctx.argv.slice(1);
  let i = 0;
  while (i < args.length && /^-(noprofile|nologo|noninteractive|executionpolicy|inputformat|outputformat|noexit)$/i.test(args[i] as string)) {
    if (/^-(executionpolicy|inputformat|outputformat)$/i.test(args[i] as string)) i++;
    i++;
  }
  if (/^[-/](c|command)$/i.test(args[i] ?? '')) i++;
  const script = args.slice(i).join(' ');
  if (script.trim() === '') {
    const stdin = takeContainerStdin(ctx);
    if (stdin === undefined) return 0;
    let status = 0;
    for (let line = await stdin.readLine(ctx.signal); line !== undefined; line = await stdin.readLine(ctx.signal)) {
      const exit = /^\s*exit(?:\s+(-?\d+))?\s*$/i.exec(line);
      if (exit !== null) return exit[1] === undefined ? status : Number(exit[1]);
      if (line.trim() === '') continue;
      const code = await ctx.spawn(['powershell', '-Command', line], { stdout: ctx.stdout, stderr: ctx.stderr });
      status = typeof code === 'number' ? code : 1;
    }
    return status;
  }
  const state: PsState = { script, env: new Map(ctx.env), vars: new Map([['true', 'True'], ['false', 'False']]), failed: false, lastExitCode: 0 };
  try {
    await psBlock(script, ctx, state, ctx);
  } catch (err) {
    if (err instanceof PsExit) return err.code;
    throw err;
  }
  return state.failed ? 1 : 0;
}

async function psBlock(script: string, ctx: CommandContext, state: PsState, io: CommandIo & { stdin?: string }): Promise<void> {
  for (const { part } of splitTopLevel(script, [';', '\n'])) {
    const statement = part.trim();
    if (statement !== '') await psStatement(statement, ctx, state, io);
  }
}

function psValue(token: string, state: PsState): string {
  const t = token.trim();
  if (t.startsWith("'") && t.endsWith("'") && t.length >= 2) return t.slice(1, -1).replace(/''/g, "'");
  const body = t.startsWith('"') && t.endsWith('"') && t.length >= 2 ? t.slice(1, -1) : t;
  return body.replace(/\$env:([A-Za-z_][A-Za-z0-9_]*)|\$([A-Za-z_][A-Za-z0-9_]*)/gi, (_, envName: string | undefined, varName: string | undefined) => {
    if (envName !== undefined) {
      for (const [k, v] of state.env) if (k.toLowerCase() === envName.toLowerCase()) return v;
      return '';
    }
    return state.vars.get((varName ?? '').toLowerCase()) ?? '';
  });
}

function isTruthy(condition: string, state: PsState): boolean {
  const v = psValue(condition, state).trim().toLowerCase();
  return !(v === '' || v === 'false' || v === '0' || v === '$false');
}

async function psStatement(statement: string, ctx: CommandContext, state: PsState, io: CommandIo & { stdin?: string }): Promise<void> {
  const loop = /^while\s*\((.*?)\)\s*\{(.*)\}$/is.exec(statement);
  if (loop !== null) {
    for (let n = 0; n < MAX_LOOP_ITERATIONS && isTruthy(loop[1] as string, state); n++) {
      await yieldToEventLoop();
      if (ctx.signal.aborted) throw new Error('terminated');
      await psBlock(loop[2] as string, ctx, state, io);
    }
    return;
  }
  const stages = splitTopLevel(statement, ['|']).map((s) => s.part.trim());
  if (stages.length > 1) {
    let input = io.stdin ?? '';
    for (let s = 0; s < stages.length; s++) {
      let captured = '';
      const last = s === stages.length - 1;
      const stageIo = last ? merged(io, { stdin: input }) : { stdout: (t: string) => (captured += t), stderr: io.stderr, stdin: input };
      await psStatement(stages[s] as string, ctx, state, stageIo);
      input = captured;
    }
    return;
  }
  const assign = /^\$(env:)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/is.exec(statement);
  if (assign !== null) {
    const value = psValue(assign[3] as string, state);
    if (assign[1] !== undefined) state.env.set(assign[2] as string, value);
    else state.vars.set((assign[2] as string).toLowerCase(), value);
    return;
  }
  if (/^(\$|'|")/.test(statement)) {
    io.stdout(`${psValue(statement, state)}${CRLF}`);
    return;
  }
  const argv = splitArgs(statement);
  const name = (argv[0] ?? '').toLowerCase();
  const rest = argv.slice(1);
  const cmdlet = runBuiltinCmdlet(ctx, { name, args: rest.map((a) => psValue(a, state)), position: { script: state.script, statement }, io });
  if (cmdlet !== undefined) {
    if (!cmdlet) state.failed = true;
    return;
  }
  switch (name) {
    case 'echo':
    case 'write-output':
    case 'write-host':
    case 'write':
      for (const token of statement.replace(/^\S+\s*/, '').match(/'(?:[^']|'')*'|"[^"]*"|\S+/g) ?? []) {
        io.stdout(`${psValue(token, state)}${CRLF}`);
      }
      return;
    case 'start-sleep':
    case 'sleep': {
      const ms = rest.some((a) => /^-m(illiseconds)?$/i.test(a));
      const value = Number(rest.find((a) => !a.startsWith('-')) ?? 'NaN');
      if (!Number.isFinite(value)) {
        io.stderr(`Start-Sleep : Cannot bind parameter 'Seconds'.${CRLF}`);
        state.failed = true;
        return;
      }
      await ctx.sleep(ms ? value : value * 1000);
      return;
    }
    case 'exit': {
      const code = rest[0] === undefined ? state.lastExitCode : Number(psValue(rest[0], state));
      throw new PsExit(Number.isFinite(code) ? code : 0);
    }
    case 'get-process':
    case 'ps':
    case 'gps': {
      io.stdout(`${CRLF}Handles  NPM(K)    PM(K)      WS(K)     CPU(s)     Id  SI ProcessName${CRLF}`);
      io.stdout(`-------  ------    -----      -----     ------     --  -- -----------${CRLF}`);
      for (const p of ctx.target.processes.list()) {
        io.stdout(`${'80'.padStart(7)}${'5'.padStart(8)}${'1024'.padStart(9)}${'4096'.padStart(11)}${'0.02'.padStart(11)}${String(p.pid).padStart(7)}   1 ${p.comm}${CRLF}`);
      }
      return;
    }
  }
  const code = await ctx.spawn(argv.map((a) => psValue(a, state)), { stdout: io.stdout, stderr: io.stderr, stdin: io.stdin ?? '', env: state.env });
  if (code === COMMAND_NOT_FOUND) {
    io.stderr(
      `${argv[0] ?? ''} : The term '${argv[0] ?? ''}' is not recognized as the name of a cmdlet, function, script file, or operable program. ` +
        `Check the spelling of the name, or if a path was included, verify that the path is correct and try again.${CRLF}`,
    );
    state.failed = true;
    return;
  }
  state.lastExitCode = code;
  if (code !== 0) state.failed = true;
}
