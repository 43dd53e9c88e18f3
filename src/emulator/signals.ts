/** Linux signal numbers, for the 128+n exit status of a process a signal terminated. */
const NUMBERS: Record<string, number> = {
  SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGILL: 4, SIGTRAP: 5, SIGABRT: 6, SIGIOT: 6, SIGBUS: 7, SIGFPE: 8,
  SIGKILL: 9, SIGUSR1: 10, SIGSEGV: 11, SIGUSR2: 12, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15, SIGSTKFLT: 16,
  SIGCHLD: 17, SIGCLD: 17, SIGCONT: 18, SIGSTOP: 19, SIGTSTP: 20, SIGTTIN: 21, SIGTTOU: 22, SIGURG: 23,
  SIGXCPU: 24, SIGXFSZ: 25, SIGVTALRM: 26, SIGPROF: 27, SIGWINCH: 28, SIGIO: 29, SIGPOLL: 29, SIGPWR: 30,
  SIGSYS: 31,
};

/** Signals whose default action is to do nothing. */
const IGNORED_BY_DEFAULT: ReadonlySet<string> = new Set(['SIGCHLD', 'SIGCLD', 'SIGCONT', 'SIGURG', 'SIGWINCH']);

export function signalNumber(name: string): number {
  return NUMBERS[normaliseSignal(name)] ?? 15;
}

/** `TERM`, `sigterm`, `15` → `SIGTERM`. */
export function normaliseSignal(name: string): string {
  const upper = name.trim().toUpperCase();
  if (/^[0-9]+$/.test(upper)) {
    const n = Number(upper);
    return Object.entries(NUMBERS).find(([, v]) => v === n)?.[0] ?? 'SIGTERM';
  }
  return upper.startsWith('SIG') ? upper : `SIG${upper}`;
}

export function isKnownSignal(name: string): boolean {
  return normaliseSignal(name) in NUMBERS;
}

export function ignoredByDefault(name: string): boolean {
  return IGNORED_BY_DEFAULT.has(normaliseSignal(name));
}
