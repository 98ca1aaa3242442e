// Routes as the Node clients see them: synthetic brokers registered with
// REGISTER_BROKER (raw frames, JSON body, CRC-32 checked or 0), then each
// client's own route query and parser (JSON2, which takes the unquoted
// integer keys that Java sends to clients older than 4.9.4), cluster info
// and topic lists through the client's transport.
'use strict';

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert');
const JSON2 = require('JSON2');
const { RawConn, registerBroker, closedPort } = require('../lib/wire');
const { clusterForFile, ODD_GROUP } = require('../lib/fixture');
const { clientApi, within } = require('../lib/clients');

const T = { timeout: 20000 };
const GET_ROUTEINFO_BY_TOPIC = 105;
const GET_BROKER_CLUSTER_INFO = 106;
const GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206;
const GET_TOPICS_BY_CLUSTER = 224;
const UNREGISTER_BROKER = 104;
const NOT_FOUND_REMARK = topic => `No topic route info in name server for the topic: ${topic}\n` +
  'See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.';

const env = clusterForFile();

const brokerData = (name, clusterName, brokerAddrs) =>
  ({ brokerAddrs, brokerName: name, cluster: clusterName, enableActingMaster: false });
const queueData = (name, perm, read, write, sysFlag = 0) =>
  ({ brokerName: name, perm, readQueueNums: read, topicSysFlag: sysFlag, writeQueueNums: write });

for (const pkg of ['ali-ons', 'rocketmq']) {
  describe(`${pkg}: routes`, () => {
    let c;
    const request = (code, header) => within(10000,
      c.invoke(c.RemotingCommand.createRequestCommand(code, header), 5000), `${pkg} code ${code}`);
    const route = topic => within(10000, c.route(topic, 5000), `${pkg} route of ${topic}`);

    before(async () => { c = await clientApi(pkg, env.server.addr); });
    after(async () => { if (c) await c.close(); });

    it('a topic on two groups: addresses by id, queue counts and perm, as parsed by the client', T, async () => {
      const { a0, b0, b1 } = env.cluster.addrs;
      const r = await route('T1');
      // The client sorts both lists by brokerName.
      assert.deepStrictEqual(JSON.parse(JSON.stringify(r)), {
        brokerDatas: [
          brokerData('broker-a', 'C1', { 0: a0 }),
          brokerData('broker-b', 'C1', { 0: b0, 1: b1 }),
        ],
        filterServerTable: {},
        queueDatas: [queueData('broker-a', 6, 2, 3), queueData('broker-b', 6, 4, 4)],
      });
    });

    it('the answer to the client\'s version is fastjson\'s default form (unquoted broker ids)', T, async () => {
      const { b0, b1 } = env.cluster.addrs;
      const r = await request(GET_ROUTEINFO_BY_TOPIC, { topic: 'T1' });
      assert.strictEqual(r.code, 0);
      const text = r.body.toString('utf8');
      assert.ok(text.includes(`"brokerAddrs":{0:"${b0}",1:"${b1}"}`), text);
      assert.throws(() => JSON.parse(text), SyntaxError);
      // The client compares successive routes as text to decide whether
      // anything changed; an unchanged route must read the same.
      const again = await request(GET_ROUTEINFO_BY_TOPIC, { topic: 'T1' });
      assert.strictEqual(again.body.toString('utf8'), text);
    });

    it('read-only topic, system flag, single group', T, async () => {
      const { b0, b1, c0 } = env.cluster.addrs;
      assert.deepStrictEqual((await route('T2')).queueDatas, [queueData('broker-b', 4, 8, 2)]);
      assert.deepStrictEqual((await route('TSYS')).queueDatas, [queueData('broker-b', 6, 1, 1, 1)]);
      const tc = await route('TC');
      assert.deepStrictEqual(JSON.parse(JSON.stringify(tc.brokerDatas)), [brokerData('broker-c', 'C2', { 0: c0 })]);
      assert.deepStrictEqual(tc.queueDatas, [queueData('broker-c', 6, 16, 16)]);
      assert.deepStrictEqual(JSON.parse(JSON.stringify((await route('TBW102')).brokerDatas)).map(b => b.brokerAddrs),
        [{ 0: env.cluster.addrs.a0 }, { 0: b0, 1: b1 }]);
    });

    it('a group name with quote, backslash, slash and é survives the client\'s parser', T, async () => {
      const r = await route('TU');
      assert.strictEqual(r.brokerDatas.length, 1);
      assert.strictEqual(r.brokerDatas[0].brokerName, ODD_GROUP);
      assert.strictEqual(r.brokerDatas[0].brokerAddrs[0], env.cluster.addrs.u0);
      assert.deepStrictEqual(r.queueDatas, [queueData(ODD_GROUP, 6, 3, 3)]);
      // default form: é raw (UTF-8), '/' not escaped
      const raw = (await request(GET_ROUTEINFO_BY_TOPIC, { topic: 'TU' })).body.toString('utf8');
      assert.ok(raw.includes('"brokerName":"broker-é/\\"q\\\\"'), raw);
    });

    it('an unknown topic is the client\'s MQClientException with code 17', T, async () => {
      await assert.rejects(route('NoSuchTopic'), err => {
        assert.strictEqual(err.name, 'MQClientException');
        assert.strictEqual(err.code, 17);
        assert.strictEqual(err.message, NOT_FOUND_REMARK('NoSuchTopic'));
        return true;
      });
    });

    it('cluster info (106) through the client, parsed as the client parses bodies', T, async () => {
      const { a0, b0, b1, c0, u0, w0 } = env.cluster.addrs;
      const r = await request(GET_BROKER_CLUSTER_INFO, null);
      assert.strictEqual(r.code, 0);
      const info = JSON.parse(JSON.stringify(JSON2.parse(r.body.toString('utf8'))));
      for (const k of Object.keys(info.clusterAddrTable)) info.clusterAddrTable[k].sort();
      assert.deepStrictEqual(info.clusterAddrTable, {
        C1: ['broker-a', 'broker-b'],
        C2: [ODD_GROUP, 'broker-c'].sort(),
        C3: ['broker-w'],
      });
      assert.deepStrictEqual(info.brokerAddrTable, {
        'broker-a': brokerData('broker-a', 'C1', { 0: a0 }),
        'broker-b': brokerData('broker-b', 'C1', { 0: b0, 1: b1 }),
        'broker-c': brokerData('broker-c', 'C2', { 0: c0 }),
        [ODD_GROUP]: brokerData(ODD_GROUP, 'C2', { 0: u0 }),
        'broker-w': brokerData('broker-w', 'C3', { 0: w0 }),
      });
    });

    it('topic lists (206, 224) through the client', T, async () => {
      const all = await request(GET_ALL_TOPIC_LIST_FROM_NAMESERVER, null);
      assert.strictEqual(all.code, 0);
      assert.deepStrictEqual(JSON2.parse(all.body.toString()).topicList.sort(),
        ['T1', 'T2', 'TBW102', 'TC', 'TC2', 'TORD', 'TSYS', 'TU', 'TU2', 'TW', 'TW2']);
      const c2 = await request(GET_TOPICS_BY_CLUSTER, { cluster: 'C2' });
      assert.strictEqual(c2.code, 0);
      assert.deepStrictEqual(JSON2.parse(c2.body.toString()).topicList.sort(), ['TC', 'TC2', 'TU', 'TU2']);
    });

    it('the client\'s KV-by-value helper (code 217, REGISTER_TOPIC_IN_NAMESRV today) fails fast with code 1', T, async () => {
      // 5.x servers answer code 1 (no body); the client turns it into an error.
      const getByValue = c.call('getKVConfigByValue', 'PROJECT_CONFIG', '127.0.0.1', 5000);
      await assert.rejects(within(10000, getByValue, 'getKVConfigByValue'), err => {
        assert.strictEqual(err.name, 'MQClientException');
        assert.strictEqual(err.code, 1);
        return true;
      });
      await assert.rejects(route('PROJECT_CONFIG'), err => err.code === 17);
    });

    it('after one group unregisters, the client sees only the other; after both, code 17', T, async () => {
      const topic = `TX_${pkg}`;
      const groups = [`${pkg}-x`, `${pkg}-y`];
      const conn = await RawConn.connect(env.server.port);
      try {
        const addrs = [];
        for (const name of groups) {
          const addr = `127.0.0.1:${await closedPort()}`;
          addrs.push(addr);
          await registerBroker(conn, { cluster: 'CX', brokerName: name, brokerAddr: addr, brokerId: 0,
            topics: [{ name: topic, read: 2, write: 2, perm: 6 }, { name: `${topic}_2`, read: 1, write: 1, perm: 6 }] });
        }
        assert.deepStrictEqual((await route(topic)).brokerDatas.map(b => b.brokerName), groups);
        const unregister = async i => {
          const a = await conn.request({ code: UNREGISTER_BROKER, ext: {
            brokerName: groups[i], brokerAddr: addrs[i], clusterName: 'CX', brokerId: '0' } });
          assert.strictEqual(a.header.code, 0);
        };
        await unregister(0);
        // 5.x unregisters in the background: wait (bounded) for the change.
        let r;
        for (let i = 0; i < 50; i++) {
          r = await route(topic);
          if (r.brokerDatas.length === 1) break;
          await new Promise(res => setTimeout(res, 100));
        }
        assert.deepStrictEqual(r.brokerDatas.map(b => b.brokerName), [groups[1]]);
        assert.deepStrictEqual(r.queueDatas, [queueData(groups[1], 6, 2, 2)]);
        await unregister(1);
        let gone = false;
        for (let i = 0; i < 50 && !gone; i++) {
          try { await route(topic); await new Promise(res => setTimeout(res, 100)); } catch (err) {
            assert.strictEqual(err.code, 17);
            gone = true;
          }
        }
        assert.ok(gone, 'the topic is gone once both groups unregistered');
      } finally {
        conn.close();
      }
    });

    it('route, miss, cluster and KV requests in flight together on the client\'s connection each get their own answer', T, async () => {
      const topics = ['T1', 'T2', 'TSYS', 'TC', 'TU', 'TW'];
      const jobs = [];
      for (let i = 0; i < 300; i++) {
        switch (i % 4) {
        case 0: {
          const t = topics[i % topics.length];
          jobs.push(route(t).then(r => assert.ok(r.queueDatas.length > 0 &&
            r.queueDatas.every(q => r.brokerDatas.some(b => b.brokerName === q.brokerName)), t)));
          break;
        }
        case 1:
          jobs.push(route(`Missing${i}`).then(() => assert.fail('found'),
            err => assert.strictEqual(err.message, NOT_FOUND_REMARK(`Missing${i}`))));
          break;
        case 2:
          jobs.push(request(GET_BROKER_CLUSTER_INFO, null).then(r =>
            assert.deepStrictEqual(Object.keys(JSON2.parse(r.body.toString()).clusterAddrTable).sort(), ['C1', 'C2', 'C3'])));
          break;
        default:
          jobs.push(request(101, { namespace: `ns${i}`, key: `k${i}` }).then(r => {
            assert.strictEqual(r.code, 22);
            assert.strictEqual(r.remark, `No config item, Namespace: ns${i} Key: k${i}`);
          }));
        }
      }
      await Promise.all(jobs);
    });

    it('a broker whose connection closes leaves the client\'s route', T, async () => {
      const topic = `TZ_${pkg}`;
      const conn = await RawConn.connect(env.server.port);
      const addr = `127.0.0.1:${await closedPort()}`;
      try {
        await registerBroker(conn, { cluster: 'CZ', brokerName: `${pkg}-z`, brokerAddr: addr, brokerId: 0,
          topics: [{ name: topic, read: 1, write: 1, perm: 6 }, { name: `${topic}_2`, read: 1, write: 1, perm: 6 }] });
        assert.strictEqual((await route(topic)).brokerDatas[0].brokerAddrs[0], addr);
      } finally {
        conn.close();
      }
      let code;
      for (let i = 0; i < 50 && code === undefined; i++) {
        try { await route(topic); await new Promise(res => setTimeout(res, 100)); } catch (err) { code = err.code; }
      }
      assert.strictEqual(code, 17);
    });
  });
}
