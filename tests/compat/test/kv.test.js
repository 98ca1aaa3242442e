// KV config (codes 100/101/102/219) as the Node clients see it: requests
// built and framed by each client (version 121 or 78, ext values as raw
// JSON scalars), answers decoded by the client, checked against a raw
// request and the KV file the server writes.
'use strict';

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { startServer, stopServer } = require('../lib/server');
const { RawConn } = require('../lib/wire');
const { clientApi, within } = require('../lib/clients');
const JSON2 = require('JSON2');

const T = { timeout: 20000 };
const PUT_KV_CONFIG = 100;
const GET_KV_CONFIG = 101;
const DELETE_KV_CONFIG = 102;
const GET_KVLIST_BY_NAMESPACE = 219;

let server;
let raw;

before(async () => {
  server = await startServer();
  raw = await RawConn.connect(server.port);
});

after(async () => {
  if (raw) raw.close();
  await stopServer(server);
});

function kvFile() {
  return JSON.parse(fs.readFileSync(server.kvFile, 'utf8'));
}

// GET_KV_CONFIG sent by the reference client (string ext values, 5.x version).
async function rawGet(namespace, key) {
  return raw.request({ code: GET_KV_CONFIG, ext: { namespace, key } });
}

for (const pkg of ['ali-ons', 'rocketmq']) {
  describe(`${pkg}: KV config`, () => {
    let c;
    const NS = `NS_${pkg}`;
    const cmd = (code, header) => c.RemotingCommand.createRequestCommand(code, header);
    const call = (code, header) => within(10000, c.invoke(cmd(code, header), 5000), `${pkg} code ${code}`);

    before(async () => { c = await clientApi(pkg, server.addr); });
    after(async () => { if (c) await c.close(); });

    it('PUT with numeric and boolean ext values stores their text; GET returns it', T, async () => {
      // The clients send the header fields with their JavaScript types:
      // {"key":7,"value":42} and {"value":true}, not strings.
      let r = await call(PUT_KV_CONFIG, { namespace: NS, key: 7, value: 42 });
      assert.strictEqual(r.code, 0);
      assert.strictEqual(r.remark, undefined);
      r = await call(PUT_KV_CONFIG, { namespace: NS, key: 'flag', value: true });
      assert.strictEqual(r.code, 0);

      r = await call(PUT_KV_CONFIG, { namespace: NS, key: 'neg', value: -3 });
      assert.strictEqual(r.code, 0);
      r = await call(PUT_KV_CONFIG, { namespace: NS, key: 'frac', value: 1.5 });
      assert.strictEqual(r.code, 0);

      r = await call(GET_KV_CONFIG, { namespace: NS, key: 'neg' });
      assert.deepStrictEqual(r.decodeCommandCustomHeader(), { value: '-3' });
      r = await call(GET_KV_CONFIG, { namespace: NS, key: 'frac' });
      assert.deepStrictEqual(r.decodeCommandCustomHeader(), { value: '1.5' });
      r = await call(GET_KV_CONFIG, { namespace: NS, key: 7 });
      assert.strictEqual(r.code, 0);
      assert.deepStrictEqual(r.decodeCommandCustomHeader(), { value: '42' });
      r = await call(GET_KV_CONFIG, { namespace: NS, key: 'flag' });
      assert.deepStrictEqual(r.decodeCommandCustomHeader(), { value: 'true' });

      // The same entries as a Java client asks for them, and on disk.
      const a = await rawGet(NS, '7');
      assert.strictEqual(a.header.code, 0);
      assert.strictEqual(a.header.extFields.value, '42');
      assert.match(a.headerBytes.toString(), /"extFields":\{"value":"42"\}/);
      const file = kvFile();
      assert.strictEqual(file.configTable[NS]['7'], '42');
      assert.strictEqual(file.configTable[NS].flag, 'true');
    });

    it('GET of a missing key answers 22 with the Java remark', T, async () => {
      const r = await call(GET_KV_CONFIG, { namespace: NS, key: 'absent' });
      assert.strictEqual(r.code, 22);
      assert.strictEqual(r.remark, `No config item, Namespace: ${NS} Key: absent`);
      const r2 = await call(GET_KV_CONFIG, { namespace: `${NS}_none`, key: 'k' });
      assert.strictEqual(r2.code, 22);
      assert.strictEqual(r2.remark, `No config item, Namespace: ${NS}_none Key: k`);
    });

    it('text with quotes, backslashes, control and non-ASCII characters round-trips', T, async () => {
      const value = 'é "q" \\ / <&> \t\n\u0001\u007f\u2028 😀 中文';
      const key = 'ключ/😀';
      let r = await call(PUT_KV_CONFIG, { namespace: NS, key, value });
      assert.strictEqual(r.code, 0);
      r = await call(GET_KV_CONFIG, { namespace: NS, key });
      assert.strictEqual(r.code, 0);
      assert.strictEqual(r.decodeCommandCustomHeader().value, value);
      assert.strictEqual(kvFile().configTable[NS][key], value);
    });

    it('GET_KVLIST_BY_NAMESPACE body parses with the client\'s JSON parser', T, async () => {
      const ns = `${NS}_list`;
      for (const [k, v] of [['a', '1'], ['b', 'two'], ['c', 'x:y;z']]) {
        assert.strictEqual((await call(PUT_KV_CONFIG, { namespace: ns, key: k, value: v })).code, 0);
      }
      const r = await call(GET_KVLIST_BY_NAMESPACE, { namespace: ns });
      assert.strictEqual(r.code, 0);
      assert.ok(r.body, 'a KVTable body');
      assert.deepStrictEqual(JSON2.parse(r.body.toString()), { table: { a: '1', b: 'two', c: 'x:y;z' } });
      const miss = await call(GET_KVLIST_BY_NAMESPACE, { namespace: `${ns}_none` });
      assert.strictEqual(miss.code, 22);
      assert.strictEqual(miss.remark, `No config item, Namespace: ${ns}_none`);
      assert.strictEqual(miss.body, undefined);
    });

    it('DELETE removes the key; the namespace stays', T, async () => {
      const ns = `${NS}_del`;
      assert.strictEqual((await call(PUT_KV_CONFIG, { namespace: ns, key: 'gone', value: 'v' })).code, 0);
      const r = await call(DELETE_KV_CONFIG, { namespace: ns, key: 'gone' });
      assert.strictEqual(r.code, 0);
      assert.strictEqual((await call(GET_KV_CONFIG, { namespace: ns, key: 'gone' })).code, 22);
      assert.deepStrictEqual(kvFile().configTable[ns], {});
      const list = await call(GET_KVLIST_BY_NAMESPACE, { namespace: ns });
      assert.strictEqual(list.code, 0);
      assert.deepStrictEqual(JSON2.parse(list.body.toString()), { table: {} });
    });

    it('PUT without a value (the client drops undefined fields) is refused with code 1', T, async () => {
      // Java would store an invisible null and answer 0; rmqns refuses.
      const r = await call(PUT_KV_CONFIG, { namespace: NS, key: 'novalue', value: undefined });
      assert.strictEqual(r.code, 1);
      assert.match(r.remark, /value is null/);
      assert.strictEqual((await call(GET_KV_CONFIG, { namespace: NS, key: 'novalue' })).code, 22);
    });

    it('many requests in flight on the client\'s one connection are matched by opaque', T, async () => {
      const ns = `${NS}_many`;
      const n = 200;
      const puts = await Promise.all(Array.from({ length: n }, (_, i) =>
        call(PUT_KV_CONFIG, { namespace: ns, key: `k${i}`, value: `v${i}` })));
      assert.ok(puts.every(r => r.code === 0));
      const gets = await Promise.all(Array.from({ length: n }, (_, i) =>
        call(GET_KV_CONFIG, { namespace: ns, key: `k${i}` })));
      gets.forEach((r, i) => {
        assert.strictEqual(r.code, 0);
        assert.strictEqual(r.decodeCommandCustomHeader().value, `v${i}`);
      });
      assert.strictEqual(Object.keys(kvFile().configTable[ns]).length, n);
    });
  });
}
