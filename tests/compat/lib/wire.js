// A small RocketMQ remoting client written from the wire reference, kept
// apart from the clients under test: it checks the server's answers
// independently and registers synthetic brokers.
'use strict';

const net = require('node:net');

const JSON_TYPE = 0;

// CRC-32 (IEEE 802.3), as zlib's crc32.
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf) {
  let c = 0xFFFFFFFF;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >>> 8);
  return (c ^ 0xFFFFFFFF) >>> 0;
}

// One frame with a JSON header. ext values are sent as given (strings are
// what Java clients send).
function encodeFrame({ code, ext, body, opaque, flag = 0, version = 479, language = 'JAVA' }) {
  const header = { code, language, opaque, flag, version };
  if (ext) header.extFields = ext;
  const h = Buffer.from(JSON.stringify(header), 'utf8');
  const b = body ? Buffer.from(body) : Buffer.alloc(0);
  const frame = Buffer.alloc(8 + h.length + b.length);
  frame.writeInt32BE(4 + h.length + b.length, 0);
  frame.writeUInt32BE(((JSON_TYPE << 24) | h.length) >>> 0, 4);
  h.copy(frame, 8);
  b.copy(frame, 8 + h.length);
  return frame;
}

// Splits a frame (without its length prefix) into header and body.
function decodeFrame(payload) {
  const word = payload.readUInt32BE(0);
  const type = word >>> 24;
  const hlen = word & 0xFFFFFF;
  const headerBytes = payload.subarray(4, 4 + hlen);
  const body = payload.length > 4 + hlen ? payload.subarray(4 + hlen) : null;
  if (type !== JSON_TYPE) {
    return { type, headerBytes, header: null, body };
  }
  return { type, headerBytes, header: JSON.parse(headerBytes.toString('utf8')), body };
}

class RawConn {
  constructor(socket) {
    this.socket = socket;
    this.buf = Buffer.alloc(0);
    this.pending = new Map();
    this.nextOpaque = 1;
    this.closed = false;
    socket.on('data', chunk => this._onData(chunk));
    socket.on('close', () => {
      this.closed = true;
      for (const [, p] of this.pending) p.reject(new Error('connection closed'));
      this.pending.clear();
    });
    socket.on('error', () => { /* reported through close */ });
  }

  static connect(port, host = '127.0.0.1', timeoutMs = 5000) {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host });
      const timer = setTimeout(() => { s.destroy(); reject(new Error('connect timeout')); }, timeoutMs);
      s.once('connect', () => { clearTimeout(timer); s.setNoDelay(true); resolve(new RawConn(s)); });
      s.once('error', err => { clearTimeout(timer); reject(err); });
    });
  }

  _onData(chunk) {
    this.buf = Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 4) {
      const len = this.buf.readInt32BE(0);
      if (this.buf.length < 4 + len) break;
      const frame = decodeFrame(this.buf.subarray(4, 4 + len));
      this.buf = this.buf.subarray(4 + len);
      const opaque = frame.header ? frame.header.opaque : undefined;
      const p = this.pending.get(opaque);
      if (p) {
        this.pending.delete(opaque);
        p.resolve(frame);
      }
    }
  }

  // Sends a request and resolves to { type, headerBytes, header, body }.
  request(cmd, timeoutMs = 5000) {
    const opaque = cmd.opaque !== undefined ? cmd.opaque : this.nextOpaque++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(opaque);
        reject(new Error(`no answer to code ${cmd.code} in ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(opaque, {
        resolve: f => { clearTimeout(timer); resolve(f); },
        reject: e => { clearTimeout(timer); reject(e); },
      });
      this.socket.write(encodeFrame({ ...cmd, opaque }));
    });
  }

  close() {
    this.socket.destroy();
  }
}

// The JSON body of REGISTER_BROKER (RegisterBrokerBody, plain form).
// topics: [{ name, read, write, perm, sysFlag }].
function registrationBody(topics, dataVersion) {
  const table = {};
  for (const t of topics) {
    table[t.name] = {
      attributes: {},
      order: false,
      perm: t.perm,
      readQueueNums: t.read,
      topicFilterType: 'SINGLE_TAG',
      topicName: t.name,
      topicSysFlag: t.sysFlag || 0,
      writeQueueNums: t.write,
    };
  }
  return JSON.stringify({
    filterServerList: [],
    topicConfigSerializeWrapper: {
      dataVersion: { counter: dataVersion.counter, stateVersion: 0, timestamp: dataVersion.timestamp },
      topicConfigTable: table,
    },
  });
}

// Registers a synthetic broker the way a 5.x master or slave does (optionally
// with enableActingMaster and heartbeatTimeoutMillis). Resolves
// to the answer frame; rejects unless the answer is code 0.
async function registerBroker(conn, b) {
  const body = Buffer.from(registrationBody(b.topics, b.dataVersion || { counter: 1, timestamp: Date.now() }), 'utf8');
  const ext = {
    brokerName: b.brokerName,
    brokerAddr: b.brokerAddr,
    clusterName: b.cluster,
    haServerAddr: b.haServerAddr || b.brokerAddr,
    brokerId: String(b.brokerId),
    enableActingMaster: String(!!b.enableActingMaster),
    compressed: 'false',
    bodyCrc32: String(b.zeroCrc ? 0 : crc32(body) & 0x7FFFFFFF),
  };
  if (b.heartbeatTimeoutMillis) ext.heartbeatTimeoutMillis = String(b.heartbeatTimeoutMillis);
  const answer = await conn.request({ code: 103, ext, body, version: b.version || 479 });
  if (!answer.header || answer.header.code !== 0) {
    throw new Error(`REGISTER_BROKER answered ${answer.headerBytes.toString()}`);
  }
  return answer;
}

// A loopback port with nothing listening on it (bound, read, released).
// A loopback port nothing listens on, never the same twice in a process:
// the kernel may hand a just-closed port out again, and two synthetic
// brokers on one address are one broker to a NameServer (the second one's
// registration takes the address over).
const closedPortsGiven = new Set();

function closedPortOnce() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function closedPort() {
  for (let i = 0; i < 100; i++) {
    const port = await closedPortOnce();
    if (!closedPortsGiven.has(port)) {
      closedPortsGiven.add(port);
      return port;
    }
  }
  throw new Error('closedPort: no new port in 100 tries');
}

module.exports = { crc32, encodeFrame, decodeFrame, RawConn, registrationBody, registerBroker, closedPort };
