// SpdyConnection's backpressure on its own, with a socket that takes bytes only when told to: what
// is queued behind a header block still being compressed counts against the high-water mark, and
// writers told to wait hear 'drain' once there is room. (Under load, the port-forward test in
// streaming-robustness.test.ts saw 4 MB held: the outbox grew while the socket looked empty.)
import { expect } from 'chai';
import { Duplex } from 'node:stream';
import { SpdyConnection } from '../../../src/runtime/streaming/spdy-connection.js';
import { dataFrame, EMPTY, SOCKET_HIGH_WATER } from '../../../src/runtime/streaming/spdy-frames.js';

/** A socket whose writes complete only on `release()`, as a client that stopped reading. */
class HeldSocket extends Duplex {
  private held: (() => void)[] = [];
  taken = 0;

  constructor() {
    super({ writableHighWaterMark: 16 * 1024 });
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.held.push(() => {
      this.taken += chunk.length;
      done();
    });
  }

  release(): void {
    const held = this.held;
    this.held = [];
    for (const done of held) done();
  }
}

describe('SpdyConnection backpressure', () => {
  const chunk = Buffer.alloc(64 * 1024, 1);
  const send = (connection: SpdyConnection): boolean => connection.sendData(dataFrame(1, 0, EMPTY, chunk.length), chunk);

  /** Sends chunks until the connection says to wait (at most 200); returns the bytes it took. */
  function fill(connection: SpdyConnection): number {
    let accepted = 0;
    for (let i = 0; i < 200; i++) {
      accepted += chunk.length;
      if (!send(connection)) break;
    }
    return accepted;
  }

  it('counts frames queued behind a header block being compressed', async () => {
    const socket = new HeldSocket();
    const connection = new SpdyConnection(socket);
    let compressed!: (frame: Buffer) => void;
    connection.sendRaw(new Promise<Buffer>((resolve) => { compressed = resolve; }));
    const accepted = fill(connection);
    expect(accepted, 'bytes taken before the writer was told to wait').to.be.at.most(SOCKET_HIGH_WATER + chunk.length);
    expect(connection.pendingBytes).to.be.at.least(SOCKET_HIGH_WATER);

    let drained = false;
    connection.once('drain', () => { drained = true; });
    compressed(Buffer.alloc(16));
    for (let i = 0; i < 50 && !drained; i++) {
      socket.release();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(drained, "'drain' after the queue emptied").to.equal(true);
    expect(connection.pendingBytes).to.be.below(SOCKET_HIGH_WATER);
    expect(socket.taken).to.equal(16 + accepted + 8 * (accepted / chunk.length));
    connection.destroy();
  });

  it('holds a writer at the mark when the socket itself is full, and drains once', async () => {
    const socket = new HeldSocket();
    const connection = new SpdyConnection(socket);
    const accepted = fill(connection);
    expect(accepted).to.be.at.most(SOCKET_HIGH_WATER + chunk.length);
    let drains = 0;
    connection.on('drain', () => { drains++; });
    for (let i = 0; i < 50 && connection.pendingBytes > 0; i++) {
      socket.release();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(connection.pendingBytes).to.equal(0);
    expect(drains).to.equal(1);
    connection.destroy();
  });
});
