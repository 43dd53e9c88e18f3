/** Where the kubelet commands write: the process's stdout and stderr. */
export const io = {
  out: (text: string | Buffer): void => {
    process.stdout.write(text);
  },
  err: (text: string): void => {
    process.stderr.write(text);
  },
};
export const writeError = (line: string): void => io.err(`${line}\n`);
