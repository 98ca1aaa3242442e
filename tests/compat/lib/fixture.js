// The synthetic cluster the route and producer tests register with rmqns:
// brokers at loopback ports where nothing listens, so that a client gets
// through the NameServer part and then fails to reach the broker.
'use strict';

const { before, after } = require('node:test');
const { RawConn, registerBroker, closedPort } = require('./wire');
const { startServer, stopServer } = require('./server');

const ODD_GROUP = 'broker-é/"q\\';

// Registers every group over its own connection (a real broker uses one
// connection each) and returns { addrs, groups, conns, close() }.
async function registerCluster(server) {
  const port = async () => `127.0.0.1:${await closedPort()}`;
  const addrs = {
    a0: await port(), b0: await port(), b1: await port(), c0: await port(),
    u0: await port(), w0: await port(),
  };
  const TBW102 = { name: 'TBW102', read: 8, write: 8, perm: 7 };
  const groups = [
    // registered before broker-a so that the client's own sorting shows
    { cluster: 'C1', brokerName: 'broker-b', brokerAddr: addrs.b0, brokerId: 0, topics: [
      { name: 'T1', read: 4, write: 4, perm: 6 },
      { name: 'T2', read: 8, write: 2, perm: 4 },
      { name: 'TSYS', read: 1, write: 1, perm: 6, sysFlag: 1 },
      { name: 'TORD', read: 4, write: 4, perm: 6 },
      { name: 'TW', read: 2, write: 2, perm: 6 },
      TBW102] },
    { cluster: 'C1', brokerName: 'broker-b', brokerAddr: addrs.b1, brokerId: 1, topics: [
      { name: 'T1', read: 4, write: 4, perm: 6 }, TBW102] },
    { cluster: 'C1', brokerName: 'broker-a', brokerAddr: addrs.a0, brokerId: 0, topics: [
      { name: 'T1', read: 2, write: 3, perm: 6 },
      { name: 'TORD', read: 4, write: 4, perm: 6 },
      TBW102] },
    { cluster: 'C2', brokerName: 'broker-c', brokerAddr: addrs.c0, brokerId: 0, zeroCrc: true, topics: [
      { name: 'TC', read: 16, write: 16, perm: 6 },
      { name: 'TC2', read: 1, write: 1, perm: 2 }] },
    { cluster: 'C2', brokerName: ODD_GROUP, brokerAddr: addrs.u0, brokerId: 0, topics: [
      { name: 'TU', read: 3, write: 3, perm: 6 },
      { name: 'TU2', read: 3, write: 3, perm: 6 }] },
    { cluster: 'C3', brokerName: 'broker-w', brokerAddr: addrs.w0, brokerId: 0, topics: [
      { name: 'TW', read: 2, write: 2, perm: 6 },
      { name: 'TW2', read: 2, write: 2, perm: 6 }] },
  ];
  const conns = [];
  try {
    for (const g of groups) {
      const conn = await RawConn.connect(server.port);
      conns.push(conn);
      await registerBroker(conn, g);
    }
  } catch (err) {
    for (const c of conns) c.close();
    throw err;
  }
  return {
    addrs,
    groups,
    conns,
    close() { for (const c of conns) c.close(); },
  };
}

// For a test file: starts rmqns and registers the cluster before its tests,
// closes both after them. The returned object's server and cluster are set
// once the tests run.
function clusterForFile() {
  const env = { server: null, cluster: null };
  before(async () => {
    env.server = await startServer();
    env.cluster = await registerCluster(env.server);
  });
  after(async () => {
    if (env.cluster) env.cluster.close();
    await stopServer(env.server);
  });
  return env;
}

module.exports = { registerCluster, clusterForFile, ODD_GROUP };
