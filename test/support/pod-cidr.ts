/**
 * A loopback pod range for one test runtime: runtimes of other test processes on the machine may
 * hold the default 127.10.0.0/16, and servers bind port 80 on pod IPs. One of 3,840 /20 blocks
 * of 127.11.0.0–127.250.255.255 (4,093 pods each).
 */
export function testPodCidr(): string {
  return `127.${11 + Math.floor(Math.random() * 240)}.${16 * Math.floor(Math.random() * 16)}.0/20`;
}
