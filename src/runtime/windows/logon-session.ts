/**
 * A Windows container's logon session as the domain left it: the gMSA password version its host
 * retrieved, and the Kerberos tickets cached for it (what `klist` lists, `klist purge` empties).
 * One per started Windows container, in memory (a runtime restart starts an empty cache; the
 * next identity operation asks the domain again).
 *
 * Kerberos rules it keeps (RFC 4120; Windows' default domain policy): a cached ticket stays valid
 * until it ends, whatever the domain does meanwhile — a password rotation, a domain controller
 * going away, a clock drifting — so `klist` keeps showing it and `klist get` of a cached ticket
 * needs no domain controller; new tickets need the domain as it is now.
 */

/** Default domain policy: "Maximum lifetime for user ticket" 10 hours, renewal 7 days. */
export const TICKET_LIFETIME_MS = 10 * 60 * 60 * 1000;
export const TICKET_RENEWAL_MS = 7 * 24 * 60 * 60 * 1000;

export interface KerberosTicket {
  /** `WebApplication1$ @ CONTOSO.COM` */
  readonly client: string;
  /** `krbtgt/CONTOSO.COM @ CONTOSO.COM`, `http/web.contoso.com @ CONTOSO.COM` */
  readonly server: string;
  /** The domain controller that issued it. */
  readonly kdc: string;
  /** The managed password version it was obtained with (older than the gMSA's: a stale ticket). */
  readonly passwordVersion: number;
  readonly startMs: number;
  readonly endMs: number;
}

export class LogonSession {
  /** The managed password version the host retrieved for the container (undefined: none yet). */
  heldPasswordVersion: number | undefined;
  private tickets: KerberosTicket[] = [];

  constructor(readonly now: () => number) {}

  /** The tickets still valid now, in the order they were obtained. */
  cached(): readonly KerberosTicket[] {
    const now = this.now();
    if (this.tickets.some((t) => t.endMs <= now)) this.tickets = this.tickets.filter((t) => t.endMs > now);
    return this.tickets;
  }

  find(server: string): KerberosTicket | undefined {
    const wanted = server.toLowerCase();
    return this.cached().find((t) => t.server.toLowerCase() === wanted);
  }

  /** Caches a ticket obtained now from `kdc`. */
  obtain(client: string, server: string, kdc: string, passwordVersion: number): KerberosTicket {
    const startMs = this.now();
    const ticket: KerberosTicket = { client, server, kdc, passwordVersion, startMs, endMs: startMs + TICKET_LIFETIME_MS };
    this.tickets = [...this.cached().filter((t) => t.server.toLowerCase() !== server.toLowerCase()), ticket];
    return ticket;
  }

  /** `klist purge`: every cached ticket goes. */
  purge(): void {
    this.tickets = [];
  }
}
