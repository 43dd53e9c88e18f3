/**
 * What an image's own program does when the container runs it: the entrypoint of an image that the
 * emulator has no built-in command for (a team's `webapp.exe`, an image nobody described). Either
 * declared in the user's images file or, for an image nobody described, the default: a long-lived
 * server that logs a start line and answers HTTP on the container's ports.
 */
export interface ImageProgram {
  /** Lines the program writes to stdout when it starts (default: one start line naming the image). */
  readonly output?: readonly string[];
  /** Exit with `exitCode` after this many seconds; absent: the program runs until it is signalled. */
  readonly exitAfterSeconds?: number;
  /** The exit code when `exitAfterSeconds` elapses (default 0). */
  readonly exitCode?: number;
  /**
   * TCP ports it answers HTTP on, besides the image's exposed ports and the container's declared
   * `containerPort`s. `false`: it serves nothing.
   */
  readonly ports?: readonly number[] | false;
}
